package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/bench"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

func TestDemo(t *testing.T) {
	if _, _, err := sandbox.Find(""); errors.Is(err, sandbox.ErrNotFound) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but no server binary: %v", err)
		}
		t.Skipf("no server binary: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "out")
	out, err := tpbench(ctx, "--log-level", "warn", "demo", "--duration", "1s", "--warmup", "500ms", "--out", dir)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	rep, err := bench.ReadReport(filepath.Join(dir, bench.ResultsFile))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Steps) != 10 {
		t.Fatalf("%d runs in results.json, want 5 steps × 2 targets\n%s", len(rep.Steps), out)
	}
	for i, s := range rep.Steps {
		wantTarget := []string{"direct", "proxy"}[i%2]
		// 1,000 server threads on a small CI machine take longer than
		// the 1 s hold for a read/write transaction: none may end in it.
		slow := s.Target == "direct" && s.Threads == 1000
		if s.Target != wantTarget || (s.TPS <= 0 && !slow) || s.ErrorTotal != 0 || s.Server == nil {
			t.Errorf("run %d (%s on %s, %d threads): target %q, %.1f TPS, errors %v, server %v",
				i+1, s.Workload, s.Target, s.Threads, wantTarget, s.TPS, s.Errors, s.Server)
		}
	}
	if len(rep.Comparisons) != 5 || rep.Comparisons[4].Step != "oltp_read_write/1000" {
		t.Errorf("comparisons %+v", rep.Comparisons)
	}
	if rep.Proxy == nil || rep.Proxy.Pool.Size != 16 || rep.Proxy.Front.Accepted < 8+8+1000 {
		t.Errorf("proxy stats %+v", rep.Proxy)
	}
	for _, s := range rep.Steps {
		if (s.Proxy != nil) != (s.Target == "proxy") || s.Host == nil {
			t.Errorf("%s/%d: proxy figures %v, host figures %v", s.Target, s.Threads, s.Proxy, s.Host)
		}
	}
	for _, f := range []string{bench.SummaryFile, bench.CSVFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, bench.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`data-chart="tps-oltp_point_select"`, `data-chart="latency-oltp_read_write"`, `data-chart="queue-oltp_read_write"`, "oltp_read_write/1000"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %s", want)
		}
	}
	for _, want := range []string{"[2/2]", "[8/8]", "proxy/direct", "server conns max", "tpproxy pool:", bench.ResultsFile, bench.SummaryFile, bench.HTMLFile} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestDemoNoServer(t *testing.T) {
	t.Setenv(sandbox.EnvBinary, filepath.Join(t.TempDir(), "no-mariadbd"))
	out, err := tpbench(t.Context(), "demo", "--out", t.TempDir())
	if !errors.Is(err, sandbox.ErrNotFound) || !strings.Contains(err.Error(), "sudo apt-get install -y mariadb-server") {
		t.Errorf("demo without a server: %v\n%s", err, out)
	}
}
