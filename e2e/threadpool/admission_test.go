package threadpool

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// onePool starts a proxy with one thread group of 1+oversubscribe slots.
func onePool(t *testing.T, oversubscribe int, stall time.Duration) *proxytest.Proxy {
	t.Helper()
	return env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.Size = 8
		o.Scheduler.Size = 1
		o.Scheduler.Oversubscribe = oversubscribe
		o.Scheduler.StallLimit = stall
	})
}

// conns opens n separate client sessions.
func conns(t *testing.T, px *proxytest.Proxy, n int) []*sql.Conn {
	t.Helper()
	db := px.Open(t)
	db.SetMaxOpenConns(n + 1)
	out := make([]*sql.Conn, n)
	for i := range out {
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		out[i] = c
	}
	return out
}

// waitFor polls cond every 5 ms until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not reached within 10 s", what)
		}
	}
}

// TestOversubscribeRunsTwoAtATime: with size 1, oversubscribe 1 and a
// stall limit longer than the test, four concurrent SELECT SLEEP(2) run
// two at a time: never more than two execute, two of them queue, and the
// whole takes two rounds.
func TestOversubscribeRunsTwoAtATime(t *testing.T) {
	px := onePool(t, 1, 30*time.Second)
	cs := conns(t, px, 4)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var v int
			errs <- c.QueryRowContext(context.Background(), "SELECT SLEEP(2)").Scan(&v)
		}()
	}
	maxActive := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-tick.C:
			if g := px.Sched.Groups()[0]; g.Active > maxActive {
				maxActive = g.Active
			}
		}
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el < 3900*time.Millisecond {
		t.Fatalf("four 2 s sleeps two at a time took %s: they ran more than two at once", el)
	}
	if maxActive > 2 {
		t.Fatalf("%d statements executed at once, cap 2", maxActive)
	}
	if g := px.Sched.Groups()[0]; g.Stats.Queued != 2 || g.Stats.Admitted < 4 || g.Stats.Stalls != 0 {
		t.Fatalf("group %+v", g)
	}
}

// TestStallAdmitsFastQuery: with a 100 ms stall limit, a fast query queued
// behind two long statements filling the group is admitted after a stall,
// long before they end.
func TestStallAdmitsFastQuery(t *testing.T) {
	px := onePool(t, 1, 100*time.Millisecond)
	cs := conns(t, px, 3)
	var wg sync.WaitGroup
	longDone := make(chan time.Time, 2)
	for _, c := range cs[:2] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var v int
			if err := c.QueryRowContext(context.Background(), "SELECT SLEEP(3)").Scan(&v); err != nil {
				t.Error(err)
			}
			longDone <- time.Now()
		}()
	}
	waitFor(t, "the group full", func() bool { return px.Sched.Groups()[0].Active == 2 })
	var one int
	if err := cs[2].QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
	fastDone := time.Now()
	wg.Wait()
	close(longDone)
	for end := range longDone {
		if !fastDone.Before(end) {
			t.Fatal("the fast query waited for a long one to end: no stall detected")
		}
	}
	if g := px.Sched.Groups()[0]; g.Stats.Stalls == 0 || g.Stats.Queued != 1 {
		t.Fatalf("group %+v", g)
	}
}

