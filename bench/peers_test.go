package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPeerRunSetCPU: the window's CPU over the statements sysbench
// reported, by kind.
func TestPeerRunSetCPU(t *testing.T) {
	r := PeerRun{Target: "tpproxy", SysbenchResult: SysbenchResult{Queries: 200000}}
	r.setCPU(cpuWindow{Seconds: 20.5, Procs: map[int]ProcessUsage{
		10: {Role: ProcServer, PID: 10, CPUSec: 8},
		11: {Role: ProcRelay, PID: 11, CPUSec: 5},
		12: {Role: ProcClient, PID: 12, CPUSec: 2},
	}}, "tpproxy")
	if r.ServerCPUUsPerStmt != 40 || r.RelayCPUUsPerStmt != 25 || r.ClientCPUUsPerStmt != 10 || r.CPUWindowSec != 20.5 {
		t.Errorf("per statement: server %g, relay %g, client %g µs; window %g s", r.ServerCPUUsPerStmt, r.RelayCPUUsPerStmt, r.ClientCPUUsPerStmt, r.CPUWindowSec)
	}
	if len(r.Processes) != 3 || r.Processes[0].Kind != ProcClient || r.Processes[2].Kind != ProcServer || r.Processes[1].Role != "tpproxy" {
		t.Errorf("processes %+v", r.Processes)
	}
}

func peerRun(wl string, threads, round int, target string, tps, p95, relay, server float64) PeerRun {
	return PeerRun{Workload: wl, Threads: threads, Round: round, Target: target,
		SysbenchResult:    SysbenchResult{TPS: tps, P95Ms: p95, Queries: uint64(tps * 20)},
		RelayCPUUsPerStmt: relay, ServerCPUUsPerStmt: server}
}

// TestPeersMarkdown: each round's figures side by side, and tpproxy's
// ratios to the others round by round.
func TestPeersMarkdown(t *testing.T) {
	wl := "oltp_point_select"
	r := &PeersReport{
		Title: "tpbench peers", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Finished: time.Date(2026, 1, 2, 3, 9, 5, 0, time.UTC),
		Environment: Environment{OS: "linux", Arch: "amd64", CPUs: 2, ServerVersion: "10.11.19-MariaDB", Tables: 4, TableSize: 100000,
			PSMode: "disable", Distribution: "special", WarmupSec: 5, DurationSec: 20, PoolSize: 16},
		Targets: []string{TargetDirect, TargetTpproxy, TargetHAProxy, TargetPool}, Rounds: 2, PoolThreads: 2,
		ProxySet: []string{"thread_pool.size=4"},
		Runs: []PeerRun{
			peerRun(wl, 8, 1, TargetDirect, 50940, 0.34, 0, 30),
			peerRun(wl, 8, 1, TargetTpproxy, 19517, 1.01, 25, 40),
			peerRun(wl, 8, 1, TargetHAProxy, 25000, 0.8, 12.5, 35),
			peerRun(wl, 8, 1, TargetPool, 48000, 0.4, 0, 31),
			peerRun(wl, 8, 2, TargetDirect, 62295, 0.30, 0, 28),
			peerRun(wl, 8, 2, TargetTpproxy, 21282, 0.81, 24, 38),
			{Workload: wl, Threads: 8, Round: 2, Target: TargetHAProxy, Error: "bench: sysbench failed: exit status 1\n  FATAL: boom"},
			peerRun(wl, 8, 2, TargetPool, 50000, 0.35, 0, 30),
		},
		Notes: []string{"a note."},
	}
	// A baseline build: another tpproxy target.
	r.BaselineName, r.BaselineBinary = "tpproxy-before", "/tmp/old/tpproxy"
	r.Targets = append(r.Targets, "tpproxy-before")
	r.Runs = append(r.Runs, peerRun(wl, 8, 1, "tpproxy-before", 15000, 1.2, 50, 40), peerRun(wl, 8, 2, "tpproxy-before", 17000, 1.0, 40, 38))
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	row := func(cells ...string) string { return "| " + strings.Join(cells, " | ") + " |" }
	squeeze := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	got := squeeze(md)
	for _, want := range []string{
		"- tpproxy: pool_size 16, thread_pool.size=4",
		"- mariadb-pool: thread_handling=pool-of-threads, thread_pool_size=2",
		"2 rounds, targets interleaved (direct, tpproxy, haproxy, mariadb-pool, tpproxy-before)",
		row("oltp_point_select", "8", "direct", "50,940 / 62,295", "0.34 / 0.30", "0 / 0", "- / -", "30.0 / 28.0"),
		row("oltp_point_select", "8", "tpproxy", "19,517 / 21,282", "1.01 / 0.81", "0 / 0", "25.0 / 24.0", "40.0 / 38.0"),
		row("oltp_point_select", "8", "haproxy", "25,000 / failed", "0.80 / failed", "0 / failed", "12.5 / failed", "35.0 / failed"),
		// Only round 1 has both tpproxy and haproxy.
		row("oltp_point_select", "8", "tpproxy/haproxy", "0.78×", "1.26×", "2.00×", "1.37×"),
		// 19517/50940 = 0.383, 21282/62295 = 0.342.
		row("oltp_point_select", "8", "tpproxy/direct", "0.34–0.38×", "2.70–2.97×", "", "2.17–2.21×"),
		"oltp_point_select/8 round 2 on haproxy: bench: sysbench failed: exit status 1",
		"- a note.",
		"- tpproxy-before: the tpproxy build /tmp/old/tpproxy, the same settings",
		// 19517/15000 = 1.30, 21282/17000 = 1.25; CPU 25/50, 24/40.
		row("oltp_point_select", "8", "tpproxy/tpproxy-before", "1.25–1.30×", "0.81–0.84×", "0.50–0.60×", "0.72–0.79×"),
	} {
		if !strings.Contains(got, squeeze(want)) {
			t.Errorf("peers.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "FATAL") {
		t.Errorf("peers.md quotes more than the first line of an error:\n%s", md)
	}
}

func TestFormatThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999.4: "999", 1000: "1,000", 50940.6: "50,941", 1234567: "1,234,567", -4321: "-4,321"} {
		if got := formatThousands(v); got != want {
			t.Errorf("formatThousands(%g) = %q, want %q", v, got, want)
		}
	}
}

