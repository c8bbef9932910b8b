package pool_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
	"github.com/tpproxy/tpproxy/pool"
)

var env *proxytest.Env

func TestMain(m *testing.M) { os.Exit(proxytest.Run(m, &env, sandbox.Options{})) }

func newPool(t testing.TB, mod func(*pool.Config)) *pool.Pool {
	t.Helper()
	cfg := pool.DefaultConfig()
	cfg.Addr = env.Server(t).Addr
	cfg.User, cfg.Password = proxytest.User, proxytest.Password
	cfg.Size = 2
	cfg.AcquireTimeout = 2 * time.Second
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if mod != nil {
		mod(&cfg)
	}
	p, err := pool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// value runs a one-value query on c.
func value(t *testing.T, c *pool.Conn, sql string) string {
	t.Helper()
	var v string
	err := c.Query(ctxT(t), sql, func(row []byte) error {
		s, _, err := mysqlwire.LenEncString(row)
		if s == nil {
			v = "NULL"
		} else {
			v = string(s)
		}
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

func TestAcquireWaitsFIFOAndHandsOver(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1; c.AcquireTimeout = 10 * time.Second })
	ctx := ctxT(t)
	held, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 3)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := p.Acquire(ctx, nil)
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			p.Release(c)
		}(i)
		// Queue the waiters in a known order.
		waitFor(t, func() bool { return p.Stats().Waiting == i+1 })
	}
	p.Release(held)
	wg.Wait()
	close(order)
	want := 0
	for got := range order {
		if got != want {
			t.Fatalf("waiter %d served before waiter %d: not FIFO", got, want)
		}
		want++
	}
	if st := p.Stats(); st.Open != 1 || st.Waits != 3 {
		t.Fatalf("stats after hand-over: %+v", st)
	}
}

func TestAcquireTimeout(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1; c.AcquireTimeout = 300 * time.Millisecond })
	ctx := ctxT(t)
	held, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(held)
	start := time.Now()
	_, err = p.Acquire(ctx, nil)
	if !errors.Is(err, pool.ErrAcquireTimeout) {
		t.Fatalf("got %v, want ErrAcquireTimeout", err)
	}
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Fatalf("gave up after %s, before the acquire timeout", el)
	}
	if st := p.Stats(); st.AcquireTimeouts != 1 || st.Waiting != 0 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestAcquireContextCancelLeavesNoWaiter(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1 })
	held, err := p.Acquire(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := p.Acquire(ctx, nil)
		errc <- err
	}()
	waitFor(t, func() bool { return p.Stats().Waiting == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if st := p.Stats(); st.Waiting != 0 {
		t.Fatalf("a cancelled waiter is still queued: %+v", st)
	}
	p.Release(held)
	c, err := p.Acquire(ctxT(t), nil)
	if err != nil {
		t.Fatalf("the connection was lost with the cancelled waiter: %v", err)
	}
	p.Release(c)
}

func TestDeadBackendFailsFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := newPool(t, func(c *pool.Config) { c.Addr = addr; c.AcquireTimeout = 10 * time.Second })
	start := time.Now()
	_, err = p.Acquire(ctxT(t), nil)
	if !errors.Is(err, pool.ErrBackendUnavailable) {
		t.Fatalf("got %v, want ErrBackendUnavailable", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("took %s to report a dead backend", el)
	}
	if st := p.Stats(); st.DialErrors == 0 {
		t.Fatalf("no dial error counted: %+v", st)
	}
}

func TestWrongBackendPasswordIsReported(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Password = "wrong" })
	_, err := p.Acquire(ctxT(t), nil)
	var me *mysqlwire.Error
	if !errors.As(err, &me) || me.Code != 1045 {
		t.Fatalf("got %v, want the server's 1045", err)
	}
}

