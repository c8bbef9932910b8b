package admin

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
	"github.com/tpproxy/tpproxy/scheduler"
)

var env *proxytest.Env

func TestMain(m *testing.M) { os.Exit(proxytest.Run(m, &env, sandbox.Options{})) }

// Time bounds: every client call is bounded so that a bug fails the test
// instead of hanging it.
const (
	opTimeout   = 15 * time.Second
	waitTimeout = 5 * time.Second
)

// The admin account of the tests.
const (
	adminUser = "admin"
	adminPass = "t0p-secret"
)

// adminEnv is a proxy with an admin port in front of it.
type adminEnv struct {
	px   *proxytest.Proxy
	srv  *Server
	addr string
	port int
}

// startAdmin starts a proxy (mod adjusts it) and an admin server on a free
// port. When the test ends the admin server is closed, Serve must have
// returned nil and no admin connection may be left.
func startAdmin(t testing.TB, mod ...func(*proxytest.Options)) *adminEnv {
	t.Helper()
	return startAdminLog(t, slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelInfo})), mod...)
}

// startAdminLog is startAdmin with the admin server logging to log.
func startAdminLog(t testing.TB, log *slog.Logger, mod ...func(*proxytest.Options)) *adminEnv {
	t.Helper()
	px := env.StartProxy(t, mod...)
	a, err := New(Config{User: adminUser, Password: adminPass, Logger: log}, px.Sched, px.Server, px.Pool)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(context.Background(), ln) }()
	t.Cleanup(func() {
		a.Close()
		// net.ErrClosed: Close came before Serve started.
		if err := <-done; err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("Serve returned %v after Close, want nil", err)
		}
		if n := a.conns.Load(); n != 0 {
			t.Errorf("%d admin connections still served after Close", n)
		}
	})
	return &adminEnv{px: px, srv: a, addr: ln.Addr().String(), port: ln.Addr().(*net.TCPAddr).Port}
}

// dsn is a go-sql-driver DSN for the admin port. interpolateParams keeps
// the driver from preparing statements.
func (ae *adminEnv) dsn(user, pass string, params ...string) string {
	q := append([]string{"interpolateParams=true"}, params...)
	return fmt.Sprintf("%s:%s@tcp(%s)/?%s", user, pass, ae.addr, strings.Join(q, "&"))
}

// admin opens one admin session.
func (ae *adminEnv) admin(t *testing.T, params ...string) *session {
	t.Helper()
	return openSession(t, ae.dsn(adminUser, adminPass, params...))
}

// testLog sends logs to the test log.
type testLog struct{ t testing.TB }

func (w testLog) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// session is one client session over go-sql-driver: a handle of its own
// holding exactly one connection.
type session struct {
	db   *sql.DB
	conn *sql.Conn
	once sync.Once
}

// openSession connects one session; it is closed when t ends.
func openSession(t testing.TB, dsn string) *session {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		t.Fatalf("connect: %v", err)
	}
	s := &session{db: db, conn: conn}
	t.Cleanup(s.Close)
	return s
}

// clientSession is a session through the proxy and its connection id.
func clientSession(t testing.TB, px *proxytest.Proxy, params ...string) (*session, uint32) {
	t.Helper()
	s := openSession(t, px.DSN(params...))
	return s, uint32(mustInt(t, s, "SELECT CONNECTION_ID()"))
}

// Close disconnects the session (COM_QUIT).
func (s *session) Close() {
	s.once.Do(func() {
		_ = s.conn.Close()
		_ = s.db.Close()
	})
}

// result is a result set as text; NULL is "NULL".
type result struct {
	cols  []string
	types []string // database type names
	rows  [][]string
}

// col returns column name's values.
func (r result) col(name string) []string {
	i := slices.Index(r.cols, name)
	if i < 0 {
		panic("no column " + name + " in " + strings.Join(r.cols, ","))
	}
	out := make([]string, len(r.rows))
	for k, row := range r.rows {
		out[k] = row[i]
	}
	return out
}

// byName maps the first column to the second, for Variable_name, Value.
func (r result) byName() map[string]string {
	m := make(map[string]string, len(r.rows))
	for _, row := range r.rows {
		m[row[0]] = row[1]
	}
	return m
}

