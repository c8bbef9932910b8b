package operate

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

const upgradeDB = "tpproxy_upgrade"

// TestUpgradeTakeover replaces the running binary while sysbench runs
// oltp_read_only with 64 threads for 30 s through it and other clients open a new
// connection for every statement: the new process takes the listening
// sockets over upgrade_socket, the old one serves its busy sessions until
// sysbench leaves and then exits. sysbench sees no error at all, and no
// connection attempt fails.
func TestUpgradeTakeover(t *testing.T) {
	bin, err := exec.LookPath("sysbench")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("sysbench not found (CI=true): the upgrade test needs it")
		}
		t.Skip("sysbench not installed")
	}
	ctx := ctxT(t, 3*time.Minute)
	if err := env.Server(t).Exec(ctx, "DROP DATABASE IF EXISTS "+upgradeDB, "CREATE DATABASE "+upgradeDB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Server(t).Exec(context.Background(), "DROP DATABASE IF EXISTS "+upgradeDB) })
	args := func(port int) []string {
		return []string{"oltp_read_only", "--db-driver=mysql", "--mysql-host=127.0.0.1",
			"--mysql-port=" + strconv.Itoa(port), "--mysql-user=" + proxytest.User,
			"--mysql-password=" + proxytest.Password, "--mysql-db=" + upgradeDB,
			"--tables=2", "--table-size=10000", "--db-ps-mode=disable"}
	}
	if out, err := exec.CommandContext(ctx, bin, append(args(env.Server(t).Port), "--threads=2", "prepare")...).CombinedOutput(); err != nil {
		t.Fatalf("sysbench prepare: %v\n%s", err, out)
	}

	s := defaults(t)
	s.PoolSize = 8
	s.ShutdownTimeout = "60s"
	s.Extra = "upgrade_socket: " + filepath.Join(t.TempDir(), "upgrade.sock") + "\n"
	old := start(t, s)

	// Clients that connect anew for every statement, all along.
	var attempts, failures atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var churn sync.WaitGroup
	for range 4 {
		churn.Go(func() {
			db, err := sql.Open("mysql", old.dsn())
			if err != nil {
				t.Error(err)
				return
			}
			defer db.Close()
			db.SetMaxIdleConns(-1) // a new connection each time
			for {
				select {
				case <-stop:
					return
				default:
				}
				attempts.Add(1)
				var one int
				if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}

	type result struct {
		out string
		err error
	}
	sb := make(chan result, 1)
	go func() {
		out, err := exec.CommandContext(ctx, bin, append(args(s.Port), "--threads=64", "--time=30",
			"--report-interval=0", "run")...).CombinedOutput()
		sb <- result{string(out), err}
	}()

	// A pool whose connections sit idle across the upgrade: the old
	// process ends them (parked for a second), and the pool's next queries
	// get new ones, from the new process, without an error.
	pooled := old.open(t)
	pooled.SetMaxIdleConns(4)
	var pconns []*sql.Conn
	for range 4 {
		c, err := pooled.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pconns = append(pconns, c)
	}
	for _, c := range pconns {
		_ = c.Close() // back to the pool, idle
	}

	time.Sleep(10 * time.Second)
	before := attempts.Load()
	next := startTakeover(t, old)
	old.waitLog(t, 30*time.Second, func(l map[string]any) bool {
		return l["msg"] == "takeover: the new process serves; shutting down gracefully"
	})
	next.waitLog(t, 30*time.Second, func(l map[string]any) bool {
		return l["msg"] == "takeover: the previous process stopped accepting and is draining"
	})

	time.Sleep(3 * time.Second) // the old process ends its idle sessions
	for i := range 8 {
		var one int
		if err := pooled.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Errorf("pooled query %d after the upgrade: %v", i, err)
		}
	}

	r := <-sb
	close(stop)
	churn.Wait()
	if r.err != nil || strings.Contains(r.out, "FATAL") {
		t.Fatalf("sysbench across the upgrade: %v\n%s", r.err, r.out)
	}
	n := func(re string) int {
		m := regexp.MustCompile(re + `:\s+(\d+)`).FindStringSubmatch(r.out)
		if m == nil {
			t.Fatalf("no %q in sysbench's output:\n%s", re, r.out)
		}
		v, _ := strconv.Atoi(m[1])
		return v
	}
	txns, ignored, reconnects := n("transactions"), n("ignored errors"), n("reconnects")
	if txns == 0 || ignored != 0 || reconnects != 0 {
		t.Errorf("sysbench: %d transactions, %d ignored errors, %d reconnects (want >0, 0, 0)", txns, ignored, reconnects)
	}
	if f := failures.Load(); f != 0 {
		t.Errorf("%d of %d new connections failed across the upgrade; first: %v", f, attempts.Load(), firstErr.Load())
	}
	if after := attempts.Load() - before; after < 50 {
		t.Errorf("only %d connections after the takeover", after)
	}
	// The old process leaves once sysbench has (it served those sessions
	// to the end), cleanly.
	select {
	case <-old.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the old process did not exit after its sessions ended")
	}
	if old.err != nil {
		t.Errorf("the old process exited with %v", old.err)
	}
	// The new one serves, on the same port, and took the later clients.
	db := next.open(t)
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("through the new process: %v", err)
	}
	if acc, _ := value(next.metrics(t), "tpproxy_client_connections_accepted_total", nil); acc < 50 {
		t.Errorf("the new process accepted %v connections", acc)
	}
	t.Logf("sysbench: %d transactions, 0 errors; %d new connections, %d after the takeover, 0 failed", txns, attempts.Load(), attempts.Load()-before)
}
