package proxy_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
)

// TestIdleConnectionsKilledByTheServer: the pool hands out a connection
// used moments ago without looking at its socket. When the server has
// closed it meanwhile (a DBA's KILL, a restart), a statement that only
// reads runs again on another connection, and any other statement gets a
// connection checked first: the client sees no error either way, and no
// write runs twice.
func TestIdleConnectionsKilledByTheServer(t *testing.T) {
	ctx := context.Background()
	root := env.Root(t)
	const account = "idlekill"
	for _, q := range []string{
		"DROP USER IF EXISTS " + account,
		"CREATE USER " + account + " IDENTIFIED BY 'pw'",
		"GRANT ALL ON " + proxytest.DB + ".* TO " + account,
		"CREATE TABLE IF NOT EXISTS idlekill (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
		"TRUNCATE idlekill",
	} {
		if _, err := root.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	t.Cleanup(func() { _, _ = root.ExecContext(context.Background(), "DROP USER IF EXISTS "+account) })
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.User, o.Pool.Password = account, "pw"
		// The clients' statements run as the pool's account, whose
		// connections the test kills.
		o.Proxy.Identity = proxy.IdentityService
		o.Pool.Size = 2
		o.Pool.HealthInterval = time.Hour // the health checker must not find them first
	})
	db := px.Open(t)
	db.SetMaxOpenConns(1)
	// The pool dials its connections in the background: all of them first.
	if !proxytest.Poll(5*time.Second, 10*time.Millisecond, func() bool { return px.Pool.Stats().Idle == 2 }) {
		t.Fatalf("pool not filled: %+v", px.Pool.Stats())
	}

	killAll := func() int {
		t.Helper()
		// MariaDB's PROCESSLIST now and then leaves a row out: ask thrice.
		ids := map[int64]bool{}
		for range 3 {
			rows, err := root.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ?", account)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					t.Fatal(err)
				}
				ids[id] = true
			}
			rows.Close()
		}
		for id := range ids {
			if _, err := root.ExecContext(ctx, fmt.Sprintf("KILL %d", id)); err != nil {
				t.Fatal(err)
			}
		}
		// Until the server has closed them (the pool's control
		// connection may dial again meanwhile).
		for id := range ids {
			if !proxytest.Poll(5*time.Second, 10*time.Millisecond, func() bool {
				var n int
				_ = root.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n)
				return n == 0
			}) {
				t.Fatalf("killed connection %d stayed", id)
			}
		}
		return len(ids)
	}
	stats := func() pool.Stats { return px.Pool.Stats() }

	for round := range 3 {
		var one int
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatal(err)
		}
		before := stats()
		if n := killAll(); n == 0 {
			t.Fatal("no backend connection to kill")
		}
		// Within idleCheckAfter of their last use.
		var v string
		if err := db.QueryRowContext(ctx, "SELECT @@version_comment").Scan(&v); err != nil {
			t.Fatalf("round %d: a read after its connection was killed: %v", round, err)
		}
		killAll()
		if _, err := db.ExecContext(ctx, fmt.Sprintf("INSERT INTO idlekill (v) VALUES (%d)", round)); err != nil {
			t.Fatalf("round %d: a write after its connection was killed: %v", round, err)
		}
		killAll()
		if _, err := db.ExecContext(ctx, "INSERT INTO idlekill (v) VALUES (?)", -round); err != nil {
			t.Fatalf("round %d: a prepared write after its connection was killed: %v", round, err)
		}
		killAll()
		// START TRANSACTION on a dead connection begins on another one.
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatalf("round %d: BEGIN after its connection was killed: %v", round, err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO idlekill (v) VALUES (?)", 100+round); err != nil {
			t.Fatalf("round %d: a write in that transaction: %v", round, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("round %d: COMMIT: %v", round, err)
		}
		after := stats()
		if after.Broken+after.HealthFailures == before.Broken+before.HealthFailures {
			t.Fatalf("round %d: the dead connections left no trace: before %+v after %+v", round, before, after)
		}
	}
	var n int
	if err := root.QueryRowContext(ctx, "SELECT COUNT(*) FROM idlekill").Scan(&n); err != nil || n != 9 {
		t.Fatalf("rows = %d, %v; want 9 (each write ran once)", n, err)
	}
}
