package netx

import (
	"context"
	"errors"
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
	// Asked of the listener itself: a dial could reach another process
	// that took the freed port meanwhile (tests of other packages run in
	// parallel and listen on free ports too).
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after the context ended: %v, want net.ErrClosed (listener closed)", err)
	}
}
