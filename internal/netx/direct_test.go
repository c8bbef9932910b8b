package netx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pair returns both ends of a loopback TCP connection, the first one
// through Direct.
func pair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	d := Direct(c)
	t.Cleanup(func() { d.Close(); peer.Close() })
	return d, peer
}

// TestDirectConnRelaysBothWays moves more than the socket buffers hold
// both ways at once (so writes wait for room and reads for bytes), then
// sees EOF when the peer closes.
func TestDirectConnRelaysBothWays(t *testing.T) {
	d, peer := pair(t)
	if directOS {
		if _, ok := d.(*DirectConn); !ok {
			t.Fatalf("Direct returned %T", d)
		}
	}
	const size = 8 << 20
	out := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	var wg sync.WaitGroup
	var peerGot []byte
	var peerErr error
	wg.Add(2)
	go func() { // the peer echoes everything back
		defer wg.Done()
		buf := make([]byte, 64<<10)
		for len(peerGot) < size {
			n, err := peer.Read(buf)
			peerGot = append(peerGot, buf[:n]...)
			if err != nil {
				peerErr = err
				return
			}
			if _, err := peer.Write(buf[:n]); err != nil {
				peerErr = err
				return
			}
		}
	}()
	var writeErr error
	go func() {
		defer wg.Done()
		_, writeErr = d.Write(out)
	}()
	got := make([]byte, 0, size)
	buf := make([]byte, 32<<10)
	for len(got) < size {
		n, err := d.Read(buf)
		if err != nil {
			t.Fatalf("read after %d bytes: %v", len(got), err)
		}
		got = append(got, buf[:n]...)
	}
	wg.Wait()
	if writeErr != nil || peerErr != nil {
		t.Fatalf("write: %v, peer: %v", writeErr, peerErr)
	}
	if !bytes.Equal(got, out) || !bytes.Equal(peerGot, out) {
		t.Fatal("bytes differ")
	}
	peer.Close()
	if n, err := d.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("after the peer closed: %d, %v; want 0, EOF", n, err)
	}
}

// TestDirectConnDeadlinesAndClose: a read deadline ends a waiting read
// with a timeout, a Close from another goroutine ends it with
// net.ErrClosed, and errors are *net.OpError named like net.Conn's.
func TestDirectConnDeadlinesAndClose(t *testing.T) {
	d, _ := pair(t)
	if err := d.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := d.Read(make([]byte, 10))
	var oe *net.OpError
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &oe) || oe.Op != "read" || !oe.Timeout() {
		t.Fatalf("read past the deadline: %#v", err)
	}
	_ = d.SetReadDeadline(time.Time{})
	done := make(chan error, 1)
	go func() {
		_, err := d.Read(make([]byte, 10))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	d.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read when closed: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the waiting read")
	}
	if _, err := d.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

// reset closes peer with an RST and gives it time to arrive.
func reset(peer net.Conn) {
	_ = peer.(*net.TCPConn).SetLinger(0)
	peer.Close()
	time.Sleep(20 * time.Millisecond)
}

