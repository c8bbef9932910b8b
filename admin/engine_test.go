package admin

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// These tests run the SQL engine over fixed rows, without a server: the
// live views are tested against a running proxy in tables_test.go.

// fixedRows are the views' rows in the engine tests: 4 groups, 6
// sessions, 3 of them queued.
func fixedRows(t *table) [][]any {
	switch t.name {
	case "THREAD_POOL_GROUPS":
		var rows [][]any
		for g := range 4 {
			stalled := int64(0)
			if g == 2 {
				stalled = 1
			}
			// GROUP_ID CONNECTIONS THREADS ACTIVE_THREADS STANDBY_THREADS QUEUE_LENGTH HAS_LISTENER IS_STALLED
			// CAPACITY EXTRA PINNED STALLED_STATEMENTS QUEUE_HIGH QUEUE_LOW
			rows = append(rows, []any{int64(g), int64(g + 1), int64(2), int64(1), int64(1), int64(g % 2), int64(1), stalled,
				int64(4), int64(0), int64(0), stalled, int64(0), int64(g % 2)})
		}
		return rows
	case "THREAD_POOL_STATS":
		var rows [][]any
		for g := range 4 {
			row := make([]any, len(t.cols))
			for i := range row {
				row[i] = int64(0)
			}
			row[0] = int64(g)
			row[11] = int64(100 * (g + 1)) // ADMITTED
			row[13] = int64(10 * g)        // QUEUED
			row[14] = int64(1000 * g)      // QUEUE_WAIT_MICROSECONDS
			rows = append(rows, row)
		}
		return rows
	case "PROCESSLIST":
		var rows [][]any
		for i := range 6 {
			info := any(nil)
			cmd, state := "Sleep", "idle"
			if i%2 == 1 {
				info, cmd, state = fmt.Sprintf("SELECT SLEEP(%d)", i), "Query", "executing"
			}
			rows = append(rows, []any{int64(i + 1), "app", "127.0.0.1", "sbtest", cmd, int64(i), state, info,
				float64(i) * 1000.5, int64(i % 4), nil, int64(0), nil})
		}
		return rows
	case "GLOBAL_VARIABLES":
		return [][]any{{"THREAD_POOL_SIZE", "4"}, {"THREAD_POOL_STALL_LIMIT", "500"}, {"THREAD_POOL_HIGH_PRIO_MODE", "statements"}}
	}
	return nil
}

// testEnv is a connection's translateEnv with fixed values.
var testEnv = translateEnv{
	sysVar: func(sc scope, name string) (any, error) {
		switch name {
		case "thread_pool_size":
			return int64(4), nil
		case "version":
			return serverVersion, nil
		}
		return nil, unknownVariable(name)
	},
	connID: 7, user: "admin@127.0.0.1", version: serverVersion,
	now:  func() string { return "2026-12-03 10:00:00" },
	unix: func() int64 { return 1796292000 },
}

