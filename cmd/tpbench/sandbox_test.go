package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/sandbox"
)

// tpbench runs the command tree in-process and returns what it printed.
func tpbench(ctx context.Context, args ...string) (string, error) {
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

func TestSandboxUpStatusDown(t *testing.T) {
	if _, _, err := sandbox.Find(""); errors.Is(err, sandbox.ErrNotFound) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but no server binary: %v", err)
		}
		t.Skipf("no server binary: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "sbx")
	t.Cleanup(func() {
		// The server is detached: make sure a failing test does not leave it.
		if out, err := tpbench(context.Background(), "sandbox", "down", "--dir", dir); err != nil {
			t.Errorf("cleanup down: %v\n%s", err, out)
		}
	})

	out, err := tpbench(ctx, "--log-level", "debug", "sandbox", "up", "--dir", dir,
		"--user", "bench", "--password", "pw", "--database", "sbtest", "--option", "max_connections=321")
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	srv, err := sandbox.Load(filepath.Join(dir, stateFileName))
	if err != nil {
		t.Fatalf("state after up: %v\n%s", err, out)
	}
	appDSN := srv.DSN("bench", "pw", "sbtest")
	if !strings.Contains(out, "sandbox started") || !strings.Contains(out, appDSN) || !strings.Contains(out, srv.Addr) {
		t.Errorf("up output lacks start line, address or app DSN %q:\n%s", appDSN, out)
	}
	db, err := sql.Open("mysql", appDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var maxConn int
	if err := db.QueryRowContext(ctx, "SELECT @@max_connections").Scan(&maxConn); err != nil || maxConn != 321 {
		t.Errorf("as the app user: max_connections %d, %v; want 321", maxConn, err)
	}

	// prepare, compare and cleanup against the sandbox.
	if out, err := tpbench(ctx, "prepare", "--dsn", appDSN, "--tables", "2", "--table-size", "300"); err != nil || !strings.Contains(out, "prepared the oltp_read_write data") {
		t.Fatalf("prepare: %v\n%s", err, out)
	}
	var rows int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sbtest2").Scan(&rows); err != nil || rows != 300 {
		t.Errorf("after prepare: sbtest2 has %d rows, %v", rows, err)
	}
	outDir := t.TempDir()
	out, err = tpbench(ctx, "compare", "--target", "direct="+appDSN, "--tables", "2", "--table-size", "300",
		"--threads", "2", "--warmup", "0s", "--step-duration", "500ms", "--ps-mode", "auto", "--out", outDir)
	if err != nil || !strings.Contains(out, "oltp_point_select/2") {
		t.Fatalf("compare: %v\n%s", err, out)
	}
	for _, f := range []string{"results.json", "results.csv", "summary.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(outDir, f)); err != nil {
			t.Errorf("compare --out: %v", err)
		}
	}
	// tpbench report regenerates report.html from results.json.
	if err := os.Remove(filepath.Join(outDir, "report.html")); err != nil {
		t.Fatal(err)
	}
	if out, err := tpbench(ctx, "report", outDir); err != nil || !strings.Contains(out, "report.html") {
		t.Errorf("report: %v\n%s", err, out)
	}
	if html, err := os.ReadFile(filepath.Join(outDir, "report.html")); err != nil || !strings.Contains(string(html), `data-chart="tps"`) {
		t.Errorf("regenerated report.html: %v", err)
	}
	if out, err := tpbench(ctx, "report", t.TempDir()); err == nil {
		t.Errorf("report of an empty directory succeeded:\n%s", out)
	}

	// The ability_attr scenario over two databases, a connection per
	// transaction, pareto keys.
	rootDSN := srv.RootDSN("sbtest")
	if out, err := tpbench(ctx, "prepare", "--dsn", rootDSN, "--workload", "ability_attr", "--scale", "0.001", "--schemas", "2"); err != nil {
		t.Fatalf("prepare ability_attr: %v\n%s", err, out)
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sbtest_2.ability_attr").Scan(&rows); err != nil || rows != 1200 {
		t.Errorf("sbtest_2.ability_attr has %d rows, %v; want 1200", rows, err)
	}
	out, err = tpbench(ctx, "compare", "--target", "direct="+rootDSN, "--workload", "ability_attr", "--scale", "0.001",
		"--schemas", "2", "--connect-per-tx", "--rand-type", "pareto", "--threads", "2", "--warmup", "0s", "--step-duration", "500ms", "--ps-mode", "disable")
	if err != nil || !strings.Contains(out, "ability_attr/2") || !strings.Contains(out, "errors 0") {
		t.Errorf("compare ability_attr: %v\n%s", err, out)
	}
	if out, err := tpbench(ctx, "cleanup", "--dsn", rootDSN, "--workload", "ability_attr", "--schemas", "2"); err != nil {
		t.Fatalf("cleanup ability_attr: %v\n%s", err, out)
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'sbtest\\_%'").Scan(&rows); err != nil || rows != 0 {
		t.Errorf("after cleanup: %d sbtest_N databases, %v", rows, err)
	}
	if out, err := tpbench(ctx, "cleanup", "--dsn", appDSN, "--tables", "2"); err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out)
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'sbtest' AND TABLE_NAME LIKE 'sbtest%'").Scan(&rows); err != nil || rows != 0 {
		t.Errorf("after cleanup: %d sbtest tables, %v", rows, err)
	}
	db.Close()

	out, err = tpbench(ctx, "sandbox", "up", "--dir", dir, "--user", "bench", "--password", "pw")
	if err != nil || !strings.Contains(out, "already running") {
		t.Errorf("second up: %v\n%s", err, out)
	}
	if again, err := sandbox.Load(filepath.Join(dir, stateFileName)); err != nil || again.PID != srv.PID {
		t.Errorf("second up replaced the server: %v, %v", again, err)
	}

	out, err = tpbench(ctx, "sandbox", "status", "--dir", dir)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	// Threads_connected may still count connections that up and this test
	// have just closed, so only its presence is checked.
	for _, want := range []string{"pid:", "address:           " + srv.Addr, "version:", "uptime:", "threads_connected: ", "max_connections:   321"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}

	out, err = tpbench(ctx, "sandbox", "down", "--dir", dir)
	if err != nil || !strings.Contains(out, "stopped") {
		t.Fatalf("down: %v\n%s", err, out)
	}
	if srv.Alive() {
		t.Error("server alive after down")
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("sandbox dir after down: %v", err)
	}

	if out, err := tpbench(ctx, "sandbox", "status", "--dir", dir); !errors.Is(err, sandbox.ErrNotRunning) {
		t.Errorf("status after down: %v, want ErrNotRunning\n%s", err, out)
	}
	if out, err := tpbench(ctx, "sandbox", "down", "--dir", dir); err != nil || !strings.Contains(out, "no sandbox") {
		t.Errorf("second down: %v\n%s", err, out)
	}
}

func TestLogLevelRejected(t *testing.T) {
	if _, err := tpbench(t.Context(), "--log-level", "loud", "sandbox", "status", "--dir", t.TempDir()); err == nil || !strings.Contains(err.Error(), "log-level") {
		t.Errorf("bad --log-level: %v", err)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"app": "app", "-pse cret": `'-pse cret'`, "it's": `'it'\''s'`, "": "''"} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
