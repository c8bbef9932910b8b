package pool_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/fakemysql"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
)

// The TestFake* tests run the pool against internal/fakemysql through
// Config.Dial: they need no mysqld (they never call env.Server), so they
// run wherever go test does. They mirror server-based tests of
// pool_test.go.

const (
	fakeUser     = "svc"
	fakePassword = "s3cret"
)

// newFake returns a fake server that lets the pool's account in; it is
// closed when the test ends, after the pool (cleanups run last-in first-out).
func newFake(t *testing.T, cfg fakemysql.Config) *fakemysql.Server {
	t.Helper()
	if cfg.User == "" {
		cfg.User, cfg.Password = fakeUser, fakePassword
	}
	srv := fakemysql.New(cfg)
	t.Cleanup(func() {
		srv.Close()
		if err := srv.Err(); err != nil {
			t.Errorf("fake server: %v", err)
		}
	})
	return srv
}

// newFakePool starts a pool of Size 2 dialing srv.
func newFakePool(t *testing.T, srv *fakemysql.Server, mod func(*pool.Config)) *pool.Pool {
	t.Helper()
	cfg := pool.DefaultConfig()
	cfg.Addr = "fake:3306"
	cfg.Dial = srv.Dial
	cfg.User, cfg.Password = fakeUser, fakePassword
	cfg.Size = 2
	cfg.AcquireTimeout = 2 * time.Second
	cfg.GlobalsInterval = -1 // no background reads to count
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

func TestFakeDialInitialisesSession(t *testing.T) {
	srv := newFake(t, fakemysql.Config{})
	p := newFakePool(t, srv, func(c *pool.Config) { c.Size = 1 })
	c, err := p.Acquire(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(c)
	if v := p.ServerVersion(); v != fakemysql.DefaultVersion {
		t.Fatalf("server version %q", v)
	}
	if d := p.SessionDefaults(); !d.MariaDB || d.WaitTimeout != 28800 || d.Role != "NONE" {
		t.Fatalf("session defaults %+v", d)
	}
	if v, ok := p.Globals().Value("max_allowed_packet"); !ok || v != "16777216" {
		t.Fatalf("globals: max_allowed_packet %q %v", v, ok)
	}
	if srv.CountQueries("SET NAMES") == 0 {
		t.Fatalf("no SET NAMES at dial: %q", srv.Queries())
	}
	if v := value(t, c, "SELECT @@session_track_system_variables"); v != "*" {
		t.Fatalf("session tracking not set at dial: %s", v)
	}
	if v := value(t, c, "SELECT CONNECTION_ID()"); v != strconv.FormatUint(uint64(c.ThreadID()), 10) {
		t.Fatalf("CONNECTION_ID() %s, thread id %d", v, c.ThreadID())
	}
}

func TestFakeAcquireWaitsFIFOAndHandsOver(t *testing.T) {
	srv := newFake(t, fakemysql.Config{})
	p := newFakePool(t, srv, func(c *pool.Config) { c.Size = 1; c.AcquireTimeout = 10 * time.Second })
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
	if want != 3 {
		t.Fatalf("%d of 3 waiters served", want)
	}
	if st := p.Stats(); st.Open != 1 || st.Waits != 3 {
		t.Fatalf("stats after hand-over: %+v", st)
	}
	if n := srv.Logins(); n != 1 {
		t.Fatalf("%d logins for one connection handed over", n)
	}
}

func TestFakeAcquireTimeout(t *testing.T) {
	srv := newFake(t, fakemysql.Config{})
	p := newFakePool(t, srv, func(c *pool.Config) { c.Size = 1; c.AcquireTimeout = 300 * time.Millisecond })
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

func TestFakeAcquireContextCancelLeavesNoWaiter(t *testing.T) {
	srv := newFake(t, fakemysql.Config{})
	p := newFakePool(t, srv, func(c *pool.Config) { c.Size = 1 })
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
	id := held.ThreadID()
	p.Release(held)
	c, err := p.Acquire(ctxT(t), nil)
	if err != nil {
		t.Fatalf("the connection was lost with the cancelled waiter: %v", err)
	}
	defer p.Release(c)
	if c.ThreadID() != id {
		t.Fatalf("got thread %d, want the released %d", c.ThreadID(), id)
	}
}

func TestFakeDeadBackendFailsFast(t *testing.T) {
	srv := newFake(t, fakemysql.Config{})
	srv.SetDown(true)
	p := newFakePool(t, srv, func(c *pool.Config) { c.AcquireTimeout = 10 * time.Second })
	start := time.Now()
	_, err := p.Acquire(ctxT(t), nil)
	if !errors.Is(err, pool.ErrBackendUnavailable) {
		t.Fatalf("got %v, want ErrBackendUnavailable", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("took %s to report a dead backend", el)
	}
	if st := p.Stats(); st.DialErrors == 0 {
		t.Fatalf("no dial error counted: %+v", st)
	}
	if srv.Dials() == 0 {
		t.Fatal("Config.Dial was not used")
	}
}

func TestFakeWrongBackendPasswordIsReported(t *testing.T) {
	srv := newFake(t, fakemysql.Config{})
	p := newFakePool(t, srv, func(c *pool.Config) { c.Password = "wrong" })
	_, err := p.Acquire(ctxT(t), nil)
	var me *mysqlwire.Error
	if !errors.As(err, &me) || me.Code != 1045 {
		t.Fatalf("got %v, want the server's 1045", err)
	}
}

func TestFakeDirtyConnectionIsResetBeforeReuse(t *testing.T) {
	srv := newFake(t, fakemysql.Config{})
	p := newFakePool(t, srv, func(c *pool.Config) { c.Size = 1 })
	ctx := ctxT(t)
	c, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := c.ThreadID()
	if _, err := c.Exec(ctx, "SET @leak = 42"); err != nil {
		t.Fatal(err)
	}
	if v := value(t, c, "SELECT @leak"); v != "42" {
		t.Fatalf("@leak = %s before reset", v)
	}
	resets := srv.Commands(mysqlwire.ComResetConnection)
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
	if n := srv.Commands(mysqlwire.ComResetConnection) - resets; n != 1 {
		t.Fatalf("%d COM_RESET_CONNECTION before reuse, want 1", n)
	}
	if v := value(t, c, "SELECT @leak"); v != "NULL" {
		t.Fatalf("@leak = %s after reset", v)
	}
	if v := value(t, c, "SELECT @@session_track_system_variables"); v != "*" {
		t.Fatalf("session tracking not restored after reset: %s", v)
	}
	if st := p.Stats(); st.Resets != 1 {
		t.Fatalf("resets = %d", st.Resets)
	}
}

func TestFakeCleanConnectionIsNotReset(t *testing.T) {
	srv := newFake(t, fakemysql.Config{})
	p := newFakePool(t, srv, func(c *pool.Config) { c.Size = 1 })
	ctx := ctxT(t)
	for i := 0; i < 3; i++ {
		c, err := p.Acquire(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		p.Release(c)
	}
	if n := srv.Commands(mysqlwire.ComResetConnection); n != 0 {
		t.Fatalf("%d resets of a clean connection", n)
	}
}

func TestFakeLifetimeRetiresConnections(t *testing.T) {
	srv := newFake(t, fakemysql.Config{})
	p := newFakePool(t, srv, func(c *pool.Config) { c.Size = 1; c.MaxLifetime = 200 * time.Millisecond })
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
	// The retired connection said goodbye.
	waitFor(t, func() bool { return srv.Commands(mysqlwire.ComQuit) >= 1 })
}

func TestFakeBackendOutageAndRecovery(t *testing.T) {
	srv := newFake(t, fakemysql.Config{})
	p := newFakePool(t, srv, func(c *pool.Config) {
		c.HealthInterval = 100 * time.Millisecond
		c.AcquireTimeout = 500 * time.Millisecond
	})
	c, err := p.Acquire(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Release(c)
	srv.SetDown(true)
	waitFor(t, func() bool { return p.Stats().Open == 0 })
	if _, err := p.Acquire(ctxT(t), nil); !errors.Is(err, pool.ErrBackendUnavailable) && !errors.Is(err, pool.ErrAcquireTimeout) {
		t.Fatalf("during the outage: %v", err)
	}
	srv.SetDown(false)
	waitFor(t, func() bool { return p.Stats().Idle == 2 })
	c, err = p.Acquire(ctxT(t), nil)
	if err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	defer p.Release(c)
	if v := value(t, c, "SELECT 1"); v != "1" {
		t.Fatalf("SELECT 1 = %s", v)
	}
}

// TestFakeRedialBacksOff: while the backend refuses connections the
// filler dials about 100 ms, 200 ms, 400 ms, 800 ms apart (each ±20%),
// not in a loop. TestRedialWait checks the sequence itself.
func TestFakeRedialBacksOff(t *testing.T) {
	srv := newFake(t, fakemysql.Config{})
	var mu sync.Mutex
	var failed []time.Time // refused dials
	p := newFakePool(t, srv, func(c *pool.Config) {
		c.HealthInterval = 100 * time.Millisecond // to notice the outage
		c.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := srv.Dial(ctx, network, addr)
			if err != nil {
				mu.Lock()
				failed = append(failed, time.Now())
				mu.Unlock()
			}
			return nc, err
		}
	})
	srv.SetDown(true)
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(failed) > 0 && time.Since(failed[0]) > 1700*time.Millisecond
	})
	mu.Lock()
	got := slices.Clone(failed)
	mu.Unlock()
	// A dial in a loop would make hundreds. The health check's
	// replacement of the connections it finds dead adds one or two at the
	// start; the filler's dials then wait 100, 200, 400 and 800 ms.
	if len(got) < 4 || len(got) > 8 {
		t.Fatalf("%d refused dials in 1.7 s of outage: %v", len(got), got)
	}
	if last := got[len(got)-1].Sub(got[len(got)-2]); last < 800*time.Millisecond*7/10 || last > 800*time.Millisecond*13/10+50*time.Millisecond {
		t.Errorf("last wait %v, want 800 ms ±20%% (%d refused dials)", last, len(got))
	}
	srv.SetDown(false)
	waitFor(t, func() bool { return p.Stats().Idle == 2 })
}
