package clients

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/proxy"
)

// The hostile-client suite: what a session of one account leaves on a
// backend connection must never be seen by a session of another, and what
// a session set must follow it exactly wherever it runs. Each test uses a
// pool of one connection, so that every session's statements run on it
// one after the other, and compares every answer with a direct session.

// oneConn opens a single client connection of db.
func oneConn(t *testing.T, ctx context.Context, db *sql.DB) *sql.Conn {
	t.Helper()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestRoleNeverCrossesAccounts: MariaDB keeps the active role across
// COM_CHANGE_USER when the new account has no default role, and tpproxy
// moves backend connections between accounts with COM_CHANGE_USER. Account
// A activates a role that may read a secret table; sessions of accounts B
// (no default role) and C (a default role of its own) on the same backend
// connection must see what a fresh login sees: no role and ERR 1142 for B,
// C's own default role for C, across many switches, resets and COM_CHANGE_USER.
func TestRoleNeverCrossesAccounts(t *testing.T) {
	ctx := testCtx(t, 120*time.Second)
	const db = "hostile_role_db"
	serverExec(t,
		"DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db,
		"CREATE TABLE "+db+".secret (x INT)", "INSERT INTO "+db+".secret VALUES (42)",
		"CREATE TABLE "+db+".pub (x INT)", "INSERT INTO "+db+".pub VALUES (7)",
		"DROP USER IF EXISTS 'hr_a'@'%', 'hr_b'@'%', 'hr_c'@'%'", "DROP ROLE IF EXISTS hr_only_a", "DROP ROLE IF EXISTS hr_c_default",
		"CREATE USER 'hr_a'@'%' IDENTIFIED BY 'a-pw'", "CREATE USER 'hr_b'@'%' IDENTIFIED BY 'b-pw'", "CREATE USER 'hr_c'@'%' IDENTIFIED BY 'c-pw'",
		"CREATE ROLE hr_only_a", "GRANT SELECT ON "+db+".secret TO hr_only_a", "GRANT hr_only_a TO 'hr_a'@'%'",
		"CREATE ROLE hr_c_default", "GRANT SELECT ON "+db+".pub TO hr_c_default", "GRANT hr_c_default TO 'hr_c'@'%'",
		"SET DEFAULT ROLE hr_c_default FOR 'hr_c'@'%'",
		"GRANT SELECT ON "+db+".pub TO 'hr_a'@'%'", "GRANT SELECT ON "+db+".pub TO 'hr_b'@'%'")
	t.Cleanup(func() {
		_ = env.Server(t).Exec(context.Background(), "DROP DATABASE IF EXISTS "+db,
			"DROP USER IF EXISTS 'hr_a'@'%', 'hr_b'@'%', 'hr_c'@'%'", "DROP ROLE IF EXISTS hr_only_a", "DROP ROLE IF EXISTS hr_c_default")
	})
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.Size = 1
		o.Proxy.Users = append(o.Proxy.Users,
			proxy.User{Name: "hr_a", Plain: "a-pw"}, proxy.User{Name: "hr_b", Plain: "b-pw"}, proxy.User{Name: "hr_c", Plain: "c-pw"})
	})
	srv := env.Server(t)
	probe := "SELECT CURRENT_USER(), CURRENT_ROLE(), (SELECT COUNT(*) FROM " + db + ".pub)"
	secret := "SELECT x FROM " + db + ".secret"
	type acct struct{ user, pass string }
	a, b, c := acct{"hr_a", "a-pw"}, acct{"hr_b", "b-pw"}, acct{"hr_c", "c-pw"}
	// What a fresh direct login of each account sees.
	want := map[string]string{}
	for _, u := range []acct{b, c} {
		conn := oneConn(t, ctx, openDB(t, srv.DSN(u.user, u.pass, db)))
		want[u.user] = observe(ctx, conn, probe) + " / " + observe(ctx, conn, secret)
	}
	aConn := oneConn(t, ctx, openDB(t, px.DSNFor(a.user, a.pass, db)))
	if got := observe(ctx, aConn, "SET ROLE hr_only_a"); got != "" {
		t.Fatalf("SET ROLE: %s", got)
	}
	if got := observe(ctx, aConn, secret); got != "42" {
		t.Fatalf("the role's privilege is not there: %s", got)
	}
	rounds := 50
	if n, err := strconv.Atoi(os.Getenv("HOSTILE_ROUNDS")); err == nil && n > 0 {
		rounds = n // HOSTILE_ROUNDS=5000: the 10,000 account switches
	}
	for round := 0; round < rounds; round++ {
		for _, u := range []acct{b, c} {
			// A runs a statement on the one connection, then u does.
			if got := observe(ctx, aConn, secret); got != "42" {
				t.Fatalf("round %d: A lost its role: %s", round, got)
			}
			udb, err := sql.Open("mysql", px.DSNFor(u.user, u.pass, db))
			if err != nil {
				t.Fatal(err)
			}
			conn, err := udb.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := observe(ctx, conn, probe) + " / " + observe(ctx, conn, secret)
			_ = conn.Close()
			_ = udb.Close()
			if got != want[u.user] {
				t.Fatalf("round %d: %s through tpproxy after A set its role: %q, a fresh direct login: %q", round, u.user, got, want[u.user])
			}
		}
	}
	t.Logf("%d rounds: %d account switches on the one backend connection, none showed A's role", rounds, px.Pool.Stats().AccountSwitches)
	// A session of C that resets itself, with and without a role of its
	// own: as a direct session (the server keeps the active role across
	// COM_RESET_CONNECTION), never the pool's account's default or A's.
	resetRole := func(addr string, pre string) string {
		cRaw := mustRaw(t, ctx, addr, rawOptions{User: c.user, Password: c.pass, DB: db})
		_ = observe(ctx, aConn, secret)
		if pre != "" {
			cRaw.mustQuery(t, pre)
		}
		if err := cRaw.command([]byte{comResetConnection}); err != nil {
			t.Fatal(err)
		}
		if r, err := cRaw.readResult(); err != nil || r.Err != nil {
			t.Fatalf("COM_RESET_CONNECTION: %+v, %v", r, err)
		}
		_ = observe(ctx, aConn, secret)
		return cRaw.scalar(t, "SELECT IFNULL(CURRENT_ROLE(), 'NULL')")
	}
	for _, pre := range []string{"", "SET ROLE NONE", "SET ROLE hr_c_default"} {
		if got, want := resetRole(px.Addr, pre), resetRole(srv.Addr, pre); got != want {
			t.Errorf("C after %q and COM_RESET_CONNECTION: CURRENT_ROLE() = %s through tpproxy, %s directly", pre, got, want)
		}
	}
}

