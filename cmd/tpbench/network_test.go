package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/bench"
)

// needNetns skips a test without root or ip netns, and fails it under
// CI=true, which runs as root.
func needNetns(t *testing.T) {
	t.Helper()
	err := bench.NetworkAvailable()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" && os.Geteuid() == 0 {
		t.Fatalf("CI=true as root, yet: %v", err)
	}
	t.Skipf("no delayed network: %v", err)
}

// TestDemoOverTiers runs the demo over 0.2 ms tiers (the server and
// tpproxy in network namespaces of their own, every link delayed 0.2 ms
// each way), 10 s per run: the links' measured round trips are at least
// 0.4 ms and not far above it; a point select takes at least one round
// trip directly and two through tpproxy; the server's and tpproxy's CPU
// are still read; the namespaces are gone at the end. (Loopback and the
// tiers side by side in one report is the same code run once per network;
// TestDemo covers loopback.)
//
// It times round trips: scripts/test.sh runs it alone after the rest
// (TPBENCH_QUIET_MACHINE=1), and under CI=true it is skipped beside the
// other packages' tests.
func TestDemoOverTiers(t *testing.T) {
	if os.Getenv("CI") == "true" && os.Getenv("TPBENCH_QUIET_MACHINE") != "1" {
		t.Skip("times round trips: scripts/test.sh runs it alone after the rest")
	}
	needServer(t)
	needNetns(t)
	bin := tpproxyBinary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "out")
	out, err := tpbench(ctx, "--log-level", "warn", "demo", "--network", "0.2ms", "--steps", "oltp_point_select/8",
		"--duration", "10s", "--warmup", "1s", "--haproxy", "off", "--pool-of-threads-size", "0", "--tpproxy-bin", bin, "--out", dir)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "tpproxy.log"))
		t.Fatalf("demo: %v\n%s\ntpproxy.log:\n%s", err, out, log)
	}
	t.Log(out)
	rep, err := bench.ReadReport(filepath.Join(dir, bench.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	const delayUs = 200.0
	if len(rep.Networks) != 1 || rep.Networks[0].Label != "0.2ms" || rep.Networks[0].DelayUs != delayUs || len(rep.Networks[0].RTT) != 3 {
		t.Fatalf("networks %+v", rep.Networks)
	}
	for _, r := range rep.Networks[0].RTT {
		// One round trip crosses the link twice, each way delayed.
		if r.Samples < 50 || r.MinUs < 2*delayUs || r.P50Us > 2*delayUs+500 {
			t.Errorf("link %s: RTT %+v, want min >= %.0f µs and p50 within 0.5 ms of it", r.Link, r, 2*delayUs)
		}
	}
	runs := map[string]bench.StepResult{}
	for _, s := range rep.Steps {
		runs[s.Target] = s
	}
	for _, name := range []string{"direct@0.2ms", "tpproxy@0.2ms"} {
		s, ok := runs[name]
		if !ok || s.TPS <= 0 || s.ErrorTotal != 0 || s.ServerCPUUsPerStmt <= 0 {
			t.Errorf("%s: %+v", name, s)
		}
	}
	if len(rep.Steps) != 2 || len(rep.Comparisons) != 1 {
		t.Errorf("%d runs and %d comparisons, want 2 and 1", len(rep.Steps), len(rep.Comparisons))
	}
	// One point select is one round trip on each link it crosses.
	direct, proxied := runs["direct@0.2ms"].Latency, runs["tpproxy@0.2ms"].Latency
	if direct.P50 < 2*delayUs/1000 || proxied.P50 < 4*delayUs/1000 {
		t.Errorf("over 0.2 ms tiers p50 %.3f ms direct, %.3f ms through tpproxy; want at least 0.4 and 0.8", direct.P50, proxied.P50)
	}
	if s := runs["tpproxy@0.2ms"]; s.RelayCPUUsPerStmt <= 0 || s.Proxy == nil {
		t.Errorf("tpproxy@0.2ms: relay CPU %g µs/stmt, admin figures %+v", s.RelayCPUUsPerStmt, s.Proxy)
	}
	for _, c := range rep.Comparisons {
		if c.Proxy != "tpproxy@0.2ms" || c.Direct != "direct@0.2ms" {
			t.Errorf("comparison %s vs %s", c.Proxy, c.Direct)
		}
	}
	if ns, err := exec.Command("ip", "netns", "list").Output(); err != nil || strings.Contains(string(ns), "tpb"+strconv.Itoa(os.Getpid())) {
		t.Errorf("namespaces left: %s (%v)", ns, err)
	}
	summary, err := os.ReadFile(filepath.Join(dir, bench.SummaryFile))
	if err != nil || !strings.Contains(string(summary), "Measured TCP connect round trips") {
		t.Errorf("summary.md (%v) lacks the network's round trips", err)
	}
}
