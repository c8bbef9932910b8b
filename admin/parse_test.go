package admin

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tpproxy/tpproxy/scheduler"
)

func strp(s string) *string { return &s }

func TestParse(t *testing.T) {
	for _, c := range []struct {
		q    string
		want statement
	}{
		{"SHOW VARIABLES", showVariables{}},
		{"  show global variables like 'thread\\_pool%' ; ", showVariables{like: strp(`thread\_pool%`)}},
		{"SHOW SESSION VARIABLES LIKE \"x\"", showVariables{like: strp("x")}},
		{"show status;", showStatus{}},
		{"SHOW GLOBAL STATUS LIKE 'Thread%'", showStatus{like: strp("Thread%")}},
		{"SHOW PROCESSLIST", showProcesslist{}},
		{"show full processlist;;", showProcesslist{full: true}},
		{"SHOW TABLES", showTables{}},
		{"show full tables from INFORMATION_SCHEMA like 'thread%'", showTables{db: "INFORMATION_SCHEMA", like: strp("thread%")}},
		{"SHOW COLUMNS FROM information_schema.PROCESSLIST LIKE 'pin%'", showColumns{db: "information_schema", table: "PROCESSLIST", like: strp("pin%")}},
		{"show fields in thread_pool_groups in information_schema", showColumns{db: "information_schema", table: "thread_pool_groups"}},
		{"DESCRIBE `THREAD_POOL_STATS`", showColumns{table: "THREAD_POOL_STATS"}},
		{"desc information_schema.processlist;", showColumns{db: "information_schema", table: "processlist"}},
		{"FLUSH THREAD_POOL_STATS", flushStats{}},
		{"/* hint */ flush thread_pool_stats -- done", flushStats{}},
		{"FLUSH HOSTS", flushHosts{}},
		{"flush hosts;", flushHosts{}},
		{"KILL 12", kill{id: "12"}},
		{"kill connection 12", kill{id: "12"}},
		{"KILL QUERY 99999999999", kill{query: true, id: "99999999999"}},
		{"select @@version_comment limit 1", selectVars{
			items: []varItem{{name: "version_comment", header: "@@version_comment"}}, limit: limit{count: 1}}},
		{"SELECT @@GLOBAL.Thread_Pool_Size AS s, @@session.x", selectVars{items: []varItem{
			{scope: scopeGlobal, name: "thread_pool_size", header: "s"},
			{scope: scopeSession, name: "x", header: "@@session.x"}}, limit: noLimit}},
		{"SET GLOBAL thread_pool_size = 4", setStmt{[]assignment{
			{scope: scopeGlobal, name: "thread_pool_size", value: literal{tokNumber, "4"}}}}},
		{"set @@global.THREAD_POOL_SIZE := -4, thread_pool_algorithm='Generic'", setStmt{[]assignment{
			{scope: scopeGlobal, name: "thread_pool_size", value: literal{tokNumber, "-4"}},
			{scope: scopeNone, name: "thread_pool_algorithm", value: literal{tokString, "Generic"}}}}},
		{"SET GLOBAL a=1, b=on, SESSION c=2, d=3, @@global.e=default", setStmt{[]assignment{
			{scope: scopeGlobal, name: "a", value: literal{tokNumber, "1"}},
			{scope: scopeGlobal, name: "b", value: literal{tokWord, "on"}},
			{scope: scopeSession, name: "c", value: literal{tokNumber, "2"}},
			{scope: scopeSession, name: "d", value: literal{tokNumber, "3"}},
			{scope: scopeGlobal, name: "e", value: literal{tokWord, "default"}}}}},
		{"SET NAMES utf8mb4 COLLATE 'utf8mb4_bin', CHARACTER SET latin1, autocommit=1", setStmt{[]assignment{
			{charset: true}, {charset: true}, {name: "autocommit", value: literal{tokNumber, "1"}}}}},
		{"SELECT * FROM information_schema.THREAD_POOL_GROUPS", selectSQL{q: "SELECT * FROM information_schema.THREAD_POOL_GROUPS"}},
		{"select count(*) from thread_pool_groups;", selectSQL{q: "select count(*) from thread_pool_groups;"}},
		{"SELECT @@thread_pool_size * 2", selectSQL{q: "SELECT @@thread_pool_size * 2"}},
		{"SELECT @@version, COUNT(*) FROM PROCESSLIST", selectSQL{q: "SELECT @@version, COUNT(*) FROM PROCESSLIST"}},
		{"WITH g AS (SELECT 1) SELECT * FROM g", selectSQL{q: "WITH g AS (SELECT 1) SELECT * FROM g"}},
	} {
		got, err := parse(c.q)
		if err != nil {
			t.Errorf("%q: %v", c.q, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q:\n got %#v\nwant %#v", c.q, got, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		q    string
		kind error
	}{
		{"", errEmpty},
		{" ; ", errEmpty},
		{"/* only a comment */", errEmpty},
		{"SHOW DATABASES", errUnsupported},
		{"SHOW COLUMNS t", errSyntax},
		{"DESCRIBE", errSyntax},
		{"FLUSH TABLES", errUnsupported},
		{"DROP TABLE t", errUnsupported},
		{"SET @x = 1", errUnsupported},
		{"BEGIN", errUnsupported},
		{"SHOW VARIABLES LIKE", errSyntax},
		{"SHOW VARIABLES LIKE x", errSyntax},
		{"SHOW VARIABLES x", errSyntax},
		{"SET GLOBAL thread_pool_size", errSyntax},
		{"SET GLOBAL thread_pool_size =", errSyntax},
		{"SET GLOBAL thread_pool_size = -x", errSyntax},
		{"SET @@foo.bar = 1", errSyntax},
		{"KILL", errSyntax},
		{"KILL abc", errSyntax},
		{"KILL 1.5", errSyntax},
		{"SELECT 'open", errSyntax},
		{"SELECT @@version; SELECT @@version", errSyntax},
		{"/* unterminated", errSyntax},
		{"SHOW STATUS ?", errSyntax},
		{"SHOW STATUS || 1", errSyntax},
		{"SELECT 1 \\ 2", errSyntax},
	} {
		_, err := parse(c.q)
		if !errors.Is(err, c.kind) {
			t.Errorf("%q: error %v, want %v", c.q, err, c.kind)
		}
	}
}

func TestUnsupportedMessage(t *testing.T) {
	_, err := parse("DROP TABLE t")
	me := toMySQL(err)
	if me.Code != mysql.ER_PARSE_ERROR || me.Message != unsupportedMsg {
		t.Errorf("got %d %q", me.Code, me.Message)
	}
}

func TestToMySQL(t *testing.T) {
	for _, c := range []struct {
		err  error
		code uint16
		msg  string
	}{
		{unknownVariable("x"), 1193, "Unknown system variable 'x'"},
		{readOnly("backend_pool_size"), 1238, "Variable 'backend_pool_size' is a read only variable"},
		{notSession("thread_pool_size"), 1238, "Variable 'thread_pool_size' is a GLOBAL variable"},
		{globalOnly("thread_pool_size"), 1229, "Variable 'thread_pool_size' is a GLOBAL variable and should be set with SET GLOBAL"},
		{wrongValue("thread_pool_size", "0"), 1231, "Variable 'thread_pool_size' can't be set to the value of '0'"},
		{wrongType("thread_pool_size"), 1232, "Incorrect argument type to variable 'thread_pool_size'"},
		{unknownColumn("X", "where clause"), 1054, "Unknown column 'X' in 'where clause'"},
		{unknownTable("T", "information_schema"), 1109, "Unknown table 'T' in information_schema"},
		{noSuchThread("7"), 1094, "Unknown thread id: 7"},
		{newErr(errEmpty, "Query was empty"), 1065, "Query was empty"},
		{mysql.NewError(1045, "denied"), 1045, "denied"},
		{errors.New("boom"), mysql.ER_UNKNOWN_ERROR, "tpproxy admin: boom"},
	} {
		me := toMySQL(c.err)
		if me.Code != c.code || me.Message != c.msg {
			t.Errorf("%v: got %d %q, want %d %q", c.err, me.Code, me.Message, c.code, c.msg)
		}
	}
}

func TestLikeMatch(t *testing.T) {
	for _, c := range []struct {
		s, p string
		want bool
	}{
		{"thread_pool_size", "thread_pool_size", true},
		{"thread_pool_size", "THREAD_POOL_SIZE", true},
		{"thread_pool_size", "thread%", true},
		{"thread_pool_size", "%size", true},
		{"thread_pool_size", "%pool%", true},
		{"thread_pool_size", "thread_pool_siz_", true},
		{"thread_pool_size", "thread_pool_si_", false},
		{"thread_pool_size", `thread\_pool\_size`, true},
		{"threadXpool_size", `thread\_pool%`, false},
		{"threadXpool_size", `thread_pool%`, true},
		{"a%b", `a\%b`, true},
		{"axb", `a\%b`, false},
		{"", "%", true},
		{"", "_", false},
		{"abc", "", false},
		{"aaa", "%a%a%a%", true},
		{"aa", "%a%a%a%", false},
		{"Ünïcödé", "ü%É", true},
		{"mississippi", "m%iss%ppi", true},
		{"mississippi", "m%iss%pp", false},
	} {
		if got := likeMatch(c.s, c.p); got != c.want {
			t.Errorf("%q LIKE %q = %v, want %v", c.s, c.p, got, c.want)
		}
	}
}

// TestSysVars checks the variable table: sorted for lookupVar, every
// setting round-trips through its own text, and enum numbers are the
// scheduler's order.
func TestSysVars(t *testing.T) {
	if !slices.IsSortedFunc(sysVars, func(a, b sysVar) int { return strings.Compare(a.name, b.name) }) {
		t.Fatal("sysVars not sorted by name")
	}
	d := scheduler.DefaultConfig()
	for _, v := range sysVars {
		if lookupVar(v.name) == nil {
			t.Errorf("lookupVar(%q) = nil", v.name)
		}
		if v.setting == nil {
			continue
		}
		val := v.setting.get(d)
		lit := literal{kind: tokWord, text: ""}
		switch val := val.(type) {
		case int64:
			lit = literal{kind: tokNumber, text: strconv.FormatInt(val, 10)}
		case string:
			lit.text = val
		}
		var c scheduler.Config
		if err := v.setting.set(&c, lit); err != nil {
			t.Errorf("%s: set(%v): %v", v.name, lit, err)
			continue
		}
		if got := v.setting.get(c); got != val {
			t.Errorf("%s: round trip %v -> %v", v.name, val, got)
		}
	}
	for i, name := range []string{"generic", "enterprise"} {
		if a, err := scheduler.ParseAlgorithm(name); err != nil || int(a) != i {
			t.Errorf("algorithm %s is %d (%v), want %d", name, a, err, i)
		}
	}
	for i, name := range []string{"transactions", "statements", "none"} {
		if m, err := scheduler.ParseHighPrioMode(name); err != nil || int(m) != i {
			t.Errorf("high_prio_mode %s is %d (%v), want %d", name, m, err, i)
		}
	}
}

func TestLimitApply(t *testing.T) {
	rows := [][]any{{int64(0)}, {int64(1)}, {int64(2)}}
	for _, c := range []struct {
		l    limit
		want int
	}{{noLimit, 3}, {limit{count: 2}, 2}, {limit{count: 0}, 0}, {limit{count: 5, offset: 2}, 1}, {limit{count: -1, offset: 9}, 0}} {
		if got := len(c.l.apply(rows)); got != c.want {
			t.Errorf("%+v: %d rows, want %d", c.l, got, c.want)
		}
	}
}

// FuzzParse: no input may panic the parser, and what it accepts it
// accepts again with a trailing semicolon.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SHOW VARIABLES LIKE 'thread%'", "SET GLOBAL thread_pool_size = 4, thread_pool_algorithm='enterprise'",
		"SELECT GROUP_ID g FROM information_schema.THREAD_POOL_GROUPS WHERE GROUP_ID >= 1 ORDER BY 1 DESC LIMIT 1, 2",
		"select @@version_comment, 1", "SELECT @@x; SELECT 1",
		"select @@version_comment limit 1", "KILL QUERY 5", "SHOW FULL PROCESSLIST", "SET NAMES utf8mb4 COLLATE x",
		"'\\", "`a``b`", "/*", "@@", "1e", ".5e+3x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		st, err := parse(q)
		if err != nil {
			var se *stmtError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %v is not a statement error", q, err)
			}
			return
		}
		if strings.Contains(q, "--") || strings.Contains(q, "#") {
			return // a trailing ';' would be commented out
		}
		st2, err := parse(q + ";")
		if _, ok := st.(selectSQL); ok && err == nil {
			// The engine reads the text; it takes the ';' too.
			st2 = selectSQL{q: q}
		}
		if err != nil || !reflect.DeepEqual(st, st2) {
			t.Fatalf("%q parses, with ';' it gives %#v, %v", q, st2, err)
		}
	})
}
