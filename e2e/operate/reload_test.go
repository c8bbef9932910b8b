package operate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// load runs clients doing short transactions and point reads through db
// until stop is called, which returns the statements run and the errors
// seen.
func load(t *testing.T, db *sql.DB, clients int) (stop func() (ok int64, errs []error)) {
	t.Helper()
	mustExec(t, db, "CREATE TABLE IF NOT EXISTS reload_t (id INT PRIMARY KEY, n INT)")
	mustExec(t, db, "INSERT IGNORE INTO reload_t VALUES (1, 0), (2, 0), (3, 0), (4, 0)")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ok atomic.Int64
	var mu sync.Mutex
	var errs []error
	for i := range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				err := func() error {
					if i%2 == 0 {
						var n int
						return db.QueryRowContext(ctx, "SELECT n FROM reload_t WHERE id = ?", i%4+1).Scan(&n)
					}
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						return err
					}
					if _, err := tx.ExecContext(ctx, "UPDATE reload_t SET n = n + 1 WHERE id = ?", i%4+1); err != nil {
						_ = tx.Rollback()
						return err
					}
					return tx.Commit()
				}()
				if err != nil && ctx.Err() == nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				} else if err == nil {
					ok.Add(1)
				}
			}
		})
	}
	return func() (int64, []error) {
		cancel()
		wg.Wait()
		return ok.Load(), errs
	}
}

// groups reads thread_pool_size from the admin port's view in /metrics.
func groups(t *testing.T, d *daemon) float64 {
	v, _ := value(d.metrics(t), "tpproxy_thread_pool_groups", nil)
	return v
}

// TestReloadUnderLoad: with clients running, editing the file changes
// thread_pool_size and the pool size at once, without a single client
// error; a broken file is rejected whole with a clear log line and the
// running configuration kept; a changed static key is reported as needing
// a restart.
func TestReloadUnderLoad(t *testing.T) {
	s := defaults(t)
	s.GroupSize = 2
	d := start(t, s)
	db := d.open(t, "interpolateParams=false")
	db.SetMaxOpenConns(32)
	stop := load(t, db, 24)

	// Let load run a moment so the change lands in the middle of it.
	eventually(t, 10*time.Second, "load running", func() bool {
		v, _ := value(d.metrics(t), "tpproxy_statements_total", map[string]string{"command": "stmt_execute", "outcome": "ok"})
		return v > 200
	})

	s.GroupSize, s.PoolSize = 5, 6
	d.write(s)
	rec := d.waitLog(t, 10*time.Second, msgIs("config reloaded"))
	if rec["trigger"] != "file change" || !strings.Contains(fmt.Sprint(rec["applied"]), "thread_pool.size") ||
		!strings.Contains(fmt.Sprint(rec["applied"]), "backend.pool_size") {
		t.Errorf("reload record %v", rec)
	}
	if g := groups(t, d); g != 5 {
		t.Fatalf("thread_pool_groups = %v after the reload, want 5", g)
	}
	eventually(t, 10*time.Second, "pool grown to 6", func() bool {
		f := d.metrics(t)
		size, _ := value(f, "tpproxy_backend_pool_size", nil)
		return size == 6
	})

	// A broken file: a bad value and an unknown key. Rejected whole: the
	// valid change in it (oversubscribe) does not apply either.
	d.writeRaw(strings.Replace(s.yaml(), "oversubscribe: 3", "oversubscribe: 7\n  size_typo: 9", 1) +
		"max_client_connections: -5\n")
	bad := d.waitLog(t, 10*time.Second, msgIs("config reload rejected; the running configuration is kept"))
	problems := fmt.Sprint(bad["problems"])
	if bad["level"] != "ERROR" || !strings.Contains(problems, "size_typo") || !strings.Contains(problems, "max_client_connections") {
		t.Errorf("rejection record %v", bad)
	}
	f := d.metrics(t)
	if v, _ := value(f, "tpproxy_config_reloads_total", map[string]string{"result": "failure"}); v != 1 {
		t.Errorf("failed reloads = %v, want 1", v)
	}
	if v, _ := value(f, "tpproxy_thread_group_capacity", map[string]string{"group": "0"}); v != 4 {
		t.Errorf("group capacity %v after the rejected file, want 4 (oversubscribe 3 kept)", v)
	}
	if g := groups(t, d); g != 5 {
		t.Errorf("thread_pool_groups = %v after the rejected file, want 5", g)
	}

	// A static key (the client port) and a dynamic one together: the
	// dynamic one applies, the static one is reported.
	moved := s
	moved.Port = freePort(t)
	moved.GroupSize = 3
	d.write(moved)
	warn := d.waitLog(t, 10*time.Second, msgIs("config reloaded; some changes need a restart"))
	if fmt.Sprint(warn["restart_required"]) != "listen" || !strings.Contains(fmt.Sprint(warn["applied"]), "thread_pool.size") {
		t.Errorf("restart record %v", warn)
	}
	if g := groups(t, d); g != 3 {
		t.Errorf("thread_pool_groups = %v, want 3", g)
	}
	f = d.metrics(t)
	if v, _ := value(f, "tpproxy_config_restart_required", nil); v != 1 {
		t.Errorf("tpproxy_config_restart_required = %v, want 1", v)
	}
	if v, _ := value(f, "tpproxy_config_reloads_total", map[string]string{"result": "success"}); v != 2 {
		t.Errorf("successful reloads = %v, want 2", v)
	}

	n, errs := stop()
	if len(errs) > 0 {
		t.Fatalf("%d client errors during the reloads (of %d statements), first: %v", len(errs), n, errs[0])
	}
	if n < 500 {
		t.Errorf("only %d statements ran during the test", n)
	}
	t.Logf("%d transactions and reads, 0 errors, across 3 reloads", n)
}

