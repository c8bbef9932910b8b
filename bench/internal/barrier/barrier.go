// Package barrier makes the shards of a distributed tpbench run start
// each step together. Shard 0 leads: it listens on an address and also
// takes part; the others connect to it. Before each step every shard says
// it is ready (its connections are open) and waits; once all are, the
// leader tells them to go after a short lead time, so that all begin at
// the same instant.
//
// The protocol is lines of text over one TCP connection per follower:
//
//	follower → leader   hello <index> <count>
//	follower → leader   ready <step>
//	leader → follower   go <step> <delay-ns>
//	leader → follower   abort <reason>
//
// The delay is relative to when the follower reads the line, so the
// shards' clocks need not agree. Every wait is bounded by Config.Timeout;
// a shard that disconnects fails the others at their next Wait instead of
// leaving them waiting.
package barrier

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrTimeout means a shard did not arrive at the barrier in time.
var ErrTimeout = errors.New("barrier: timed out")

// ErrShardLost means a shard (or the leader) disconnected or sent
// something else than the protocol expects.
var ErrShardLost = errors.New("barrier: shard lost")

// ErrBadConfig marks an invalid Config.
var ErrBadConfig = errors.New("barrier: invalid config")

// Config is one shard's view of the barrier.
type Config struct {
	// Addr is where shard 0 listens (host:port; ":7070" listens on all
	// interfaces) and the others connect.
	Addr string
	// Index and Count: this is shard Index of Count (0 ≤ Index < Count).
	Index, Count int
	// Timeout bounds each wait: for all shards to connect in Join and to
	// be ready in Wait. Default 2 minutes.
	Timeout time.Duration
	// Lead is how long after the last shard is ready they all start.
	// Default 500 ms.
	Lead time.Duration
}

// DefaultTimeout and DefaultLead are Config's defaults.
const (
	DefaultTimeout = 2 * time.Minute
	DefaultLead    = 500 * time.Millisecond
)

// Validate reports a Config Join cannot use.
func (c Config) Validate() error {
	switch {
	case c.Count < 1 || c.Index < 0 || c.Index >= c.Count:
		return fmt.Errorf("%w: shard %d of %d", ErrBadConfig, c.Index, c.Count)
	case c.Count > 1 && c.Addr == "":
		return fmt.Errorf("%w: no address", ErrBadConfig)
	case c.Timeout < 0 || c.Lead < 0:
		return fmt.Errorf("%w: negative timeout or lead", ErrBadConfig)
	}
	return nil
}

// Barrier is a shard's membership. Wait and Close may be called from one
// goroutine at a time.
type Barrier struct {
	cfg Config
	// leader: one peer per follower, by index (nil at 0); follower: one
	// peer, the leader.
	peers []*peer
	once  sync.Once
}

type peer struct {
	index int
	conn  net.Conn
	r     *bufio.Reader
}

// dialRetry is the pause between a follower's attempts to reach a leader
// that is not listening yet.
const dialRetry = 200 * time.Millisecond

// Join enters the barrier: the leader listens until all Count-1 followers
// have connected, a follower connects (retrying while the leader is not
// up yet). Both give up after Timeout with ErrTimeout. A Count of 1 needs
// no network.
func Join(ctx context.Context, cfg Config) (*Barrier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Lead == 0 {
		cfg.Lead = DefaultLead
	}
	b := &Barrier{cfg: cfg}
	if cfg.Count == 1 {
		return b, nil
	}
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout, ErrTimeout)
	defer cancel()
	var err error
	if cfg.Index == 0 {
		err = b.accept(ctx)
	} else {
		err = b.dial(ctx)
	}
	if err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// accept takes the followers' connections until each index has one.
