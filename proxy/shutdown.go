package proxy

import (
	"context"
	"sync/atomic"
	"time"
)

// Shutdown stops the server gracefully: it stops accepting, closes the
// sessions that are idle without a transaction, lets statements in flight
// finish and sessions in a transaction (or holding table locks or a
// cursor) run until it ends — COM_PING answers ERR 1053 meanwhile, so
// client pools stop using those connections — and closes each session as
// soon as it holds no such work. When ctx ends first, the rest are closed
// as Close does: the server rolls their transactions back as their backend
// connections are reset or closed. Shutdown returns when every session has
// ended, with ctx's error if it had to force them.
func (srv *Server) Shutdown(ctx context.Context) error {
	srv.stopAccepting(&srv.draining)
	srv.log.Info("shutting down: no new connections; waiting for statements and transactions in flight",
		"sessions", srv.Stats().Sessions)

	done := make(chan struct{})
	go func() {
		srv.wg.Wait()
		close(done)
	}()
	// Idle sessions are woken now. A session that is busy, or that went
	// idle after this pass, sees draining when it next waits for a command:
	// it marks itself idle before it checks the flag, and the flag is set
	// before this pass looks, so none is missed.
	srv.wakeIdle()
	select {
	case <-done:
		srv.Close()
		return nil
	case <-ctx.Done():
		srv.log.Warn("shutdown timeout: closing the remaining sessions", "sessions", srv.Stats().Sessions)
		srv.Close()
		return ctx.Err()
	}
}

// Retire is the first half of a hand-over to a new process that took the
// listening sockets: it stops accepting and lets the sessions go on —
// those busy now keep their connection until their client leaves — but
// ends every session that has been idle for a second (parked) without a
// transaction, now or later, so that pooled idle connections move to the
// new process while active clients see nothing. It returns when every
// session has ended, or with ctx's error when ctx ends first; Shutdown
// then does the rest.
func (srv *Server) Retire(ctx context.Context) error {
	srv.stopAccepting(&srv.retiring)
	srv.log.Info("handed over: no new connections; idle sessions end, busy ones go on until their clients leave",
		"sessions", srv.Stats().Sessions)
	done := make(chan struct{})
	go func() {
		srv.wg.Wait()
		close(done)
	}()
	tick := time.NewTicker(retireEvery)
	defer tick.Stop()
	for {
		srv.retireParked(time.Now().Add(-retireIdle))
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stopAccepting sets flag (draining or retiring) and closes the client
// listeners, with mu held so that serve and register see both at once.
func (srv *Server) stopAccepting(flag *atomic.Bool) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	flag.Store(true)
	for _, ln := range srv.listeners {
		_ = ln.Close()
	}
}

// A retiring server ends the sessions parked for retireIdle, looking every
// retireEvery: a session that just logged in (and parked) is about to send
// its first command, one idle for a second is most likely a pool's spare.
const (
	retireIdle  = time.Second
	retireEvery = 250 * time.Millisecond
)

// retireParked wakes the parked sessions without a transaction that have
// waited since before cutoff; each ends when it finds its client quiet.
func (srv *Server) retireParked(cutoff time.Time) {
	var parked []*Session
	srv.mu.Lock()
	for _, s := range srv.sessions {
		if s.wait.Load() == waitParked && s.waitSince.Load() < cutoff.UnixNano() && pinReason(s.pinsNow.Load())&drainPins == 0 {
			parked = append(parked, s)
		}
	}
	srv.mu.Unlock()
	for _, s := range parked {
		srv.unpark(s)
	}
}

// wakeIdle interrupts the read of every idle session without a
// transaction, so that it sees the server is draining and ends.
func (srv *Server) wakeIdle() {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, s := range srv.sessions {
		if s.idle.Load() && pinReason(s.pinsNow.Load())&drainPins == 0 {
			_ = s.nc.SetReadDeadline(time.Unix(1, 0))
			srv.unpark(s)
		}
	}
}

// Draining reports whether Shutdown has begun.
func (srv *Server) Draining() bool { return srv.draining.Load() }