func TestBackendOutageAndRecovery(t *testing.T) {
	sw := newSwitch(t, env.Server(t).Addr)
	p := newPool(t, func(c *pool.Config) {
		c.Addr = sw.addr()
		c.Size = 2
		c.HealthInterval = 100 * time.Millisecond
		c.AcquireTimeout = 500 * time.Millisecond
	})
	c, err := p.Acquire(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Release(c)

	sw.off() // cut every connection and refuse new ones
	waitFor(t, func() bool { return p.Stats().Open == 0 })
	if _, err := p.Acquire(ctxT(t), nil); !errors.Is(err, pool.ErrBackendUnavailable) && !errors.Is(err, pool.ErrAcquireTimeout) {
		t.Fatalf("during the outage: %v", err)
	}

	sw.on()
	waitFor(t, func() bool { return p.Stats().Idle == 2 })
	c, err = p.Acquire(ctxT(t), nil)
	if err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	if v := value(t, c, "SELECT 1"); v != "1" {
		t.Fatalf("SELECT 1 = %s", v)
	}
	p.Release(c)
	if st := p.Stats(); st.HealthFailures == 0 && st.Broken == 0 {
		t.Fatalf("the outage left no trace in stats: %+v", st)
	}
}

func TestDirtyConnectionIsResetBeforeReuse(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1 })
	ctx := ctxT(t)
	c, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := c.ThreadID()
	if _, err := c.Exec(ctx, "SET @leak = 42"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE TEMPORARY TABLE "+proxytest.DB+".tmp_leak (a int)"); err != nil {
		t.Fatal(err)
	}
	c.MarkDirty()
	p.Release(c)
	c, err = p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(c)
	if c.ThreadID() != id {
		t.Fatalf("reset replaced the connection (thread %d -> %d) instead of resetting it", id, c.ThreadID())
	}
	if v := value(t, c, "SELECT @leak"); v != "NULL" {
		t.Fatalf("@leak = %s after reset", v)
	}
	var me *mysqlwire.Error
	if err := c.Query(ctx, "SELECT * FROM "+proxytest.DB+".tmp_leak", nil); !errors.As(err, &me) || me.Code != 1146 {
		t.Fatalf("temporary table after reset: %v, want ERROR 1146", err)
	}
	if v := value(t, c, "SELECT @@session_track_system_variables"); v != "*" {
		t.Fatalf("session tracking not restored after reset: %s", v)
	}
	if st := p.Stats(); st.Resets != 1 {
		t.Fatalf("resets = %d", st.Resets)
	}
}

func TestSyncAppliesState(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1 })
	ctx := ctxT(t)
	c, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(c)
	want := pool.State{Schema: proxytest.DB, Vars: pool.CharsetVars("latin1", "latin1_bin")}
	want.SetVar("sql_mode", "ANSI_QUOTES")
	want.SetVar("time_zone", "+03:00")
	want.SetVar("character_set_results", "") // NULL
	if err := c.Sync(ctx, &want); err != nil {
		t.Fatal(err)
	}
	for q, w := range map[string]string{
		"SELECT DATABASE()":                 proxytest.DB,
		"SELECT @@sql_mode":                 "ANSI_QUOTES",
		"SELECT @@time_zone":                "+03:00",
		"SELECT @@collation_connection":     "latin1_bin",
		"SELECT @@character_set_client":     "latin1",
		"SELECT @@character_set_results":    "NULL",
		"SELECT @@character_set_connection": "latin1",
	} {
		if got := value(t, c, q); got != w {
			t.Errorf("%s = %q, want %q", q, got, w)
		}
	}
	if !c.State().Equal(&want) {
		t.Fatalf("connection state %+v, want %+v", c.State(), want)
	}
	// Back to defaults: variables the state no longer sets return to global values.
	def := pool.State{Schema: proxytest.DB, Vars: pool.CharsetVars("utf8mb4", "utf8mb4_general_ci")}
	if err := c.Sync(ctx, &def); err != nil {
		t.Fatal(err)
	}
	if got, global := value(t, c, "SELECT @@sql_mode"), value(t, c, "SELECT @@GLOBAL.sql_mode"); got != global {
		t.Fatalf("sql_mode %q, want the global %q", got, global)
	}
}

