package netx

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
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

// TestDirectConnWriteToReset: writing to a peer that reset the
// connection fails with a syscall error (EPIPE/ECONNRESET), not a crash
// on SIGPIPE.
func TestDirectConnWriteToReset(t *testing.T) {
	d, peer := pair(t)
	_ = peer.(*net.TCPConn).SetLinger(0)
	peer.Close()
	time.Sleep(20 * time.Millisecond)
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
func BenchmarkDirectConnPingPong(b *testing.B) { benchPingPong(b, true) }
func BenchmarkNetConnPingPong(b *testing.B)    { benchPingPong(b, false) }

func benchPingPong(b *testing.B, direct bool) {
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
