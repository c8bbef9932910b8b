package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/bench"
)

// TestPeers runs a one-step, one-round `tpbench peers`: sysbench against
// every target, the relays' CPU per statement, and the table with
// tpproxy's ratios.
func TestPeers(t *testing.T) {
	needServer(t)
	if _, err := exec.LookPath("sysbench"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but no sysbench: %v", err)
		}
		t.Skipf("no sysbench: %v", err)
	}
	bin := tpproxyBinary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "out")
	out, err := tpbench(ctx, "--log-level", "warn", "peers", "--steps", "oltp_point_select/2", "--rounds", "1",
		"--duration", "2s", "--warmup", "1s", "--table-size", "1000", "--tpproxy-bin", bin, "--out", dir)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "tpproxy.log"))
		t.Fatalf("peers: %v\n%s\ntpproxy.log:\n%s", err, out, log)
	}
	b, err := os.ReadFile(filepath.Join(dir, bench.PeersJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.PeersReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	want := 3
	if _, err := exec.LookPath("haproxy"); err == nil {
		want = 4
	}
	if len(rep.Runs) != want || len(rep.Targets) != want {
		t.Fatalf("%d runs on %v, want one on each of %d targets\n%s", len(rep.Runs), rep.Targets, want, out)
	}
	for _, r := range rep.Runs {
		relay := r.Target == bench.TargetTpproxy || r.Target == bench.TargetHAProxy
		if r.Error != "" || r.TPS <= 0 || r.Queries == 0 || r.P95Ms <= 0 || r.ServerCPUUsPerStmt <= 0 ||
			r.ClientCPUUsPerStmt <= 0 || relay != (r.RelayCPUUsPerStmt > 0) || r.CPUWindowSec < 1.5 {
			t.Errorf("run %+v", r)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, bench.PeersMDFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"tpproxy/direct", "tpproxy/mariadb-pool", "proxy CPU µs/stmt", "thread_pool_size=2"} {
		if !strings.Contains(string(md), w) || !strings.Contains(out, w) {
			t.Errorf("peers.md or the output lacks %q:\n%s", w, out)
		}
	}
}
