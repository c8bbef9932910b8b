package bench

import (
	"testing"
	"time"
)

func TestClientCPU(t *testing.T) {
	c := clientCPU(rusage{user: time.Second, sys: time.Second}, rusage{user: 3 * time.Second, sys: 2 * time.Second}, 2*time.Second)
	if c.UserSec != 2 || c.SystemSec != 1 || c.Pct != 150 {
		t.Errorf("client CPU %+v, want 2 s user, 1 s system, 150 %%", c)
	}
}

// TestSetCPUPerStmt: a step's relay and server CPU are spread over the
// statements its clients completed; processes that served other targets
// get none, and a target with a server of its own uses that one.
func TestSetCPUPerStmt(t *testing.T) {
	procs := func() []ProcessUsage {
		return []ProcessUsage{
			{Role: "server", Kind: ProcServer, PID: 1, CPUSec: 2},
			{Role: "tpproxy", Kind: ProcRelay, PID: 2, CPUSec: 0.5},
			{Role: "haproxy", Kind: ProcRelay, PID: 3, CPUSec: 0.25},
			{Role: "mariadb-pool", Kind: ProcServer, PID: 4, CPUSec: 1},
		}
	}
	for _, tc := range []struct {
		target        string
		queries       uint64
		relay, server float64
		perProc       []float64 // CPUUsPerStmt by PID-1
	}{
		// 0.5 s over 50,000 statements: 10 µs; the server's 2 s: 40 µs.
		{"tpproxy", 50000, 10, 40, []float64{40, 10, 0, 0}},
		{"haproxy", 25000, 10, 80, []float64{80, 0, 10, 0}},
		{"direct", 100000, 0, 20, []float64{20, 0, 0, 0}},
		{"mariadb-pool", 20000, 0, 50, []float64{0, 0, 0, 50}},
		{"tpproxy", 0, 0, 0, []float64{0, 0, 0, 0}},
	} {
		r := StepResult{Target: tc.target, Queries: tc.queries, Processes: procs()}
		r.setCPUPerStmt()
		if r.RelayCPUUsPerStmt != tc.relay || r.ServerCPUUsPerStmt != tc.server {
			t.Errorf("%s, %d statements: relay %g, server %g µs/stmt, want %g, %g",
				tc.target, tc.queries, r.RelayCPUUsPerStmt, r.ServerCPUUsPerStmt, tc.relay, tc.server)
		}
		for i, want := range tc.perProc {
			if got := r.Processes[i].CPUUsPerStmt; got != want {
				t.Errorf("%s: process %s (%s): %g µs/stmt, want %g", tc.target, r.Processes[i].Role, r.Processes[i].Kind, got, want)
			}
		}
	}

	// results.json from before Kind: "server" is the server, any other
	// role the relay of the target of that name.
	r := StepResult{Target: "proxy", Queries: 1000, Processes: []ProcessUsage{
		{Role: "server", CPUSec: 0.01}, {Role: "proxy", CPUSec: 0.02},
	}}
	r.setCPUPerStmt()
	if r.RelayCPUUsPerStmt != 20 || r.ServerCPUUsPerStmt != 10 {
		t.Errorf("without kinds: relay %g, server %g µs/stmt, want 20, 10", r.RelayCPUUsPerStmt, r.ServerCPUUsPerStmt)
	}
}