// TestLockHolderNotStarved: a session in a transaction holds a row lock;
// statements waiting for that lock fill the only group; the transaction's
// COMMIT still gets in (its session holds a backend) and everyone finishes
// without a lock wait timeout.
func TestLockHolderNotStarved(t *testing.T) {
	px := onePool(t, 1, 10*time.Second)
	cs := conns(t, px, 4)
	ctx := context.Background()
	if _, err := cs[0].ExecContext(ctx, "CREATE TABLE IF NOT EXISTS tp_lock (id INT PRIMARY KEY, n INT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].ExecContext(ctx, "REPLACE INTO tp_lock VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}
	holder := cs[0]
	if _, err := holder.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, "UPDATE tp_lock SET n = n + 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for _, c := range cs[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.ExecContext(ctx, "UPDATE tp_lock SET n = n + 1 WHERE id = 1")
			errs <- err
		}()
	}
	// Two waiters execute (blocked on the lock in the server), one queues.
	waitFor(t, "the group full of lock waiters", func() bool {
		g := px.Sched.Groups()[0]
		return g.Active == 2 && g.QueuedLow == 1
	})
	start := time.Now()
	if _, err := holder.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("COMMIT waited %s behind statements waiting for its lock", el)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := holder.QueryRowContext(ctx, "SELECT n FROM tp_lock WHERE id = 1").Scan(&n); err != nil || n != 4 {
		t.Fatalf("n = %d, %v; want 4", n, err)
	}
}

// TestQueueTimeoutIsClearError: a statement that waits longer than
// queue_timeout gets ERR 9004, and the session stays usable.
func TestQueueTimeoutIsClearError(t *testing.T) {
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Scheduler.Size = 1
		o.Scheduler.Oversubscribe = 0
		o.Scheduler.StallLimit = 10 * time.Second
		o.Scheduler.QueueTimeout = 200 * time.Millisecond
	})
	cs := conns(t, px, 2)
	done := make(chan error, 1)
	go func() {
		var v int
		done <- cs[0].QueryRowContext(context.Background(), "SELECT SLEEP(2)").Scan(&v)
	}()
	waitFor(t, "the group full", func() bool { return px.Sched.Groups()[0].Active == 1 })
	var one int
	err := cs[1].QueryRowContext(context.Background(), "SELECT 1").Scan(&one)
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 9004 {
		t.Fatalf("err = %v, want ERROR 9004", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := cs[1].QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("after the timeout: %d, %v", one, err)
	}
}

// TestExtraPortGetsIn: with the only thread group full and the only backend
// connection held by a transaction, a session on the extra port still runs
// statements at once; the extra port takes no more sessions than allowed.
func TestExtraPortGetsIn(t *testing.T) {
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.Size = 1
		o.Pool.AcquireTimeout = 20 * time.Second
		o.Scheduler.Size = 1
		o.Scheduler.Oversubscribe = 0
		o.Scheduler.StallLimit = 30 * time.Second
		o.ExtraPort = 1
	})
	ctx := context.Background()
	cs := conns(t, px, 3)
	// The only backend connection: pinned by a transaction.
	if _, err := cs[0].ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	// The only slot: a statement waiting for that connection; a second one
	// queues behind it.
	blocked := make(chan error, 2)
	for _, c := range cs[1:] {
		go func() {
			_, err := c.ExecContext(ctx, "DO 1")
			blocked <- err
		}()
	}
	waitFor(t, "both statements stuck", func() bool {
		st := px.Sched.Stats()
		return st.Active+st.Queued == 2 && px.Pool.Stats().Waiting >= 1
	})
	xdb, err := sql.Open("mysql", proxytest.User+":"+proxytest.Password+"@tcp("+px.ExtraAddr+")/"+proxytest.DB+"?interpolateParams=true")
	if err != nil {
		t.Fatal(err)
	}
	defer xdb.Close()
	xdb.SetMaxOpenConns(2)
	xc, err := xdb.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer xc.Close()
	start := time.Now()
	var id int64
	if err := xc.QueryRowContext(ctx, "SELECT CONNECTION_ID() + 0 FROM DUAL WHERE 1 = 1").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("extra port statement took %s", el)
	}
	// A second extra-port session is over extra_max_connections.
	xc2, err := xdb.Conn(ctx)
	if err == nil {
		err = xc2.PingContext(ctx)
		_ = xc2.Close()
	}
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1040 {
		t.Fatalf("second extra-port session: %v, want ERROR 1040", err)
	}
	// Ending the transaction lets the stuck statements finish.
	if _, err := cs[0].ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-blocked; err != nil {
			t.Fatal(err)
		}
	}
}