// TestDirectConnWriteToReset: writing to a peer that reset the
// connection fails with a syscall error (EPIPE/ECONNRESET), not a crash
// on SIGPIPE.
func TestDirectConnWriteToReset(t *testing.T) {
	d, peer := pair(t)
	reset(peer)
	var err error
	for range 100 {
		if _, err = d.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	var se *os.SyscallError
	if !errors.As(err, &se) {
		t.Fatalf("write to a reset peer: %v", err)
	}
}

// BenchmarkDirectConnPingPong and BenchmarkNetConnPingPong: one small
// write and one read per round trip over loopback, as the relay does.
// BenchmarkDirectConnPingPongBehind: the same with WriteBehind on both
// sides (the proxy uses it on its backend side only).
func BenchmarkDirectConnPingPong(b *testing.B)       { benchPingPong(b, true, false) }
func BenchmarkDirectConnPingPongBehind(b *testing.B) { benchPingPong(b, true, true) }
func BenchmarkNetConnPingPong(b *testing.B)          { benchPingPong(b, false, false) }

func benchPingPong(b *testing.B, direct, behind bool) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if direct {
			c = Direct(c)
		}
		buf := make([]byte, 64)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if dc, ok := c.(*DirectConn); ok && behind {
				dc.WriteBehind()
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if direct {
		c = Direct(c)
	}
	msg := make([]byte, 40)
	buf := make([]byte, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if dc, ok := c.(*DirectConn); ok && behind {
			dc.WriteBehind()
		}
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < len(msg); {
			n, err := c.Read(buf)
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
	}
}

// behindConn is Direct's connection of pair, skipping the test where
// reads and writes are not direct.
func behindConn(t *testing.T) (*DirectConn, net.Conn) {
	t.Helper()
	d, peer := pair(t)
	dc, ok := d.(*DirectConn)
	if !ok {
		t.Skip("no direct reads and writes here")
	}
	return dc, peer
}

// readFull reads n bytes from c within a second.
func readFull(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	defer c.SetReadDeadline(time.Time{})
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

// quiet reports whether c receives nothing for 50 ms.
func quiet(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	defer c.SetReadDeadline(time.Time{})
	n, _ := c.Read(make([]byte, 1))
	return n == 0
}

// TestWriteBehindGoesOutWithTheRead: a kept write reaches the peer only
// when the next Read starts, and that Read gets the peer's answer to it;
// a second round trip does the same; WriteBehind is one write's.
func TestWriteBehindGoesOutWithTheRead(t *testing.T) {
	d, peer := behindConn(t)
	for round := range 2 {
		req := []byte(fmt.Sprintf("request %d", round))
		d.WriteBehind()
		if n, err := d.Write(req); n != len(req) || err != nil {
			t.Fatalf("kept write: %d, %v", n, err)
		}
		if !quiet(peer) {
			t.Fatal("the kept write went out before the read")
		}
		go func() {
			got := readFull(t, peer, len(req))
			if !bytes.Equal(got, req) {
				t.Errorf("peer got %q, want %q", got, req)
			}
			peer.Write([]byte("answer"))
		}()
		got := readFull(t, d, len("answer"))
		if string(got) != "answer" {
			t.Fatalf("read %q", got)
		}
	}
	// Without WriteBehind a write goes out at once.
	if _, err := d.Write([]byte("now")); err != nil {
		t.Fatal(err)
	}
	if got := readFull(t, peer, 3); string(got) != "now" {
		t.Fatalf("peer got %q", got)
	}
}

// TestWriteBehindKeepsOrder: a write after a kept one sends the kept one
// first; a write over MaxBehind is not kept.
func TestWriteBehindKeepsOrder(t *testing.T) {
	d, peer := behindConn(t)
	d.WriteBehind()
	d.Write([]byte("first "))
	d.Write([]byte("second"))
	if got := readFull(t, peer, 12); string(got) != "first second" {
		t.Fatalf("peer got %q", got)
	}
	big := bytes.Repeat([]byte{'b'}, MaxBehind+1)
	d.WriteBehind()
	if _, err := d.Write(big); err != nil {
		t.Fatal(err)
	}
	if got := readFull(t, peer, len(big)); !bytes.Equal(got, big) {
		t.Fatal("the large write differs")
	}
}

// TestWriteBehindSentWhenTheReadCannotWait: a Read that fails before it
// waits (its deadline passed) still sends the kept write.
func TestWriteBehindSentWhenTheReadCannotWait(t *testing.T) {
	d, peer := behindConn(t)
	d.WriteBehind()
	d.Write([]byte("kept"))
	_ = d.SetReadDeadline(time.Unix(1, 0))
	if _, err := d.Read(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %v", err)
	}
	_ = d.SetReadDeadline(time.Time{})
	if got := readFull(t, peer, 4); string(got) != "kept" {
		t.Fatalf("peer got %q", got)
	}
}

// TestWriteBehindTheSocketTakesInParts: a kept write the socket cannot
// take at once (a full socket, a peer that reads late) is finished before
// the read, whole and in order.
func TestWriteBehindTheSocketTakesInParts(t *testing.T) {
	// A unix socket pair: its buffer is what it is set to, where TCP's
	// grows while the peer does not read.
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = syscall.SetsockoptInt(fds[0], syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096)
	var ends [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ends[i] = c
	}
	dd, peer := Direct(ends[0]), ends[1]
	t.Cleanup(func() { dd.Close(); peer.Close() })
	d, ok := dd.(*DirectConn)
	if !ok {
		t.Skip("no direct reads and writes here")
	}
	// Fill the way first, so the kept write meets a full socket: a write
	// that stops at its deadline leaves the socket full.
	_ = d.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	n, err := d.Write(bytes.Repeat([]byte{'f'}, 64<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("filling write: %d, %v", n, err)
	}
	_ = d.SetWriteDeadline(time.Time{})
	filler := bytes.Repeat([]byte{'f'}, n)
	req := bytes.Repeat([]byte{'k'}, MaxBehind)
	errc := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond) // the kept write meets the full socket
		if got := readFull(t, peer, len(filler)); !bytes.Equal(got, filler) {
			errc <- errors.New("filler differs")
			return
		}
		got := readFull(t, peer, len(req))
		if !bytes.Equal(got, req) {
			errc <- errors.New("kept write differs")
			return
		}
		_, err := peer.Write([]byte("ok"))
		errc <- err
	}()
	d.WriteBehind()
	if _, err := d.Write(req); err != nil {
		t.Fatal(err)
	}
	if got := readFull(t, d, 2); string(got) != "ok" {
		t.Fatalf("read %q", got)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestWriteBehindWriteError: a kept write to a reset peer fails the read
// with the write's error.
func TestWriteBehindWriteError(t *testing.T) {
	d, peer := behindConn(t)
	reset(peer)
	var err error
	for range 100 {
		d.WriteBehind()
		d.Write([]byte("x"))
		if _, err = d.Read(make([]byte, 10)); err != nil {
			break
		}
	}
	var se *os.SyscallError
	if !errors.As(err, &se) && err != io.EOF {
		t.Fatalf("read after a write to a reset peer: %v", err)
	}
}
