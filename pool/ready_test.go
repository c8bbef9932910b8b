package pool_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
	"github.com/tpproxy/tpproxy/pool"
)

func TestReadyHealthy(t *testing.T) {
	p := newPool(t, nil)
	ctx := ctxT(t)
	// Probes and a Kill at once take turns on the control connection.
	var wg sync.WaitGroup
	errc := make(chan error, 8*10+1)
	for range 8 {
		wg.Go(func() {
			for range 10 {
				errc <- p.Ready(ctx)
			}
		})
	}
	wg.Go(func() {
		// Thread 0 does not exist: the server answers with an error, and
		// the control connection stays usable.
		if err := p.Kill(ctx, 0, true); err == nil {
			errc <- errors.New("KILL QUERY 0 succeeded")
		}
	})
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatalf("Ready on a healthy pool: %v", err)
		}
	}
	p.Close()
	if err := p.Ready(ctx); !errors.Is(err, pool.ErrClosed) {
		t.Fatalf("Ready after Close: %v, want ErrClosed", err)
	}
}

func TestReadyUnreachableBackend(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Addr = "127.0.0.1:1"; c.ConnectTimeout = time.Second })
	err := p.Ready(ctxT(t))
	if !errors.Is(err, pool.ErrBackendUnavailable) || !strings.Contains(err.Error(), "ping 127.0.0.1:1") {
		t.Fatalf("got %v, want ErrBackendUnavailable saying the ping failed", err)
	}
}

// TestReadyBackendRestart stops and restarts a private server under a pool:
// Ready fails while it is down, the pool drops its dead connections at once
// rather than at the next health interval, and Ready and Acquire work again
// once it is back.
func TestReadyBackendRestart(t *testing.T) {
	// The server's socket lives under dir: keep the path short.
	dir, err := os.MkdirTemp("", "pr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctx := ctxT(t)
	startCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := sandbox.Start(startCtx, sandbox.Options{BaseDir: dir, KeepDataDir: true})
	proxytest.CheckStart(t, err)
	var mu sync.Mutex // srv is replaced on restart; Cleanup stops the one running
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := srv.Stop(stopCtx); err != nil {
			t.Errorf("stop second server: %v", err)
		}
	})
	if err := srv.CreateUser(startCtx, proxytest.User, proxytest.Password); err != nil {
		t.Fatal(err)
	}

	p := newPool(t, func(c *pool.Config) {
		c.Addr = srv.Addr
		c.Size = 2
		c.ConnectTimeout = 2 * time.Second
		// Only Ready can make the pool look at its idle connections.
		c.HealthInterval = time.Hour
	})
	waitFor(t, func() bool { return p.Stats().Idle == 2 })
	if err := p.Ready(ctx); err != nil {
		t.Fatalf("Ready before the outage: %v", err)
	}

	if err := srv.Stop(startCtx); err != nil {
		t.Fatal(err)
	}
	err = p.Ready(ctx)
	if !errors.Is(err, pool.ErrBackendUnavailable) || !strings.Contains(err.Error(), "ping "+srv.Addr) {
		t.Fatalf("Ready with the server stopped: %v, want ErrBackendUnavailable from the ping", err)
	}
	waitFor(t, func() bool {
		st := p.Stats()
		return st.HealthFailures > 0 && st.Open == 0
	})
	if _, err := p.Acquire(ctx, nil); !errors.Is(err, pool.ErrBackendUnavailable) {
		t.Fatalf("Acquire with the server stopped: %v, want ErrBackendUnavailable", err)
	}

	again, err := sandbox.Start(startCtx, sandbox.Options{BaseDir: dir, Port: srv.Port, KeepDataDir: true})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	srv = again
	mu.Unlock()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for err = p.Ready(ctx); err != nil; err = p.Ready(ctx) {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("Ready 20s after the restart: %v", err)
		}
	}
	c, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatalf("Acquire after the restart: %v", err)
	}
	defer p.Release(c)
	if v := value(t, c, "SELECT 1"); v != "1" {
		t.Fatalf("SELECT 1 = %s", v)
	}
}

// TestReadyDoesNotHoldUpKill probes a backend that accepts connections but
// never answers: Ready waits out its ConnectTimeout on the control
// connection, and a Kill meanwhile gives up with its own context instead of
// waiting behind the probe.
func TestReadyDoesNotHoldUpKill(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c // held open, never answered
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	})
	cfg := pool.DefaultConfig()
	cfg.Addr = ln.Addr().String()
	cfg.User, cfg.Password = proxytest.User, proxytest.Password
	cfg.ConnectTimeout = 2 * time.Second
	cfg.Logger = slog.New(slog.DiscardHandler)
	// Not started: no pool connection competes for the listener.
	p, err := pool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)

	ready := make(chan error, 1)
	start := time.Now()
	go func() { ready <- p.Ready(context.Background()) }()
	var probe net.Conn
	select {
	case probe = <-accepted: // Ready is dialing: it holds the control connection
		accepted <- probe
	case <-time.After(5 * time.Second):
		t.Fatal("Ready did not dial the backend")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	killStart := time.Now()
	if err := p.Kill(ctx, 1, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Kill behind a hanging probe: %v, want its context's deadline", err)
	}
	if el := time.Since(killStart); el > time.Second {
		t.Fatalf("Kill waited %s behind the probe; its context allowed 200ms", el)
	}
	select {
	case err := <-ready:
		if !errors.Is(err, pool.ErrBackendUnavailable) {
			t.Fatalf("Ready against a silent backend: %v", err)
		}
		if el := time.Since(start); el > 4*time.Second {
			t.Fatalf("Ready took %s; ConnectTimeout is 2s", el)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ready did not return")
	}
}
