package proxy

import (
	"testing"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

func TestKillOwnForm(t *testing.T) {
	for q, want := range map[string][2]bool{ // {query, ok}
		"KILL CONNECTION_ID()":                 {false, true},
		"kill query connection_id ( ) ;":       {true, true},
		"KILL HARD QUERY CONNECTION_ID()":      {true, true},
		"KILL SOFT CONNECTION CONNECTION_ID()": {false, true},
		"KILL CONNECTION_ID() + 1":             {false, false},
		"KILL 5":                               {false, false},
		"KILL QUERY CONNECTION_ID(); SELECT 1": {false, false},
	} {
		query, ok := killOwnForm([]byte(q))
		if query != want[0] || ok != want[1] {
			t.Errorf("killOwnForm(%q) = %v, %v; want %v, %v", q, query, ok, want[0], want[1])
		}
	}
}

func TestInsertIDEffect(t *testing.T) {
	m := sqlscan.Mode{Version: 101119, MariaDB: true}
	for q, want := range map[string]insertIDEffect{
		"INSERT INTO t (v) VALUES (1)":                                      liidInsert,
		"REPLACE INTO t VALUES (1)":                                         liidInsert,
		"SET STATEMENT max_statement_time=1 FOR INSERT INTO t () VALUES ()": liidInsert,
		"SET STATEMENT max_statement_time=1 FOR SELECT 1":                   liidNone,
		"SELECT * FROM t":                                                   liidNone,
		"UPDATE t SET v = 1":                                                liidNone,
		"UPDATE t SET id = LAST_INSERT_ID(id + 1)":                          liidAny,
		"SET LAST_INSERT_ID = 5":                                            liidAny,
		"SET @@last_insert_id = 5":                                          liidAny,
		"CALL p()":                                                          liidAny,
		"EXECUTE s":                                                         liidAny,
		"INSERT INTO t VALUES (1); SELECT 1":                                liidAny,
		"CREATE TABLE t2 SELECT * FROM t":                                   liidAny,
		"CREATE TABLE t2 (a INT)":                                           liidNone,
	} {
		info := sqlscan.ScanMode([]byte(q), m)
		if got := insertIDEffectOf(&info); got != want {
			t.Errorf("%q: effect %d, want %d", q, got, want)
		}
	}
}

func TestTableless(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT 1":                   true,
		"SELECT @@version, 1/0":      true,
		"SET @a = 1":                 true,
		"DO 1":                       true,
		"BEGIN":                      true,
		"COMMIT":                     true,
		"USE db":                     true,
		"SELECT * FROM t":            false,
		"SELECT (SELECT 1 FROM t)":   false,
		"SHOW VARIABLES":             false,
		"INSERT INTO t VALUES (1)":   false,
		"SELECT 1; SELECT 2":         false,
		"SET @a = (SELECT x FROM t)": false,
	} {
		info := sqlscan.Scan([]byte(q))
		if got := tableless(&info); got != want {
			t.Errorf("tableless(%q) = %v, want %v", q, got, want)
		}
	}
}

func TestIsRollbackTo(t *testing.T) {
	for q, want := range map[string]bool{
		"ROLLBACK":                      false,
		"ROLLBACK WORK":                 false,
		"ROLLBACK TO sp":                true,
		"rollback work to savepoint sp": true,
		"ROLLBACK AND NO CHAIN":         false,
	} {
		if got := isRollbackTo([]byte(q), sqlscan.Mode{}); got != want {
			t.Errorf("isRollbackTo(%q) = %v, want %v", q, got, want)
		}
	}
}

func TestChistics(t *testing.T) {
	pending := mysqlwire.AppendLenEncInt(nil, 26)
	pending = append(pending, "SET TRANSACTION READ ONLY;"...)
	if got := chisticsOf(pending); got != chisticsPending {
		t.Errorf("chisticsOf(pending) = %d", got)
	}
	if got := chisticsOf([]byte{0}); got != chisticsNone {
		t.Errorf("chisticsOf(empty) = %d", got)
	}
	// Session state data: a state entry (type 5) then characteristics (type 4).
	var info []byte
	state := append(mysqlwire.AppendLenEncInt(nil, 8), "T_______"...)
	info = append(info, mysqlwire.TrackTransactionState)
	info = mysqlwire.AppendLenEncInt(info, uint64(len(state)))
	info = append(info, state...)
	info = append(info, mysqlwire.TrackTransactionChar)
	info = mysqlwire.AppendLenEncInt(info, uint64(len(pending)))
	info = append(info, pending...)
	if got := chisticsIn(info); got != chisticsPending {
		t.Errorf("chisticsIn = %d, want pending", got)
	}
	if got := chisticsIn(info[:3]); got != chisticsUnreported {
		t.Errorf("chisticsIn(truncated) = %d, want unreported", got)
	}
}

func TestHexLiteral(t *testing.T) {
	for in, want := range map[string]string{"": "''", "a'b": "X'612762'", `\`: "X'5c'"} {
		if got := hexLiteral(in); got != want {
			t.Errorf("hexLiteral(%q) = %s, want %s", in, got, want)
		}
	}
}