func (b *Barrier) accept(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", listenAddr(b.cfg.Addr))
	if err != nil {
		return fmt.Errorf("barrier: listen: %w", err)
	}
	defer ln.Close()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	b.peers = make([]*peer, b.cfg.Count)
	for missing := b.cfg.Count - 1; missing > 0; {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %s waiting for shards %s to connect to %s", context.Cause(ctx), b.cfg.Timeout,
					b.missing(), b.cfg.Addr)
			}
			return fmt.Errorf("barrier: accept: %w", err)
		}
		p := &peer{conn: conn, r: bufio.NewReader(conn)}
		idx, err := b.hello(ctx, p)
		if err != nil {
			// A stray connection (a port scan, a shard of another run)
			// is refused; the run waits for the right one.
			fmt.Fprintf(conn, "abort %s\n", err)
			conn.Close()
			continue
		}
		p.index = idx
		b.peers[idx] = p
		missing--
	}
	return nil
}

// listenAddr is where the leader listens for addr: addr itself when its
// host is an IP address, else all interfaces on its port (a name such as
// Kubernetes' <job>-0.<service> may not resolve yet on the leader's own
// pod when it starts).
func listenAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || net.ParseIP(host) != nil {
		return addr
	}
	return net.JoinHostPort("", port)
}

// hello reads a follower's greeting.
func (b *Barrier) hello(ctx context.Context, p *peer) (int, error) {
	f, err := p.read(ctx, 3)
	if err != nil {
		return 0, err
	}
	idx, err1 := strconv.Atoi(f[1])
	n, err2 := strconv.Atoi(f[2])
	switch {
	case f[0] != "hello" || err1 != nil || err2 != nil:
		return 0, fmt.Errorf("not a greeting: %q", strings.Join(f, " "))
	case n != b.cfg.Count:
		return 0, fmt.Errorf("shard %d says the run has %d shards, the leader %d", idx, n, b.cfg.Count)
	case idx < 1 || idx >= n:
		return 0, fmt.Errorf("shard index %d out of 1..%d", idx, n-1)
	case b.peers[idx] != nil:
		return 0, fmt.Errorf("shard %d connected twice", idx)
	}
	return idx, nil
}

// missing lists the followers that have not connected.
func (b *Barrier) missing() string {
	var out []string
	for i := 1; i < b.cfg.Count; i++ {
		if b.peers[i] == nil {
			out = append(out, strconv.Itoa(i))
		}
	}
	return strings.Join(out, ", ")
}

// dial connects a follower to the leader and greets it.
func (b *Barrier) dial(ctx context.Context) error {
	var d net.Dialer
	retry := time.NewTicker(dialRetry)
	defer retry.Stop()
	var last error
	for {
		conn, err := d.DialContext(ctx, "tcp", b.cfg.Addr)
		if err == nil {
			p := &peer{conn: conn, r: bufio.NewReader(conn)}
			if _, err := fmt.Fprintf(conn, "hello %d %d\n", b.cfg.Index, b.cfg.Count); err != nil {
				conn.Close()
				return fmt.Errorf("%w: greeting the leader at %s: %w", ErrShardLost, b.cfg.Addr, err)
			}
			b.peers = []*peer{p}
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: shard %d could not reach the leader (shard 0) at %s within %s: %w",
				context.Cause(ctx), b.cfg.Index, b.cfg.Addr, b.cfg.Timeout, last)
		case <-retry.C:
		}
	}
}

// read reads one line of want fields, bounded by ctx.
func (p *peer) read(ctx context.Context, want int) ([]string, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = p.conn.SetReadDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = p.conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	line, err := p.r.ReadString('\n')
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, ErrTimeout
		}
		return nil, fmt.Errorf("%w: %w", ErrShardLost, err)
	}
	f := strings.Fields(line)
	if len(f) >= 2 && f[0] == "abort" {
		return nil, fmt.Errorf("%w: the leader aborted: %s", ErrShardLost, strings.Join(f[1:], " "))
	}
	if len(f) != want {
		return nil, fmt.Errorf("%w: unexpected %q", ErrShardLost, strings.TrimSpace(line))
	}
	return f, nil
}

