package prepared

import (
	"database/sql"
	"strconv"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// TestDeadlockInPreparedTransaction covers two transactions that update
// rows in opposite order with server-side prepared statements (each
// statement prepared, executed and closed inside the pinned transaction):
// InnoDB picks one victim, which gets ERR 1213 with SQLSTATE 40001 exactly
// as from the server, and the other transaction commits. Through the proxy
// and directly.
func TestDeadlockInPreparedTransaction(t *testing.T) {
	root := env.Root(t)
	px := env.StartProxy(t)
	for _, tg := range []struct{ name, dsn string }{
		{"direct", directPSDSN(t, "innodb_lock_wait_timeout=30")},
		{"proxy", psDSN(px, "innodb_lock_wait_timeout=30")},
	} {
		t.Run(tg.name, func(t *testing.T) {
			freshTable(t, root, "ps_deadlock", "(id INT PRIMARY KEY, v INT) ENGINE=InnoDB", "VALUES (1, 0), (2, 0)")
			ctx := testCtx(t, time.Minute)
			db := openDB(t, tg.dsn)
			const update = "UPDATE ps_deadlock SET v = ? WHERE id = ?"
			tx1, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx1.Rollback() }()
			tx2, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx2.Rollback() }()
			if _, err := tx1.ExecContext(ctx, update, 10, 1); err != nil {
				t.Fatalf("tx1 row 1: %v", err)
			}
			if _, err := tx2.ExecContext(ctx, update, 20, 2); err != nil {
				t.Fatalf("tx2 row 2: %v", err)
			}
			blocked := make(chan error, 1)
			go func() {
				_, err := tx1.ExecContext(ctx, update, 10, 2)
				blocked <- err
			}()
			var early error
			returned := false
			if !proxytest.Poll(waitTimeout, innodbPoll, func() bool {
				select {
				case early = <-blocked:
					returned = true
					return true
				default:
				}
				return rootInt(t, root, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'") > 0
			}) {
				t.Fatalf("tx1's UPDATE of row 2 is not waiting for tx2's lock after %s", waitTimeout)
			}
			if returned {
				t.Fatalf("tx1's UPDATE of row 2 returned (%v) instead of waiting for tx2's lock", early)
			}
			_, err2 := tx2.ExecContext(ctx, update, 20, 1)
			var err1 error
			select {
			case err1 = <-blocked:
			case <-ctx.Done():
				t.Fatal("tx1's UPDATE of row 2 never returned")
			}

			var victim, survivor *sql.Tx
			wantV := 0
			switch {
			case err1 != nil && err2 != nil:
				t.Fatalf("both transactions failed: tx1 %v; tx2 %v", err1, err2)
			case err1 == nil && err2 == nil:
				t.Fatal("no deadlock: both transactions updated both rows")
			case err1 != nil:
				checkDeadlockErr(t, "tx1", err1)
				victim, survivor, wantV = tx1, tx2, 20
			default:
				checkDeadlockErr(t, "tx2", err2)
				victim, survivor, wantV = tx2, tx1, 10
			}
			// The victim's transaction was rolled back by the server.
			_ = victim.Rollback()
			if err := survivor.Commit(); err != nil {
				t.Fatalf("the surviving transaction's COMMIT: %v", err)
			}
			if n := rootInt(t, root, "SELECT COUNT(*) FROM tpproxy_test.ps_deadlock WHERE v = "+strconv.Itoa(wantV)); n != 2 {
				t.Fatalf("%d rows carry the survivor's value %d, want 2", n, wantV)
			}
			// The connection of the victim serves statements again.
			var one int
			if err := db.QueryRowContext(ctx, "SELECT ? + 0", 1).Scan(&one); err != nil || one != 1 {
				t.Fatalf("a prepared statement after the deadlock: %d, %v", one, err)
			}
		})
	}
}

func checkDeadlockErr(t *testing.T, who string, err error) {
	t.Helper()
	code, state := mysqlErr(err)
	if code != erLockDeadlock || state != "40001" {
		t.Fatalf("%s: %v (error %d, SQLSTATE %q), want error %d SQLSTATE 40001", who, err, code, state, erLockDeadlock)
	}
}