// TestPeersCostTable: the machine's CPU per transaction split into the
// relay's user and system time, the server's, the client's and the rest,
// with the interrupt time within them, system calls and context switches per statement, the
// mean of the rounds that have the figures; without counted system calls
// their columns say so.
func TestPeersCostTable(t *testing.T) {
	wl := "oltp_read_write"
	run := func(round int, target string, busy float64, procs ...ProcessUsage) PeerRun {
		r := PeerRun{Workload: wl, Threads: 8, Round: round, Target: target,
			SysbenchResult: SysbenchResult{TPS: 500, Transactions: 10000, Queries: 200000}}
		m := map[int]ProcessUsage{}
		for i, p := range procs {
			m[i+1] = p
		}
		// busy s: user 60%, system 30%, softirq 10%.
		r.setCPU(cpuWindow{Seconds: 20, Procs: m, Machine: &MachineCPU{UserSec: busy * 0.6, SystemSec: busy * 0.3, SoftIRQSec: busy * 0.1}}, target)
		return r
	}
	server := ProcessUsage{Role: ProcServer, UserSec: 10, SystemSec: 6, CPUSec: 16, Syscalls: 600000, CtxSwitchesPerSec: 10000}
	client := ProcessUsage{Role: ProcClient, UserSec: 3, SystemSec: 1, CPUSec: 4, Syscalls: 400000}
	relay := func(user, sys float64) ProcessUsage {
		return ProcessUsage{Role: ProcRelay, UserSec: user, SystemSec: sys, CPUSec: user + sys, Syscalls: 800000, CtxSwitchesPerSec: 5000}
	}
	r := &PeersReport{Targets: []string{TargetDirect, TargetHAProxy}, Rounds: 2, Runs: []PeerRun{
		run(1, TargetDirect, 22, server, client),
		run(1, TargetHAProxy, 40, server, client, relay(4, 8)),
		run(2, TargetDirect, 22, server, client),
		run(2, TargetHAProxy, 36, server, client, relay(2, 8)),
	}}
	uncounted := run(3, TargetHAProxy, 36, server, client, relay(2, 8))
	for i := range uncounted.Processes {
		uncounted.Processes[i].Syscalls = 0
	}
	r.Runs = append(r.Runs, uncounted)
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	row := func(cells ...string) string { return "| " + strings.Join(cells, " | ") + " |" }
	squeeze := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	got := squeeze(b.String())
	for _, want := range []string{
		// Round 3 of haproxy counted no calls: the mean of three rounds
		// (3,600, 4,000, 3,600 µs) has no calls.
		row(wl, "8", "haproxy", "500", "3,733", "267", "800", "1,600", "400", "667", "373", "–", "–", "–", "0.50", "1.00"),
	} {
		if !strings.Contains(got, squeeze(want)) {
			t.Errorf("peers.md lacks %q:\n%s", want, b.String())
		}
	}
	r.Runs = r.Runs[:4]
	b.Reset()
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	got = squeeze(b.String())
	for _, want := range []string{
		// 22 s over 10,000 tx = 2,200 µs: server 1,600, client 400,
		// rest 200, softirq 220 (within); calls 600,000 and 400,000 over 200,000
		// statements; 10,000 switches/s × 20 s over them.
		row(wl, "8", "direct", "500", "2,200", "", "", "1,600", "400", "200", "220", "", "3.00", "2.00", "", "1.00"),
		// Machine 4,000 and 3,600 µs → 3,800; relay user 300, system 800;
		// rest 3,800-300-800-1,600-400 = 700; softirq 380; relay calls
		// 800,000 / 200,000.
		row(wl, "8", "haproxy", "500", "3,800", "300", "800", "1,600", "400", "700", "380", "4.00", "3.00", "2.00", "0.50", "1.00"),
	} {
		if !strings.Contains(got, squeeze(want)) {
			t.Errorf("peers.md lacks %q:\n%s", want, b.String())
		}
	}
}

