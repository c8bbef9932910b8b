package semantics

import (
	"fmt"
	"strings"
)

// Class 11: every form of SET. The server reports a session variable's
// change in its OK packet for some forms only (MariaDB 10.11 reports
// nothing for SET @@name = value), so what tpproxy knows of a connection
// must come from the statement itself, read back from the server where
// the report is missing. Each scenario sets many variables in one form;
// the subject then sees them on every statement, and observers, a new
// session after the subject left, and the noise sessions never do.

// setFormVars are session variables with a value away from the server's
// default, each one the suite's account may set.
var setFormVars = []struct{ name, value string }{
	{"sql_mode", "'ANSI_QUOTES'"},
	{"time_zone", "'+03:00'"},
	{"character_set_client", "latin1"},
	{"collation_server", "latin1_swedish_ci"},
	{"wait_timeout", "1234"},
	{"max_join_size", "1000000"},
	{"sql_select_limit", "2"},
	{"group_concat_max_len", "77"},
	{"div_precision_increment", "7"},
	{"lock_wait_timeout", "77"},
	{"innodb_lock_wait_timeout", "7"},
	{"max_statement_time", "77"},
	{"net_read_timeout", "77"},
	{"net_write_timeout", "77"},
	{"sort_buffer_size", "1048576"},
	{"tmp_table_size", "1048576"},
	{"sql_safe_updates", "1"},
	{"unique_checks", "0"},
	{"foreign_key_checks", "0"},
	{"interactive_timeout", "777"},
	{"long_query_time", "7"},
	{"optimizer_search_depth", "7"},
	{"default_storage_engine", "MyISAM"},
	{"lc_time_names", "'de_DE'"},
	{"collation_connection", "utf8mb4_bin"},
	{"max_error_count", "7"},
	{"sql_notes", "0"},
}

// sfProbe shows every variable of setFormVars (and the multi-statement
// option's neighbour, autocommit).
func sfProbe() string {
	var b strings.Builder
	b.WriteString("SELECT @@autocommit")
	for _, v := range setFormVars {
		b.WriteString(", @@")
		b.WriteString(v.name)
	}
	return b.String()
}

// sfOne is one SET per variable, in form f (a format of name and value).
func sfOne(role, f string) []string {
	var out []string
	for _, v := range setFormVars {
		out = append(out, role+": SET "+fmt.Sprintf(f, v.name, v.value))
	}
	return out
}

// sfList is one SET assigning every variable, each assignment in the
// next of forms (formats of name and value), in turn.
func sfList(forms ...string) string {
	var parts []string
	for i, v := range setFormVars {
		parts = append(parts, fmt.Sprintf(forms[i%len(forms)], v.name, v.value))
	}
	return "SET " + strings.Join(parts, ", ")
}

// sfAfter are the steps after the subject set the variables: it sees
// them wherever it lands, observers never do, and once it has left
// (without COM_QUIT too) neither an observer nor a new session does.
func sfAfter() []string {
	p := sfProbe()
	return []string{"S*2: SELECT 1", rep("O", 4, p), rep("S", 4, p), rep("A", 2, p), "S: !quit", "S: !gone",
		rep("O", 3, p), rep("W", 3, p), "W: !connect", rep("W", 2, p)}
}

func sfScenario(id, desc string, set ...any) *scenario {
	return &scenario{id: id, class: "set-forms", desc: desc, steps: steps(append(set, sfAfter())...)}
}