// Wait reports this shard ready for step and blocks until all shards
// are, then until the common start; it returns when the step should
// begin. It fails with ErrTimeout when a shard does not arrive within
// Timeout, and with ErrShardLost when one has disconnected; the leader
// then tells the others to abort. After an error the Barrier is closed.
func (b *Barrier) Wait(ctx context.Context, step int) error {
	if b.cfg.Count == 1 {
		return nil
	}
	ctx, cancel := context.WithTimeoutCause(ctx, b.cfg.Timeout, ErrTimeout)
	defer cancel()
	var delay time.Duration
	var err error
	if b.cfg.Index == 0 {
		delay, err = b.lead(ctx, step)
	} else {
		delay, err = b.follow(ctx, step)
	}
	if err != nil {
		b.Close()
		return err
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		b.Close()
		return context.Cause(ctx)
	}
}

// lead collects every follower's ready for step and sends go.
func (b *Barrier) lead(ctx context.Context, step int) (time.Duration, error) {
	errs := make([]error, len(b.peers))
	var wg sync.WaitGroup
	for i, p := range b.peers {
		if p == nil {
			continue
		}
		wg.Go(func() {
			f, err := p.read(ctx, 2)
			switch {
			case errors.Is(err, ErrTimeout):
				errs[i] = fmt.Errorf("%w: shard %d was not ready for step %d within %s", ErrTimeout, i, step, b.cfg.Timeout)
			case err != nil:
				errs[i] = fmt.Errorf("shard %d before step %d: %w", i, step, err)
			case f[0] != "ready" || f[1] != strconv.Itoa(step):
				errs[i] = fmt.Errorf("%w: shard %d is at %q, the leader at step %d", ErrShardLost, i, strings.Join(f, " "), step)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.abort(err)
		return 0, err
	}
	for _, p := range b.peers {
		if p == nil {
			continue
		}
		_ = p.conn.SetWriteDeadline(time.Now().Add(b.cfg.Lead))
		if _, err := fmt.Fprintf(p.conn, "go %d %d\n", step, b.cfg.Lead.Nanoseconds()); err != nil {
			err = fmt.Errorf("%w: shard %d at step %d: %w", ErrShardLost, p.index, step, err)
			b.abort(err)
			return 0, err
		}
	}
	return b.cfg.Lead, nil
}

// abort tells the followers still connected why the run ends.
func (b *Barrier) abort(why error) {
	msg := strings.ReplaceAll(why.Error(), "\n", "; ")
	for _, p := range b.peers {
		if p != nil {
			_ = p.conn.SetWriteDeadline(time.Now().Add(time.Second))
			fmt.Fprintf(p.conn, "abort %s\n", msg)
		}
	}
}

// follow says ready for step and waits for the leader's go.
func (b *Barrier) follow(ctx context.Context, step int) (time.Duration, error) {
	p := b.peers[0]
	_ = p.conn.SetWriteDeadline(time.Now().Add(b.cfg.Timeout))
	if _, err := fmt.Fprintf(p.conn, "ready %d\n", step); err != nil {
		return 0, fmt.Errorf("%w: the leader (shard 0) before step %d: %w", ErrShardLost, step, err)
	}
	f, err := p.read(ctx, 3)
	switch {
	case errors.Is(err, ErrTimeout):
		return 0, fmt.Errorf("%w: no go for step %d from the leader within %s", ErrTimeout, step, b.cfg.Timeout)
	case err != nil:
		return 0, fmt.Errorf("waiting for step %d: %w", step, err)
	case f[0] != "go" || f[1] != strconv.Itoa(step):
		return 0, fmt.Errorf("%w: the leader sent %q at step %d", ErrShardLost, strings.Join(f, " "), step)
	}
	ns, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || ns < 0 {
		return 0, fmt.Errorf("%w: bad delay %q", ErrShardLost, f[2])
	}
	return time.Duration(ns), nil
}

// Close leaves the barrier; the others fail at their next Wait. It is
// idempotent.
func (b *Barrier) Close() error {
	b.once.Do(func() {
		for _, p := range b.peers {
			if p != nil {
				p.conn.Close()
			}
		}
	})
	return nil
}
