package sessions

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// TestTransactions checks that transactions through the proxy behave as
// on the server: atomic, isolated from other sessions until COMMIT, run on
// one backend connection, autocommit=0 included, and deadlocks resolved
// by the server with the victim's session still usable.
func TestTransactions(t *testing.T) {
	root := env.Root(t)
	freshTable(t, root, "tx_t", "(id INT AUTO_INCREMENT PRIMARY KEY, v INT)", "(v) VALUES (1), (2)")
	// Two transactions at once (the deadlock): past the automatic pinned
	// budget of a pool of 3 on 2 thread groups.
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size, o.Proxy.MaxPinned = 3, 3 })
	count := func(t *testing.T, c querier, v int) int64 {
		t.Helper()
		return mustInt(t, c, fmt.Sprintf("SELECT COUNT(*) FROM tx_t WHERE v = %d", v))
	}

	t.Run("rollback", func(t *testing.T) {
		a, b := openSession(t, px.DSN()), openSession(t, px.DSN())
		before := mustInt(t, b, "SELECT COUNT(*) FROM tx_t")
		mustExec(t, a, "BEGIN", "INSERT INTO tx_t (v) VALUES (201)", "INSERT INTO tx_t (v) VALUES (201)")
		if n := count(t, a, 201); n != 2 {
			t.Fatalf("the transaction sees %d of its own 2 rows", n)
		}
		for range 3 {
			if n := count(t, b, 201); n != 0 {
				t.Fatalf("another session sees %d uncommitted rows", n)
			}
		}
		mustExec(t, a, "ROLLBACK")
		waitUnpinned(t, px, a.ID)
		for _, c := range []querier{a, b} {
			if n := count(t, c, 201); n != 0 {
				t.Fatalf("%d rolled back rows remain", n)
			}
			wantInt(t, c, "SELECT COUNT(*) FROM tx_t", before)
		}
	})

	t.Run("commit", func(t *testing.T) {
		a, b := openSession(t, px.DSN()), openSession(t, px.DSN())
		mustExec(t, a, "START TRANSACTION", "INSERT INTO tx_t (v) VALUES (202)")
		if n := count(t, b, 202); n != 0 {
			t.Fatalf("another session sees %d uncommitted rows", n)
		}
		mustExec(t, a, "COMMIT")
		waitUnpinned(t, px, a.ID)
		if n := count(t, b, 202); n != 1 {
			t.Fatalf("another session sees %d committed rows, want 1", n)
		}
	})

	t.Run("one_backend", func(t *testing.T) {
		a := openSession(t, px.DSN())
		stop := startNoise(t, px, 4, "SELECT CONNECTION_ID() AS c, COUNT(*) FROM tx_t")
		defer stop()
		mustExec(t, a, "BEGIN")
		th := backendThread(t, a)
		for i := range 20 {
			mustExec(t, a, fmt.Sprintf("INSERT INTO tx_t (v) VALUES (%d)", 300+i))
			if got := backendThread(t, a); got != th {
				t.Fatalf("statement %d of the transaction ran on backend thread %d, it began on %d", i, got, th)
			}
		}
		if in := waitPinned(t, px, a.ID, "transaction"); int64(in.BackendThread) != th {
			t.Fatalf("the proxy shows backend thread %d, the transaction runs on %d", in.BackendThread, th)
		}
		mustExec(t, a, "ROLLBACK")
		waitUnpinned(t, px, a.ID)
		stop()
	})

	t.Run("autocommit_off", func(t *testing.T) {
		a, b := openSession(t, px.DSN()), openSession(t, px.DSN())
		mustExec(t, a, "SET autocommit = 0", "INSERT INTO tx_t (v) VALUES (203)")
		waitPinned(t, px, a.ID, "transaction")
		if n := count(t, b, 203); n != 0 {
			t.Fatalf("with autocommit=0 an INSERT was visible before COMMIT (%d rows)", n)
		}
		mustExec(t, a, "COMMIT")
		if n := count(t, b, 203); n != 1 {
			t.Fatalf("after COMMIT another session sees %d rows, want 1", n)
		}
		// Still autocommit=0, but no transaction is open: the session
		// holds no backend until a statement opens the next one, which
		// then pins (the server reports IN_TRANS).
		waitUnpinned(t, px, a.ID)
		wantInt(t, a, "SELECT @@autocommit", 0)
		waitUnpinned(t, px, a.ID)
		mustExec(t, a, "INSERT INTO tx_t (v) VALUES (204)")
		waitPinned(t, px, a.ID, "transaction")
		if n := count(t, b, 204); n != 0 {
			t.Fatalf("second implicit transaction visible before it ended (%d rows)", n)
		}
		// SET autocommit=1 commits the open transaction, as on the server.
		mustExec(t, a, "SET autocommit = 1")
		waitUnpinned(t, px, a.ID)
		if n := count(t, b, 204); n != 1 {
			t.Fatalf("SET autocommit=1 did not commit: another session sees %d rows", n)
		}
		wantInt(t, a, "SELECT @@autocommit", 1)
		// A failed statement under autocommit=0 may have opened a
		// transaction: an ERR has no status, so the session stays on
		// its backend until the next statement's status tells.
		mustExec(t, a, "SET autocommit = 0")
		waitUnpinned(t, px, a.ID)
		if _, err := a.Rows("SELECT * FROM tx_no_such_table"); err == nil {
			t.Fatal("SELECT from a missing table succeeded")
		}
		waitPinned(t, px, a.ID, "autocommit_off")
		wantInt(t, a, "SELECT 1", 1)
		waitUnpinned(t, px, a.ID)
		mustExec(t, a, "SET autocommit = 1")
		mustExec(t, a, "INSERT INTO tx_t (v) VALUES (205)")
		waitUnpinned(t, px, a.ID)
		if n := count(t, b, 205); n != 1 {
			t.Fatalf("autocommit=1 INSERT not visible (%d rows)", n)
		}
	})

	t.Run("deadlock", func(t *testing.T) { testDeadlock(t, px) })
}