// QueryContext runs q and reads everything as text.
func (s *session) QueryContext(ctx context.Context, q string, args ...any) (result, error) {
	rs, err := s.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return result{}, err
	}
	defer rs.Close()
	var r result
	if r.cols, err = rs.Columns(); err != nil {
		return result{}, err
	}
	cts, err := rs.ColumnTypes()
	if err != nil {
		return result{}, err
	}
	for _, ct := range cts {
		r.types = append(r.types, ct.DatabaseTypeName())
	}
	for rs.Next() {
		vals := make([]sql.NullString, len(r.cols))
		dest := make([]any, len(vals))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := rs.Scan(dest...); err != nil {
			return result{}, err
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = "NULL"
			if v.Valid {
				row[i] = v.String
			}
		}
		r.rows = append(r.rows, row)
	}
	return r, rs.Err()
}

// Query is QueryContext bounded by opTimeout.
func (s *session) Query(q string, args ...any) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return s.QueryContext(ctx, q, args...)
}

func mustQuery(t testing.TB, s *session, q string) result {
	t.Helper()
	r, err := s.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return r
}

func mustExec(t testing.TB, s *session, qs ...string) {
	t.Helper()
	for _, q := range qs {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		_, err := s.conn.ExecContext(ctx, q)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func mustInt(t testing.TB, s *session, q string) int64 {
	t.Helper()
	r := mustQuery(t, s, q)
	if len(r.rows) != 1 || len(r.cols) != 1 {
		t.Fatalf("%s: %v, want one value", q, r.rows)
	}
	n, err := strconv.ParseInt(r.rows[0][0], 10, 64)
	if err != nil {
		t.Fatalf("%s: %q is not an integer", q, r.rows[0][0])
	}
	return n
}

// errCode is the MySQL error number of err, 0 if it is not a server error.
func errCode(err error) uint16 {
	var me *mysqldrv.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// wantErr fails the test unless q fails with code and a message
// containing msg.
func wantErr(t testing.TB, s *session, q string, code uint16, msg string) {
	t.Helper()
	_, err := s.Query(q)
	if got := errCode(err); got != code || !strings.Contains(fmt.Sprint(err), msg) {
		t.Errorf("%s: error %v (code %d), want code %d with %q", q, err, got, code, msg)
	}
}

// eventually polls cond every 10ms until it holds, failing the test after
// waitTimeout. Used only for state outside the test's control (a
// statement reaching the server, a session being torn down).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if cond() {
		return
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return
			}
		case <-deadline.C:
			if !cond() {
				t.Fatalf("timed out after %s waiting for %s", waitTimeout, what)
			}
			return
		}
	}
}

// outcome is what a client saw of a statement.
type outcome struct {
	value string
	err   error
}

// runAsync runs q on s in the background.
func runAsync(t *testing.T, s *session, q string) <-chan outcome {
	ch := make(chan outcome, 1)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	t.Cleanup(cancel)
	go func() {
		defer cancel()
		r, err := s.QueryContext(ctx, q)
		o := outcome{err: err}
		if err == nil && len(r.rows) > 0 {
			o.value = r.rows[0][0]
		}
		ch <- o
	}()
	return ch
}

// await waits for an outcome.
func await(t *testing.T, ch <-chan outcome, what string) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(opTimeout):
		t.Fatalf("%s still running after %s", what, opTimeout)
		return outcome{}
	}
}

// processRow finds session id in SHOW PROCESSLIST; nil if absent.
func processRow(t testing.TB, adm *session, id uint32, full bool) map[string]string {
	t.Helper()
	q := "SHOW PROCESSLIST"
	if full {
		q = "SHOW FULL PROCESSLIST"
	}
	r := mustQuery(t, adm, q)
	for _, row := range r.rows {
		if row[0] == strconv.FormatUint(uint64(id), 10) {
			m := make(map[string]string, len(row))
			for i, c := range r.cols {
				m[c] = row[i]
			}
			return m
		}
	}
	return nil
}

// configOf is a config without its clock, which cannot be compared.
func configOf(s *scheduler.Scheduler) scheduler.Config {
	c := s.Config()
	c.Now = nil
	return c
}

// needTool finds a client binary; outside CI a missing one skips the test.
func needTool(t *testing.T, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not installed (required in CI): %v", name, err)
		}
		t.Skipf("%s not installed: %v", name, err)
	}
	return bin
}

// runCLI runs a script through the mariadb client against the admin port.
// It returns the output and the exit code.
func runCLI(t *testing.T, bin string, port int, user, pass, script string, extra ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{"--no-defaults", "--protocol=tcp", "-h", "127.0.0.1", "-P", strconv.Itoa(port),
		"-u", user, "-p" + pass}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(script)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mariadb client hung:\n%s\n%s", out.String(), errb.String())
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("mariadb client: %v", err)
	}
	return out.String(), errb.String(), code
}
