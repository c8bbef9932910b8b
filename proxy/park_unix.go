//go:build unix

package proxy

import (
	"errors"
	"net"
	"syscall"
)

// parkOS: sessions park on this system.
const parkOS = true

// readable returns a function that waits until nc has bytes to read (or
// is closed, or its read deadline passes), or nil when nc is not a socket.
func readable(nc net.Conn) func() {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return func() {
		first := true
		_ = rc.Read(func(fd uintptr) bool {
			if !first {
				return true // the poller says readable
			}
			first = false
			// Bytes may have arrived before the poller was asked: look.
			var b [1]byte
			_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			return !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EINTR)
		})
	}
}
