package bench

import (
	"context"
	"testing"
	"time"
)

// TestHoldIdle holds 40 sessions on the server, sees them among its
// threads, pings each, and sees them go after Close.
func TestHoldIdle(t *testing.T) {
	srv := server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := srv.DB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ours := func() int {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ?", testUser).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := ours()
	h, err := HoldIdle(ctx, IdleOptions{DSN: srv.DSN(testUser, testPassword, testDB), Sessions: 40, Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	if h.Len() != 40 {
		t.Fatalf("Len %d, want 40", h.Len())
	}
	if got := ours() - before; got != 40 {
		t.Fatalf("server shows %d sessions of %s, want 40", got, testUser)
	}
	if err := h.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ours() != before {
		if time.Now().After(deadline) {
			t.Fatalf("server still shows %d sessions of %s after Close", ours()-before, testUser)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHoldIdleFails: a wrong password fails the hold with the driver's
// error, and nothing stays open.
func TestHoldIdleFails(t *testing.T) {
	srv := server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := HoldIdle(ctx, IdleOptions{DSN: srv.DSN(testUser, "wrong", testDB), Sessions: 5, Workers: 2})
	if err == nil {
		t.Fatal("HoldIdle with a wrong password succeeded")
	}
	t.Log(err)
	if _, err := HoldIdle(ctx, IdleOptions{DSN: srv.DSN(testUser, testPassword, testDB)}); err == nil {
		t.Fatal("HoldIdle of 0 sessions succeeded")
	}
}
