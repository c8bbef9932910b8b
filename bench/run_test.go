package bench

import (
	"errors"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

func TestPrepareRunCleanup(t *testing.T) {
	srv := server(t)
	ctx := t.Context()
	dsn := srv.DSN(testUser, testPassword, testDB)
	db, err := OpenDB(dsn, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const tables, size = 2, 2500
	if err := Prepare(ctx, db, tables, size); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= tables; n++ {
		var rows, maxID int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*), MAX(id) FROM "+tableName(n)).Scan(&rows, &maxID); err != nil || rows != size || maxID != size {
			t.Errorf("%s: %d rows, max id %d, %v", tableName(n), rows, maxID, err)
		}
		var idx int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?",
			tableName(n), "k_"+strconv.Itoa(n)).Scan(&idx); err != nil || idx != 1 {
			t.Errorf("%s: index k_%d: %d, %v", tableName(n), n, idx, err)
		}
	}

	wl, err := NewWorkload("oltp_read_write", Schema{Tables: tables, TableSize: size})
	if err != nil {
		t.Fatal(err)
	}
	var progress int
	res, err := Run(ctx, Step{
		Target:    Target{Name: "direct", DSN: dsn},
		Workload:  wl,
		Threads:   4,
		Warmup:    500 * time.Millisecond,
		Duration:  2 * time.Second,
		ServerDSN: srv.RootDSN(""),
		Progress:  func(Progress) { progress++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Target != "direct" || res.Workload != "oltp_read_write" || res.Threads != 4 || res.Label() != "oltp_read_write/4" {
		t.Errorf("labels %+v", res)
	}
	if res.Transactions == 0 || res.TPS <= 0 || res.ErrorTotal != 0 || res.SuccessPct != 100 {
		t.Fatalf("tx %d tps %.1f errors %v success %.2f", res.Transactions, res.TPS, res.Errors, res.SuccessPct)
	}
	if d := res.DurationSec; d < 1.9 || d > 2.5 {
		t.Errorf("hold of %.2f s, want about 2", d)
	}
	// 20 statements per transaction; retried attempts add some.
	if res.Queries < 20*res.Transactions || (res.Deadlocks+res.LockWaitTimeouts == 0 && res.Queries != 20*res.Transactions) {
		t.Errorf("%d queries for %d transactions (%d retries)", res.Queries, res.Transactions, res.Deadlocks+res.LockWaitTimeouts)
	}
	if l := res.Latency; l.Count != int64(res.Transactions) || l.P50 <= 0 || l.P50 > l.P95 || l.P95 > l.P99 || l.P99 > l.Max {
		t.Errorf("latency %+v", l)
	}
	if res.Histogram == nil || res.Histogram.Count() != int64(res.Transactions) {
		t.Error("histogram missing or incomplete")
	}
	if res.ClientCPU.UserSec+res.ClientCPU.SystemSec <= 0 || res.ClientCPU.Cores < 1 {
		t.Errorf("client CPU %+v", res.ClientCPU)
	}
	s := res.Server
	if s == nil {
		t.Fatal("no server status")
	}
	if s.ThreadsConnectedMax < s.ThreadsConnectedBase+4 || s.Samples < 5 || s.Version == "" {
		t.Errorf("server %+v", s)
	}
	// Questions counts what the server saw in the hold; the driver counts
	// transactions by end time, so the two differ by at most the
	// statements in flight at either end.
	if diff := s.Questions - int64(res.Queries); diff < -2*4*20 || diff > 2*4*20 {
		t.Errorf("server saw %d questions, driver counted %d queries", s.Questions, res.Queries)
	}
	if progress < 2 {
		t.Errorf("progress called %d times", progress)
	}

	if err := Cleanup(ctx, db, tables); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'sbtest%'").Scan(&left); err != nil || left != 0 {
		t.Errorf("%d tables left after Cleanup, %v", left, err)
	}
}

func TestRunConnectFailure(t *testing.T) {
	srv := server(t)
	_, err := Run(t.Context(), Step{
		Target:   Target{Name: "direct", DSN: srv.DSN(testUser, "wrong", testDB)},
		Workload: pointSelect(Schema{Tables: 1, TableSize: 1}),
		Threads:  3,
		Duration: time.Second,
	})
	var me *mysqlwire.Error
	if !errors.Is(err, ErrConnect) || !errors.As(err, &me) || me.Code != 1045 {
		t.Errorf("wrong password: %v", err)
	}
	_, err = Run(t.Context(), Step{
		Target:    Target{Name: "direct", DSN: srv.DSN(testUser, testPassword, testDB)},
		Workload:  pointSelect(Schema{Tables: 1, TableSize: 1}),
		Threads:   1,
		Duration:  time.Second,
		ServerDSN: srv.DSN("nobody", "x", ""),
	})
	if err == nil {
		t.Error("unreachable server DSN accepted")
	}
}

// faultyWorkload runs SELECT 1 and fails every second transaction with
// fail(n).
type faultyWorkload struct{ fail func(n int) error }

func (faultyWorkload) Name() string { return "faulty" }

func (faultyWorkload) Options() Schema { return Schema{} }

func (w faultyWorkload) NewClient(uint64) Client { return &faultyClient{fail: w.fail} }

type faultyClient struct {
	fail func(n int) error
	n    int
}

func (c *faultyClient) Tx(s *Session) error {
	c.n++
	if err := s.text("SELECT 1"); err != nil {
		return err
	}
	if c.n%2 == 0 {
		return c.fail(c.n)
	}
	return nil
}

func TestRunErrorHandling(t *testing.T) {
	srv := server(t)
	run := func(fail func(int) error) StepResult {
		t.Helper()
		res, err := Run(t.Context(), Step{
			Target:   Target{Name: "direct", DSN: srv.DSN(testUser, testPassword, testDB)},
			Workload: faultyWorkload{fail: fail},
			Threads:  2,
			Duration: 500 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Transactions == 0 {
			t.Fatalf("no transactions: %+v", res)
		}
		return res
	}

	// Deadlocks are retried: every transaction succeeds in the end.
	res := run(func(int) error { return &mysqlwire.Error{Code: ErLockDeadlock, Message: "Deadlock found"} })
	if res.Deadlocks == 0 || res.ErrorTotal != 0 || res.SuccessPct != 100 || res.Queries <= res.Transactions {
		t.Errorf("deadlocks: %d retried, errors %v, %d queries for %d tx", res.Deadlocks, res.Errors, res.Queries, res.Transactions)
	}
	res = run(func(int) error { return &mysqlwire.Error{Code: ErLockWaitTimeout} })
	if res.LockWaitTimeouts == 0 || res.ErrorTotal != 0 {
		t.Errorf("lock waits: %d retried, errors %v", res.LockWaitTimeouts, res.Errors)
	}

	// Other server errors fail the transaction, counted by code.
	res = run(func(int) error { return &mysqlwire.Error{Code: 1062, Message: "Duplicate entry"} })
	if res.Errors["1062"] == 0 || res.ErrorTotal != res.Errors["1062"] || res.SuccessPct >= 100 || res.SuccessPct <= 0 || res.Reconnects != 0 {
		t.Errorf("1062: errors %v, success %.1f%%, reconnects %d", res.Errors, res.SuccessPct, res.Reconnects)
	}

	// A lost connection is replaced.
	res = run(func(int) error { return io.ErrUnexpectedEOF })
	if res.Errors[ErrKeyConn] == 0 || res.Reconnects == 0 {
		t.Errorf("bad conn: errors %v, reconnects %d", res.Errors, res.Reconnects)
	}

	// With ErrorPause a client backs off after a failed transaction: two
	// clients failing every other transaction (ERR 9005, overloaded) and
	// pausing 100ms run about one success and one failure per pause
	// each, where at once they run thousands.
	overloaded := func(int) error { return &mysqlwire.Error{Code: 9005, Message: "overloaded"} }
	res, err := Run(t.Context(), Step{
		Target:   Target{Name: "direct", DSN: srv.DSN(testUser, testPassword, testDB)},
		Workload: faultyWorkload{fail: overloaded}, Threads: 2, Duration: 500 * time.Millisecond,
		ErrorPause: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Transactions + res.ErrorTotal; res.Errors["9005"] == 0 || n > 2*(500/100+2)*2 {
		t.Errorf("error pause: %d committed, errors %v: a client did not pause after its failures", res.Transactions, res.Errors)
	}
	if fast := run(overloaded); fast.Transactions < 10*res.Transactions {
		t.Errorf("without a pause %d committed, with it %d: want ≥ 10× more without", fast.Transactions, res.Transactions)
	}
}