func TestSyncWithoutSchemaGetsFreshConnection(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1 })
	ctx := ctxT(t)
	c, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	withDB := pool.State{Schema: proxytest.DB, Vars: pool.CharsetVars("utf8mb4", "utf8mb4_general_ci")}
	if err := c.Sync(ctx, &withDB); err != nil {
		t.Fatal(err)
	}
	p.Release(c)
	noDB := pool.State{Vars: pool.CharsetVars("utf8mb4", "utf8mb4_general_ci")}
	c, err = p.Acquire(ctx, &noDB)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(c)
	if err := c.Sync(ctx, &noDB); err != nil {
		t.Fatal(err)
	}
	if v := value(t, c, "SELECT DATABASE()"); v != "NULL" {
		t.Fatalf("a session without schema got connection with schema %s", v)
	}
	if st := p.Stats(); st.SchemaClears != 1 || st.Replaced != 0 {
		t.Fatalf("leaving the schema: %d change-user, %d redials; want 1 and 0", st.SchemaClears, st.Replaced)
	}
}

func TestFoundRowsConnectionsAreDialedToFit(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1 })
	ctx := ctxT(t)
	c, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+proxytest.DB+".fr (id int primary key, v int)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "REPLACE INTO "+proxytest.DB+".fr VALUES (1, 1)"); err != nil {
		t.Fatal(err)
	}
	p.Release(c)
	want := pool.State{Schema: proxytest.DB, FoundRows: true, Vars: pool.CharsetVars("utf8mb4", "utf8mb4_general_ci")}
	c, err = p.Acquire(ctx, &want)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(c)
	if err := c.Sync(ctx, &want); err != nil {
		t.Fatal(err)
	}
	ok, err := c.Exec(ctx, "UPDATE fr SET v = 1 WHERE id = 1") // matches a row, changes nothing
	if err != nil {
		t.Fatal(err)
	}
	if ok.AffectedRows != 1 {
		t.Fatalf("with CLIENT_FOUND_ROWS an unchanged matched row counts: affected %d", ok.AffectedRows)
	}
	if st := p.Stats(); st.Replaced != 1 {
		t.Fatalf("replaced = %d", st.Replaced)
	}
}

func TestLifetimeRetiresConnections(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1; c.MaxLifetime = 200 * time.Millisecond })
	ctx := ctxT(t)
	c, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := c.ThreadID()
	time.Sleep(250 * time.Millisecond) // let the connection outlive its lifetime
	p.Release(c)
	waitFor(t, func() bool { return p.Stats().Idle == 1 })
	c, err = p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(c)
	if c.ThreadID() == first {
		t.Fatal("an expired connection was reused")
	}
	if st := p.Stats(); st.Expired == 0 {
		t.Fatalf("expired = 0: %+v", st)
	}
}

func TestKillQuery(t *testing.T) {
	p := newPool(t, nil)
	ctx := ctxT(t)
	c, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(c)
	done := make(chan error, 1)
	go func() { done <- c.Query(context.Background(), "SELECT SLEEP(20)", nil) }()
	root := env.Root(t)
	waitFor(t, func() bool {
		var n int
		_ = root.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND INFO LIKE 'SELECT SLEEP%'", c.ThreadID()).Scan(&n)
		return n == 1
	})
	start := time.Now()
	if err := p.Kill(ctx, c.ThreadID(), true); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		// MariaDB reports the interruption; MySQL returns 1 from SLEEP.
		var me *mysqlwire.Error
		if err != nil && (!errors.As(err, &me) || me.Code != 1317) {
			t.Fatalf("killed SLEEP: %v, want ERROR 1317 or a result", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("KILL QUERY did not stop the statement")
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("statement stopped only after %s", el)
	}
}

// waitFor polls cond with a ticker until it holds or 10 s pass.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("condition not reached within 10s")
		}
	}
}

// switchProxy forwards TCP to the server and can cut every connection,
// simulating a backend outage.
type switchProxy struct {
	t      *testing.T
	target string
	mu     sync.Mutex
	ln     net.Listener
	port   string
	conns  []net.Conn
}

func newSwitch(t *testing.T, target string) *switchProxy {
	s := &switchProxy{t: t, target: target}
	s.on()
	t.Cleanup(s.off)
	return s
}

