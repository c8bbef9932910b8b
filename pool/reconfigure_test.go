package pool_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/pool"
)

func TestReconfigureGrowAndShrink(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 2; c.AcquireTimeout = 10 * time.Second })
	ctx := ctxT(t)
	waitFor(t, func() bool { return p.Stats().Idle == 2 })

	d := p.Config().Dynamic()
	d.Size = 4
	if err := p.Reconfigure(d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { st := p.Stats(); return st.Open == 4 && st.Idle == 4 })
	if got := p.Config().Size; got != 4 {
		t.Fatalf("Config().Size = %d after growing to 4", got)
	}

	a, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.Size = 1
	if err := p.Reconfigure(d); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Open != 2 || st.Idle != 0 || st.InUse != 2 || st.Size != 1 {
		t.Fatalf("right after shrinking to 1 with 2 held: %+v, want the 2 idle closed at once", st)
	}

	// Acquirers arriving while the pool is still above its new size wait
	// and are served once it is back at its size.
	const waiters = 2
	errc := make(chan error, waiters)
	for range waiters {
		go func() {
			c, err := p.Acquire(ctx, nil)
			if err == nil {
				if v := value(t, c, "SELECT 1"); v != "1" {
					err = errors.New("SELECT 1 = " + v)
				}
				p.Release(c)
			}
			errc <- err
		}()
	}
	waitFor(t, func() bool { return p.Stats().Waiting == waiters })
	p.Release(a)
	if st := p.Stats(); st.Open != 1 || st.Waiting != waiters {
		t.Fatalf("a release above the size must close the connection, not hand it over: %+v", st)
	}
	p.Release(b)
	for range waiters {
		if err := <-errc; err != nil {
			t.Fatalf("waiter during the shrink: %v", err)
		}
	}
	if st := p.Stats(); st.Open != 1 || st.Idle != 1 || st.Waiting != 0 || st.AcquireTimeouts != 0 {
		t.Fatalf("after the shrink settled: %+v", st)
	}
}

func TestReconfigureRejectsInvalid(t *testing.T) {
	p := newPool(t, nil)
	before := p.Config().Dynamic()
	for name, mod := range map[string]func(*pool.Dynamic){
		"size 0":                 func(d *pool.Dynamic) { d.Size = 0 },
		"negative size":          func(d *pool.Dynamic) { d.Size = -1 },
		"zero acquire timeout":   func(d *pool.Dynamic) { d.AcquireTimeout = 0 },
		"zero connect timeout":   func(d *pool.Dynamic) { d.ConnectTimeout = 0 },
		"zero health interval":   func(d *pool.Dynamic) { d.HealthInterval = 0 },
		"negative max lifetime":  func(d *pool.Dynamic) { d.MaxLifetime = -time.Second },
		"negative acquire timer": func(d *pool.Dynamic) { d.AcquireTimeout = -time.Second },
	} {
		d := before
		d.Size = 7 // a valid change that must not be applied either
		mod(&d)
		if err := p.Reconfigure(d); !errors.Is(err, pool.ErrBadConfig) {
			t.Errorf("%s: got %v, want ErrBadConfig", name, err)
		}
		if got := p.Config().Dynamic(); got != before {
			t.Fatalf("%s: rejected Reconfigure changed the config: %+v, was %+v", name, got, before)
		}
	}
	if st := p.Stats(); st.Size != before.Size {
		t.Fatalf("stats size %d, want %d", st.Size, before.Size)
	}

	p.Close()
	if err := p.Reconfigure(before); !errors.Is(err, pool.ErrClosed) {
		t.Fatalf("Reconfigure after Close: %v, want ErrClosed", err)
	}
}

func TestReconfigureAcquireTimeout(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1; c.AcquireTimeout = 30 * time.Second })
	ctx := ctxT(t)
	held, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(held)
	d := p.Config().Dynamic()
	d.AcquireTimeout = 200 * time.Millisecond
	if err := p.Reconfigure(d); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.Acquire(ctx, nil)
	el := time.Since(start)
	if !errors.Is(err, pool.ErrAcquireTimeout) {
		t.Fatalf("got %v, want ErrAcquireTimeout", err)
	}
	if el < 150*time.Millisecond || el > 5*time.Second {
		t.Fatalf("gave up after %s; the new acquire timeout is 200ms", el)
	}
	if !strings.Contains(err.Error(), "200ms") {
		t.Fatalf("error %q does not report the timeout in force", err)
	}
}

func TestReconfigureHealthIntervalRestartsTicker(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1; c.HealthInterval = time.Hour })
	waitFor(t, func() bool { return p.Stats().Idle == 1 })
	d := p.Config().Dynamic()
	d.HealthInterval = 20 * time.Millisecond
	if err := p.Reconfigure(d); err != nil {
		t.Fatal(err)
	}
	// With the old ticker the first check would come in an hour.
	waitFor(t, func() bool { return p.Stats().HealthChecks >= 2 })
	if st := p.Stats(); st.HealthFailures != 0 {
		t.Fatalf("health checks of a healthy backend failed: %+v", st)
	}
}