// TestNamesReplayedInTheirCharset: the default schema and the active role
// are recorded from what the server reported and replayed on whichever
// connection runs the session's next statement; the server reads a name in
// the connection's character_set_client. Sessions in latin1, big5, sjis,
// gbk and utf8mb4 alternate on one backend connection (so every statement
// moves them), in schemas whose names differ only in encoding ('é' and
// 'Ã©', which is é's UTF-8 read as latin1), and each must stay in its own
// schema and role: what it writes lands there, as directly.
func TestNamesReplayedInTheirCharset(t *testing.T) {
	ctx := testCtx(t, 120*time.Second)
	type lang struct {
		charset string
		name    string // the schema's and role's name in that character set
		utf8    string // the same name in UTF-8, for root
	}
	langs := []lang{
		{"latin1", "\xe9", "é"},
		{"latin1", "\xc3\xa9", "Ã©"},
		{"big5", "\xa4\xa4", "中"},
		{"sjis", "\x93\xfa", "日"},
		{"gbk", "\xd6\xd0", "中"},
		{"utf8mb4", "\xc3\xa9", "é"},
	}
	schemas := map[string]bool{}
	var setup []string
	for _, l := range langs {
		if !schemas[l.utf8] {
			schemas[l.utf8] = true
			setup = append(setup, "DROP DATABASE IF EXISTS `hn_"+l.utf8+"`", "CREATE DATABASE `hn_"+l.utf8+"`",
				"CREATE TABLE `hn_"+l.utf8+"`.t (who VARCHAR(40))",
				"DROP ROLE IF EXISTS `hn_r"+l.utf8+"`", "CREATE ROLE `hn_r"+l.utf8+"`",
				"GRANT `hn_r"+l.utf8+"` TO '"+proxytest.User+"'@'%'")
		}
	}
	serverExec(t, setup...)
	t.Cleanup(func() {
		var drop []string
		for n := range schemas {
			drop = append(drop, "DROP DATABASE IF EXISTS `hn_"+n+"`", "DROP ROLE IF EXISTS `hn_r"+n+"`")
		}
		_ = env.Server(t).Exec(context.Background(), drop...)
	})
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
	srv := env.Server(t)
	run := func(dsn func(charset string) string) []string {
		conns := make([]*sql.Conn, len(langs))
		for i, l := range langs {
			conns[i] = oneConn(t, ctx, openDB(t, dsn(l.charset)))
			for _, q := range []string{"USE `hn_" + l.name + "`", "SET ROLE `hn_r" + l.name + "`"} {
				if got := observe(ctx, conns[i], q); got != "" {
					t.Fatalf("%s %x: %s: %s", l.charset, l.name, q, got)
				}
			}
		}
		var seen []string
		for round := 0; round < 5; round++ {
			for i, l := range langs {
				who := fmt.Sprintf("%s-%x-%d", l.charset, l.name, round)
				seen = append(seen, observe(ctx, conns[i], "INSERT INTO t VALUES ('"+who+"')"),
					observe(ctx, conns[i], "SELECT HEX(DATABASE()), HEX(CURRENT_ROLE())"))
			}
		}
		for _, c := range conns {
			_ = c.Close()
		}
		for _, n := range slices.Sorted(maps.Keys(schemas)) {
			var rows []string
			r, err := env.Root(t).QueryContext(ctx, "SELECT who FROM `hn_"+n+"`.t ORDER BY who")
			if err != nil {
				t.Fatal(err)
			}
			for r.Next() {
				var w string
				_ = r.Scan(&w)
				rows = append(rows, w)
			}
			_ = r.Close()
			seen = append(seen, fmt.Sprintf("hn_%s: %v", n, rows))
		}
		serverExecQuiet(t, schemas, "DELETE FROM `hn_%s`.t")
		return seen
	}
	direct := run(func(cs string) string {
		return srv.DSN(proxytest.User, proxytest.Password, proxytest.DB, "charset="+cs)
	})
	proxied := run(func(cs string) string {
		return px.DSNFor(proxytest.User, proxytest.Password, proxytest.DB, "charset="+cs)
	})
	for i := range direct {
		if i >= len(proxied) || direct[i] != proxied[i] {
			t.Fatalf("observation %d: directly %q, through tpproxy %q", i, direct[i], proxied[min(i, len(proxied)-1)])
		}
	}
}

