package clients

import (
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/proxy"
)

// sessionUser is the proxy's record of who a client session is.
func sessionUser(px *proxytest.Proxy, id uint32) (proxy.SessionInfo, bool) {
	for _, s := range px.Server.Sessions() {
		if s.ID == id {
			return s, true
		}
	}
	return proxy.SessionInfo{}, false
}

// resetScript leaves state of every kind in a session, for
// COM_RESET_CONNECTION to clear.
var resetScript = []string{
	"SET @uv = 42",
	"CREATE TEMPORARY TABLE reset_tmp (x INT)",
	"INSERT INTO reset_tmp VALUES (1)",
	"SET SESSION sql_mode = 'ANSI_QUOTES'",
	"SET SESSION time_zone = '+05:00'",
	"SET autocommit = 0",
	"INSERT INTO reset_rows VALUES (1)",
	"SELECT GET_LOCK('e2e_reset_lock', 0)",
}

// resetChecks are read after the reset; each must read the same through
// the proxy as on the server.
var resetChecks = []string{
	"SELECT @uv",
	"SELECT COUNT(*) FROM reset_tmp",
	"SELECT @@session.sql_mode = @@global.sql_mode",
	"SELECT @@session.time_zone",
	"SELECT @@autocommit",
	"SELECT COUNT(*) FROM reset_rows",
	"SELECT IS_USED_LOCK('e2e_reset_lock') IS NULL",
	"SELECT DATABASE()",
	"SELECT LAST_INSERT_ID()",
}

func TestResetConnection(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 60*time.Second)
	serverExec(t, "DROP TABLE IF EXISTS tpproxy_test.reset_rows", "CREATE TABLE tpproxy_test.reset_rows (x INT) ENGINE=InnoDB")
	t.Cleanup(func() { serverExec(t, "DROP TABLE IF EXISTS tpproxy_test.reset_rows") })
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 2 })
	login := rawOptions{User: "app", Password: "secret", DB: proxytest.DB}

	run := func(addr string, afterReset func()) []string {
		c := mustRaw(t, ctx, addr, login)
		defer c.close()
		for _, q := range resetScript {
			c.mustQuery(t, q)
		}
		if got := c.scalar(t, "SELECT @uv"); got != "42" {
			t.Fatalf("before the reset @uv = %s", got)
		}
		if err := c.command([]byte{comResetConnection}); err != nil {
			t.Fatal(err)
		}
		r, err := c.readResult()
		if err != nil || r.Err != nil || r.IsEOF || r.Columns != nil {
			t.Fatalf("COM_RESET_CONNECTION = %+v, %v; want OK", r, err)
		}
		if r.Status&statusInTrans != 0 || r.Status&statusAutocommit == 0 {
			t.Errorf("status after the reset = %#x, want autocommit and no transaction", r.Status)
		}
		afterReset()
		var out []string
		for _, q := range resetChecks {
			rs, err := c.query(q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			last := rs[len(rs)-1]
			if last.Err != nil {
				out = append(out, q+" -> error "+last.Err.State)
			} else {
				out = append(out, q+" -> "+strings.TrimSpace(rowsText(last)))
			}
		}
		return out
	}
	want := run(env.Server(t).Addr, func() {})
	got := run(px.Addr, func() {
		if st := px.Server.Stats(); st.Pinned != 0 {
			t.Errorf("%d sessions still pinned after the reset", st.Pinned)
		}
	})
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("after COM_RESET_CONNECTION through the proxy: %s; server: %s", got[i], want[i])
		}
	}
	// The lock is really released on the backend: another session can
	// take it.
	other := mustRaw(t, ctx, px.Addr, login)
	if got := other.scalar(t, "SELECT GET_LOCK('e2e_reset_lock', 0)"); got != "1" {
		t.Errorf("GET_LOCK after the holder's reset = %s, want 1", got)
	}
	other.mustQuery(t, "DO RELEASE_LOCK('e2e_reset_lock')")
}

