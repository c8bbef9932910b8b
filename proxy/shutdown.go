package proxy

import (
	"context"
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
	srv.mu.Lock()
	srv.draining.Store(true)
	for _, ln := range srv.listeners {
		_ = ln.Close()
	}
	srv.mu.Unlock()
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
