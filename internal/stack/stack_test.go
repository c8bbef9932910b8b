package stack_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/admin"
	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
	"github.com/tpproxy/tpproxy/internal/stack"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

var env *proxytest.Env

func TestMain(m *testing.M) { os.Exit(proxytest.Run(m, &env, sandbox.Options{})) }

var quiet = slog.New(slog.DiscardHandler)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// options are a test stack's: the components' configs as a test fills
// them in code, and a client listener.
func options(t *testing.T) stack.Options {
	pc := pool.DefaultConfig()
	pc.Addr, pc.User, pc.Password, pc.Size = env.Server(t).Addr, proxytest.User, proxytest.Password, 2
	pc.Logger = quiet
	return stack.Options{
		Pool:      pc,
		Scheduler: scheduler.DefaultConfig(),
		Proxy:     proxy.Config{Users: []proxy.User{{Name: proxytest.User, Plain: proxytest.Password}}, Logger: quiet},
		Listener:  listen(t),
	}
}

func queryOne(t *testing.T, dsn, q string) string {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cols []any
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	names, _ := rows.Columns()
	vals := make([]sql.RawBytes, len(names))
	for i := range vals {
		cols = append(cols, &vals[i])
	}
	if !rows.Next() {
		t.Fatalf("%s: no row (%v)", q, rows.Err())
	}
	if err := rows.Scan(cols...); err != nil {
		t.Fatal(err)
	}
	return string(vals[len(vals)-1])
}

func appDSN(addr string) string {
	return proxytest.User + ":" + proxytest.Password + "@tcp(" + addr + ")/" + proxytest.DB + "?interpolateParams=true"
}

func httpGet(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestStartEverything serves every part of a stack at once and shuts it
// down.
func TestStartEverything(t *testing.T) {
	o := options(t)
	o.Scheduler.Size = 3
	o.Extra = stack.Extra{Listener: listen(t), MaxConnections: 2, PoolSize: 1, Logger: quiet}
	aln, hln, pln := listen(t), listen(t), listen(t)
	o.Addons = []stack.Addon{
		admin.PortAddon(admin.Config{Listen: "127.0.0.1:0", User: "adm", Password: "pw", Logger: quiet}, aln),
		admin.HTTPAddon(admin.HTTPConfig{Logger: quiet}, hln),
		admin.PprofAddon(quiet, pln),
	}
	st, err := stack.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	if got := queryOne(t, appDSN(o.Listener.Addr().String()), "SELECT 1"); got != "1" {
		t.Errorf("client port: %q", got)
	}
	if got := queryOne(t, appDSN(o.Extra.Listener.Addr().String()), "SELECT 2"); got != "2" {
		t.Errorf("extra port: %q", got)
	}
	if st.ExtraPool == nil || st.ExtraPool.Config().Size != 1 || st.Pool.Config().Size != 2 {
		t.Errorf("pool sizes: extra %v, main %d", st.ExtraPool, st.Pool.Config().Size)
	}
	adminDSN := "adm:pw@tcp(" + aln.Addr().String() + ")/"
	if got := queryOne(t, adminDSN, "SHOW VARIABLES LIKE 'thread_pool_size'"); got != "3" {
		t.Errorf("admin port: thread_pool_size %q", got)
	}
	if code := httpGet(t, "http://"+hln.Addr().String()+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	if code := httpGet(t, "http://"+pln.Addr().String()+"/debug/pprof/"); code != http.StatusOK {
		t.Errorf("/debug/pprof/: %d", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for name, ln := range map[string]net.Listener{"client": o.Listener, "extra": o.Extra.Listener,
		"admin": aln, "http": hln, "pprof": pln} {
		if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
			_ = c.Close()
			t.Errorf("%s listener still accepts after Shutdown", name)
		}
	}
	if _, err := st.Pool.Acquire(ctx, nil); !errors.Is(err, pool.ErrClosed) {
		t.Errorf("pool after Shutdown: %v", err)
	}
	st.Close() // again: nothing happens
	select {
	case err := <-st.Failed():
		t.Errorf("a listener failed: %v", err)
	default:
	}
}

// TestStartFails: a stack that cannot start builds nothing that lasts and
// closes the listeners it was given.
func TestStartFails(t *testing.T) {
	o := options(t)
	aln := listen(t)
	o.Addons = []stack.Addon{admin.PortAddon(admin.Config{Listen: "not an address"}, aln)}
	_, err := stack.Start(context.Background(), o)
	if !errors.Is(err, admin.ErrBadConfig) || !strings.HasPrefix(err.Error(), "admin port: ") {
		t.Fatalf("Start with a bad admin config: %v", err)
	}
	for _, ln := range []net.Listener{o.Listener, aln} {
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("listener %s not closed: %v", ln.Addr(), err)
		}
	}

	o = options(t)
	o.Listener.Close()
	o.Listener = nil
	if _, err := stack.Start(context.Background(), o); !errors.Is(err, stack.ErrNoListener) {
		t.Errorf("Start without a listener: %v", err)
	}

	o = options(t)
	o.Pool.Addr = ""
	if _, err := stack.Start(context.Background(), o); !errors.Is(err, pool.ErrBadConfig) {
		t.Errorf("Start with a bad pool config: %v", err)
	}
}

// TestFailedListener: a listener that stops by itself is reported; the
// rest serve on.
func TestFailedListener(t *testing.T) {
	o := options(t)
	hln := listen(t)
	o.Addons = []stack.Addon{admin.HTTPAddon(admin.HTTPConfig{Logger: quiet}, hln)}
	st, err := stack.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_ = hln.Close()
	select {
	case err := <-st.Failed():
		if !strings.HasPrefix(err.Error(), "http endpoint: ") {
			t.Errorf("failure %q does not name the http endpoint", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a closed HTTP listener was not reported")
	}
	if got := queryOne(t, appDSN(o.Listener.Addr().String()), "SELECT 3"); got != "3" {
		t.Errorf("client port after the HTTP listener failed: %q", got)
	}
}