// serverExecQuiet runs format (one %s) for every name, as root.
func serverExecQuiet(t *testing.T, names map[string]bool, format string) {
	t.Helper()
	var stmts []string
	for n := range names {
		stmts = append(stmts, fmt.Sprintf(format, n))
	}
	serverExec(t, stmts...)
}

// changeUserItems is every item of session state the audit of
// COM_CHANGE_USER looks at: what account A leaves (set), and what shows
// it (probe), run as account B.
var changeUserItems = []struct {
	item, set, probe string
}{
	{"active role", "SET ROLE hcu_role", "SELECT IFNULL(CURRENT_ROLE(), 'none')"},
	{"user variable", "SET @hcu_v = 1", "SELECT IFNULL(@hcu_v, 'none')"},
	{"session variable", "SET SESSION time_zone = '+03:00'", "SELECT @@time_zone"},
	{"SET @@x variable", "SET @@sql_select_limit = 1", "SELECT @@sql_select_limit"},
	{"autocommit", "SET autocommit = 0", "SELECT @@autocommit"},
	{"pending transaction characteristics", "SET TRANSACTION READ ONLY", "SELECT @@tx_read_only"},
	{"open transaction", "BEGIN", "SELECT @@in_transaction"},
	{"temporary table", "CREATE TEMPORARY TABLE hcu_tmp (a INT)", "SELECT COUNT(*) FROM hcu_tmp"},
	{"named lock", "SELECT GET_LOCK('hcu_lock', 0)", "SELECT IS_FREE_LOCK('hcu_lock')"},
	{"SQL prepared statement", "PREPARE hcu_s FROM 'SELECT 1'", "EXECUTE hcu_s"},
	{"LAST_INSERT_ID()", "DO LAST_INSERT_ID(77)", "SELECT LAST_INSERT_ID()"},
	{"profiling", "SET profiling = 1", "SELECT @@profiling"},
	{"warnings", "SELECT CAST('x' AS SIGNED)", "SELECT @@warning_count"},
	{"session tracking", "SET SESSION session_track_schema = OFF", "SELECT @@session_track_schema"},
	{"LOCK TABLES", "LOCK TABLES hcu_t READ", "SELECT COUNT(*) FROM hcu_t2"},
	{"sql_mode", "SET sql_mode = 'ANSI_QUOTES'", "SELECT @@sql_mode = @@global.sql_mode"},
	{"character set", "SET NAMES latin1", "SELECT @@character_set_client"},
}

