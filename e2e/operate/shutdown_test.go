package operate

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// TestSIGTERMLetsTransactionCommit: SIGTERM while a client holds an open
// transaction. The proxy stops accepting, closes idle sessions, answers
// COM_PING with ERR 1053, reports not ready, lets the transaction go on
// and commit, then closes that session and exits 0 — well within
// shutdown_timeout.
func TestSIGTERMLetsTransactionCommit(t *testing.T) {
	s := defaults(t)
	s.ShutdownTimeout = "30s"
	d := start(t, s)
	ctx := ctxT(t, time.Minute)
	db := d.open(t)
	mustExec(t, db, "CREATE TABLE IF NOT EXISTS shutdown_t (id INT PRIMARY KEY, note VARCHAR(20))")
	mustExec(t, db, "DELETE FROM shutdown_t")

	inTx, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer inTx.Close()
	idle, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := idle.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := inTx.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := inTx.ExecContext(ctx, "INSERT INTO shutdown_t VALUES (1, 'before')"); err != nil {
		t.Fatal(err)
	}

	// A statement in flight (not in a transaction) when the signal comes
	// finishes and its client gets the result.
	busy, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	slept := make(chan error, 1)
	go func() {
		var v int
		slept <- busy.QueryRowContext(ctx, "SELECT SLEEP(2)").Scan(&v)
	}()
	eventually(t, 10*time.Second, "the sleep is running", func() bool {
		var n int
		err := env.Root(t).QueryRowContext(ctx,
			"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(2)'").Scan(&n)
		return err == nil && n == 1
	})

	abortedBefore := abortedClients(t)
	began := time.Now()
	d.signal(syscall.SIGTERM)
	d.waitLog(t, 10*time.Second, func(l map[string]any) bool { return strings.HasPrefix(l["msg"].(string), "shutting down") })

	// Not ready any more, so a load balancer stops sending clients.
	if code, body := d.get(t, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") {
		t.Errorf("/readyz while draining: %d %q", code, body)
	}
	if v, _ := value(d.metrics(t), "tpproxy_shutting_down", nil); v != 1 {
		t.Errorf("tpproxy_shutting_down = %v, want 1", v)
	}
	// New clients are refused.
	fresh, err := sql.Open("mysql", d.dsn())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := fresh.PingContext(ctx); err == nil {
		t.Error("a new connection was accepted while shutting down")
	}
	// The idle session was closed: its next use fails.
	if _, err := idle.ExecContext(ctx, "SELECT 1"); err == nil {
		t.Error("the idle session still works after SIGTERM")
	}
	// The session in a transaction: COM_PING says the server is going
	// away, statements still run, and the commit lands.
	var me *mysql.MySQLError
	if err := inTx.PingContext(ctx); !errors.As(err, &me) || me.Number != 1053 {
		t.Errorf("COM_PING while draining: %v, want ERR 1053", err)
	}
	if _, err := inTx.ExecContext(ctx, "INSERT INTO shutdown_t VALUES (2, 'after')"); err != nil {
		t.Fatalf("statement in the open transaction after SIGTERM: %v", err)
	}
	if _, err := inTx.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatalf("COMMIT after SIGTERM: %v", err)
	}

	if err := <-slept; err != nil {
		t.Errorf("the statement in flight at SIGTERM: %v", err)
	}
	if code := d.wait(t, 15*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("shutdown took %s", took)
	}
	d.waitLog(t, time.Second, msgIs("tpproxy stopped"))
	if n := d.countLogs(msgIs("shutdown timeout: closing the remaining sessions")); n != 0 {
		t.Error("the shutdown hit its timeout")
	}

	// Both rows are committed on the server.
	var n int
	if err := env.Root(t).QueryRowContext(ctx, "SELECT COUNT(*) FROM shutdown_t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("%d rows committed, want 2", n)
	}
	// The backend connections were released: none of the proxy's is left,
	// and each said goodbye (COM_QUIT) instead of being cut.
	eventually(t, 10*time.Second, "backend connections closed", func() bool {
		var left int
		err := env.Root(t).QueryRowContext(ctx,
			"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'app'").Scan(&left)
		return err == nil && left == 0
	})
	if after := abortedClients(t); after != abortedBefore {
		t.Errorf("Aborted_clients went from %d to %d: backend connections were not closed cleanly", abortedBefore, after)
	}
}

// abortedClients reads the server's count of connections closed without
// COM_QUIT.
func abortedClients(t *testing.T) int {
	t.Helper()
	var name string
	var n int
	if err := env.Root(t).QueryRow("SHOW GLOBAL STATUS LIKE 'Aborted_clients'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestShutdownTimeoutRollsBack: a transaction left open past
// shutdown_timeout is closed (the server rolls it back) and the proxy
// still exits 0, after about the timeout.
func TestShutdownTimeoutRollsBack(t *testing.T) {
	s := defaults(t)
	s.ShutdownTimeout = "1s"
	d := start(t, s)
	ctx := ctxT(t, time.Minute)
	db := d.open(t)
	mustExec(t, db, "CREATE TABLE IF NOT EXISTS shutdown_rb (id INT PRIMARY KEY)")
	mustExec(t, db, "DELETE FROM shutdown_rb")
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "INSERT INTO shutdown_rb VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	d.signal(syscall.SIGINT)
	if code := d.wait(t, 15*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	if took := time.Since(began); took < 900*time.Millisecond {
		t.Errorf("exited after %s, before shutdown_timeout 1s", took)
	}
	d.waitLog(t, time.Second, msgIs("shutdown timeout: closing the remaining sessions"))
	if _, err := c.ExecContext(context.Background(), "COMMIT"); err == nil {
		t.Error("COMMIT succeeded after the proxy exited")
	}
	var n int
	if err := env.Root(t).QueryRowContext(ctx, "SELECT COUNT(*) FROM shutdown_rb").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d rows visible: the transaction cut at the timeout was committed", n)
	}
}
