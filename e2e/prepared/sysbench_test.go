package prepared

import (
	"context"
	"database/sql"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

const sysbenchDB = "tpproxy_ps_sysbench"

// sysbenchPool and sysbenchCap are the proxy's pool size and per-connection
// statement cap in TestSysbenchPrepared.
const (
	sysbenchPool = 16
	sysbenchCap  = 64
)

// TestSysbenchPrepared runs sysbench's oltp_read_write with its default
// --db-ps-mode=auto, i.e. server-side prepared statements through
// libmysqlclient (types sent with the first execute only, BEGIN and COMMIT
// prepared too), with 64 and then 512 threads through a proxy with a pool
// of 16. Each sysbench thread prepares 38 statements over 4 tables: 512
// threads directly would need 19,456, beyond the server's
// max_prepared_stmt_count (16,382). Through the proxy the server must never
// hold more than 16 connections × 64 statements (sampled during and after
// each run), and sysbench must see no errors other than deadlocks the
// server itself counted.
//
// Not parallel: on a small machine it needs the CPU to itself. Skipped
// with -short (it takes about 40 s).
func TestSysbenchPrepared(t *testing.T) {
	if testing.Short() {
		t.Skip("sysbench runs for 20 s")
	}
	bin := needTool(t, "sysbench")
	root := env.Root(t)
	if n := rootInt(t, root, "SELECT @@max_prepared_stmt_count"); n != 16382 {
		t.Fatalf("@@max_prepared_stmt_count = %d, want the default 16382", n)
	}
	rootExec(t, root, "DROP DATABASE IF EXISTS "+sysbenchDB, "CREATE DATABASE "+sysbenchDB)
	t.Cleanup(func() {
		ctx, cancel := opCtx()
		defer cancel()
		_, _ = root.ExecContext(ctx, "DROP DATABASE IF EXISTS "+sysbenchDB)
	})

	common := func(port int) []string {
		return []string{"oltp_read_write", "--db-driver=mysql", "--mysql-host=127.0.0.1",
			"--mysql-port=" + strconv.Itoa(port), "--mysql-user=" + proxytest.User,
			"--mysql-password=" + proxytest.Password, "--mysql-db=" + sysbenchDB,
			"--tables=4", "--table-size=10000"}
	}
	sysbench := func(timeout time.Duration, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("sysbench %s hung:\n%s", args[len(args)-1], out)
		}
		if err != nil {
			t.Fatalf("sysbench %s: %v\n%s", args[len(args)-1], err, out)
		}
		return string(out)
	}
	// Tables are prepared directly: loading them is not what is tested.
	sysbench(2*time.Minute, append(common(env.Server(t).Port), "--threads=4", "prepare")...)

	waitNoServerStatements(t, root)
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.Size = sysbenchPool
		o.Pool.MaxPreparedPerConn = sysbenchCap
		// 512 clients queue for 16 connections, each transaction holding
		// its connection throughout.
		o.Pool.AcquireTimeout = 30 * time.Second
	})
	const limit = sysbenchPool * sysbenchCap
	for _, threads := range []int{64, 512} {
		t.Run(strconv.Itoa(threads)+" threads", func(t *testing.T) {
			deadlocksBefore := serverStatus(t, root, "Innodb_deadlocks")
			stopSampling, peak := samplePrepared(t, root)
			out := sysbench(2*time.Minute, append(common(px.Port), "--threads="+strconv.Itoa(threads),
				"--time=10", "--report-interval=0", "--rand-seed=1", "run")...)
			during := stopSampling()
			after := serverPrepared(t, root)
			deadlocks := serverStatus(t, root, "Innodb_deadlocks") - deadlocksBefore

			// sysbench 1.0 stops at the first error it does not ignore
			// (exit status 1, "FATAL"); it counts only ignored ones.
			if strings.Contains(out, "FATAL") {
				t.Errorf("sysbench reported FATAL errors:\n%s", out)
			}
			if n := sysbenchCount(t, out, `reconnects:\s+(\d+)`); n != 0 {
				t.Errorf("sysbench reconnected %d times:\n%s", n, out)
			}
			// InnoDB may pick a deadlock victim now and then in this
			// workload, with or without a proxy; sysbench ignores those
			// (1213, and 1205 lock wait timeouts, which the default 50 s
			// innodb_lock_wait_timeout rules out in a 10 s run). Only
			// deadlocks the server counted may explain ignored errors.
			if n := sysbenchCount(t, out, `ignored errors:\s+(\d+)`); int64(n) > deadlocks {
				t.Errorf("sysbench ignored %d errors; the server counted %d deadlocks meanwhile:\n%s", n, deadlocks, out)
			}
			if n := sysbenchCount(t, out, `transactions:\s+(\d+)`); n <= 0 {
				t.Errorf("sysbench completed %d transactions:\n%s", n, out)
			}
			if *peak > limit || after > limit {
				t.Errorf("the server held up to %d prepared statements during the run and %d after, want at most %d (%d connections × %d); %d clients × 38 statements would need %d",
					*peak, after, limit, sysbenchPool, sysbenchCap, threads, threads*38)
			}
			if st := px.Pool.Stats(); after == 0 || st.PreparedOpen == 0 {
				t.Errorf("sysbench left no prepared statements on the server (%d) or in the pool (%+v): it did not use server-side prepared statements", after, st)
			}
			if during == 0 {
				t.Errorf("no sample of Prepared_stmt_count was taken during the run")
			}
			t.Logf("%d threads: %d transactions, %d deadlocks; server prepared statements peak %d (%d samples), %d after; pool %+v; proxy %+v",
				threads, sysbenchCount(t, out, `transactions:\s+(\d+)`), deadlocks, *peak, during, after, px.Pool.Stats(), px.Server.Stats())
		})
	}
}

// samplePrepared reads the server's Prepared_stmt_count on a ticker until
// stop is called. stop returns the number of samples; *peak is the largest
// value seen, valid once stop returned.
func samplePrepared(t *testing.T, root *sql.DB) (stop func() int, peak *int64) {
	t.Helper()
	peak = new(int64)
	done := make(chan struct{})
	finished := make(chan struct{})
	samples := 0
	var sampleErr error
	go func() {
		defer close(finished)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			ctx, cancel := opCtx()
			var name string
			var n int64
			err := root.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'").Scan(&name, &n)
			cancel()
			if err != nil {
				sampleErr = err
				return
			}
			samples++
			*peak = max(*peak, n)
		}
	}()
	return func() int {
		close(done)
		<-finished
		if sampleErr != nil {
			t.Errorf("sampling Prepared_stmt_count: %v", sampleErr)
		}
		return samples
	}, peak
}

func sysbenchCount(t *testing.T, out, pattern string) int {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %q in sysbench output:\n%s", pattern, out)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatalf("%q in sysbench output: %v", pattern, err)
	}
	return n
}
