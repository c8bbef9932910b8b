package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/bench"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

// needServer skips (or under CI=true fails) a test without a server
// binary.
func needServer(t *testing.T) {
	t.Helper()
	if _, _, err := sandbox.Find(""); errors.Is(err, sandbox.ErrNotFound) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but no server binary: %v", err)
		}
		t.Skipf("no server binary: %v", err)
	}
}

// tpproxyBinary builds cmd/tpproxy into a temporary directory.
func tpproxyBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool on PATH to build the tpproxy binary the demo runs: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "tpproxy")
	if out, err := exec.Command(goTool, "build", "-o", bin, "github.com/tpproxy/tpproxy/cmd/tpproxy").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestDemo runs a one-step demo: the tpproxy binary runs as a process of
// its own, and every target (direct, tpproxy, haproxy when installed,
// mariadb-pool) gets results, the relays their CPU per statement.
func TestDemo(t *testing.T) {
	needServer(t)
	bin := tpproxyBinary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "out")
	out, err := tpbench(ctx, "--log-level", "warn", "demo", "--steps", "oltp_point_select/2",
		"--duration", "2s", "--warmup", "500ms", "--tpproxy-bin", bin, "--out", dir)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "tpproxy.log"))
		t.Fatalf("demo: %v\n%s\ntpproxy.log:\n%s", err, out, log)
	}
	rep, err := bench.ReadReport(filepath.Join(dir, bench.ResultsFile))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []string{bench.TargetDirect, bench.TargetTpproxy, bench.TargetPool}
	_, haveHAProxy := exec.LookPath("haproxy")
	if haveHAProxy == nil {
		want = []string{bench.TargetDirect, bench.TargetTpproxy, bench.TargetHAProxy, bench.TargetPool}
	}
	if len(rep.Steps) != len(want) {
		t.Fatalf("%d runs in results.json, want one per target %v\n%s", len(rep.Steps), want, out)
	}
	servers := map[string]int{} // target → server PID
	relays := map[string]bench.ProcessUsage{}
	for i, s := range rep.Steps {
		if s.Target != want[i] || s.TPS <= 0 || s.ErrorTotal != 0 || s.Server == nil || s.Host == nil {
			t.Errorf("run %d: target %q (want %q), %.1f TPS, errors %v, server %v, host %v", i+1, s.Target, want[i], s.TPS, s.Errors, s.Server, s.Host)
		}
		if s.ServerCPUUsPerStmt <= 0 {
			t.Errorf("%s: server CPU %g µs/stmt", s.Target, s.ServerCPUUsPerStmt)
		}
		for _, p := range s.Processes {
			if p.CPUUsPerStmt == 0 {
				continue
			}
			switch p.Kind {
			case bench.ProcServer:
				servers[s.Target] = p.PID
			case bench.ProcRelay:
				relays[s.Target] = p
			}
		}
		isRelay := s.Target == bench.TargetTpproxy || s.Target == bench.TargetHAProxy
		if isRelay != (s.RelayCPUUsPerStmt > 0) {
			t.Errorf("%s: relay CPU %g µs/stmt", s.Target, s.RelayCPUUsPerStmt)
		}
		if (s.Proxy != nil) != (s.Target == bench.TargetTpproxy) {
			t.Errorf("%s: admin-port figures %+v", s.Target, s.Proxy)
		}
	}
	px, ok := relays[bench.TargetTpproxy]
	if !ok || px.Name != "tpproxy" || px.PID == os.Getpid() || px.CPUSec <= 0 {
		t.Errorf("tpproxy's process: %+v (this test is pid %d)", px, os.Getpid())
	} else if err := syscall.Kill(px.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("tpproxy (pid %d) still runs after the demo: kill(0) = %v", px.PID, err)
	}
	if hp, ok := relays[bench.TargetHAProxy]; haveHAProxy == nil && (!ok || hp.Name != "haproxy") {
		t.Errorf("haproxy's process: %+v", hp)
	}
	if servers[bench.TargetDirect] == 0 || servers[bench.TargetPool] == servers[bench.TargetDirect] || servers[bench.TargetTpproxy] != servers[bench.TargetDirect] {
		t.Errorf("server processes by target: %v", servers)
	}
	if rep.Proxy == nil || rep.Proxy.Pool.Size != 16 || rep.Proxy.Front.Accepted < 2 || rep.Proxy.Front.Statements == 0 {
		t.Errorf("tpproxy totals %+v", rep.Proxy)
	}
	if len(rep.Comparisons) != len(want)-1 {
		t.Errorf("comparisons %+v", rep.Comparisons)
	}
	log, err := os.ReadFile(filepath.Join(dir, "tpproxy.log"))
	if err != nil || !strings.Contains(string(log), "tpproxy listening") || !strings.Contains(string(log), "tpproxy stopped") {
		t.Errorf("tpproxy.log (%v):\n%s", err, log)
	}
	html, err := os.ReadFile(filepath.Join(dir, bench.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`data-chart="tps"`, `data-chart="cpu-stmt"`, `data-chart="queue"`, "proxy CPU µs/stmt"} {
		if !strings.Contains(string(html), w) {
			t.Errorf("report.html lacks %s", w)
		}
	}
	for _, w := range []string{"tpproxy/direct", "mariadb-pool/direct", "thread_handling=pool-of-threads, thread_pool_size=2",
		"proxy CPU µs/stmt", "tpproxy pool:", bench.ResultsFile, bench.SummaryFile, bench.HTMLFile} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestDemoNoServer(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(sandbox.EnvBinary, filepath.Join(t.TempDir(), "no-mariadbd"))
	// Any executable passes for tpproxy: the server is looked for first.
	out, err := tpbench(t.Context(), "demo", "--tpproxy-bin", self, "--out", t.TempDir())
	if !errors.Is(err, sandbox.ErrNotFound) || !strings.Contains(err.Error(), "sudo apt-get install -y mariadb-server") {
		t.Errorf("demo without a server: %v\n%s", err, out)
	}
}

// TestDemoNoProxyBinary: without a tpproxy binary next to tpbench (here:
// next to the test binary) or --tpproxy-bin, the demo says how to get one
// before it starts anything.
func TestDemoNoProxyBinary(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--out", t.TempDir()},
		{"demo", "--out", t.TempDir(), "--tpproxy-bin", filepath.Join(t.TempDir(), "tpproxy")},
	} {
		out, err := tpbench(t.Context(), args...)
		if !errors.Is(err, bench.ErrNoProxyBinary) || !strings.Contains(err.Error(), "go build -o bin/ ./cmd/...") {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
	}
}