// TestPeersBaselineSet: --baseline-set alone makes the baseline this build
// with the proxy's overrides and then its own, and the report says so.
func TestPeersBaselineSet(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tpproxy")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := PeersConfig{OutDir: t.TempDir(), Proxy: ProxyOptions{Binary: bin, Set: []string{"thread_pool.size=4"}},
		BaselineSet: []string{"backend.pool_size=auto"}, BaselineName: "tpproxy-auto"}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	if c.Baseline.Binary != bin || !slices.Equal(c.Baseline.Set, []string{"thread_pool.size=4", "backend.pool_size=auto"}) ||
		!slices.Equal(c.Proxy.Set, []string{"thread_pool.size=4"}) || c.BaselineName != "tpproxy-auto" {
		t.Fatalf("baseline %+v named %q, proxy %+v", c.Baseline, c.BaselineName, c.Proxy)
	}
	r := PeersReport{BaselineName: "tpproxy-auto", BaselineBinary: "/x/tpproxy", BaselineSet: c.BaselineSet}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if want := "- tpproxy-auto: the tpproxy build /x/tpproxy, the same settings but backend.pool_size=auto"; !strings.Contains(b.String(), want) {
		t.Fatalf("report lacks %q:\n%s", want, b.String())
	}
}

// TestPeersCheckTable: tpbench's TPS beside sysbench's over the rounds
// both ran, each tool's CPU per transaction, and the pairs more than 10%
// apart named.
func TestPeersCheckTable(t *testing.T) {
	wl := "oltp_read_write"
	sb := func(round int, target string, tps float64, tb *TpbenchCheck) PeerRun {
		r := PeerRun{Workload: wl, Threads: 64, Round: round, Target: target,
			SysbenchResult:     SysbenchResult{TPS: tps, Transactions: uint64(tps * 20), Queries: uint64(tps * 20 * 18), P95Ms: 90},
			ClientCPUUsPerStmt: 10, MachineCPUUsPerTx: 2000, Tpbench: tb}
		return r
	}
	tb := func(tps float64) *TpbenchCheck {
		return &TpbenchCheck{TPS: tps, Transactions: uint64(tps * 20), P95Ms: 100, ClientCPUUsPerTx: 300, MachineCPUUsPerTx: 2200}
	}
	r := &PeersReport{Targets: []string{TargetDirect, TargetTpproxy}, Rounds: 2, Runs: []PeerRun{
		sb(1, TargetDirect, 1000, tb(950)),
		sb(1, TargetTpproxy, 600, tb(400)),
		sb(2, TargetDirect, 1000, tb(1010)),
		sb(2, TargetTpproxy, 600, &TpbenchCheck{Error: "bench: connect: refused"}),
	}}
	var b bytes.Buffer
	if err := r.writeCheckTable(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| oltp_read_write |      64 | direct  |        1,000 |         980 |            0.98× |", // (950+1010)/2 over 2×20 s
		"| oltp_read_write |      64 | tpproxy |          600 |         400 |          0.67× ✗ |", // round 2's tpbench failed: round 1 only
		" 90 / 100 |",      // p95
		" 180 / 300 |",     // sysbench: 10 µs/stmt × 18 statements
		" 1,820 / 1,900 |", // machine less client: 2,000-180 and 2,200-300
		"tpbench within 10% of sysbench: 1 of 2; apart: oltp_read_write/64 on tpproxy (0.67×). " +
			"The machine's CPU per transaction less the client's own within 10%: 2 of 2.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
	// Without checks, no table.
	b.Reset()
	r.Runs = []PeerRun{peerRun(wl, 64, 1, TargetDirect, 1000, 90, 0, 30)}
	if err := r.writeCheckTable(&b); err != nil || b.Len() != 0 {
		t.Fatalf("a table without checks: %q, %v", b.String(), err)
	}
}
