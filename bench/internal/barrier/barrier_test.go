package barrier

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// joinAll joins shards 0..n-1 of n concurrently, each with cfg's timing.
func joinAll(t *testing.T, cfg Config, indexes ...int) ([]*Barrier, []error) {
	t.Helper()
	bs := make([]*Barrier, cfg.Count)
	errs := make([]error, cfg.Count)
	var wg sync.WaitGroup
	for _, i := range indexes {
		c := cfg
		c.Index = i
		wg.Go(func() { bs[i], errs[i] = Join(t.Context(), c) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, b := range bs {
			if b != nil {
				b.Close()
			}
		}
	})
	return bs, errs
}

// TestBarrierStartsTogether: four shards pass three steps; in each, no
// shard starts before the last one is ready (one arrives 150 ms late at
// step 1), and all start within a few ms of each other.
func TestBarrierStartsTogether(t *testing.T) {
	const n, steps = 4, 3
	cfg := Config{Addr: freeAddr(t), Count: n, Timeout: 5 * time.Second, Lead: 50 * time.Millisecond}
	bs, errs := joinAll(t, cfg, 0, 1, 2, 3)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for step := range steps {
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			started []time.Time
			lastIn  time.Time
		)
		for i, b := range bs {
			wg.Go(func() {
				if step == 1 && i == 2 {
					time.Sleep(150 * time.Millisecond) // the late shard, not a synchronisation
				}
				mu.Lock()
				if now := time.Now(); now.After(lastIn) {
					lastIn = now
				}
				mu.Unlock()
				if err := b.Wait(t.Context(), step); err != nil {
					t.Errorf("shard %d step %d: %v", i, step, err)
					return
				}
				mu.Lock()
				started = append(started, time.Now())
				mu.Unlock()
			})
		}
		wg.Wait()
		if len(started) != n {
			t.Fatalf("step %d: %d shards started", step, len(started))
		}
		first, last := started[0], started[0]
		for _, s := range started {
			if s.Before(first) {
				first = s
			}
			if s.After(last) {
				last = s
			}
		}
		if first.Before(lastIn) {
			t.Errorf("step %d: a shard started %s before the last one was ready", step, lastIn.Sub(first))
		}
		if spread := last.Sub(first); spread > 20*time.Millisecond {
			t.Errorf("step %d: starts spread over %s", step, spread)
		}
		t.Logf("step %d: start spread %s", step, last.Sub(first))
	}
}

// TestBarrierMissingShard: the leader gives up waiting for a shard that
// never connects, naming it; the shard that did connect then fails at its
// first Wait instead of hanging.
func TestBarrierMissingShard(t *testing.T) {
	cfg := Config{Addr: freeAddr(t), Count: 3, Timeout: 400 * time.Millisecond}
	begin := time.Now()
	bs, errs := joinAll(t, cfg, 0, 1)
	if !errors.Is(errs[0], ErrTimeout) || !strings.Contains(errs[0].Error(), "shards 2 to connect") {
		t.Fatalf("leader: %v", errs[0])
	}
	if errs[1] != nil {
		t.Fatalf("shard 1 joined: %v", errs[1])
	}
	if err := bs[1].Wait(t.Context(), 0); !errors.Is(err, ErrShardLost) {
		t.Errorf("shard 1 after the leader gave up: %v", err)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("took %s with a 400 ms timeout", d)
	}
}

// TestBarrierShardDies: a shard that leaves after step 0 makes the leader
// fail step 1 naming it, and the other follower fail with the leader's
// abort, both at once rather than at the timeout.
func TestBarrierShardDies(t *testing.T) {
	cfg := Config{Addr: freeAddr(t), Count: 3, Timeout: 10 * time.Second, Lead: 10 * time.Millisecond}
	bs, errs := joinAll(t, cfg, 0, 1, 2)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	waitAll := func(step int, shards ...int) []error {
		out := make([]error, len(bs))
		var wg sync.WaitGroup
		for _, i := range shards {
			wg.Go(func() { out[i] = bs[i].Wait(t.Context(), step) })
		}
		wg.Wait()
		return out
	}
	if err := errors.Join(waitAll(0, 0, 1, 2)...); err != nil {
		t.Fatal(err)
	}
	bs[2].Close()
	begin := time.Now()
	got := waitAll(1, 0, 1)
	if !errors.Is(got[0], ErrShardLost) || !strings.Contains(got[0].Error(), "shard 2") {
		t.Errorf("leader: %v", got[0])
	}
	if !errors.Is(got[1], ErrShardLost) || !strings.Contains(got[1].Error(), "aborted") {
		t.Errorf("shard 1: %v", got[1])
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("failing took %s", d)
	}
}

// TestBarrierNoLeader: a follower whose leader never comes up, or never
// says go, times out with ErrTimeout.
func TestBarrierNoLeader(t *testing.T) {
	cfg := Config{Addr: freeAddr(t), Index: 1, Count: 2, Timeout: 300 * time.Millisecond}
	if _, err := Join(t.Context(), cfg); !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "could not reach the leader") {
		t.Errorf("no leader: %v", err)
	}

	// A leader that accepts but never calls Wait.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	cfg.Addr = ln.Addr().String()
	b, err := Join(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := <-accepted
	defer c.Close()
	if err := b.Wait(t.Context(), 0); !errors.Is(err, ErrTimeout) {
		t.Errorf("silent leader: %v", err)
	}
}

// TestBarrierWrongCount: a follower of another run's size is refused
// (it learns why) and the leader keeps waiting for the right one.
func TestBarrierWrongCount(t *testing.T) {
	addr := freeAddr(t)
	leader := make(chan error, 1)
	go func() {
		b, err := Join(t.Context(), Config{Addr: addr, Count: 2, Timeout: 3 * time.Second})
		if err == nil {
			err = b.Wait(t.Context(), 0)
			b.Close()
		}
		leader <- err
	}()
	wrong, err := Join(t.Context(), Config{Addr: addr, Index: 1, Count: 3, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	if err := wrong.Wait(t.Context(), 0); !errors.Is(err, ErrShardLost) || !strings.Contains(err.Error(), "3 shards") {
		t.Errorf("wrong count: %v", err)
	}
	right, err := Join(t.Context(), Config{Addr: addr, Index: 1, Count: 2, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer right.Close()
	if err := right.Wait(t.Context(), 0); err != nil {
		t.Errorf("right shard: %v", err)
	}
	if err := <-leader; err != nil {
		t.Errorf("leader: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Count: 0}, {Index: 2, Count: 2, Addr: "x:1"}, {Index: 0, Count: 2}, {Count: 1, Timeout: -1}} {
		if _, err := Join(context.Background(), c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}
