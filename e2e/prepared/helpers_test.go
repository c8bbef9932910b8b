package prepared

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
	"github.com/tpproxy/tpproxy/proxy"
)

// Time bounds. Every client call is bounded so that a proxy bug fails the
// test instead of hanging it.
const (
	opTimeout   = 15 * time.Second // one client round trip
	waitTimeout = 10 * time.Second // for the proxy or server to reach a state
)

// Server error codes and SQLSTATEs the tests expect.
const (
	erUnknownStmtHandler = 1243 // ER_UNKNOWN_STMT_HANDLER, SQLSTATE HY000
	erWrongArguments     = 1210 // ER_WRONG_ARGUMENTS ("Incorrect arguments to mysqld_stmt_execute")
	erLockDeadlock       = 1213 // ER_LOCK_DEADLOCK, SQLSTATE 40001
	codeBackendLost      = 9003 // tpproxy: the backend connection failed during the statement
)

// testCtx is a context that ends after d or when the test ends, whichever
// comes first.
func testCtx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// opCtx bounds one client round trip.
func opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

// inCI reports CI=true, where a missing tool is a failure rather than a skip.
func inCI() bool { return os.Getenv("CI") == "true" }

// needTool returns the path of an external program. Without it the test
// skips, except in CI where it fails.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if inCI() {
			t.Fatalf("CI=true but %s is not installed: %v", name, err)
		}
		t.Skipf("%s not installed: %v", name, err)
	}
	return path
}

// psParams makes go-sql-driver use server-side prepared statements for
// every statement with arguments.
const psParams = "interpolateParams=false"

// psDSN is a go-sql-driver DSN through px that uses server-side prepared
// statements.
func psDSN(px *proxytest.Proxy, params ...string) string {
	return px.DSN(append([]string{psParams}, params...)...)
}

// directPSDSN is the same for the server itself.
func directPSDSN(t testing.TB, params ...string) string {
	return env.DirectDSN(t, append([]string{psParams}, params...)...)
}

// openDB opens a go-sql-driver handle, closed when t ends.
func openDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// session is one client session over go-sql-driver: a handle of its own
// holding exactly one connection, so that its statements are the
// session's and closing it disconnects.
type session struct {
	db   *sql.DB
	conn *sql.Conn
	// ID is CONNECTION_ID() as the client sees it: the proxy's session id
	// through the proxy, the server thread id directly.
	ID   uint32
	once sync.Once
}