func (s *switchProxy) addr() string { return "127.0.0.1:" + s.port }

func (s *switchProxy) on() {
	s.mu.Lock()
	defer s.mu.Unlock()
	addr := "127.0.0.1:0"
	if s.port != "" {
		addr = "127.0.0.1:" + s.port
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.ln = ln
	s.port = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", s.target)
			if err != nil {
				c.Close()
				continue
			}
			s.mu.Lock()
			if s.ln != ln { // switched off meanwhile
				s.mu.Unlock()
				c.Close()
				b.Close()
				continue
			}
			s.conns = append(s.conns, c, b)
			s.mu.Unlock()
			go func() { _, _ = io.Copy(b, c); b.Close() }()
			go func() { _, _ = io.Copy(c, b); c.Close() }()
		}
	}()
}

func (s *switchProxy) off() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		s.ln.Close()
		s.ln = nil
	}
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

// TestLentConnectionsLeaveThePoolItsSize: a connection held for good by an
// idle session is lent beyond the pool's size; the pool dials another so
// that the rest of the work keeps size connections, and closes the extra
// one when the loan ends and it comes back.
func TestLentConnectionsLeaveThePoolItsSize(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 2; c.AcquireTimeout = 10 * time.Second })
	ctx := ctxT(t)
	held, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Lend(1)
	waitFor(t, func() bool { st := p.Stats(); return st.Open == 3 && st.Idle == 2 })
	// Two more acquirers find a connection each, without waiting.
	a, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Waits != 0 || st.Lent != 1 || st.InUse != 3 {
		t.Fatalf("with one connection lent: %+v", st)
	}
	p.Release(a)
	p.Release(b)
	p.Lend(0)
	p.Release(held)
	if st := p.Stats(); st.Open != 2 || st.Idle != 2 || st.Lent != 0 {
		t.Fatalf("after the loan ended: %+v", st)
	}
	// The loan may also end after the connection came back.
	p.Lend(1)
	waitFor(t, func() bool { st := p.Stats(); return st.Open == 3 && st.Dialing == 0 })
	p.Lend(0)
	if st := p.Stats(); st.Open != 2 || st.Idle != 2 {
		t.Fatalf("after a loan ended with every connection idle: %+v", st)
	}
}

// TestLoanEndingDuringItsDialKeepsTheIdle: a loan that ends while its
// connection is still being dialed closes that one when it arrives, not an
// idle connection of the pool's (CI once saw Open 2, Idle 1, Dialing 1
// right after such a Lend(0): an idle connection had been closed for it).
func TestLoanEndingDuringItsDialKeepsTheIdle(t *testing.T) {
	gate := make(chan struct{})
	var gated atomic.Bool
	p := newPool(t, func(c *pool.Config) {
		c.Size = 2
		c.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if gated.Load() {
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	})
	ctx := ctxT(t)
	waitFor(t, func() bool { return p.Stats().Idle == 2 })
	ids := idleThreadIDs(ctx, t, p)
	gated.Store(true)
	p.Lend(1)
	waitFor(t, func() bool { return p.Stats().Dialing == 1 })
	p.Lend(0)
	if st := p.Stats(); st.Idle != 2 {
		t.Fatalf("a loan ended during its dial closed an idle connection: %+v", st)
	}
	close(gate)
	waitFor(t, func() bool { st := p.Stats(); return st.Dialing == 0 && st.Open == 2 })
	if st := p.Stats(); st.Idle != 2 || st.Dials != 3 {
		t.Fatalf("after the loan's dial ended: %+v", st)
	}
	if got := idleThreadIDs(ctx, t, p); !maps.Equal(got, ids) {
		t.Errorf("idle connections %v, want the pool's own %v", got, ids)
	}
}

// idleThreadIDs takes the pool's two connections and gives them back,
// returning their server thread ids.
func idleThreadIDs(ctx context.Context, t *testing.T, p *pool.Pool) map[uint32]bool {
	t.Helper()
	a, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[uint32]bool{a.ThreadID(): true, b.ThreadID(): true}
	p.Release(a)
	p.Release(b)
	return ids
}
