package clients

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
)

// identityFixture creates a schema with a table, a read-write and a
// read-only account on it, and returns the schema's name.
func identityFixture(t *testing.T, prefix string) string {
	t.Helper()
	db := prefix + "_db"
	var stmts []string
	stmts = append(stmts, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db,
		"CREATE TABLE "+db+".t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO "+db+".t VALUES (1, 'one')")
	for _, u := range []string{prefix + "_rw", prefix + "_ro"} {
		stmts = append(stmts, "DROP USER IF EXISTS '"+u+"'@'%'", "CREATE USER '"+u+"'@'%' IDENTIFIED BY '"+u+"-pw'")
	}
	stmts = append(stmts,
		"GRANT ALL ON "+db+".* TO '"+prefix+"_rw'@'%'",
		"GRANT SELECT ON "+db+".* TO '"+prefix+"_ro'@'%'")
	serverExec(t, stmts...)
	t.Cleanup(func() {
		_ = env.Server(t).Exec(context.Background(), "DROP DATABASE IF EXISTS "+db,
			"DROP USER IF EXISTS '"+prefix+"_rw'@'%'", "DROP USER IF EXISTS '"+prefix+"_ro'@'%'")
	})
	return db
}

func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// observe runs q on a single connection of db and renders its rows, or the
// error's code and text.
func observe(ctx context.Context, conn *sql.Conn, q string) string {
	errText := func(err error) string {
		if n, _, msg := mysqlErr(err); n != 0 {
			return fmt.Sprintf("ERROR %d: %s", n, msg)
		}
		return "error: " + err.Error()
	}
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return errText(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "scan: " + err.Error()
		}
		var cells []string
		for _, v := range vals {
			cells = append(cells, v.String)
		}
		out = append(out, strings.Join(cells, "|"))
	}
	if err := rows.Err(); err != nil {
		return errText(err)
	}
	return strings.Join(out, "\n")
}

