package prepared

import (
	"database/sql"
	"testing"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// TestPrepareDependsOnSessionSettings covers sessions that prepare the
// same SQL text under different settings, which change what the text
// means: with ANSI_QUOTES "v" names a column, without it is a string; with
// PIPES_AS_CONCAT || concatenates, without it is a logical OR; the bytes of
// 'é' are one character in utf8mb4 and two in latin1. The server parses a
// statement when it is prepared, with the session's settings then, so each
// session must get its own meaning, though through the proxy both run on
// the one backend connection of the pool.
func TestPrepareDependsOnSessionSettings(t *testing.T) {
	root := env.Root(t)
	freshTable(t, root, "ps_mode", "(id INT PRIMARY KEY, v VARCHAR(10))", "VALUES (1, 'column')")
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
	for _, tg := range []struct {
		name string
		dsn  func(params ...string) string
	}{
		{"direct", func(params ...string) string { return directPSDSN(t, params...) }},
		{"proxy", func(params ...string) string { return psDSN(px, params...) }},
	} {
		t.Run(tg.name, func(t *testing.T) {
			for _, tc := range []struct {
				sql, setting, withMode, without string
				arg                             any
			}{
				{`SELECT "v" FROM ps_mode WHERE id = ?`, "sql_mode=%27ANSI_QUOTES%27", "column", "v", 1},
				{`SELECT CONCAT('', ? || 'x')`, "sql_mode=%27PIPES_AS_CONCAT%27", "ax", "0", "a"},
				// The same bytes are one character in utf8mb4, two in latin1.
				{`SELECT CONCAT(CHAR_LENGTH('é'), ?)`, "charset=latin1", "2", "1", ""},
			} {
				arg, mode := tc.arg, tc.setting
				// The session with the setting prepares first; the other
				// one second, then the first executes again.
				with := openSession(t, tg.dsn(tc.setting))
				without := openSession(t, tg.dsn())
				stWith := with.prepare(t, tc.sql)
				stWithout := without.prepare(t, tc.sql)
				for i := range 2 {
					if got, err := queryString(stWith, arg); err != nil || got != tc.withMode {
						t.Errorf("%s with %s, execute %d: %q, %v; want %q", tc.sql, mode, i, got, err, tc.withMode)
					}
					if got, err := queryString(stWithout, arg); err != nil || got != tc.without {
						t.Errorf("%s with default settings, execute %d: %q, %v; want %q", tc.sql, i, got, err, tc.without)
					}
				}
			}
		})
	}
}

// TestPreparedStatementsChangeSessionState covers session state set by a
// prepared statement rather than SQL text: user variables, GET_LOCK and
// temporary tables pin the session to its connection as they do by text;
// time_zone and sql_mode set by a prepared SET are replayed on whatever
// connection the session moves to; a prepared BEGIN opens a transaction
// that the session keeps until a prepared ROLLBACK.
func TestPreparedStatementsChangeSessionState(t *testing.T) {
	root := env.Root(t)
	stateTargets(t, func(t *testing.T, px *proxytest.Proxy, dsn string) {
		freshTable(t, root, "ps_state", "(id INT PRIMARY KEY, v INT) ENGINE=InnoDB", "VALUES (1, 0)")
		sw := switchFor(t, px)
		ctx, cancel := opCtx()
		defer cancel()
		wantPin := func(s *session, reason string) {
			t.Helper()
			if px != nil {
				waitPinned(t, px, s.ID, reason)
			}
		}
		read := func(s *session, q string, args ...any) string {
			t.Helper()
			var v sql.NullString
			if err := s.conn.QueryRowContext(ctx, q, args...).Scan(&v); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if !v.Valid {
				return "NULL"
			}
			return v.String
		}
		exec := func(s *session, q string, args ...any) {
			t.Helper()
			if _, err := s.conn.ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}

		// Replayed settings: the next statements run on the other
		// connection.
		s := openSession(t, dsn)
		exec(s, "SET time_zone = ?", "+05:00")
		exec(s, "SET SESSION sql_mode = ?", "ANSI_QUOTES")
		sw.flip()
		if got := read(s, "SELECT @@time_zone"); got != "+05:00" {
			t.Errorf("after a prepared SET time_zone: @@time_zone = %q, want +05:00", got)
		}
		if got := read(s, "SELECT @@sql_mode"); got != "ANSI_QUOTES" {
			t.Errorf("after a prepared SET sql_mode: @@sql_mode = %q, want ANSI_QUOTES", got)
		}
		if got := read(s, "SELECT CONVERT_TZ(?, '+00:00', @@time_zone)", "2024-01-01 00:00:00"); got != "2024-01-01 05:00:00" {
			t.Errorf("prepared CONVERT_TZ after a prepared SET time_zone = %q", got)
		}

		// Pinning state: each in a session of its own, one at a time (one
		// connection of two is held by the switch).
		uv := openSession(t, dsn)
		exec(uv, "SET @v = ?", 42)
		wantPin(uv, "user_variable")
		if got := read(uv, "SELECT @v"); got != "42" {
			t.Errorf("after a prepared SET @v = 42: SELECT @v = %s", got)
		}
		uv.Close() // the pool has one connection to spare

		lk := openSession(t, dsn)
		if got := read(lk, "SELECT GET_LOCK(?, 0)", "ps_lock"); got != "1" {
			t.Fatalf("prepared GET_LOCK = %s", got)
		}
		wantPin(lk, "get_lock")
		if got := read(lk, "SELECT RELEASE_LOCK(?)", "ps_lock"); got != "1" {
			t.Errorf("prepared RELEASE_LOCK on the session that took the lock = %s, want 1", got)
		}
		lk.Close()

		tmp := openSession(t, dsn)
		exec(tmp, "CREATE TEMPORARY TABLE ps_tmp AS SELECT ? AS id", 7)
		wantPin(tmp, "temporary_table")
		if got := read(tmp, "SELECT id FROM ps_tmp WHERE id = ?", 7); got != "7" {
			t.Errorf("temporary table created by a prepared statement: %s", got)
		}
		tmp.Close()

		// A prepared BEGIN (sysbench prepares BEGIN and COMMIT).
		addr := env.Server(t).Addr
		if px != nil {
			addr = px.Addr
		}
		c := rawConnect(t, addr)
		begin := c.mustPrepare(t, "BEGIN", 0)
		rollback := c.mustPrepare(t, "ROLLBACK", 0)
		res, err := c.execute(executePacket(begin.ID, cursorNone, false, nil))
		if err != nil || !res.OK || res.Status&statusInTransaction == 0 {
			t.Fatalf("prepared BEGIN: %v %+v", err, res)
		}
		if px != nil {
			waitPinned(t, px, c.connID, "transaction")
		}
		if _, err := c.query("UPDATE ps_state SET v = v + 1 WHERE id = 1"); err != nil {
			t.Fatal(err)
		}
		if v := rootInt(t, root, "SELECT v FROM tpproxy_test.ps_state WHERE id = 1"); v != 0 {
			t.Fatalf("an UPDATE after a prepared BEGIN is visible to others before COMMIT: v = %d", v)
		}
		res, err = c.execute(executePacket(rollback.ID, cursorNone, false, nil))
		if err != nil || !res.OK || res.Status&statusInTransaction != 0 {
			t.Fatalf("prepared ROLLBACK: %v %+v", err, res)
		}
		if v := rootInt(t, root, "SELECT v FROM tpproxy_test.ps_state WHERE id = 1"); v != 0 {
			t.Fatalf("after a prepared ROLLBACK the row holds %d, want 0", v)
		}
		if px != nil {
			waitUnpinned(t, px, c.connID)
		}
	})
}