// openSession connects one session; it is closed when t ends.
func openSession(t testing.TB, dsn string) *session {
	t.Helper()
	s, err := dialSession(dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// dialSession connects one session and learns its connection id.
func dialSession(dsn string) (*session, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	ctx, cancel := opCtx()
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	s := &session{db: db, conn: conn}
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&s.ID); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close disconnects the session.
func (s *session) Close() {
	s.once.Do(func() {
		_ = s.conn.Close()
		_ = s.db.Close()
	})
}

// mustExec runs statements (no arguments: text protocol) on the session.
func (s *session) mustExec(t testing.TB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		ctx, cancel := opCtx()
		_, err := s.conn.ExecContext(ctx, q)
		cancel()
		if err != nil {
			t.Fatalf("session %d: %s: %v", s.ID, q, err)
		}
	}
}

// prepare prepares q on the session's connection; the statement is closed
// when t ends.
func (s *session) prepare(t testing.TB, q string) *sql.Stmt {
	t.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	st, err := s.conn.PrepareContext(ctx, q)
	if err != nil {
		t.Fatalf("session %d: prepare %s: %v", s.ID, q, err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// queryString runs a prepared statement that returns one row of one
// column and returns it as text ("NULL" for NULL).
func queryString(st *sql.Stmt, args ...any) (string, error) {
	ctx, cancel := opCtx()
	defer cancel()
	var v sql.NullString
	if err := st.QueryRowContext(ctx, args...).Scan(&v); err != nil {
		return "", err
	}
	if !v.Valid {
		return "NULL", nil
	}
	return v.String, nil
}

// mysqlErr returns err's server error number and SQLSTATE, or 0.
func mysqlErr(err error) (uint16, string) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number, string(me.SQLState[:])
	}
	return 0, ""
}

// rootExec runs statements as root on the server.
func rootExec(t testing.TB, root *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		ctx, cancel := opCtx()
		_, err := root.ExecContext(ctx, q)
		cancel()
		if err != nil {
			t.Fatalf("root: %s: %v", q, err)
		}
	}
}

// rootInt runs a query as root that returns one integer. It takes no
// arguments on purpose: root's handle would prepare statements for them,
// and several tests count the server's prepared statements.
func rootInt(t testing.TB, root *sql.DB, q string) int64 {
	t.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	var n sql.NullInt64
	if err := root.QueryRowContext(ctx, q).Scan(&n); err != nil {
		t.Fatalf("root: %s: %v", q, err)
	}
	return n.Int64
}

// serverStatus reads one SHOW GLOBAL STATUS counter.
func serverStatus(t testing.TB, root *sql.DB, name string) int64 {
	t.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	var k, v string
	if err := root.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
		t.Fatalf("root: SHOW GLOBAL STATUS LIKE %q: %v", name, err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("status %s = %q: %v", name, v, err)
	}
	return n
}

// serverPrepared is the server's Prepared_stmt_count: statements prepared
// on all its connections now.
func serverPrepared(t testing.TB, root *sql.DB) int64 {
	t.Helper()
	return serverStatus(t, root, "Prepared_stmt_count")
}

// waitNoServerStatements waits until no connection of the server holds a
// prepared statement. Earlier tests' connections close asynchronously (the
// server frees their statements when it notices), and tests that count the
// server's statements start from zero.
func waitNoServerStatements(t testing.TB, root *sql.DB) {
	t.Helper()
	var n int64
	if !proxytest.Poll(waitTimeout, 20*time.Millisecond, func() bool {
		n = serverPrepared(t, root)
		return n == 0
	}) {
		t.Fatalf("the server still holds %d prepared statements from earlier tests after %s", n, waitTimeout)
	}
}

// eventually polls cond until it holds or timeout passes, then fails the
// test naming what it waited for.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !proxytest.Poll(timeout, 10*time.Millisecond, cond) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// innodbPoll is how often tests read InnoDB's information_schema tables,
// which InnoDB refreshes only after 100ms without readers.
const innodbPoll = 150 * time.Millisecond

// freshTable (re)creates a table in the test database as root and drops it
// when the test ends.
func freshTable(t testing.TB, root *sql.DB, name, def string, inserts ...string) {
	t.Helper()
	full := proxytest.DB + "." + name
	rootExec(t, root, "DROP TABLE IF EXISTS "+full, "CREATE TABLE "+full+" "+def)
	for _, ins := range inserts {
		rootExec(t, root, "INSERT INTO "+full+" "+ins)
	}
	t.Cleanup(func() {
		ctx, cancel := opCtx()
		defer cancel()
		_, _ = root.ExecContext(ctx, "DROP TABLE IF EXISTS "+full)
	})
}

// freshDatabase (re)creates a database as root and drops it when the test
// ends.
func freshDatabase(t testing.TB, root *sql.DB, name string, stmts ...string) {
	t.Helper()
	rootExec(t, root, "DROP DATABASE IF EXISTS "+name, "CREATE DATABASE "+name)
	for _, q := range stmts {
		rootExec(t, root, strings.ReplaceAll(q, "{db}", name))
	}
	t.Cleanup(func() {
		ctx, cancel := opCtx()
		defer cancel()
		_, _ = root.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
	})
}

// sessionInfo finds a proxy session by id.
func sessionInfo(px *proxytest.Proxy, id uint32) (proxy.SessionInfo, bool) {
	for _, in := range px.Server.Sessions() {
		if in.ID == id {
			return in, true
		}
	}
	return proxy.SessionInfo{}, false
}

// hasReason reports whether a PinReasons list names reason.
func hasReason(list, reason string) bool {
	return slices.Contains(strings.Split(list, ","), reason)
}

// waitInfo waits until the proxy shows session id in a state cond accepts
// (the published view trails the client's answer by a moment), and fails
// the test with the last state seen otherwise.
func waitInfo(t testing.TB, px *proxytest.Proxy, id uint32, what string, cond func(proxy.SessionInfo) bool) proxy.SessionInfo {
	t.Helper()
	var in proxy.SessionInfo
	var ok bool
	if !proxytest.Poll(waitTimeout, 5*time.Millisecond, func() bool {
		in, ok = sessionInfo(px, id)
		return ok && cond(in)
	}) {
		if !ok {
			t.Fatalf("waiting for session %d %s: the proxy has no such session", id, what)
		}
		t.Fatalf("timed out after %s waiting for session %d %s; last seen %+v", waitTimeout, id, what, in)
	}
	return in
}

// waitPinned waits until session id is pinned with reason and returns its
// info (BackendThread is the pinned connection's server thread).
func waitPinned(t testing.TB, px *proxytest.Proxy, id uint32, reason string) proxy.SessionInfo {
	t.Helper()
	return waitInfo(t, px, id, "pinned for "+reason, func(in proxy.SessionInfo) bool {
		return in.Pinned && hasReason(in.PinReasons, reason) && in.BackendThread != 0
	})
}

// waitUnpinned waits until session id holds no backend between statements.
func waitUnpinned(t testing.TB, px *proxytest.Proxy, id uint32) {
	t.Helper()
	waitInfo(t, px, id, "unpinned", func(in proxy.SessionInfo) bool {
		return !in.Pinned && in.PinReasons == "" && !in.Executing
	})
}

// isMySQL reports a MySQL server (MariaDB otherwise).
func isMySQL(t testing.TB) bool { return env.Server(t).Flavor == sandbox.MySQL }

// target is where a test's client connects: the proxy, or the server
// itself to show that the expectations are the server's own behaviour.
type target struct {
	name string
	addr string
	px   *proxytest.Proxy // nil for the server itself
}

func directTarget(t testing.TB) target { return target{name: "direct", addr: env.Server(t).Addr} }

func proxyTarget(px *proxytest.Proxy) target { return target{name: "proxy", addr: px.Addr, px: px} }

// errorf formats a worker's error with its index.
func errorf(worker int, format string, args ...any) error {
	return fmt.Errorf("worker %d: "+format, append([]any{worker}, args...)...)
}

// backendSwitch steers a proxy's sessions onto one chosen connection of a
// pool of two: two helper sessions take turns holding a transaction open,
// so exactly one connection is free for everyone else at any time. A nil
// *backendSwitch (tests against the server itself) does nothing.
type backendSwitch struct {
	t        testing.TB
	px       *proxytest.Proxy
	held     *session // the helper whose transaction pins a connection
	idle     *session
	free     uint32 // server thread id of the free connection
	occupied uint32 // server thread id of the held one
}

// pinAll is a proxy of a pool of size connections that sessions may all
// pin (max_pinned_connections set to the pool: the automatic budget leaves
// unpinned work a reserve), as the tests that pin every connection with
// transactions need.
func pinAll(size int) func(*proxytest.Options) {
	return func(o *proxytest.Options) { o.Pool.Size, o.Proxy.MaxPinned = size, size }
}

// newBackendSwitch needs a proxy with a pool of exactly two connections
// that may both be pinned (pinAll(2)).
func newBackendSwitch(t testing.TB, px *proxytest.Proxy) *backendSwitch {
	t.Helper()
	if n := px.Pool.Stats().Size; n != 2 {
		t.Fatalf("backendSwitch needs a pool of 2, not %d", n)
	}
	sw := &backendSwitch{t: t, px: px, held: openSession(t, px.DSN()), idle: openSession(t, px.DSN())}
	first := sw.pin(sw.held)
	second := sw.pin(sw.idle)
	if first == second {
		t.Fatalf("two open transactions share backend thread %d", first)
	}
	sw.unpin(sw.idle)
	sw.free, sw.occupied = second, first
	return sw
}

func (sw *backendSwitch) pin(s *session) uint32 {
	sw.t.Helper()
	s.mustExec(sw.t, "BEGIN", "SELECT 1")
	return waitPinned(sw.t, sw.px, s.ID, "transaction").BackendThread
}

func (sw *backendSwitch) unpin(s *session) {
	sw.t.Helper()
	s.mustExec(sw.t, "COMMIT")
	waitUnpinned(sw.t, sw.px, s.ID)
}

// flip frees the held connection and holds the free one: statements after
// flip run on the other connection than statements before.
func (sw *backendSwitch) flip() {
	if sw == nil {
		return
	}
	sw.t.Helper()
	if got := sw.pin(sw.idle); got != sw.free {
		sw.t.Fatalf("with thread %d held, a new transaction got thread %d, want %d", sw.occupied, got, sw.free)
	}
	sw.unpin(sw.held)
	sw.held, sw.idle = sw.idle, sw.held
	sw.free, sw.occupied = sw.occupied, sw.free
}
