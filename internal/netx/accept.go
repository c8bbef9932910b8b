// Package netx holds the accept loop tpproxy's listeners share.
package netx

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"runtime"
	"time"
)

// AcceptLoop accepts connections on ln and passes each to handle (which
// must not block: it starts the connection's goroutine) until ctx ends or
// ln is closed; then it returns nil. ln is closed when ctx ends. Accept
// errors such as running out of file descriptors are logged and retried
// with a backoff of up to a second.
func AcceptLoop(ctx context.Context, ln net.Listener, log *slog.Logger, handle func(net.Conn)) error {
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			log.Warn("accept failed", "listen", ln.Addr().String(), "err", err, "retry_in", delay)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil
			}
			continue
		}
		delay = 0
		handle(nc)
		// Work already runnable (established sessions' statements) goes
		// before the next connection: a burst of thousands of connects
		// would otherwise fill the run queue with handshakes ahead of it
		// (issue #36: the slowest honest statement of a handshake flood
		// came in its first quarter second). Connections queue in the
		// listen backlog meanwhile.
		runtime.Gosched()
	}
}