// TestReloadOnSIGHUP: with watch_config off, a file edit applies on SIGHUP.
func TestReloadOnSIGHUP(t *testing.T) {
	s := defaults(t)
	s.Watch = false
	s.GroupSize = 2
	d := start(t, s)
	db := d.open(t)
	stop := load(t, db, 8)

	// The server account ops runs as (backend.identity passthrough).
	if err := env.Server(t).Exec(ctxT(t, time.Minute), "CREATE USER IF NOT EXISTS 'ops'@'%' IDENTIFIED BY 'opspw'",
		"GRANT ALL ON "+proxytest.DB+".* TO 'ops'@'%'"); err != nil {
		t.Fatal(err)
	}
	// A new account cannot log in before the reload.
	opsDSN := strings.Replace(d.dsn(), proxytest.User+":"+proxytest.Password+"@", "ops:opspw@", 1)
	ops, err := sql.Open("mysql", opsDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer ops.Close()
	ctx := ctxT(t, time.Minute)
	if err := ops.PingContext(ctx); err == nil {
		t.Fatal("user ops logged in before it was configured")
	}

	s.GroupSize = 4
	s.SlowQueue = "0s"
	s.MoreUsers = "  - user: ops\n    password: opspw\n"
	d.write(s)
	d.signal(syscall.SIGHUP)
	rec := d.waitLog(t, 10*time.Second, msgIs("config reloaded"))
	if rec["trigger"] != "SIGHUP" {
		t.Errorf("reload record %v", rec)
	}
	if g := groups(t, d); g != 4 {
		t.Errorf("thread_pool_groups = %v after SIGHUP, want 4", g)
	}
	if !strings.Contains(fmt.Sprint(rec["applied"]), "users") {
		t.Errorf("reload record %v does not list users", rec)
	}
	if err := ops.PingContext(ctx); err != nil {
		t.Errorf("user ops added by the reload cannot log in: %v", err)
	}
	// SIGHUP with an unchanged file is a reload that changes nothing.
	d.signal(syscall.SIGHUP)
	eventually(t, 10*time.Second, "second SIGHUP handled", func() bool { return d.countLogs(msgIs("config reloaded")) == 2 })
	n, errs := stop()
	if len(errs) > 0 {
		t.Fatalf("%d client errors (of %d), first: %v", len(errs), n, errs[0])
	}
}