// TestChangeUserAudit: what COM_CHANGE_USER does not reset on this server,
// item by item (logged: README and docs/architecture.md list it), and that
// tpproxy, which moves backend connections between accounts with it,
// leaves none of it for the next account: a session of B on the one
// backend connection after A set each item sees what a fresh login of B
// sees.
func TestChangeUserAudit(t *testing.T) {
	ctx := testCtx(t, 120*time.Second)
	const db = "hostile_cu_db"
	serverExec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db,
		"CREATE TABLE "+db+".hcu_t (a INT)", "CREATE TABLE "+db+".hcu_t2 (a INT)",
		"DROP USER IF EXISTS 'hcu_a'@'%', 'hcu_b'@'%'", "DROP ROLE IF EXISTS hcu_role",
		"CREATE USER 'hcu_a'@'%' IDENTIFIED BY 'a-pw'", "CREATE USER 'hcu_b'@'%' IDENTIFIED BY 'b-pw'",
		"GRANT ALL ON "+db+".* TO 'hcu_a'@'%'", "GRANT ALL ON "+db+".* TO 'hcu_b'@'%'",
		"CREATE ROLE hcu_role", "GRANT hcu_role TO 'hcu_a'@'%'")
	t.Cleanup(func() {
		_ = env.Server(t).Exec(context.Background(), "DROP DATABASE IF EXISTS "+db,
			"DROP USER IF EXISTS 'hcu_a'@'%', 'hcu_b'@'%'", "DROP ROLE IF EXISTS hcu_role")
	})
	srv := env.Server(t)
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.Size = 1
		o.Proxy.Users = append(o.Proxy.Users, proxy.User{Name: "hcu_a", Plain: "a-pw"}, proxy.User{Name: "hcu_b", Plain: "b-pw"})
	})
	answer := func(c *rawConn, q string) string {
		rs, err := c.query(q)
		switch {
		case err != nil:
			return "lost: " + err.Error()
		case len(rs) == 0:
			return "none"
		case rs[len(rs)-1].Err != nil:
			return fmt.Sprintf("ERR %d", rs[len(rs)-1].Err.Code)
		}
		return strings.TrimSpace(rowsText(rs[len(rs)-1]))
	}
	var table []string
	for _, it := range changeUserItems {
		// A fresh login of B.
		fresh := mustRaw(t, ctx, srv.Addr, rawOptions{User: "hcu_b", Password: "b-pw", DB: db})
		want := answer(fresh, it.probe)
		fresh.close()
		// Directly: A sets the item, COM_CHANGE_USER to B on the same
		// connection.
		c := mustRaw(t, ctx, srv.Addr, rawOptions{User: "hcu_a", Password: "a-pw", DB: db})
		if got := answer(c, it.set); strings.HasPrefix(got, "ERR") || strings.HasPrefix(got, "lost") {
			t.Fatalf("%s: %s as hcu_a: %s", it.item, it.set, got)
		}
		kept := "reset"
		if err := c.changeUser("hcu_b", "b-pw", db); err != nil {
			kept = "change user fails: " + err.Error()
		} else if got := answer(c, it.probe); got != want {
			kept = fmt.Sprintf("KEPT (%s; a fresh login: %s)", got, want)
		}
		c.close()
		table = append(table, fmt.Sprintf("| %s | %s |", it.item, kept))
		// Through tpproxy: A sets the item and leaves; a session of B
		// gets the one backend connection, which tpproxy moved to B's
		// account with COM_CHANGE_USER.
		a := mustRaw(t, ctx, px.Addr, rawOptions{User: "hcu_a", Password: "a-pw", DB: db})
		if got := answer(a, it.set); strings.HasPrefix(got, "ERR") {
			t.Fatalf("%s: %s as hcu_a through tpproxy: %s", it.item, it.set, got)
		}
		a.close()
		b := mustRaw(t, ctx, px.Addr, rawOptions{User: "hcu_b", Password: "b-pw", DB: db})
		if got := answer(b, it.probe); got != want {
			t.Errorf("%s: B through tpproxy after A sees %q, a fresh login %q", it.item, got, want)
		}
		b.close()
	}
	t.Logf("what COM_CHANGE_USER to another account keeps on %s:\n| item | after COM_CHANGE_USER |\n|---|---|\n%s", srv.Version, strings.Join(table, "\n"))
}