func newTestEngine(t testing.TB) *engine {
	t.Helper()
	e, err := newEngine(tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	return e
}

// run translates and runs q.
func (e *engine) run(t testing.TB, q string) (*mysql.Result, error) {
	tr, err := translate(q, testEnv)
	if err != nil {
		return nil, err
	}
	return e.query(t.Context(), q, tr, fixedRows)
}

// textRows decodes a text result set; NULL is "NULL".
func textRows(t testing.TB, res *mysql.Result) (cols []string, rows [][]string) {
	t.Helper()
	for _, f := range res.Fields {
		cols = append(cols, string(f.Name))
	}
	for _, rd := range res.RowDatas {
		var row []string
		for p := []byte(rd); len(p) > 0; {
			if p[0] == 0xfb {
				row = append(row, "NULL")
				p = p[1:]
				continue
			}
			n, _, k := mysql.LengthEncodedInt(p)
			row = append(row, string(p[k:k+int(n)]))
			p = p[k+int(n):]
		}
		rows = append(rows, row)
	}
	return cols, rows
}

func TestEngineQueries(t *testing.T) {
	e := newTestEngine(t)
	// A COUNT(*) reads no column: the view must be filled all the same
	// (by a new engine, so that no earlier query has filled it).
	// So must the left table of a JOIN USING, which SQLite's authorizer
	// does not name.
	for _, q := range []string{"SELECT COUNT(*) FROM PROCESSLIST", "SELECT COUNT(*) FROM information_schema.THREAD_POOL_STATS",
		"SELECT COUNT(*) FROM PROCESSLIST p JOIN `thread_pool_groups` g USING (GROUP_ID)"} {
		res, err := newTestEngine(t).run(t, q)
		if err != nil {
			t.Fatal(err)
		}
		if _, rows := textRows(t, res); rows[0][0] == "0" {
			t.Errorf("%s: %v", q, rows)
		}
	}
	for _, c := range []struct {
		q    string
		cols []string
		rows [][]string
	}{
		// What a DBA runs against MariaDB's thread pool views.
		{"SELECT COUNT(*) FROM information_schema.THREAD_POOL_GROUPS", []string{"COUNT(*)"}, [][]string{{"4"}}},
		{"SELECT SUM(CONNECTIONS), SUM(QUEUE_LENGTH) FROM information_schema.THREAD_POOL_GROUPS",
			[]string{"SUM(CONNECTIONS)", "SUM(QUEUE_LENGTH)"}, [][]string{{"10", "2"}}},
		{"SELECT IS_STALLED, COUNT(*) AS n FROM information_schema.THREAD_POOL_GROUPS GROUP BY IS_STALLED",
			[]string{"IS_STALLED", "n"}, [][]string{{"0", "3"}, {"1", "1"}}},
		{"SELECT g.GROUP_ID, g.CONNECTIONS, s.ADMITTED FROM information_schema.THREAD_POOL_GROUPS g " +
			"JOIN information_schema.THREAD_POOL_STATS s ON s.GROUP_ID = g.GROUP_ID WHERE s.QUEUED > 0 ORDER BY g.GROUP_ID",
			[]string{"GROUP_ID", "CONNECTIONS", "ADMITTED"}, [][]string{{"1", "2", "200"}, {"2", "3", "300"}, {"3", "4", "400"}}},
		{"SELECT MAX(GROUP_ID)+1 FROM information_schema.THREAD_POOL_GROUPS", []string{"MAX(GROUP_ID)+1"}, [][]string{{"4"}}},
		{"SELECT ID, INFO FROM information_schema.PROCESSLIST WHERE INFO LIKE 'select sleep%' ORDER BY ID",
			[]string{"ID", "INFO"}, [][]string{{"2", "SELECT SLEEP(1)"}, {"4", "SELECT SLEEP(3)"}, {"6", "SELECT SLEEP(5)"}}},
		{"SELECT COMMAND, COUNT(*) FROM information_schema.PROCESSLIST GROUP BY COMMAND HAVING COUNT(*) > 2 ORDER BY 1",
			[]string{"COMMAND", "COUNT(*)"}, [][]string{{"Query", "3"}, {"Sleep", "3"}}},
		{"SELECT GROUP_ID FROM THREAD_POOL_GROUPS WHERE CONNECTIONS > (SELECT AVG(CONNECTIONS) FROM THREAD_POOL_GROUPS)",
			[]string{"GROUP_ID"}, [][]string{{"2"}, {"3"}}},
		// Identifiers in any case, bare names, backticks, strings ignoring case.
		{"select group_id from Information_Schema.thread_pool_groups where `Group_Id` in (1, 3)",
			[]string{"group_id"}, [][]string{{"1"}, {"3"}}},
		{"SELECT COUNT(*) FROM PROCESSLIST WHERE state = \"EXECUTING\"", []string{"COUNT(*)"}, [][]string{{"3"}}},
		// MariaDB's arithmetic and functions.
		{"SELECT SUM(QUEUE_WAIT_MICROSECONDS) / SUM(QUEUED), 7 DIV 2, 7 MOD 2 FROM THREAD_POOL_STATS",
			[]string{"SUM(QUEUE_WAIT_MICROSECONDS) / SUM(QUEUED)", "7 DIV 2", "7 MOD 2"}, [][]string{{"100", "3", "1"}}},
		{"SELECT 7/2, 1/0, IF(1 > 2, 'a', 'b'), CONCAT('x', 1), IFNULL(NULL, 5)",
			[]string{"7/2", "1/0", "IF(1 > 2, 'a', 'b')", "CONCAT('x', 1)", "IFNULL(NULL, 5)"}, [][]string{{"3.5", "NULL", "b", "x1", "5"}}},
		{"SELECT 'it\\'s', \"a\"\"b\", 'x' REGEXP '^X$', 1 || 0, 1 && 0, !1, NULL <=> NULL FROM DUAL",
			[]string{"it's", "a\"b", "'x' REGEXP '^X$'", "1 || 0", "1 && 0", "!1", "NULL <=> NULL"},
			[][]string{{"it's", "a\"b", "1", "1", "0", "0", "1"}}},
		{"SELECT GROUP_CONCAT(GROUP_ID ORDER BY GROUP_ID SEPARATOR ';') FROM THREAD_POOL_GROUPS",
			[]string{"GROUP_CONCAT(GROUP_ID ORDER BY GROUP_ID SEPARATOR ';')"}, [][]string{{"0;1;2;3"}}},
		{"SELECT ID FROM PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP\\(1%' ", []string{"ID"}, [][]string{{"2"}}},
		{"SELECT @@thread_pool_size, @@global.thread_pool_size * 2 AS twice, CONNECTION_ID(), USER(), NOW()",
			[]string{"@@thread_pool_size", "twice", "CONNECTION_ID()", "USER()", "NOW()"},
			[][]string{{"4", "8", "7", "admin@127.0.0.1", "2026-12-03 10:00:00"}}},
		{"SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME = 'thread_pool_size'",
			[]string{"VARIABLE_VALUE"}, [][]string{{"4"}}},
		// Values compare as numbers where they are numbers, as MariaDB
		// compares a string with a number.
		{"SELECT VARIABLE_NAME FROM GLOBAL_VARIABLES WHERE VARIABLE_VALUE > 5 AND VARIABLE_VALUE < 1000", []string{"VARIABLE_NAME"},
			[][]string{{"THREAD_POOL_STALL_LIMIT"}}},
		{"SELECT VARIABLE_NAME FROM GLOBAL_VARIABLES WHERE VARIABLE_VALUE = '500' OR VARIABLE_VALUE = 'STATEMENTS'",
			[]string{"VARIABLE_NAME"}, [][]string{{"THREAD_POOL_STALL_LIMIT"}, {"THREAD_POOL_HIGH_PRIO_MODE"}}},
		{"WITH q AS (SELECT GROUP_ID, QUEUE_LENGTH FROM THREAD_POOL_GROUPS) SELECT COUNT(*) FROM q WHERE QUEUE_LENGTH > 0",
			[]string{"COUNT(*)"}, [][]string{{"2"}}},
		{"SELECT GROUP_ID FROM THREAD_POOL_GROUPS ORDER BY GROUP_ID DESC LIMIT 1, 2", []string{"GROUP_ID"}, [][]string{{"2"}, {"1"}}},
		{"SELECT GROUP_ID FROM THREAD_POOL_GROUPS LIMIT 2 OFFSET 3", []string{"GROUP_ID"}, [][]string{{"3"}}},
		{"SELECT TIME_MS FROM PROCESSLIST WHERE ID = 3", []string{"TIME_MS"}, [][]string{{"2001"}}},
		{"SELECT * FROM THREAD_POOL_WAITS", []string{"REASON", "COUNT"}, nil},
		{"SELECT 1 /* a comment */ + 1 AS two; ", []string{"two"}, [][]string{{"2"}}},
		{"SELECT 1 AS a UNION ALL SELECT 2 ORDER BY a DESC", []string{"a"}, [][]string{{"2"}, {"1"}}},
	} {
		res, err := e.run(t, c.q)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		cols, rows := textRows(t, res)
		if !reflect.DeepEqual(cols, c.cols) || !reflect.DeepEqual(rows, c.rows) {
			t.Errorf("%s:\n got %q %q\nwant %q %q", c.q, cols, rows, c.cols, c.rows)
		}
	}
}

// TestEngineTypes: result columns are typed as MariaDB would type them,
// so that drivers scan integers as integers.
func TestEngineTypes(t *testing.T) {
	e := newTestEngine(t)
	res, err := e.run(t, "SELECT g.GROUP_ID, COUNT(*), 7/2, 'x', NULL, INFO FROM THREAD_POOL_GROUPS g, PROCESSLIST p WHERE ID = 1 AND g.GROUP_ID = 0")
	if err != nil {
		t.Fatal(err)
	}
	want := []uint8{mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_DOUBLE,
		mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_VAR_STRING}
	for i, f := range res.Fields {
		if f.Type != want[i] {
			t.Errorf("column %s: type %d, want %d", f.Name, f.Type, want[i])
		}
	}
	// An empty result keeps the views' types.
	res, err = e.run(t, "SELECT g.GROUP_ID, STATE FROM THREAD_POOL_GROUPS g, PROCESSLIST WHERE 0")
	if err != nil {
		t.Fatal(err)
	}
	if res.Fields[0].Type != mysql.MYSQL_TYPE_LONGLONG || res.Fields[1].Type != mysql.MYSQL_TYPE_VAR_STRING {
		t.Errorf("empty result: types %d %d", res.Fields[0].Type, res.Fields[1].Type)
	}
}

func TestEngineErrors(t *testing.T) {
	e := newTestEngine(t)
	for _, c := range []struct {
		q    string
		code uint16
		msg  string
	}{
		{"SELECT * FROM THREAD_POOL_NOPE", mysql.ER_NO_SUCH_TABLE, "Table 'information_schema.THREAD_POOL_NOPE' doesn't exist"},
		{"SELECT * FROM mysql.user", mysql.ER_NO_SUCH_TABLE, "Table 'mysql.user' doesn't exist"},
		{"SELECT * FROM information_schema.nope", mysql.ER_UNKNOWN_TABLE, "Unknown table 'nope' in information_schema"},
		{"SELECT * FROM sqlite_master", mysql.ER_NO_SUCH_TABLE, "Table 'main.sqlite_master' doesn't exist"},
		{"SELECT NOPE FROM THREAD_POOL_GROUPS", mysql.ER_BAD_FIELD_ERROR, "Unknown column 'NOPE' in 'field list'"},
		{"SELECT * FROM THREAD_POOL_GROUPS WHERE nope = 1", mysql.ER_BAD_FIELD_ERROR, "Unknown column 'nope' in 'where clause'"},
		{"SELECT * FROM THREAD_POOL_GROUPS ORDER BY nope", mysql.ER_BAD_FIELD_ERROR, "Unknown column 'nope' in 'order clause'"},
		{"SELECT COUNT(*) FROM THREAD_POOL_GROUPS GROUP BY nope", mysql.ER_BAD_FIELD_ERROR, "Unknown column 'nope' in 'group statement'"},
		{"SELECT * FROM THREAD_POOL_GROUPS g JOIN THREAD_POOL_STATS s ON g.nope = s.GROUP_ID", mysql.ER_BAD_FIELD_ERROR,
			"Unknown column 'g.nope' in 'on clause'"},
		{"SELECT GROUP_ID FROM THREAD_POOL_GROUPS ORDER BY 2", mysql.ER_BAD_FIELD_ERROR, "Unknown column '2' in 'order clause'"},
		{"SELECT GROUP_ID, 1 FROM THREAD_POOL_GROUPS ORDER BY 1 DESC, 3", mysql.ER_BAD_FIELD_ERROR, "Unknown column '3' in 'order clause'"},
		{"SELECT GROUP_ID FROM THREAD_POOL_GROUPS, THREAD_POOL_STATS", mysql.ER_NON_UNIQ_ERROR, "Column 'GROUP_ID' in field list is ambiguous"},
		{"SELECT * FORM THREAD_POOL_GROUPS", mysql.ER_PARSE_ERROR, "syntax error near 'FORM THREAD_POOL_GROUPS' at line 1"},
		{"SELECT *\nFROM THREAD_POOL_GROUPS\nWHERE GROUP_ID = = 1", mysql.ER_PARSE_ERROR, "syntax error near '= 1' at line 3"},
		{"SELECT * FROM THREAD_POOL_GROUPS WHERE", mysql.ER_PARSE_ERROR, "syntax error near '' at line 1"},
		{"SELECT 1; SELECT 2", mysql.ER_PARSE_ERROR, "syntax error near '; SELECT 2' at line 1"},
		{"SELECT NOFUNC(1)", mysql.ER_SP_DOES_NOT_EXIST, "FUNCTION information_schema.NOFUNC does not exist"},
		{"SELECT SUM(COUNT(*)) FROM THREAD_POOL_GROUPS", mysql.ER_INVALID_GROUP_FUNC_USE, "Invalid use of group function"},
		{"SELECT 1 UNION SELECT 1, 2", mysql.ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT, "different number of columns"},
		{"SELECT @@nope", mysql.ER_UNKNOWN_SYSTEM_VARIABLE, "Unknown system variable 'nope'"},
		{"SELECT @@x + 1", mysql.ER_UNKNOWN_SYSTEM_VARIABLE, "Unknown system variable 'x'"},
		{"SELECT @a", mysql.ER_PARSE_ERROR, "unsupported statement"},
		// Nothing but reading the views: no writes, attach or pragma.
		{"WITH x AS (SELECT 1) DELETE FROM THREAD_POOL_GROUPS", mysql.ER_PARSE_ERROR, "only SELECT"},
		{"SELECT * FROM pragma_table_info('THREAD_POOL_GROUPS')", mysql.ER_NO_SUCH_TABLE, "doesn't exist"},
	} {
		_, err := e.run(t, c.q)
		if err == nil {
			t.Errorf("%s: no error", c.q)
			continue
		}
		me := toMySQL(err)
		if me.Code != c.code || !strings.Contains(me.Message, c.msg) {
			t.Errorf("%s:\n got %d %q\nwant %d %q", c.q, me.Code, me.Message, c.code, c.msg)
		}
	}
	// The engine still answers after every error.
	if _, err := e.run(t, "SELECT COUNT(*) FROM THREAD_POOL_GROUPS"); err != nil {
		t.Fatal(err)
	}
}

// TestEngineLimits: a runaway query is interrupted with MariaDB's
// max_statement_time error and the engine answers the next one.
func TestEngineLimits(t *testing.T) {
	e := newTestEngine(t)
	e.timeout = 200 * time.Millisecond
	start := time.Now()
	_, err := e.run(t, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c")
	if me := toMySQL(err); me.Code != erStatementTimeout {
		t.Fatalf("runaway query: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("interrupted after %v", d)
	}
	e.timeout = queryTimeout
	_, err = e.run(t, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) "+
		"SELECT zeroblob(100000) FROM c")
	if me := toMySQL(err); !errors.Is(err, errTooBig) || me.Code != mysql.ER_OUT_OF_RESOURCES {
		t.Fatalf("huge result: %v", err)
	}
	// A value SQLite makes for free must not become a huge Go value.
	_, err = e.run(t, "SELECT zeroblob(1000000000)")
	if !errors.Is(err, errTooBig) || toMySQL(err).Code != mysql.ER_OUT_OF_RESOURCES {
		t.Fatalf("zeroblob(1e9): %v", err)
	}
	if _, err := e.run(t, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
}

func TestTranslate(t *testing.T) {
	for _, c := range []struct{ q, sql string }{
		{"SELECT a/b FROM t", "SELECT a*1.0/b FROM t"},
		{"select 'it\\'s' like 'a\\_b'", "select 'it''s' like 'a\\_b' ESCAPE '\\'"},
		{"SELECT \"x\" FROM DUAL", "SELECT 'x'"},
		{"SELECT a || b && !c, a <=> b", "SELECT a  OR  b  AND   NOT c, a  IS  b"},
		{"SELECT `a``b` /* c */ FROM t -- d", "SELECT `a``b` FROM t"},
		{"SELECT GROUP_CONCAT(DISTINCT a ORDER BY b DESC SEPARATOR '-') FROM t",
			"SELECT GROUP_CONCAT(DISTINCT a , '-' ORDER BY b DESC) FROM t"},
		{"SELECT @@thread_pool_size, @@version", "SELECT 4, '" + serverVersion + "'"},
		{"SELECT now(), unix_timestamp(), Connection_Id(), database()", "SELECT '2026-12-03 10:00:00', 1796292000, 7, NULL"},
	} {
		tr, err := translate(c.q, testEnv)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if tr.sql != c.sql {
			t.Errorf("%s:\n got %q\nwant %q", c.q, tr.sql, c.sql)
		}
	}
}

// FuzzEngine: no query may panic the engine or leave it unable to answer,
// and every error is one with a MariaDB code.
func FuzzEngine(f *testing.F) {
	for _, s := range []string{
		"SELECT COUNT(*) FROM information_schema.THREAD_POOL_GROUPS",
		"SELECT g.GROUP_ID, SUM(s.QUEUED)/COUNT(*) FROM THREAD_POOL_GROUPS g JOIN THREAD_POOL_STATS s USING (GROUP_ID) GROUP BY 1 HAVING 1",
		"SELECT * FROM PROCESSLIST WHERE INFO LIKE '%\\%%' ORDER BY ID DESC LIMIT 2",
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 5) SELECT x FROM c",
		"SELECT @@thread_pool_size, NOW(), 'a' REGEXP '('", "SELECT * FROM sqlite_master", "SELECT 1; DROP TABLE x",
		"SELECT zeroblob(1000000000)", "SELECT (SELECT 1, 2)", "SELECT `", "SELECT x'41'",
	} {
		f.Add(s)
	}
	e := newTestEngine(f)
	e.timeout = time.Second
	f.Fuzz(func(t *testing.T, q string) {
		st, err := parse(q)
		if err != nil {
			return
		}
		sel, ok := st.(selectSQL)
		if !ok {
			return
		}
		_, err = e.run(t, sel.q)
		if err != nil {
			me := toMySQL(err)
			if me.Code == 0 || me.Message == "" || strings.Contains(me.Message, "filling the views") {
				t.Fatalf("%q: error %d %q", q, me.Code, me.Message)
			}
		}
		if _, err := e.run(t, "SELECT COUNT(*) FROM THREAD_POOL_GROUPS"); err != nil {
			t.Fatalf("after %q: %v", q, err)
		}
	})
}

func TestShowViews(t *testing.T) {
	run := func(q string) (*mysql.Result, error) {
		st, err := parse(q)
		if err != nil {
			return nil, err
		}
		return (&Server{}).run(t.Context(), &handler{}, st)
	}
	res, err := run("SHOW TABLES LIKE 'thread_pool%'")
	if err != nil {
		t.Fatal(err)
	}
	cols, rows := textRows(t, res)
	want := [][]string{{"THREAD_POOL_GROUPS"}, {"THREAD_POOL_QUEUES"}, {"THREAD_POOL_STATS"}, {"THREAD_POOL_WAITS"}}
	if !reflect.DeepEqual(cols, []string{"Tables_in_information_schema"}) || !reflect.DeepEqual(rows, want) {
		t.Errorf("SHOW TABLES: %q %q", cols, rows)
	}
	if res, err = run("SHOW TABLES"); err != nil || len(res.RowDatas) != len(tables) {
		t.Errorf("SHOW TABLES: %v, %d rows", err, len(res.RowDatas))
	}
	res, err = run("DESCRIBE information_schema.processlist")
	if err != nil {
		t.Fatal(err)
	}
	_, rows = textRows(t, res)
	if len(rows) != 13 || !reflect.DeepEqual(rows[0][:2], []string{"ID", "bigint(21)"}) || !reflect.DeepEqual(rows[8][:2], []string{"TIME_MS", "double"}) {
		t.Errorf("DESCRIBE PROCESSLIST: %q", rows)
	}
	for _, c := range []struct {
		q    string
		code uint16
	}{
		{"SHOW TABLES FROM mysql", mysql.ER_BAD_DB_ERROR},
		{"SHOW COLUMNS FROM nope", mysql.ER_UNKNOWN_TABLE},
		{"DESC mysql.user", mysql.ER_BAD_DB_ERROR},
	} {
		if _, err := run(c.q); toMySQL(err).Code != c.code {
			t.Errorf("%s: %v, want %d", c.q, err, c.code)
		}
	}
}