// TestIdentityPassthrough: two users with different grants, one of them
// configured by hash only, each get exactly their own server account
// through the proxy — CURRENT_USER(), SHOW GRANTS and the server's refusal
// of what they may not do are what the server shows them directly — on a
// pool of two connections that every session of both users shares.
func TestIdentityPassthrough(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 90*time.Second)
	db := identityFixture(t, "idp")
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.Size = 2
		o.Proxy.Users = append(o.Proxy.Users,
			proxy.User{Name: "idp_rw", Plain: "idp_rw-pw"},
			// Only the hash: the proxy learns the password's SHA1 at login.
			proxy.User{Name: "idp_ro", NativeHash: nativeHash("idp_ro-pw")})
	})
	queries := []string{
		"SELECT CURRENT_USER(), SUBSTRING_INDEX(USER(), '@', 1)",
		"SHOW GRANTS",
		"SELECT v FROM t WHERE id = 1",
		"INSERT INTO t VALUES (2, 'two')",
		"DELETE FROM t WHERE id = 2",
		"DROP TABLE t",
		"SELECT COUNT(*) FROM mysql.user",
		"SELECT @@session.autocommit, DATABASE()",
	}
	for _, user := range []string{"idp_ro", "idp_rw", "idp_ro"} { // ro again: on connections rw used last
		t.Run(user, func(t *testing.T) {
			pw := user + "-pw"
			direct := openDB(t, env.Server(t).DSN(user, pw, db))
			through := openDB(t, px.DSNFor(user, pw, db))
			dc, err := direct.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer dc.Close()
			pc, err := through.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			qs := queries
			if user == "idp_rw" {
				// The one thing the test does not want to happen.
				qs = slices.DeleteFunc(slices.Clone(queries), func(q string) bool { return q == "DROP TABLE t" })
			}
			// All directly first, then all through the proxy: the INSERT
			// and DELETE leave the table as it was for the other side.
			want := make([]string, len(qs))
			for i, q := range qs {
				want[i] = observe(ctx, dc, q)
			}
			got := make([]string, len(qs))
			for i, q := range qs {
				got[i] = observe(ctx, pc, q)
			}
			for i, q := range qs {
				if got[i] != want[i] {
					t.Errorf("%s as %s:\n through tpproxy: %s\n directly:       %s", q, user, got[i], want[i])
				}
				if strings.HasPrefix(q, "SELECT CURRENT_USER") && !strings.HasPrefix(got[i], user+"@%|"+user) {
					t.Errorf("%s as %s through tpproxy = %q", q, user, got[i])
				}
				if q == "DROP TABLE t" && !strings.HasPrefix(got[i], "ERROR 1142: DROP command denied to user 'idp_ro'@") {
					t.Errorf("DROP TABLE as idp_ro through tpproxy: %s (want ERROR 1142)", got[i])
				}
			}
		})
	}
	// The table is still there.
	root := env.Root(t)
	var n int
	if err := root.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+db+".t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows left in %s.t: %d, %v", db, n, err)
	}

	// Interleaved: sessions of both users take turns on the two backend
	// connections; each statement sees its own account, never the other's.
	var wg sync.WaitGroup
	var wrong atomic.Int64
	errs := make(chan error, 16)
	for i := range 8 {
		user := []string{"idp_ro", "idp_rw"}[i%2]
		h := openDB(t, px.DSNFor(user, user+"-pw", db))
		h.SetMaxOpenConns(1)
		wg.Go(func() {
			for range 50 {
				var cu string
				if err := h.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&cu); err != nil {
					errs <- fmt.Errorf("%s: %w", user, err)
					return
				}
				if cu != user+"@%" {
					wrong.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := wrong.Load(); n > 0 {
		t.Errorf("%d statements ran as the other user's account", n)
	}
	if st := px.Pool.Stats(); st.AccountSwitches == 0 || st.Open > 2 {
		t.Errorf("pool: %d account switches, %d connections open (want some switches, at most 2)", st.AccountSwitches, st.Open)
	}
}

// TestIdentityChangeUser: COM_CHANGE_USER through the proxy moves the
// session to the new user's server account.
func TestIdentityChangeUser(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 60*time.Second)
	db := identityFixture(t, "idc")
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.Size = 1
		o.Proxy.Users = append(o.Proxy.Users, proxy.User{Name: "idc_rw", Plain: "idc_rw-pw"},
			proxy.User{Name: "idc_ro", Plain: "idc_ro-pw"})
	})
	c := mustRaw(t, ctx, px.Addr, rawOptions{User: "idc_rw", Password: "idc_rw-pw", DB: db})
	defer c.close()
	if got := c.scalar(t, "SELECT CURRENT_USER()"); got != "idc_rw@%" {
		t.Fatalf("CURRENT_USER() = %q", got)
	}
	if err := c.changeUser("idc_ro", "idc_ro-pw", db); err != nil {
		t.Fatal(err)
	}
	if got := c.scalar(t, "SELECT CURRENT_USER()"); got != "idc_ro@%" {
		t.Errorf("CURRENT_USER() after COM_CHANGE_USER = %q", got)
	}
	rs, err := c.query("DELETE FROM t")
	if err == nil && len(rs) > 0 {
		err = rs[len(rs)-1].Err
	}
	if err == nil || !strings.Contains(err.Error(), "1142") {
		t.Errorf("DELETE as idc_ro after COM_CHANGE_USER: %v, want ERROR 1142", err)
	}
}