// TestIdlePinnedSessionsLeaveOthersTheirShare: a session that sets a user
// variable (or opens a transaction, takes GET_LOCK, ...) keeps its backend
// connection while it idles. Four idle sessions of one account on a pool
// of four used to take every connection: another account's autocommit
// writers waited for backend.acquire_timeout and failed. With the pinned
// budget (automatic: the pool minus a reserve of the thread groups' worth,
// and for sessions pinned for good half of that) the idle sessions get
// what the budget allows, the rest of their statements get ERR 1226
// naming max_sticky_pinned, the connection a session keeps for good is
// lent beyond the pool's size (the pool dials another: without it the
// writers kept 76%), and the writers keep at least 90% of their
// throughput without the idle sessions, every acknowledged row present. A per-account limit keeps one account's idle sessions from
// holding the budget that another account's transactions need.
func TestIdlePinnedSessionsLeaveOthersTheirShare(t *testing.T) {
	ctx := testCtx(t, 180*time.Second)
	const db = "hostile_pin_db"
	serverExec(t,
		"DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db,
		"CREATE TABLE "+db+".w (id BIGINT AUTO_INCREMENT PRIMARY KEY, writer INT, n INT)",
		"DROP USER IF EXISTS 'hp_idle'@'%', 'hp_w'@'%'",
		"CREATE USER 'hp_idle'@'%' IDENTIFIED BY 'idle-pw'", "CREATE USER 'hp_w'@'%' IDENTIFIED BY 'w-pw'",
		"GRANT ALL ON "+db+".* TO 'hp_idle'@'%'", "GRANT ALL ON "+db+".* TO 'hp_w'@'%'")
	t.Cleanup(func() {
		_ = env.Server(t).Exec(context.Background(), "DROP DATABASE IF EXISTS "+db, "DROP USER IF EXISTS 'hp_idle'@'%', 'hp_w'@'%'")
	})
	users := []proxy.User{{Name: "hp_idle", Plain: "idle-pw"}, {Name: "hp_w", Plain: "w-pw"}}

	t.Run("autocommit writers beside four idle pinned sessions", func(t *testing.T) {
		px := env.StartProxy(t, func(o *proxytest.Options) {
			o.Pool.Size = 4
			o.Pool.AcquireTimeout = time.Second
			o.Scheduler.Size = 2
			o.Proxy.Users = append(o.Proxy.Users, users...)
		})
		writers := openDB(t, px.DSNFor("hp_w", "w-pw", db))
		writers.SetMaxOpenConns(8)
		const window = 3 * time.Second
		var acked int64
		write := func() int64 {
			n, errs := writeFor(ctx, writers, 8, window)
			if errs != nil {
				t.Fatalf("writers: %v", errs)
			}
			acked += n
			return n
		}
		before := write()

		idle := openDB(t, px.DSNFor("hp_idle", "idle-pw", db))
		idleConns := make([]*sql.Conn, 4)
		answers := make([]string, 4)
		done := make(chan struct{}, 4)
		for i := range idleConns {
			idleConns[i] = oneConn(t, ctx, idle)
			go func() { answers[i] = observe(ctx, idleConns[i], "SELECT @x := 1"); done <- struct{}{} }()
		}
		for range idleConns {
			<-done
		}
		during := write()
		refusal := "ERROR 1226: User 'hp_idle' has exceeded the 'max_sticky_pinned' resource (current value: 1)"
		got := map[string]int{}
		for _, a := range answers {
			got[a]++
		}
		if got["1"] != 1 || got[refusal] != 3 {
			t.Fatalf("four idle sessions' first statements: %v; want one answer and three of %q", got, refusal)
		}
		if st := px.Server.PinStats(); st.Held != 1 || st.Sticky != 1 || st.Limits != (proxy.PinLimits{Total: 2, PerAccount: 2, Sticky: 1}) {
			t.Fatalf("pin budget with the idle sessions: %+v", st)
		}
		// The connection the idle session keeps is lent beyond the pool's
		// size: the writers had four to run on.
		if st := px.Pool.Stats(); st.Lent != 1 || st.Open != 5 {
			t.Fatalf("pool with one session pinned for good: lent %d, open %d; want 1 and 5", st.Lent, st.Open)
		}
		// The idle sessions that got a connection kept their variable;
		// those refused hold nothing and run what does not pin.
		for i, conn := range idleConns {
			q, want := "SELECT @x", "1"
			if answers[i] != "1" {
				q = "SELECT 2"
				want = "2"
			}
			if v := observe(ctx, conn, q); v != want {
				t.Errorf("idle session %d (first answer %q): %s gave %s, want %s", i, answers[i], q, v, want)
			}
			_ = conn.Close()
		}
		_ = idle.Close() // the connections themselves, not only back to database/sql's pool
		waitFor(t, 10*time.Second, "the idle sessions' slots back", func() bool { return px.Server.PinStats().Held == 0 })
		if st := px.Pool.Stats(); st.Lent != 0 || st.Open != 4 {
			t.Fatalf("pool after the idle sessions left: lent %d, open %d; want 0 and 4", st.Lent, st.Open)
		}
		after := write()
		t.Logf("writer rows in %s: %d before the idle sessions, %d beside them, %d after them", window, before, during, after)
		// The throughput bound compares three 3 s windows: beside the
		// other packages' tests (go test ./..., -race) their noise is
		// larger than the bound, so it holds only when the test runs alone
		// with TPBENCH_QUIET_MACHINE=1, as scripts/test.sh runs it again.
		quiet := os.Getenv("TPBENCH_QUIET_MACHINE") == "1"
		if base := (before + after) / 2; during < base*9/10 && quiet {
			t.Errorf("beside four idle pinned sessions the writers wrote %d rows, %.0f%% of the %d they write without them", during, 100*float64(during)/float64(base), base)
		}
		var rows int64
		direct := openDB(t, env.Server(t).DSN("hp_w", "w-pw", db))
		if err := direct.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+db+".w").Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows != acked {
			t.Fatalf("%d rows acknowledged, %d on the server", acked, rows)
		}
	})

	t.Run("one account's idle sessions leave another its transactions", func(t *testing.T) {
		px := env.StartProxy(t, func(o *proxytest.Options) {
			o.Pool.Size = 4
			o.Pool.AcquireTimeout = time.Second
			o.Scheduler.Size = 1
			o.Proxy.MaxPinnedPerAccount = 1
			o.Proxy.Users = append(o.Proxy.Users, users...)
		})
		idle := openDB(t, px.DSNFor("hp_idle", "idle-pw", db))
		first := oneConn(t, ctx, idle)
		if got := observe(ctx, first, "SELECT GET_LOCK('hp', 0)"); got != "1" {
			t.Fatalf("GET_LOCK: %s", got)
		}
		second := oneConn(t, ctx, idle)
		if got, want := observe(ctx, second, "BEGIN"), "ERROR 1226: User 'hp_idle' has exceeded the 'max_pinned_per_account' resource (current value: 1)"; got != want {
			t.Fatalf("the idle account's second pin: %q, want %q", got, want)
		}
		// Transactions of the other account run beside the idle session.
		writers := openDB(t, px.DSNFor("hp_w", "w-pw", db))
		errs := make(chan error, 4)
		for w := range 4 {
			go func() {
				for i := range 50 {
					tx, err := writers.BeginTx(ctx, nil)
					if err == nil {
						_, err = tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s.w (writer, n) VALUES (%d, %d)", db, 100+w, i))
						if err == nil {
							err = tx.Commit()
						} else {
							_ = tx.Rollback()
						}
					}
					if err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatalf("a transaction of the other account: %v", err)
			}
		}
		if got := observe(ctx, first, "SELECT IS_USED_LOCK('hp') = CONNECTION_ID()"); got == "" || strings.HasPrefix(got, "ERROR") {
			t.Fatalf("the idle session's lock: %s", got)
		}
	})
}

// writeFor runs n writers of autocommit INSERTs on db for d and returns how
// many rows the server acknowledged, and the first error.
func writeFor(ctx context.Context, db *sql.DB, n int, d time.Duration) (int64, error) {
	type result struct {
		rows int64
		err  error
	}
	done := make(chan result, n)
	stop := time.Now().Add(d)
	for w := range n {
		go func() {
			var r result
			for i := 0; time.Now().Before(stop); i++ {
				if _, err := db.ExecContext(ctx, fmt.Sprintf("INSERT INTO hostile_pin_db.w (writer, n) VALUES (%d, %d)", w, i)); err != nil {
					r.err = err
					break
				}
				r.rows++
			}
			done <- r
		}()
	}
	var total int64
	var first error
	for range n {
		r := <-done
		total += r.rows
		if first == nil {
			first = r.err
		}
	}
	return total, first
}