func testDeadlock(t *testing.T, px *proxytest.Proxy) {
	root := env.Root(t)
	freshTable(t, root, "tx_dl", "(id INT PRIMARY KEY, v INT)", "VALUES (1, 0), (2, 0)")
	a, b := openSession(t, px.DSN()), openSession(t, px.DSN())
	mustExec(t, a, "BEGIN", "UPDATE tx_dl SET v = v + 1 WHERE id = 1")
	mustExec(t, b, "BEGIN", "UPDATE tx_dl SET v = v + 10 WHERE id = 2")

	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { _, errs[0] = a.RowsContext(ctx, "UPDATE tx_dl SET v = v + 1 WHERE id = 2") })
	defer func() {
		if t.Failed() {
			rows, _ := root.Query("SELECT trx_id, trx_state, trx_mysql_thread_id, trx_query FROM information_schema.INNODB_TRX")
			for rows != nil && rows.Next() {
				var a, b, c, d sql.NullString
				_ = rows.Scan(&a, &b, &c, &d)
				t.Log(a, b, c, d)
			}
			t.Log(px.Server.Sessions())
		}
	}()
	eventuallyEvery(t, waitTimeout, innodbPoll, "session A to wait for B's row lock", func() bool {
		return rootInt(t, root, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'") == 1
	})
	start := time.Now()
	wg.Go(func() { _, errs[1] = b.RowsContext(ctx, "UPDATE tx_dl SET v = v + 10 WHERE id = 1") })
	wg.Wait()
	if d := time.Since(start); d > waitTimeout {
		t.Errorf("deadlock took %s to resolve", d)
	}

	sess := []*session{a, b}
	var victim, winner int
	switch {
	case errCode(errs[0]) == erLockDeadlock && errs[1] == nil:
		victim, winner = 0, 1
	case errCode(errs[1]) == erLockDeadlock && errs[0] == nil:
		victim, winner = 1, 0
	default:
		t.Fatalf("want error 1213 for one session and success for the other, got A: %v, B: %v", errs[0], errs[1])
	}
	mustExec(t, sess[winner], "COMMIT")
	waitUnpinned(t, px, sess[winner].ID)

	// The server rolled the victim's whole transaction back: the winner's
	// updates are all there is.
	want := []int64{1, 1}
	if winner == 1 {
		want = []int64{10, 10}
	}
	v := sess[victim]
	for i, w := range want {
		wantInt(t, v, fmt.Sprintf("SELECT v FROM tx_dl WHERE id = %d", i+1), w)
	}
	waitUnpinned(t, px, v.ID)
	mustExec(t, v, "BEGIN", "UPDATE tx_dl SET v = v + 100 WHERE id = 1", "COMMIT")
	wantInt(t, v, "SELECT v FROM tx_dl WHERE id = 1", want[0]+100)
	waitUnpinned(t, px, v.ID)
	if st := px.Pool.Stats(); st.Open != st.Size {
		t.Errorf("pool has %d connections after the deadlock, size %d", st.Open, st.Size)
	}
}