func TestReconfigureMaxLifetimeAppliesToNewConnections(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1; c.MaxLifetime = 0 })
	ctx := ctxT(t)
	c, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := p.Config().Dynamic()
	d.MaxLifetime = time.Nanosecond
	if err := p.Reconfigure(d); err != nil {
		t.Fatal(err)
	}
	if got := p.Config().MaxLifetime; got != time.Nanosecond {
		t.Fatalf("Config().MaxLifetime = %s", got)
	}
	// The connection dialed before keeps its unlimited lifetime.
	first := c.ThreadID()
	p.Release(c)
	if c, err = p.Acquire(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if c.ThreadID() != first {
		t.Fatalf("a connection dialed before the change was retired")
	}
	// Replace it: its successor is dialed with the new lifetime and is
	// retired on its first release.
	c.MarkBroken()
	p.Release(c)
	if c, err = p.Acquire(ctx, nil); err != nil {
		t.Fatal(err)
	}
	p.Release(c)
	waitFor(t, func() bool { return p.Stats().Expired >= 1 })
}

// TestReconfigureConcurrent runs Reconfigure against acquire/release loops;
// under -race it checks the settings are read safely, and at the end that
// no connection slot or waiter was lost.
func TestReconfigureConcurrent(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 2; c.AcquireTimeout = 10 * time.Second })
	ctx := ctxT(t)
	stop := make(chan struct{})
	errc := make(chan error, 8)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := p.Acquire(ctx, nil)
				if err != nil {
					errc <- err
					return
				}
				_ = p.Config()
				_ = p.Stats()
				p.Release(c)
			}
		})
	}
	base := p.Config().Dynamic()
	for i := range 200 {
		d := base
		d.Size = 1 + i%4
		d.AcquireTimeout = time.Duration(5+i%3) * time.Second
		d.ConnectTimeout = time.Duration(2+i%2) * time.Second
		d.HealthInterval = time.Duration(10+i%5) * time.Millisecond
		d.MaxLifetime = time.Duration(i%2) * time.Hour
		if err := p.Reconfigure(d); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("acquire during reconfiguration: %v", err)
	}
	if err := p.Reconfigure(base); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		st := p.Stats()
		return st.Open == base.Size && st.Idle == base.Size && st.Waiting == 0
	})
}

func TestAcquireWaitHistogram(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1; c.AcquireTimeout = 60 * time.Millisecond })
	ctx := ctxT(t)
	const n = 5
	for range n {
		c, err := p.Acquire(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		p.Release(c)
	}
	held, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// This one waits out the acquire timeout: at least 60 ms in the queue.
	if _, err := p.Acquire(ctx, nil); !errors.Is(err, pool.ErrAcquireTimeout) {
		t.Fatalf("got %v, want ErrAcquireTimeout", err)
	}
	p.Release(held)

	st := p.Stats()
	h := st.AcquireWait
	if h.Count != n+2 || h.Count != st.Acquires {
		t.Fatalf("histogram count %d, want %d (= Acquires %d)", h.Count, n+2, st.Acquires)
	}
	// The waited acquire lands above 50 ms (bucket bounds are inclusive).
	var above uint64
	for i, c := range h.Counts {
		if i > 0 && h.Bounds[i-1] >= 50*time.Millisecond {
			above += c
		}
	}
	if above != 1 || h.Counts[0] < n {
		t.Fatalf("bounds %v counts %v: want the %d immediate acquires in the first bucket and one above 50ms", h.Bounds, h.Counts, n)
	}
	if h.Sum < 60*time.Millisecond {
		t.Fatalf("sum %s below the one wait of at least 60ms", h.Sum)
	}
}

// TestResizeAndHoldCounters: Resize changes the size alone (the other
// settings stay), growing dials and shrinking closes the idle surplus at
// once; Held counts the time connections were out and NoteRoundTrip the
// round trips the proxy timed.
func TestResizeAndHoldCounters(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 2; c.AcquireTimeout = 3 * time.Second })
	waitFor(t, func() bool { return p.Stats().Idle == 2 })
	before := p.Config().Dynamic()
	if err := p.Resize(5); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { st := p.Stats(); return st.Open == 5 && st.Idle == 5 })
	want := before
	want.Size = 5
	if got := p.Config().Dynamic(); got != want {
		t.Fatalf("settings after Resize(5): %+v, want %+v", got, want)
	}
	if err := p.Resize(0); err == nil || !errors.Is(err, pool.ErrBadConfig) {
		t.Fatalf("Resize(0): %v", err)
	}

	c0 := p.Counters()
	c, err := p.Acquire(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	p.Release(c)
	p.NoteRoundTrip(7 * time.Millisecond)
	c1 := p.Counters()
	if held := c1.Held - c0.Held; held < 50*time.Millisecond || held > 2*time.Second {
		t.Fatalf("Held grew by %v for a connection out 50 ms", held)
	}
	if c1.RoundTrips-c0.RoundTrips != 1 || c1.RoundTripTime-c0.RoundTripTime != 7*time.Millisecond {
		t.Fatalf("round trips %+v → %+v", c0, c1)
	}

	if err := p.Resize(1); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Open != 1 || st.Size != 1 {
		t.Fatalf("right after Resize(1): %+v, want the idle surplus closed at once", st)
	}
	p.Close()
	if err := p.Resize(3); !errors.Is(err, pool.ErrClosed) {
		t.Fatalf("Resize after Close: %v", err)
	}
}