// TestIdentityAccountsShareThePool: 3 accounts × 200 sessions on a pool of
// 8: the server never sees more than 8 connections of theirs, every
// account is served, and a fourth account whose password the server does
// not accept gets the server's refusal without disturbing the others.
func TestIdentityAccountsShareThePool(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 120*time.Second)
	users := []string{"ids_a", "ids_b", "ids_c"}
	var stmts []string
	// ids_pool is the pool's own account here, so that the server's
	// connections of this proxy are told from other tests' by user name.
	for _, u := range append(users, "ids_bad", "ids_pool") {
		stmts = append(stmts, "DROP USER IF EXISTS '"+u+"'@'%'",
			"CREATE USER '"+u+"'@'%' IDENTIFIED BY '"+u+"-pw'", "GRANT SELECT ON mysql.* TO '"+u+"'@'%'")
	}
	stmts = append(stmts, "GRANT ALL ON *.* TO 'ids_pool'@'%'")
	serverExec(t, stmts...)
	t.Cleanup(func() {
		for _, u := range append(users, "ids_bad", "ids_pool") {
			_ = env.Server(t).Exec(context.Background(), "DROP USER IF EXISTS '"+u+"'@'%'")
		}
	})
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.Size = 8
		o.Pool.User, o.Pool.Password = "ids_pool", "ids_pool-pw"
		o.Pool.AcquireTimeout = 60 * time.Second
		for _, u := range users {
			o.Proxy.Users = append(o.Proxy.Users, proxy.User{Name: u, Plain: u + "-pw"})
		}
		// The proxy accepts ids_bad's password; the server has another one.
		o.Proxy.Users = append(o.Proxy.Users, proxy.User{Name: "ids_bad", Plain: "not-the-server's"})
	})

	// The server's connections of the three accounts (and of the proxy's
	// own), polled while the sessions run.
	root := env.Root(t)
	var peak atomic.Int64
	stop := make(chan struct{})
	var poller sync.WaitGroup
	poller.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var n int64
			if err := root.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER LIKE 'ids\\_%'").Scan(&n); err == nil && n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})

	const perAccount = 200
	served := make([]atomic.Int64, len(users))
	var wg sync.WaitGroup
	errs := make(chan error, len(users)*perAccount)
	start := make(chan struct{})
	for k, u := range users {
		for range perAccount {
			wg.Go(func() {
				<-start
				conn, err := rawConnect(ctx, px.Addr, rawOptions{User: u, Password: u + "-pw"})
				if err != nil {
					errs <- fmt.Errorf("%s: login: %w", u, err)
					return
				}
				defer conn.close()
				for range 3 {
					rs, err := conn.query("SELECT CURRENT_USER()")
					if err == nil && rs[len(rs)-1].Err != nil {
						err = rs[len(rs)-1].Err
					}
					if err != nil {
						errs <- fmt.Errorf("%s: %w", u, err)
						return
					}
					if got := strings.TrimSpace(rowsText(rs[len(rs)-1])); got != u+"@%" {
						errs <- fmt.Errorf("%s: CURRENT_USER() = %q", u, got)
						return
					}
				}
				served[k].Add(1)
			})
		}
	}
	// The wrong password, while the others run.
	var badErr error
	wg.Go(func() {
		<-start
		conn, err := rawConnect(ctx, px.Addr, rawOptions{User: "ids_bad", Password: "not-the-server's"})
		if err != nil {
			badErr = fmt.Errorf("login to the proxy: %w", err)
			return
		}
		defer conn.close()
		for range 5 {
			rs, err := conn.query("SELECT CURRENT_USER()")
			if err == nil {
				err = rs[len(rs)-1].Err
			}
			if err == nil || !strings.Contains(err.Error(), "1045") || !strings.Contains(err.Error(), "Access denied for user 'ids_bad'") {
				badErr = fmt.Errorf("ids_bad's statement: %v, want the server's ERROR 1045", err)
				return
			}
		}
	})
	close(start)
	wg.Wait()
	close(stop)
	poller.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 5 {
			t.Error(err)
		}
	}
	if badErr != nil {
		t.Error(badErr)
	}
	for k, u := range users {
		if got := served[k].Load(); got != perAccount {
			t.Errorf("%s: %d of %d sessions served", u, got, perAccount)
		}
	}
	// 8 pool connections plus the control and lookup connections (the
	// proxy's own account).
	if p := peak.Load(); p > 9+pool.LookupConns || p == 0 {
		t.Errorf("the server saw at most %d connections of these accounts and the proxy's, want 1..%d", p, 9+pool.LookupConns)
	}
	// The pool by account (the admin port's TPPROXY_POOLS): every
	// connection is idle again, each logged in as one of the accounts.
	total := 0
	for _, a := range px.Pool.Accounts() {
		if a.InUse != 0 || a.Waiting != 0 || a.Open != a.Idle {
			t.Errorf("account %+v after the sessions ended", a)
		}
		if a.User != "ids_pool" && !slices.Contains(users, a.User) {
			t.Errorf("account %q holds connections", a.User)
		}
		total += a.Open
	}
	if st := px.Pool.Stats(); total != st.Open || total > 8 || st.AccountRefusals == 0 {
		t.Errorf("accounts hold %d connections, the pool %d (size 8), %d refusals", total, st.Open, st.AccountRefusals)
	}
	t.Logf("peak server connections %d, account switches %d, accounts %+v", peak.Load(), px.Pool.Stats().AccountSwitches, px.Pool.Accounts())
}

// TestIdentityService: with identity service every session runs as the
// pool's account, whoever logged in.
func TestIdentityService(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 60*time.Second)
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Proxy.Identity = proxy.IdentityService
		o.Proxy.Users = append(o.Proxy.Users, proxy.User{Name: "ids_proxy_only", Plain: "pw"})
	})
	h := openDB(t, px.DSNFor("ids_proxy_only", "pw", proxytest.DB))
	var cu string
	if err := h.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&cu); err != nil {
		t.Fatal(err)
	}
	var want string
	if err := openDB(t, env.DirectDSN(t)).QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&want); err != nil {
		t.Fatal(err)
	}
	if cu != want {
		t.Errorf("CURRENT_USER() = %q, want the pool's account %s", cu, want)
	}
}
