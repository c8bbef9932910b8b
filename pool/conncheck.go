//go:build unix

package pool

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// liveness checks idle connections without a round trip: a non-blocking
// peek at the socket. A server that closed the connection (KILL,
// wait_timeout, restart) has left an EOF or an error packet there.
type liveness struct {
	rc    syscall.RawConn
	peek  func(fd uintptr) bool // built once: no allocation per check
	dead  bool
	probe [1]byte
}

func (l *liveness) init(nc net.Conn) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	l.rc = rc
	l.peek = func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), l.probe[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil:
			// n == 0 is EOF; n > 0 is data nobody asked for, such as the
			// error packet a server sends before closing an idle session.
			l.dead = true
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EINTR):
		default:
			l.dead = true
		}
		_ = n
		return true
	}
}

// alive reports whether the idle connection c may still be used.
func (c *Conn) alive() bool {
	l := &c.live
	if l.rc == nil {
		return true
	}
	if c.r.Buffered() > 0 {
		return false
	}
	if err := l.rc.Read(l.peek); err != nil {
		return false
	}
	return !l.dead
}
