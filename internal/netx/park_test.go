//go:build linux

package netx

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

func parkPair(t *testing.T) (*Parkable, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	p := NewParkable(c)
	t.Cleanup(func() { p.Close() })
	return p, peer
}

// A detached socket stays open, its descriptor in the caller's epoll set
// reports the peer's bytes, and once attached they are read.
func TestParkableDetachAttach(t *testing.T) {
	p, peer := parkPair(t)
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(ep)
	if err := p.Detach(func(fd int) error {
		return syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: 7})
	}); err != nil {
		t.Fatal(err)
	}
	if !p.Detached() || p.LocalAddr() != nil {
		t.Fatal("not detached")
	}
	if _, err := p.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read while detached: %v", err)
	}
	if _, err := peer.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	evs := make([]syscall.EpollEvent, 1)
	n, err := syscall.EpollWait(ep, evs, 2000)
	if err != nil || n != 1 || evs[0].Fd != 7 {
		t.Fatalf("epoll: n=%d err=%v", n, err)
	}
	unregistered := false
	if err := p.Attach(func(fd int) {
		unregistered = syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, fd, nil) == nil
	}); err != nil {
		t.Fatal(err)
	}
	if !unregistered {
		t.Fatal("attach did not unregister the descriptor")
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(p, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q %v", buf, err)
	}
	if _, err := p.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(peer, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("peer read %q %v", buf, err)
	}
}

// Close while detached closes the socket (the peer sees EOF) and Attach
// then refuses; a read deadline set while detached is in force after an
// attach.
func TestParkableCloseWhileDetached(t *testing.T) {
	p, peer := parkPair(t)
	if err := p.Detach(func(int) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_ = peer.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := peer.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("peer read after close: %v", err)
	}
	if err := p.Attach(func(int) { t.Error("unregister of a closed connection") }); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("attach after close: %v", err)
	}

	q, _ := parkPair(t)
	if err := q.Detach(func(int) error { return nil }); err != nil {
		t.Fatal(err)
	}
	_ = q.SetReadDeadline(time.Unix(1, 0))
	if err := q.Attach(func(int) {}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Read(make([]byte, 1)); !errors.Is(err, syscall.ETIMEDOUT) && !isTimeout(err) {
		t.Fatalf("read after attach with a past deadline: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// A register that fails leaves the connection attached and usable.
func TestParkableRegisterFails(t *testing.T) {
	p, peer := parkPair(t)
	if err := p.Detach(func(int) error { return syscall.EINVAL }); err == nil {
		t.Fatal("detach succeeded")
	}
	if p.Detached() {
		t.Fatal("detached after a failed register")
	}
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := p.Read(b); err != nil || b[0] != 'x' {
		t.Fatalf("read %v", err)
	}
}
