package clients

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

const sysbenchDB = "tpproxy_sysbench"

// TestSysbenchOLTPReadWrite runs sysbench's oltp_read_write with 64 threads
// through a proxy with a pool of 8: text protocol (no server-side prepared
// statements), transactions that pin their backend, and far more clients
// than backends. It is not a benchmark: it asserts that nothing fails.
//
// Not parallel: on a small machine it needs the CPU to itself.
func TestSysbenchOLTPReadWrite(t *testing.T) {
	bin := needTool(t, "sysbench")
	serverExec(t, "DROP DATABASE IF EXISTS "+sysbenchDB, "CREATE DATABASE "+sysbenchDB)
	t.Cleanup(func() { serverExec(t, "DROP DATABASE IF EXISTS "+sysbenchDB) })

	common := func(port int) []string {
		return []string{"oltp_read_write", "--db-driver=mysql", "--mysql-host=127.0.0.1",
			"--mysql-port=" + strconv.Itoa(port), "--mysql-user=" + proxytest.User,
			"--mysql-password=" + proxytest.Password, "--mysql-db=" + sysbenchDB,
			"--tables=4", "--table-size=10000", "--db-ps-mode=disable"}
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

	// InnoDB may pick a deadlock victim now and then in this workload,
	// with or without a proxy; sysbench ignores those (error 1213). Only
	// deadlocks the server itself counted may explain ignored errors.
	root := env.Root(t)
	deadlocks := func() int {
		t.Helper()
		var name string
		var n int
		if err := root.QueryRowContext(context.Background(), "SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadlocksBefore := deadlocks()

	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.Size = 8
		o.Pool.AcquireTimeout = 30 * time.Second
	})
	out := sysbench(2*time.Minute, append(common(px.Port), "--threads=64", "--time=10",
		"--report-interval=0", "--rand-seed=1", "run")...)

	if strings.Contains(out, "FATAL") {
		t.Errorf("sysbench reported FATAL errors:\n%s", out)
	}
	serverDeadlocks := deadlocks() - deadlocksBefore
	ignored := -1
	if m := regexp.MustCompile(`ignored errors:\s+(\d+)`).FindStringSubmatch(out); m != nil {
		ignored, _ = strconv.Atoi(m[1])
	}
	if ignored != 0 && (ignored < 0 || ignored > serverDeadlocks) {
		t.Errorf("sysbench ignored errors = %d, want 0 (the server counted %d deadlocks meanwhile):\n%s", ignored, serverDeadlocks, out)
	}
	m := regexp.MustCompile(`transactions:\s+(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no transaction count in sysbench output:\n%s", out)
	}
	if n, _ := strconv.Atoi(m[1]); n <= 0 {
		t.Errorf("sysbench completed %d transactions", n)
	}
	st := px.Server.Stats()
	if st.Errors != 0 && int(st.Errors) > serverDeadlocks {
		t.Errorf("the proxy answered %d statements with ERR (%d server deadlocks)", st.Errors, serverDeadlocks)
	}
	if st.Accepted < 64 {
		t.Errorf("%d client connections accepted, want 64", st.Accepted)
	}
	t.Logf("sysbench through the proxy: %s transactions; proxy stats %+v; pool %+v", m[1], st, px.Pool.Stats())
}
