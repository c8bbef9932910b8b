package prepared

import (
	"database/sql"
	"slices"
	"strconv"
	"testing"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// stateTargets runs f against the server itself (px nil) and through a
// proxy with a pool of two, whose connections a backendSwitch can control.
func stateTargets(t *testing.T, f func(t *testing.T, px *proxytest.Proxy, dsn string)) {
	t.Run("direct", func(t *testing.T) { f(t, nil, directPSDSN(t)) })
	t.Run("proxy", func(t *testing.T) {
		px := env.StartProxy(t, pinAll(2))
		f(t, px, psDSN(px))
	})
}

// switchFor is a backendSwitch for px, nil for the server itself.
func switchFor(t *testing.T, px *proxytest.Proxy) *backendSwitch {
	if px == nil {
		return nil
	}
	return newBackendSwitch(t, px)
}

// sessionInt runs a query without arguments (text protocol) on the
// session and returns its integer.
func sessionInt(t *testing.T, s *session, q string) int64 {
	t.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	var n sql.NullInt64
	if err := s.conn.QueryRowContext(ctx, q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n.Int64
}

// TestPreparedSessionState covers the per-connection values a prepared
// statement leaves behind and an application reads next: LAST_INSERT_ID()
// (read by SQL text, by a prepared SELECT, and inside the next prepared
// INSERT, the parent/child pattern), ROW_COUNT(), and the warnings of
// SHOW WARNINGS / @@warning_count. Through the proxy each next statement is
// forced onto the other backend connection, which never ran the prepared
// statement; the session must still see its own values.
func TestPreparedSessionState(t *testing.T) {
	root := env.Root(t)
	stateTargets(t, func(t *testing.T, px *proxytest.Proxy, dsn string) {
		freshTable(t, root, "ps_parent", "(id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10))",
			"VALUES (100, 'a'), (101, 'b'), (102, 'c')")
		freshTable(t, root, "ps_child", "(id INT PRIMARY KEY, parent_id INT)")
		sw := switchFor(t, px)
		s := openSession(t, dsn)
		ctx, cancel := opCtx()
		defer cancel()

		res, err := s.conn.ExecContext(ctx, "INSERT INTO ps_parent (v) VALUES (?)", "p")
		if err != nil {
			t.Fatal(err)
		}
		id, err := res.LastInsertId()
		if err != nil || id != 103 {
			t.Fatalf("prepared INSERT: LastInsertId %d, %v; want 103", id, err)
		}
		sw.flip()
		if got := sessionInt(t, s, "SELECT LAST_INSERT_ID()"); got != id {
			t.Errorf("SELECT LAST_INSERT_ID() after a prepared INSERT = %d, want %d", got, id)
		}
		var got int64
		if err := s.conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID() + ?", 0).Scan(&got); err != nil || got != id {
			t.Errorf("prepared SELECT LAST_INSERT_ID() + ? = %d, %v; want %d", got, err, id)
		}
		sw.flip()
		if _, err := s.conn.ExecContext(ctx, "INSERT INTO ps_child (id, parent_id) VALUES (?, LAST_INSERT_ID())", 1); err != nil {
			t.Fatal(err)
		}
		if got := rootInt(t, root, "SELECT parent_id FROM tpproxy_test.ps_child WHERE id = 1"); got != id {
			t.Errorf("prepared INSERT ... VALUES (?, LAST_INSERT_ID()) stored parent %d, want %d", got, id)
		}

		res, err = s.conn.ExecContext(ctx, "UPDATE ps_parent SET v = ? WHERE id >= ?", "u", 100)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 4 {
			t.Errorf("prepared UPDATE affected %d rows, want 4", n)
		}
		sw.flip()
		if got := sessionInt(t, s, "SELECT ROW_COUNT()"); got != 4 {
			t.Errorf("SELECT ROW_COUNT() after a prepared UPDATE of 4 rows = %d, want 4", got)
		}

		var v sql.NullInt64
		if err := s.conn.QueryRowContext(ctx, "SELECT ? / 0", 1).Scan(&v); err != nil || v.Valid {
			t.Fatalf("prepared SELECT ? / 0 = %v, %v; want NULL with a warning", v, err)
		}
		sw.flip()
		rows, err := s.conn.QueryContext(ctx, "SHOW WARNINGS")
		if err != nil {
			t.Fatal(err)
		}
		var codes []int
		for rows.Next() {
			var level, msg string
			var code int
			if err := rows.Scan(&level, &code, &msg); err != nil {
				t.Fatal(err)
			}
			codes = append(codes, code)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		if len(codes) != 1 || codes[0] != 1365 {
			t.Errorf("SHOW WARNINGS after a prepared SELECT ? / 0 lists codes %v, want [1365] (division by 0)", codes)
		}
	})
}

// TestPreparedInTransaction covers statements prepared outside a
// transaction and executed inside it, and the reverse: the execute must run
// on the transaction's connection (a ROLLBACK undoes it; other connections
// do not see it before COMMIT), though that connection never prepared the
// statement; a statement prepared inside a transaction serves after COMMIT
// on any connection.
func TestPreparedInTransaction(t *testing.T) {
	root := env.Root(t)
	stateTargets(t, func(t *testing.T, px *proxytest.Proxy, dsn string) {
		freshTable(t, root, "ps_tx", "(id INT PRIMARY KEY, v INT) ENGINE=InnoDB", "VALUES (1, 0)")
		value := func() int64 { return rootInt(t, root, "SELECT v FROM tpproxy_test.ps_tx WHERE id = 1") }
		sw := switchFor(t, px)
		s := openSession(t, dsn)
		update := s.prepare(t, "UPDATE ps_tx SET v = v + ? WHERE id = ?")
		read := s.prepare(t, "SELECT v FROM ps_tx WHERE id = ?")
		ctx, cancel := opCtx()
		defer cancel()
		if _, err := update.ExecContext(ctx, 1, 1); err != nil {
			t.Fatal(err)
		}
		if v := value(); v != 1 {
			t.Fatalf("after an autocommitted prepared UPDATE the row holds %d, want 1", v)
		}
		sw.flip()

		s.mustExec(t, "BEGIN")
		if _, err := update.ExecContext(ctx, 10, 1); err != nil {
			t.Fatal(err)
		}
		if got, err := queryString(read, 1); err != nil || got != "11" {
			t.Fatalf("inside the transaction the session reads %q, %v; want 11", got, err)
		}
		if v := value(); v != 1 {
			t.Fatalf("another connection sees %d before COMMIT, want 1: the prepared UPDATE ran outside the transaction", v)
		}
		s.mustExec(t, "ROLLBACK")
		if v := value(); v != 1 {
			t.Fatalf("after ROLLBACK the row holds %d, want 1: the prepared UPDATE ran outside the transaction", v)
		}

		s.mustExec(t, "BEGIN")
		inside := s.prepare(t, "UPDATE ps_tx SET v = v * ? WHERE id = ?")
		if _, err := inside.ExecContext(ctx, 5, 1); err != nil {
			t.Fatal(err)
		}
		s.mustExec(t, "COMMIT")
		if v := value(); v != 5 {
			t.Fatalf("after COMMIT the row holds %d, want 5", v)
		}
		sw.flip()
		if _, err := inside.ExecContext(ctx, 3, 1); err != nil {
			t.Fatalf("statement prepared inside a committed transaction: %v", err)
		}
		if got, err := queryString(read, 1); err != nil || got != "15" {
			t.Fatalf("after the transaction the session reads %q, %v; want 15", got, err)
		}
	})
}

// TestStatementsSurviveBackendReset covers what the proxy does to a
// backend connection between sessions that also drops every statement
// prepared on it: COM_RESET_CONNECTION after a session that held
// unreplayable state (a user variable) disconnects or resets, cleaning up
// after a session that disconnected with a cursor open, and
// COM_CHANGE_USER for a session without a default database. A pool of one
// makes sure the statement lives on that very connection; its next execute
// must still work.
func TestStatementsSurviveBackendReset(t *testing.T) {
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
	s := openSession(t, psDSN(px))
	st := s.prepare(t, "SELECT CONCAT(?, '!')")
	check := func(after string) {
		t.Helper()
		for _, v := range []string{"x", "y"} {
			if got, err := queryString(st, v); err != nil || got != v+"!" {
				t.Fatalf("execute after %s: %q, %v; want %q", after, got, err, v+"!")
			}
		}
	}
	check("prepare")

	before := px.Pool.Stats()
	u := openSession(t, px.DSN())
	u.mustExec(t, "SET @pinned = 1")
	waitPinned(t, px, u.ID, "user_variable")
	u.Close()
	eventually(t, waitTimeout, "the user-variable session's connection reset", func() bool {
		st := px.Pool.Stats()
		return st.Resets > before.Resets && st.InUse == 0
	})
	check("a session with a user variable disconnected")

	before = px.Pool.Stats()
	r := rawConnect(t, px.Addr)
	if _, err := r.query("SET @pinned = 2"); err != nil {
		t.Fatal(err)
	}
	waitPinned(t, px, r.connID, "user_variable")
	if err := r.simpleCommand([]byte{0x1f}); err != nil { // COM_RESET_CONNECTION
		t.Fatalf("COM_RESET_CONNECTION: %v", err)
	}
	eventually(t, waitTimeout, "the connection reset after COM_RESET_CONNECTION", func() bool {
		st := px.Pool.Stats()
		return st.Resets > before.Resets && st.InUse == 0
	})
	check("another session's COM_RESET_CONNECTION")

	before = px.Pool.Stats()
	cur := rawConnect(t, px.Addr)
	cst := cur.mustPrepare(t, cursorQuery(t), 0)
	if res, err := cur.execute(executePacket(cst.ID, cursorReadOnly, false, nil)); err != nil || res.Err != nil {
		t.Fatalf("open a cursor: %v %v", err, res.Err)
	}
	waitPinned(t, px, cur.connID, "cursor")
	_ = cur.nc.Close()
	eventually(t, waitTimeout, "the connection back after a session with an open cursor disconnected", func() bool {
		st := px.Pool.Stats()
		return st.InUse == 0 && st.Idle == 1
	})
	check("a session with an open cursor disconnected")

	before = px.Pool.Stats()
	nodb := openSession(t, px.DSNFor(proxytest.User, proxytest.Password, "", psParams))
	if got := sessionInt(t, nodb, "SELECT DATABASE() IS NULL"); got != 1 {
		t.Fatalf("a session without a database sees DATABASE() IS NULL = %d", got)
	}
	if after := px.Pool.Stats(); after.SchemaClears == before.SchemaClears {
		t.Logf("no COM_CHANGE_USER to clear the schema (pool %+v); the last check covers less", after)
	}
	check("a session without a default database used the connection")
	t.Logf("pool %+v", px.Pool.Stats())
}

// TestPrepareErrorsAndDDL covers PREPARE failures and schema changes: a
// syntax error and a missing table answer the server's errors and leave the
// session usable; once the table exists the same text prepares (a failure
// is not remembered); and after ALTER TABLE a new PREPARE of a cached SQL
// text reports the new column count, as the server does, while the
// statement prepared before answers with the new columns too.
func TestPrepareErrorsAndDDL(t *testing.T) {
	root := env.Root(t)
	px := env.StartProxy(t)
	for _, tg := range []target{directTarget(t), proxyTarget(px)} {
		t.Run(tg.name, func(t *testing.T) {
			rootExec(t, root, "DROP TABLE IF EXISTS tpproxy_test.ps_ddl")
			t.Cleanup(func() { rootExec(t, root, "DROP TABLE IF EXISTS tpproxy_test.ps_ddl") })
			c := rawConnect(t, tg.addr)
			for _, tc := range []struct {
				sql  string
				code uint16
			}{
				{"SELEC ?", 1064},
				{"SELECT 1; SELECT 2", 1064},
				{"SELECT * FROM ps_ddl WHERE id = ?", 1146},
			} {
				if _, err := c.prepare(tc.sql); !errIs(err, tc.code) {
					t.Fatalf("prepare %q: %v, want error %d", tc.sql, err, tc.code)
				}
				c.mustSelectOne(t, "a failed prepare")
			}
			rootExec(t, root, "CREATE TABLE tpproxy_test.ps_ddl (id INT PRIMARY KEY, a VARCHAR(10))",
				"INSERT INTO tpproxy_test.ps_ddl VALUES (1, 'one')")
			const q = "SELECT * FROM ps_ddl WHERE id = ?"
			old := c.mustPrepare(t, q, 1)
			if old.Columns != 2 {
				t.Fatalf("prepare %s: %d columns, want 2", q, old.Columns)
			}
			res, err := c.execute(executePacket(old.ID, cursorNone, true, []param{intParam(1)}))
			if err != nil {
				t.Fatal(err)
			}
			wantRow(t, "before ALTER TABLE", res, "1", "one")

			rootExec(t, root, "ALTER TABLE tpproxy_test.ps_ddl ADD COLUMN b INT NOT NULL DEFAULT 7")
			other := rawConnect(t, tg.addr)
			fresh := other.mustPrepare(t, q, 1)
			if want := []string{"id", "a", "b"}; fresh.Columns != 3 || !slices.Equal(fresh.ColumnNames, want) {
				t.Errorf("prepare %s after ALTER TABLE ADD COLUMN: %d columns %q, want %d %q", q, fresh.Columns, fresh.ColumnNames, len(want), want)
			}
			res, err = other.execute(executePacket(fresh.ID, cursorNone, true, []param{intParam(1)}))
			if err != nil {
				t.Fatal(err)
			}
			wantRow(t, "new statement after ALTER TABLE", res, "1", "one", "7")
			res, err = c.execute(executePacket(old.ID, cursorNone, false, []param{intParam(1)}))
			if err != nil {
				t.Fatal(err)
			}
			wantRow(t, "statement prepared before ALTER TABLE", res, "1", "one", "7")
			if len(res.Columns) != 3 {
				t.Errorf("statement prepared before ALTER TABLE: %d column definitions, want 3", len(res.Columns))
			}

			// Renaming a column changes the metadata but not the count.
			rootExec(t, root, "ALTER TABLE tpproxy_test.ps_ddl CHANGE COLUMN a name VARCHAR(10)")
			third := rawConnect(t, tg.addr).mustPrepare(t, q, 1)
			if want := []string{"id", "name", "b"}; !slices.Equal(third.ColumnNames, want) {
				t.Errorf("prepare %s after renaming column a: columns %q, want %q", q, third.ColumnNames, want)
			}
		})
	}
}

// TestPreparedCall covers a stored procedure called through a prepared
// statement, which answers several result sets and a final OK
// (SERVER_MORE_RESULTS_EXISTS, CLIENT_PS_MULTI_RESULTS): every result set
// arrives, and the session is in step afterwards.
func TestPreparedCall(t *testing.T) {
	root := env.Root(t)
	rootExec(t, root, "DROP PROCEDURE IF EXISTS tpproxy_test.ps_proc",
		`CREATE PROCEDURE tpproxy_test.ps_proc(IN n INT)
		BEGIN
			SELECT n AS first;
			SELECT n * 2 AS second, 'x' AS label;
		END`)
	t.Cleanup(func() { rootExec(t, root, "DROP PROCEDURE IF EXISTS tpproxy_test.ps_proc") })
	px := env.StartProxy(t)
	for _, tg := range []struct{ name, dsn string }{{"direct", directPSDSN(t)}, {"proxy", psDSN(px)}} {
		t.Run(tg.name, func(t *testing.T) {
			s := openSession(t, tg.dsn)
			call := s.prepare(t, "CALL ps_proc(?)")
			for _, n := range []int{3, 21} {
				ctx, cancel := opCtx()
				rows, err := call.QueryContext(ctx, n)
				if err != nil {
					cancel()
					t.Fatal(err)
				}
				var sets [][]string
				for {
					cols, _ := rows.Columns()
					var set []string
					for rows.Next() {
						vals := make([]sql.NullString, len(cols))
						ptrs := make([]any, len(cols))
						for i := range vals {
							ptrs[i] = &vals[i]
						}
						if err := rows.Scan(ptrs...); err != nil {
							t.Fatal(err)
						}
						for _, v := range vals {
							set = append(set, v.String)
						}
					}
					sets = append(sets, set)
					if !rows.NextResultSet() {
						break
					}
				}
				if err := rows.Err(); err != nil {
					t.Fatalf("CALL ps_proc(%d): %v", n, err)
				}
				_ = rows.Close()
				cancel()
				want := [][]string{{strconv.Itoa(n)}, {strconv.Itoa(2 * n), "x"}}
				if len(sets) < 2 || !slices.EqualFunc(sets[:2], want, slices.Equal[[]string]) {
					t.Fatalf("CALL ps_proc(%d) returned result sets %q, want %q", n, sets, want)
				}
			}
			if got := sessionInt(t, s, "SELECT 42"); got != 42 {
				t.Fatalf("after the CALLs: SELECT 42 = %d", got)
			}
		})
	}
}
