package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/testcert"
)

// TestAuthWorkBoundsConcurrentWork: no more than the slots run at once; a
// waiter gives up at its deadline or when its context ends; the busy time
// and the waits are counted.
func TestAuthWorkBoundsConcurrentWork(t *testing.T) {
	w := newAuthWork(1)
	since, ok := w.acquire(context.Background(), time.Time{})
	if !ok {
		t.Fatal("the first acquire found no slot")
	}
	start := time.Now()
	if _, ok := w.acquire(context.Background(), time.Now().Add(50*time.Millisecond)); ok {
		t.Fatal("a second acquire got a slot of a budget of one")
	}
	if el := time.Since(start); el < 40*time.Millisecond {
		t.Errorf("the second acquire gave up after %s, before its deadline", el)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if w.run(ctx, time.Time{}, func() { t.Error("ran without a slot") }) {
		t.Error("run reported it ran with its context ended and no slot free")
	}
	got := make(chan bool)
	go func() { got <- w.run(context.Background(), time.Time{}, func() {}) }()
	time.Sleep(20 * time.Millisecond)
	select {
	case <-got:
		t.Fatal("run did not wait for the held slot")
	default:
	}
	w.release(since)
	if !<-got {
		t.Error("run did not get the slot given back")
	}
	if n := w.waits.Load(); n != 3 {
		t.Errorf("waits = %d, want 3", n)
	}
	if b := time.Duration(w.busy.Load()); b < 60*time.Millisecond {
		t.Errorf("busy = %s, want at least the 70 ms the first slot was held", b)
	}
}

// TestTLSHandshakeHoldsNoSlotWhileTheClientStalls: a TLS handshake takes a
// slot for its CPU work and gives it back when it waits for the client, so
// a client that stops after its ClientHello does not keep others' handshakes
// waiting.
func TestTLSHandshakeHoldsNoSlotWhileTheClientStalls(t *testing.T) {
	cas, _, certFile, keyFile, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := gatedTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	w := newAuthWork(1)
	serve := func(nc net.Conn) error {
		g := &tlsGated{Conn: nc, work: w, ctx: context.Background(), deadline: time.Now().Add(5 * time.Second)}
		defer g.done()
		tc := tls.Server(g, cfg)
		return tc.Handshake()
	}
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		// The staller: a ClientHello, then nothing (its handshake waits on
		// a client that never sends its second flight).
		sa, ca := net.Pipe()
		// Read before the handshake starts: its CPU work may be done
		// before this goroutine runs again.
		busy := w.busy.Load()
		stalled := make(chan error, 1)
		go func() { stalled <- serve(sa) }()
		go func() {
			c := tls.Client(&stallAfterHello{Conn: ca}, &tls.Config{RootCAs: cas, ServerName: "127.0.0.1",
				MinVersion: version, MaxVersion: version})
			_ = c.Handshake()
		}()
		// Once its server side has done its CPU work and waits for the
		// client, it holds no slot.
		// (10 s: a TLS 1.2 RSA handshake under -race on a loaded 2-CPU
		// machine once took longer than 3.)
		for deadline := time.Now().Add(10 * time.Second); w.busy.Load() == busy || len(w.slots) != 0; {
			if time.Now().After(deadline) {
				t.Fatalf("TLS %x: the stalled handshake still holds its slot (%d held)", version, len(w.slots))
			}
			time.Sleep(time.Millisecond)
		}
		select {
		case err := <-stalled:
			t.Fatalf("TLS %x: the stalled handshake ended: %v", version, err)
		default:
		}
		// An honest handshake completes beside it.
		sb, cb := net.Pipe()
		honest := make(chan error, 1)
		go func() { honest <- serve(sb) }()
		c := tls.Client(cb, &tls.Config{RootCAs: cas, ServerName: "127.0.0.1", MinVersion: version, MaxVersion: version})
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if err := c.Handshake(); err != nil {
			t.Fatalf("TLS %x: the honest handshake beside a stalled one: %v", version, err)
		}
		if err := <-honest; err != nil {
			t.Fatalf("TLS %x: the server side of the honest handshake: %v", version, err)
		}
		if n := len(w.slots); n != 0 {
			t.Errorf("TLS %x: %d slots held after the handshakes went quiet", version, n)
		}
		_ = ca.Close()
		_ = sa.Close()
		<-stalled
		_ = sb.Close()
		_ = c.Close()
	}
	if w.busy.Load() == 0 {
		t.Error("no busy time counted for the handshakes")
	}
}

// stallAfterHello passes the client's first write (its ClientHello) and
// swallows the rest: a client that stops mid-handshake.
type stallAfterHello struct {
	net.Conn
	wrote bool
}

func (s *stallAfterHello) Write(b []byte) (int, error) {
	if s.wrote {
		return len(b), nil
	}
	s.wrote = true
	return s.Conn.Write(b)
}

// TestLogNameBoundsWhatALoginLogs: a user name of a kilobyte logs as its
// first maxLogName bytes and its length; real names log whole.
func TestLogNameBoundsWhatALoginLogs(t *testing.T) {
	if got := logName("app_rw"); got != "app_rw" {
		t.Errorf("logName(app_rw) = %q", got)
	}
	long := strings.Repeat("x", 1024)
	got := logName(long)
	if !strings.HasPrefix(got, long[:maxLogName]) || !strings.HasSuffix(got, "…(1024 bytes)") || len(got) > maxLogName+20 {
		t.Errorf("logName of 1,024 bytes = %q", got)
	}
}