func setFormScenarios() []*scenario {
	c := "set-forms"
	p := sfProbe()
	fewProbe := "SELECT @@autocommit, @@time_zone, @@sql_mode, @@wait_timeout, @@max_join_size, @@sql_select_limit"
	return []*scenario{
		sfScenario("sf01", "SET @@name = value (no scope word), one variable per statement", sfOne("S", "@@%s = %s")),
		sfScenario("sf02", "SET @@session.name = value", sfOne("S", "@@session.%s = %s")),
		sfScenario("sf03", "SET @@local.name = value", sfOne("S", "@@local.%s = %s")),
		sfScenario("sf04", "SET LOCAL name = value", sfOne("S", "LOCAL %s = %s")),
		sfScenario("sf05", "SET name := value", sfOne("S", "%s := %s")),
		sfScenario("sf06", "SET @@name := value", sfOne("S", "@@%s := %s")),
		sfScenario("sf07", "one SET @@a = 1, @@b = 2, ... assigning every variable", "S: "+sfList("@@%s = %s")),
		sfScenario("sf08", "one SET mixing @@x, SESSION x, @@local.x, x := and @@session.x",
			"S: "+sfList("@@%s = %s", "SESSION %s = %s", "@@local.%s = %s", "%s := %s", "@@session.%s = %s", "LOCAL %s = %s")),
		sfScenario("sf09", "SET STATEMENT max_statement_time = 5 FOR SET @@name = value: the inner SET lasts",
			sfOne("S", "STATEMENT max_statement_time = 5 FOR SET @@%s = %s")),
		{id: "sf10", class: c, desc: "SET @@autocommit = 0: the subject's writes wait for its COMMIT, nobody else runs with autocommit off",
			steps: steps("S: SET @@autocommit = 0", "S: INSERT INTO t (v) VALUES (60)", rep("O", 4, "SELECT @@autocommit ;; "+trxProbe),
				"W: SELECT COUNT(*) FROM t WHERE v = 60", "S: COMMIT", "W: SELECT COUNT(*) FROM t WHERE v = 60",
				"S: INSERT INTO t (v) VALUES (61)", rep("O", 3, "INSERT INTO t (v) VALUES (62)"), "W: SELECT COUNT(*) FROM t WHERE v IN (61, 62)",
				"S: ROLLBACK", "S: SELECT @@autocommit", "S: !quit", "S: !gone", rep("O", 3, "SELECT @@autocommit ;; "+trxProbe),
				"W: !connect", "W: SELECT @@autocommit", "W: SELECT COUNT(*) FROM t WHERE v >= 60")},
		{id: "sf11", class: c, desc: "SET @@autocommit = OFF in one form, back ON in another",
			steps: steps("S: SET @@autocommit = OFF", "S: SELECT @@autocommit", "S: SET SESSION autocommit = ON", rep("S", 3, "SELECT @@autocommit"),
				"S: SET @@local.autocommit = 0", "S: INSERT INTO t (v) VALUES (63)", rep("O", 3, "SELECT @@autocommit ;; "+trxProbe),
				"S: ROLLBACK", "S: SET @@autocommit := 1", "S: INSERT INTO t (v) VALUES (64)", "W: SELECT COUNT(*) FROM t WHERE v IN (63, 64)",
				rep("O", 3, "SELECT @@autocommit"))},
		{id: "sf12", class: c, desc: "a SET @@name that fails leaves everything as it was",
			steps: steps("S: SET @@time_zone = '+03:00', @@sql_mode = 'NO_SUCH_MODE'", "S: SET @@wait_timeout = 1234, @@max_join_size = 'abc'",
				"S: SET @@sql_select_limit = 2, @@no_such_variable = 1", rep("S", 4, fewProbe), rep("O", 4, fewProbe))},
		{id: "sf13", class: c, desc: "SET @@name inside a multi-statement query", multi: true,
			steps: steps("S: SELECT 1; SET @@time_zone = '+03:00'; SET @@sql_mode = 'ANSI_QUOTES'; SELECT 2", "S: SET @@wait_timeout = 1234; SELECT 3",
				"S*2: SELECT 1", rep("O", 4, fewProbe), rep("S", 4, fewProbe), "S: !quit", "S: !gone", rep("O", 3, fewProbe))},
		{id: "sf14", class: c, desc: "SET @@name in a prepared statement (binary protocol)",
			steps: steps("S: !prepare p SET @@time_zone = ?", "S: !exec p '+03:00'", "S: !prepare q SET @@wait_timeout = ?, @@sql_select_limit = ?",
				"S: !exec q 1234 2", "S*2: SELECT 1", rep("O", 4, fewProbe), rep("S", 4, fewProbe), "S: !quit", "S: !gone", rep("O", 3, fewProbe))},
		{id: "sf15", class: c, desc: "SET @@name by PREPARE and EXECUTE",
			steps: steps("S: PREPARE s FROM 'SET @@time_zone = ''+03:00'', @@wait_timeout = 1234'", "S: EXECUTE s",
				"S*2: SELECT 1", rep("O", 4, fewProbe), rep("S", 4, fewProbe), "S: !quit", "S: !gone", rep("O", 3, fewProbe))},
		{id: "sf16", class: c, desc: "a stored procedure that sets session variables in every form",
			steps: steps("S: CREATE PROCEDURE sem_p() BEGIN DECLARE wait_timeout INT DEFAULT 5; SET wait_timeout = 9; "+
				"SET @@time_zone = '+03:00'; SET @@session.sql_select_limit = 2; SET max_join_size = 1000000; SET LOCAL lock_wait_timeout = 77; END",
				"S: CALL sem_p()", "S*2: SELECT 1", rep("O", 4, fewProbe+", @@lock_wait_timeout"), rep("S", 4, fewProbe+", @@lock_wait_timeout"),
				"S: !quit", "S: !gone", rep("O", 3, fewProbe+", @@lock_wait_timeout"))},
		// The subject creates its programs itself: the suite's account may
		// not read the body of one root created, which makes it count as
		// stateful whatever it does.
		{id: "sf21", class: c, desc: "a stored procedure whose only SETs are SET @@name, which the server does not report",

			steps: steps("S: CREATE PROCEDURE sem_p() BEGIN SET @@time_zone = '+03:00'; SET @@wait_timeout = 1234; END", "S: CALL sem_p()", "S*2: SELECT 1", rep("O", 4, fewProbe), rep("S", 4, fewProbe),
				"S: !quit", "S: !gone", rep("O", 3, fewProbe))},
		{id: "sf22", class: c, desc: "a stored function that sets SET @@time_zone, called from a SELECT",

			steps: steps("S: CREATE FUNCTION sem_f() RETURNS INT BEGIN SET @@time_zone = '+03:00'; RETURN 1; END", "S: SELECT sem_f()", "S*2: SELECT 1", rep("O", 4, fewProbe), rep("S", 4, fewProbe),
				"S: !quit", "S: !gone", rep("O", 3, fewProbe))},
		{id: "sf23", class: c, desc: "a trigger that sets SET @@session.sql_select_limit",

			steps: steps("S: CREATE TRIGGER sem_tr BEFORE INSERT ON t FOR EACH ROW SET @@session.sql_select_limit = 2", "S: INSERT INTO t (v) VALUES (70)", "S*2: SELECT 1", rep("O", 4, fewProbe), rep("S", 4, fewProbe),
				"S: !quit", "S: !gone", rep("O", 3, fewProbe))},
		{id: "sf24", class: c, desc: "SET @@sql_select_limit = 0: tpproxy's own read-backs after later SETs are not bound by it",
			steps: steps("S: SET @@sql_select_limit = 0", "S: SET @@time_zone = '+03:00'", "S: SET NAMES latin1", "S: SET @@wait_timeout = 1234",
				"S*2: SELECT 1", rep("O", 4, fewProbe), "S: SET SESSION sql_select_limit = DEFAULT", rep("S", 4, fewProbe+", @@character_set_client"),
				"S: !quit", "S: !gone", rep("O", 3, fewProbe+", @@character_set_client"))},
		{id: "sf25", class: c, desc: "a function that sets SET @@time_zone, created by a later statement of a multi-statement query", multi: true,
			steps: steps("S: SELECT v FROM t WHERE id = 1", "S: SELECT 1; CREATE FUNCTION sem_f() RETURNS INT BEGIN SET @@time_zone = '+03:00'; RETURN 1; END",
				"S: SELECT sem_f()", "S*2: SELECT 1", rep("O", 4, fewProbe), rep("S", 4, fewProbe), "S: !quit", "S: !gone", rep("O", 3, fewProbe))},
		{id: "sf17", class: c, desc: "COM_CHANGE_USER after SET @@name: the server's defaults again",
			steps: steps("S: SET @@time_zone = '+03:00'", "S: SET @@sql_select_limit = 2", "S: !changeuser {{db}}", rep("S", 3, fewProbe), rep("O", 3, fewProbe))},
		{id: "sf18", class: c, desc: "COM_RESET_CONNECTION after SET @@name: the server's defaults again",
			steps: steps("S: SET @@time_zone = '+03:00'", "S: SET @@wait_timeout = 1234", "S: !reset", rep("S", 3, fewProbe), rep("O", 3, fewProbe))},
		{id: "sf19", class: c, desc: "SET @@name back to the default value, and to DEFAULT",
			steps: steps(sfOne("S", "@@%s = %s"), rep("S", 2, p), sfOne("S", "@@%s = DEFAULT"), rep("S", 3, p), rep("O", 3, p),
				"S: SET @@time_zone = '+03:00'", "S: SET @@time_zone = @@global.time_zone", rep("S", 3, "SELECT @@time_zone"))},
		{id: "sf26", class: c, desc: "one SET assigns a variable DEFAULT and then a value: the value holds",
			steps: steps("S: SET time_zone = DEFAULT, time_zone = '+03:00'", "S: SET SESSION wait_timeout = DEFAULT, @@wait_timeout = 1234, sql_select_limit = 2",
				"S*2: SELECT 1", rep("O", 4, fewProbe), rep("S", 4, fewProbe), "S: !quit", "S: !gone", rep("O", 3, fewProbe))},
		{id: "sf20", class: c, desc: "SET @@name from an expression and a subquery",
			steps: steps("S: SET @@sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')", "S: SET @@time_zone = (SELECT '+03:00')",
				"S: SET @@wait_timeout = @@wait_timeout + 1", rep("S", 4, fewProbe), rep("O", 4, fewProbe))},
	}
}