func TestChangeUser(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 60*time.Second)
	serverExec(t,
		"CREATE DATABASE IF NOT EXISTS tpproxy_cli_other",
		"CREATE USER IF NOT EXISTS 'other'@'%' IDENTIFIED BY 'otherpw'",
		"GRANT ALL ON *.* TO 'other'@'%'",
	)
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Proxy.Users = append(o.Proxy.Users, proxy.User{Name: "other", Plain: "otherpw"})
		o.Pool.Size = 2
	})

	type step struct {
		user, password, db string
	}
	// run logs in as app, leaves state behind, changes user, and reports
	// what the session looks like afterwards.
	run := func(addr string, to step, afterChange func(c *rawConn)) ([]string, error) {
		c := mustRaw(t, ctx, addr, rawOptions{User: "app", Password: "secret", DB: proxytest.DB})
		// Sessions with user variables keep their backend: end each one.
		defer c.close()
		c.mustQuery(t, "SET @uv = 'before'")
		c.mustQuery(t, "USE tpproxy_cli_other")
		c.mustQuery(t, "CREATE TEMPORARY TABLE cu_tmp (x INT)")
		c.mustQuery(t, "SET SESSION sql_mode = 'ANSI_QUOTES'")
		c.mustQuery(t, "BEGIN")
		if err := c.changeUser(to.user, to.password, to.db); err != nil {
			return nil, err
		}
		afterChange(c)
		var out []string
		for _, q := range []string{"SELECT @uv", "SELECT DATABASE()", "SELECT COUNT(*) FROM tpproxy_cli_other.cu_tmp",
			"SELECT @@session.sql_mode = @@global.sql_mode", "SELECT @@in_transaction"} {
			rs, err := c.query(q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if last := rs[len(rs)-1]; last.Err != nil {
				out = append(out, q+" -> error "+last.Err.State)
			} else {
				out = append(out, q+" -> "+strings.TrimSpace(rowsText(last)))
			}
		}
		return out, nil
	}

	for _, to := range []step{{"other", "otherpw", proxytest.DB}, {"app", "secret", ""}, {"other", "otherpw", "tpproxy_cli_other"}} {
		want, err := run(env.Server(t).Addr, to, func(*rawConn) {})
		if err != nil {
			t.Fatalf("server: change user to %s: %v", to.user, err)
		}
		got, err := run(px.Addr, to, func(c *rawConn) {
			// The session record is published right after the answer.
			var info proxy.SessionInfo
			var ok bool
			waitFor(t, 5*time.Second, "the proxy's session record to show user "+to.user, func() bool {
				info, ok = sessionUser(px, c.greeting.ConnID)
				return ok && info.User == to.user && !info.Pinned && info.Schema == to.db
			})
		})
		if err != nil {
			t.Errorf("proxy: change user to %s (schema %q): %v", to.user, to.db, err)
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("after changing to %s (schema %q): proxy %s; server %s", to.user, to.db, got[i], want[i])
			}
		}
	}

	// A wrong password is refused with the server's error.
	for _, addr := range []string{env.Server(t).Addr, px.Addr} {
		c := mustRaw(t, ctx, addr, rawOptions{User: "app", Password: "secret", DB: proxytest.DB})
		err := c.changeUser("other", "wrong", proxytest.DB)
		se := asServerError(err)
		want := "Access denied for user 'other'@'127.0.0.1' (using password: YES)"
		if se == nil || se.Code != 1045 || se.State != "28000" || se.Message != want {
			t.Errorf("%s: change user with a wrong password: %v; want Error 1045 (28000): %s", addr, err, want)
		}
		// What happens to the connection afterwards differs: MariaDB keeps
		// the old user for up to three failures; the proxy closes.
		t.Logf("%s: after the failed change, ping: %v", addr, c.ping())
	}
}

// TestIdleSessionAfterErrorKeepsNoBackend: a client whose statement failed
// (or warned) and that then goes quiet must not keep a backend connection
// to itself; with a pool of one, everybody else would wait for it.
func TestIdleSessionAfterErrorKeepsNoBackend(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.Size = 1
		o.Pool.AcquireTimeout = 2 * time.Second
	})
	login := rawOptions{User: "app", Password: "secret", DB: proxytest.DB}
	for _, bad := range []string{"SELECT * FROM no_such_table_e2e", "SELECT CAST('1x' AS SIGNED)"} {
		idle := mustRaw(t, ctx, px.Addr, login)
		rs, err := idle.query(bad)
		if err != nil {
			t.Fatal(err)
		}
		if last := rs[len(rs)-1]; last.Err == nil && last.Warnings == 0 {
			t.Fatalf("%s left no error or warning", bad)
		}
		other, err := rawConnect(ctx, px.Addr, login)
		if err != nil {
			t.Errorf("after another session's %q, a new client cannot log in: %v", bad, err)
			idle.close()
			continue
		}
		rs, err = other.query("SELECT 'served'")
		switch {
		case err != nil:
			t.Errorf("after another session's %q: %v", bad, err)
		case rs[len(rs)-1].Err != nil:
			t.Errorf("after another session's %q, an idle one keeps the only backend: %v", bad, rs[len(rs)-1].Err)
		}
		// The idle session still gets its own diagnostics afterwards.
		r := idle.mustQuery(t, "SHOW WARNINGS")
		if len(r.Rows) != 1 {
			t.Errorf("SHOW WARNINGS after %q: %q", bad, rowsText(r))
		}
		idle.close()
		other.close()
		waitFor(t, 5*time.Second, "sessions to end", func() bool { return px.Server.Stats().Sessions == 0 })
	}
}

// TestClientWithoutDefaultSchema: many tools log in without a schema. Such
// a session sees no schema (DATABASE() is NULL, unqualified tables are an
// error) while sessions with one share its backends, and serving it does
// not cost a new backend connection per statement.
func TestClientWithoutDefaultSchema(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
	none := mustRaw(t, ctx, px.Addr, rawOptions{User: "app", Password: "secret"})
	withDB := mustRaw(t, ctx, px.Addr, rawOptions{User: "app", Password: "secret", DB: proxytest.DB})
	const rounds = 20
	for range rounds {
		if got := none.scalar(t, "SELECT DATABASE()"); got != "NULL" {
			t.Fatalf("session without a schema: DATABASE() = %s", got)
		}
		if got := withDB.scalar(t, "SELECT DATABASE()"); got != proxytest.DB {
			t.Fatalf("session with a schema: DATABASE() = %s", got)
		}
	}
	rs, err := none.query("SELECT COUNT(*) FROM some_table")
	if err != nil {
		t.Fatal(err)
	}
	if e := rs[len(rs)-1].Err; e == nil || e.Code != 1046 {
		t.Errorf("unqualified table without a schema: %+v, want error 1046", rs[len(rs)-1])
	}
	if st := px.Pool.Stats(); st.Dials > 1+rounds/4 {
		t.Errorf("the pool of 1 dialed %d connections (%d replaced) for %d alternating statements: "+
			"a session without a schema should not cost a new backend connection per statement", st.Dials, st.Replaced, 2*rounds)
	}
}
