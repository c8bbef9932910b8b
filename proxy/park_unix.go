//go:build unix

package proxy

import (
	"errors"
	"syscall"
)

// parkOS: sessions park on this system.
const parkOS = true

// waitReadable waits until rc's socket has bytes to read (or is closed,
// or its read deadline passes).
func waitReadable(rc syscall.RawConn) {
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

// quietSocket reports whether rc's socket has nothing to read now (no
// command on the way, no EOF).
func quietSocket(rc syscall.RawConn) bool {
	quiet := false
	_ = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		quiet = errors.Is(err, syscall.EAGAIN)
		return true
	})
	return quiet
}
