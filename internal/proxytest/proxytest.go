// Package proxytest runs tpproxy in-process in front of a private sandbox
// server, for integration tests of the proxy and the tools built on it.
//
// A test package calls Run from its TestMain; a test that needs the server
// asks for it (Env.Server, Env.StartProxy, ...), which starts it once for
// the package. Without a server binary those tests skip; in CI (CI=true)
// they fail. Tests that need no server always run.
package proxytest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the driver tests use

	"github.com/tpproxy/tpproxy/internal/autosize"
	"github.com/tpproxy/tpproxy/internal/sandbox"
	"github.com/tpproxy/tpproxy/internal/stack"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// Credentials and schema every Env provides.
const (
	User     = "app"
	Password = "secret"
	DB       = "tpproxy_test"
)

// Env is a sandbox server prepared for proxy tests: user app/secret with
// all privileges and an empty database tpproxy_test. The server starts when
// a test first asks for it (Server, Root, DirectDSN, StartProxy), so tests
// that need none run on machines without a server binary.
type Env struct {
	opts sandbox.Options
	once sync.Once
	srv  *sandbox.Server
	stop func()
	err  error
}

// Run runs the package's tests with a lazily started shared server and
// stops the server after them. It returns the exit code for os.Exit.
func Run(m *testing.M, env **Env, opts sandbox.Options) int {
	e := &Env{opts: opts}
	*env = e
	code := m.Run()
	if e.stop != nil {
		e.stop()
	}
	return code
}

// start starts the shared server and prepares its account and schema.
func (e *Env) start() {
	srv, stop, err := sandbox.ForTestMain(e.opts)
	if err != nil {
		e.err = err
		return
	}
	e.stop = stop
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.CreateUser(ctx, User, Password); err != nil {
		e.err = fmt.Errorf("proxytest: %w", err)
		return
	}
	if err := srv.CreateDatabase(ctx, DB); err != nil {
		e.err = fmt.Errorf("proxytest: %w", err)
		return
	}
	e.srv = srv
}

// Server is the shared server, started on first use. Without a server
// binary the test is skipped, or fails under CI=true (sandbox.ForTestMain).
// Call it from the test's own goroutine.
func (e *Env) Server(t testing.TB) *sandbox.Server {
	t.Helper()
	e.once.Do(e.start)
	switch {
	case errors.Is(e.err, sandbox.ErrNotFound):
		t.Skip("needs a server (set CI=true to make this an error):", e.err)
	case e.err != nil:
		t.Fatal(e.err)
	}
	return e.srv
}

// DirectDSN is a go-sql-driver DSN for the server itself.
func (e *Env) DirectDSN(t testing.TB, params ...string) string {
	t.Helper()
	return e.Server(t).DSN(User, Password, DB, params...)
}

// Root opens a root connection to the server, closed when t ends.
func (e *Env) Root(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", e.Server(t).RootDSN(DB))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Options adjust the proxy StartProxy builds: mod functions see the test
// defaults (pool of 4, user app/secret, scheduler.DefaultConfig).
type Options struct {
	Pool      pool.Config
	Proxy     proxy.Config
	Scheduler scheduler.Config
	// ExtraPort, when above 0, also serves an extra port for that many
	// sessions, on a reserved pool of one backend connection.
	ExtraPort int
	// Log receives the proxy's logs; default discards below warnings.
	Log io.Writer
	// AutoSize sizes the pool while it runs (backend.pool_size: auto).
	AutoSize *autosize.Config
}

// Proxy is a running in-process tpproxy.
type Proxy struct {
	Addr   string
	Host   string
	Port   int
	Server *proxy.Server
	Pool   *pool.Pool
	Sched  *scheduler.Scheduler
	// ExtraAddr and ExtraPool are the extra port's, when Options.ExtraPort is set.
	ExtraAddr string
	ExtraPool *pool.Pool
	// Sizer is the pool's automatic sizer, when Options.AutoSize is set.
	Sizer *autosize.Sizer
	stack *stack.Stack
}

// StartProxy starts a proxy in front of the env's server, stopped when t
// ends. mod may change the options before start.
func (e *Env) StartProxy(t testing.TB, mod ...func(*Options)) *Proxy {
	t.Helper()
	var o Options
	o.Pool = pool.DefaultConfig()
	o.Pool.Addr = e.Server(t).Addr
	o.Pool.User, o.Pool.Password = User, Password
	o.Pool.Size = 4
	o.Pool.AcquireTimeout = 5 * time.Second
	o.Proxy.Users = []proxy.User{{Name: User, Plain: Password}}
	o.Scheduler = scheduler.DefaultConfig()
	for _, f := range mod {
		f(&o)
	}
	logOut := o.Log
	if logOut == nil {
		logOut = testLogWriter{t}
	}
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if o.Pool.Logger == nil {
		o.Pool.Logger = log
	}
	if o.Proxy.Logger == nil {
		o.Proxy.Logger = log
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	so := stack.Options{Pool: o.Pool, Scheduler: o.Scheduler, Proxy: o.Proxy, Listener: ln, AutoSize: o.AutoSize}
	if o.ExtraPort > 0 {
		xln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			_ = ln.Close()
			t.Fatal(err)
		}
		so.Extra = stack.Extra{Listener: xln, MaxConnections: o.ExtraPort, PoolSize: 1}
	}
	st, err := stack.Start(context.Background(), so)
	if err != nil {
		t.Fatal(err)
	}
	px := &Proxy{Addr: ln.Addr().String(), Server: st.Server, Pool: st.Pool, Sched: st.Scheduler, ExtraPool: st.ExtraPool, Sizer: st.Sizer, stack: st}
	px.Host = "127.0.0.1"
	px.Port = ln.Addr().(*net.TCPAddr).Port
	if so.Extra.Listener != nil {
		px.ExtraAddr = so.Extra.Listener.Addr().String()
	}
	t.Cleanup(px.Close)
	return px
}

// Close stops the proxy and its pool.
func (p *Proxy) Close() { p.stack.Close() }

// DSN is a go-sql-driver DSN through the proxy for app/secret on the test
// database. It sets interpolateParams=true (text protocol) unless params
// name interpolateParams themselves.
func (p *Proxy) DSN(params ...string) string {
	return p.DSNFor(User, Password, DB, params...)
}

// DSNFor is a DSN through the proxy for any user and schema.
func (p *Proxy) DSNFor(user, password, db string, params ...string) string {
	q := params
	if !slices.ContainsFunc(params, func(p string) bool { return strings.HasPrefix(p, "interpolateParams=") }) {
		q = append([]string{"interpolateParams=true"}, params...)
	}
	return fmt.Sprintf("%s:%s@tcp(%s)/%s?%s", user, password, p.Addr, db, strings.Join(q, "&"))
}

// Open opens a database handle through the proxy, closed when t ends.
func (p *Proxy) Open(t testing.TB, params ...string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", p.DSN(params...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// testLogWriter sends proxy logs to the test log.
type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// CheckStart ends a test whose own sandbox.Start failed: it skips when no
// server binary is installed (outside CI: sandbox.ForTestMain's rule) and
// fails otherwise. It does nothing when err is nil.
func CheckStart(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, sandbox.ErrNotFound) && os.Getenv("CI") != "true" {
		t.Skip("needs a server (set CI=true to make this an error):", err)
	}
	t.Fatal(err)
}
