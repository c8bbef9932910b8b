package netx

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
)

// TestAcceptLoop hands every connection to handle and returns nil, with
// the listener closed, when the context ends.
func TestAcceptLoop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan net.Conn, 2)
	done := make(chan error, 1)
	go func() {
		done <- AcceptLoop(ctx, ln, slog.New(slog.NewTextHandler(io.Discard, nil)), func(c net.Conn) { got <- c })
	}()
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		(<-got).Close()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("AcceptLoop returned %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("listener still open after the context ended")
	}
}
