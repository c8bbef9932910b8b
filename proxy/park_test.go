package proxy_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/proxy"
)

// parkWait is longer than a session waits before it parks.
const parkWait = 2 * time.Second

func dialProxy(t *testing.T, px *proxytest.Proxy) *client.Conn {
	t.Helper()
	c, err := client.Connect(px.Addr, proxytest.User, proxytest.Password, proxytest.DB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func waitParked(t *testing.T, px *proxytest.Proxy, n int) {
	t.Helper()
	if proxy.ParkedSessions(px.Server) < 0 {
		t.Skip("sessions do not park on this system")
	}
	if !proxytest.Poll(5*time.Second, 20*time.Millisecond, func() bool { return proxy.ParkedSessions(px.Server) >= n }) {
		t.Fatalf("%d sessions parked, want %d", proxy.ParkedSessions(px.Server), n)
	}
}

// TestParkedSessions: a session that waits for its client parks (right
// after its handshake, and a second after a command) and is the same
// session when the client comes back: its state, its transaction, its
// answers; KILL, wait_timeout and shutdown reach it while parked.
func TestParkedSessions(t *testing.T) {
	px := env.StartProxy(t)
	ctx := context.Background()

	a := dialProxy(t, px)
	waitParked(t, px, 1) // after the handshake
	if _, err := a.Execute("SET @v = 42"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Execute("BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Execute("SELECT 1 FROM dual"); err != nil {
		t.Fatal(err)
	}
	waitParked(t, px, 1) // after a command, in a transaction
	r, err := a.Execute("SELECT @v, @@in_transaction")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := r.GetInt(0, 0); v != 42 {
		t.Fatalf("@v = %d after parking, want 42", v)
	}
	if v, _ := r.GetInt(0, 1); v != 1 {
		t.Fatalf("@@in_transaction = %d after parking, want 1", v)
	}
	if _, err := a.Execute("COMMIT"); err != nil {
		t.Fatal(err)
	}

	t.Run("kill", func(t *testing.T) {
		b, killer := dialProxy(t, px), dialProxy(t, px)
		before := px.Server.Stats().Sessions
		waitParked(t, px, 3)
		if _, err := killer.Execute(fmt.Sprintf("KILL %d", b.GetConnectionID())); err != nil {
			t.Fatal(err)
		}
		if !proxytest.Poll(5*time.Second, 20*time.Millisecond, func() bool { return px.Server.Stats().Sessions == before-1 }) {
			t.Fatalf("sessions %d after KILL of a parked one, want %d", px.Server.Stats().Sessions, before-1)
		}
		if _, err := b.Execute("SELECT 1"); err == nil {
			t.Fatal("the killed session still answers")
		}
	})

	t.Run("wait_timeout", func(t *testing.T) {
		c := dialProxy(t, px)
		if _, err := c.Execute("SET SESSION wait_timeout = 2"); err != nil {
			t.Fatal(err)
		}
		before := px.Server.Stats().Sessions
		begin := time.Now()
		if !proxytest.Poll(6*time.Second, 20*time.Millisecond, func() bool { return px.Server.Stats().Sessions == before-1 }) {
			t.Fatal("a parked session outlived its wait_timeout")
		}
		if d := time.Since(begin); d < 1500*time.Millisecond {
			t.Fatalf("closed after %v, before its wait_timeout of 2 s", d)
		}
	})

	t.Run("shutdown", func(t *testing.T) {
		for range 5 {
			dialProxy(t, px)
		}
		waitParked(t, px, 5)
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		begin := time.Now()
		if err := px.Server.Shutdown(sctx); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(begin); d > 3*time.Second {
			t.Fatalf("shutdown with parked sessions took %v", d)
		}
		if n := px.Server.Stats().Sessions; n != 0 {
			t.Fatalf("%d sessions after shutdown", n)
		}
	})
}

// TestParkedSessionAfterTheWait: many sessions park and each answers
// afterwards with its own connection id (no session is woken as
// another).
func TestParkedSessionAfterTheWait(t *testing.T) {
	px := env.StartProxy(t)
	var cs []*client.Conn
	for range 50 {
		cs = append(cs, dialProxy(t, px))
	}
	for i, c := range cs {
		if i%2 == 0 {
			if _, err := c.Execute(fmt.Sprintf("SET SESSION lock_wait_timeout = %d", 100+i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(parkWait)
	waitParked(t, px, 50)
	for i, c := range cs {
		r, err := c.Execute("SELECT CONNECTION_ID(), @@lock_wait_timeout")
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		if id, _ := r.GetUint(0, 0); uint32(id) != c.GetConnectionID() {
			t.Fatalf("session %d: CONNECTION_ID() %d, want %d", i, id, c.GetConnectionID())
		}
		if i%2 == 0 {
			if v, _ := r.GetInt(0, 1); v != int64(100+i) {
				t.Fatalf("session %d: @@lock_wait_timeout = %d", i, v)
			}
		}
	}
}

// TestSessionSize: a session is in the 896-byte allocation class; every
// idle client costs it (19,000 idle clients: 17 MB).
func TestSessionSize(t *testing.T) {
	if proxy.SessionSize > 768 {
		t.Fatalf("Session is %d bytes: over the 768-byte size class", proxy.SessionSize)
	}
}
