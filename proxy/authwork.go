package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"runtime"
	"sync/atomic"
	"time"
)

// authWork is the CPU budget of handshakes: the private-key operations of
// caching_sha2_password's full authentication (an RSA-2048 decryption,
// about 1 ms of CPU) and of TLS handshakes (the server's signature) run
// in at most slots goroutines at a time, the rest wait their turn. Without
// it a flood of such handshakes puts as many CPU-bound goroutines in the
// run queue as it opens connections, and every statement's wake-up waits
// behind all of them (issue #36: 170 RSA logins made the slowest honest
// point select take 330–380 ms on one P). With it at most slots of them
// are runnable, so a statement waits behind at most that many; and the
// GOMAXPROCS governor (cmd/tpproxy) counts the slots' busy time as load,
// so while handshakes keep them busy statements have the other Ps.
type authWork struct {
	slots chan struct{}
	waits atomic.Uint64 // acquisitions that found every slot taken
	busy  atomic.Int64  // nanoseconds slots were held, in all
}

// authSlots is the size of the budget: half the CPUs, at least one.
func authSlots() int { return max(1, runtime.NumCPU()/2) }

func newAuthWork(n int) *authWork {
	return &authWork{slots: make(chan struct{}, max(n, 1))}
}

// acquire takes a slot, waiting until ctx ends or deadline (if set)
// passes. It returns when the slot was taken (for release), and false if
// none was.
func (w *authWork) acquire(ctx context.Context, deadline time.Time) (time.Time, bool) {
	select {
	case w.slots <- struct{}{}:
		return time.Now(), true
	default:
	}
	w.waits.Add(1)
	var expire <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expire = t.C
	}
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return time.Time{}, false
	case <-expire:
		return time.Time{}, false
	}
	// Statements that became runnable while this handshake waited go
	// first.
	runtime.Gosched()
	return time.Now(), true
}

// release gives back the slot acquire took at since.
func (w *authWork) release(since time.Time) {
	w.busy.Add(int64(time.Since(since)))
	<-w.slots
}

// run runs f in a slot; it reports false, without running f, when no slot
// came before ctx ended or deadline passed.
func (w *authWork) run(ctx context.Context, deadline time.Time, f func()) bool {
	since, ok := w.acquire(ctx, deadline)
	if !ok {
		return false
	}
	defer w.release(since)
	f()
	return true
}

// HandshakeWork is what handshakes' CPU budget did (authWork).
type HandshakeWork struct {
	Slots int
	Waits uint64        // private-key operations that waited for a slot
	Busy  time.Duration // time slots were held, in all
}

// HandshakeWork returns the counters of the handshakes' CPU budget.
func (srv *Server) HandshakeWork() HandshakeWork {
	return HandshakeWork{Slots: cap(srv.auth.slots), Waits: srv.auth.waits.Load(),
		Busy: time.Duration(srv.auth.busy.Load())}
}

// tlsGated is the connection under a TLS handshake. The handshake's CPU
// work (the key exchange and the server's signature) comes after the
// ClientHello and before the server reads the client's next flight, so a
// slot is taken when the ClientHello has been read (GetConfigForClient)
// and given back on the next read, when the handshake waits for the
// network again: a client that stalls mid-handshake holds no slot.
type tlsGated struct {
	net.Conn
	work     *authWork
	ctx      context.Context
	deadline time.Time
	held     bool
	since    time.Time
}

func (c *tlsGated) Read(b []byte) (int, error) {
	c.done()
	return c.Conn.Read(b)
}

// take takes a slot for the handshake's CPU work.
func (c *tlsGated) take() error {
	if c.held {
		return nil
	}
	since, ok := c.work.acquire(c.ctx, c.deadline)
	if !ok {
		return errHandshakeBudget
	}
	c.held, c.since = true, since
	return nil
}

// done gives back the slot, if held.
func (c *tlsGated) done() {
	if c.held {
		c.held = false
		c.work.release(c.since)
	}
}

// gatedTLSConfig returns cfg with a GetConfigForClient that takes a slot
// of the handshakes' budget for the connection (a *tlsGated) before the
// handshake's CPU work, calling cfg's own hook after it.
func gatedTLSConfig(cfg *tls.Config) *tls.Config {
	if cfg == nil {
		return nil
	}
	g := cfg.Clone()
	next := cfg.GetConfigForClient
	g.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if c, ok := hello.Conn.(*tlsGated); ok {
			if err := c.take(); err != nil {
				return nil, err
			}
		}
		if next != nil {
			return next(hello)
		}
		return nil, nil
	}
	return g
}
