package bench

import (
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"time"
)

// ClientCPU is the CPU time the benchmark process used during a step's
// measured hold. A client near Cores×100% cannot load the target any
// harder, and its figures measure itself. A proxy running inside this
// process (as in the package's tests) would be included; the demo and
// tpbench peers run theirs as separate processes.
type ClientCPU struct {
	UserSec   float64 `json:"user_s"`
	SystemSec float64 `json:"system_s"`
	// Pct is (user+system)/wall×100: 100 is one core fully busy.
	Pct float64 `json:"pct"`
	// Cores is runtime.NumCPU(), the ceiling for Pct/100.
	Cores int `json:"cores"`
}

type rusage struct{ user, sys time.Duration }

func readRusage() (rusage, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return rusage{}, fmt.Errorf("bench: getrusage: %w", err)
	}
	return rusage{
		user: time.Duration(ru.Utime.Nano()),
		sys:  time.Duration(ru.Stime.Nano()),
	}, nil
}

func clientCPU(a, b rusage, wall time.Duration) ClientCPU {
	c := ClientCPU{
		UserSec:   (b.user - a.user).Seconds(),
		SystemSec: (b.sys - a.sys).Seconds(),
		Cores:     runtime.NumCPU(),
	}
	if wall > 0 {
		c.Pct = (c.UserSec + c.SystemSec) / wall.Seconds() * 100
	}
	return c
}

// HostUsage is what the whole machine did during a step's measured hold,
// from /proc/stat (Linux only): the inputs of the CPU and iowait stop
// conditions, and the context-switch rate to watch next to p99.
type HostUsage struct {
	// CPUBusyPct is the share of all cores' time not idle or iowait.
	CPUBusyPct float64 `json:"cpu_busy_pct"`
	// IOWaitPct is the share of all cores' time in iowait.
	IOWaitPct float64 `json:"iowait_pct"`
	// CtxSwitchesPerSec is the rate of /proc/stat ctxt.
	CtxSwitchesPerSec float64 `json:"ctx_switches_per_s"`
	// MemUsedPct is (MemTotal - MemAvailable) / MemTotal at the end.
	MemUsedPct float64 `json:"mem_used_pct"`
	// NetRxBps and NetTxBps are bytes/s over the network interfaces
	// (loopback excluded); NetPct the busier direction as a share of the
	// interfaces' link speed (0 when unknown); LoBps loopback bytes/s.
	NetRxBps float64 `json:"net_rx_bps"`
	NetTxBps float64 `json:"net_tx_bps"`
	NetPct   float64 `json:"net_pct"`
	LoBps    float64 `json:"lo_bps"`
	// Source is "local" (/proc) or the node_exporter URL of the database
	// host.
	Source string `json:"source,omitempty"`
}

// Kinds of ProcessUsage.Kind.
const (
	// ProcServer is a database server process.
	ProcServer = "server"
	// ProcRelay is a process between the clients and a server: tpproxy,
	// haproxy, ProxySQL...
	ProcRelay = "relay"
	// ProcClient is the load's client when it is a process of its own
	// (sysbench in tpbench peers).
	ProcClient = "client"
)

// ProcessUsage is one local process's use during a hold: the servers and
// the relays in front of them, found by the ports they listen on (or
// named with --relay-pid).
type ProcessUsage struct {
	// Role is "server" (the server behind every target that names no
	// server of its own) or the name of the target whose relay, or own
	// server, this process is.
	Role string `json:"role"`
	// Kind is ProcServer, ProcRelay or ProcClient.
	Kind string `json:"kind,omitempty"`
	PID  int    `json:"pid"`
	Name string `json:"name"`
	// CPUPct: 100 is one core.
	CPUPct float64 `json:"cpu_pct"`
	// CPUSec is user + system CPU time in the hold (utime + stime);
	// UserSec and SystemSec are its parts (set by tpbench peers).
	CPUSec    float64 `json:"cpu_s"`
	UserSec   float64 `json:"user_s,omitempty"`
	SystemSec float64 `json:"system_s,omitempty"`
	// Syscalls is the process's system calls in the hold (tpbench peers
	// --count-syscalls: perf stat on raw_syscalls:sys_enter).
	Syscalls uint64 `json:"syscalls,omitempty"`
	// CPUUsPerStmt is CPUSec in µs per statement the clients completed in
	// the hold (StepResult.Queries), for the processes the step's
	// statements went through (its target's relay and server); 0 for the
	// others, which idled or served another target.
	CPUUsPerStmt float64 `json:"cpu_us_per_stmt,omitempty"`
	// CtxSwitchesPerSec sums voluntary and involuntary switches over the
	// process's threads.
	CtxSwitchesPerSec float64 `json:"ctx_switches_per_s"`
	RSSBytes          uint64  `json:"rss_bytes"`
	Threads           int     `json:"threads"`
}

// kind is p's Kind; results.json files written before the field existed
// tell it by the role alone.
func (p ProcessUsage) kind() string {
	switch {
	case p.Kind != "":
		return p.Kind
	case p.Role == "server":
		return ProcServer
	}
	return ProcRelay
}

// usPerStmt spreads cpuSec over stmts statements, in µs; 0 without
// statements.
func usPerStmt(cpuSec float64, stmts uint64) float64 {
	if stmts == 0 {
		return 0
	}
	return cpuSec * 1e6 / float64(stmts)
}

// servingProcesses returns the indexes in r.Processes of the processes
// r's statements went through: the relays of r's target and its server,
// which is the target's own (kind server, role = target) when one is
// watched and the shared one (role "server") otherwise.
func (r *StepResult) servingProcesses() (servers, relays []int) {
	own := slices.ContainsFunc(r.Processes, func(p ProcessUsage) bool {
		return p.kind() == ProcServer && p.Role == r.Target
	})
	for i, p := range r.Processes {
		switch {
		case p.kind() == ProcRelay && p.Role == r.Target:
			relays = append(relays, i)
		case p.kind() == ProcServer && (p.Role == r.Target || !own && p.Role == "server"):
			servers = append(servers, i)
		}
	}
	return servers, relays
}

// setCPUPerStmt fills the per-statement CPU figures from the processes'
// CPU time and the statements counted in the hold.
func (r *StepResult) setCPUPerStmt() {
	servers, relays := r.servingProcesses()
	r.RelayCPUUsPerStmt, r.ServerCPUUsPerStmt = 0, 0
	for _, i := range relays {
		p := &r.Processes[i]
		p.CPUUsPerStmt = usPerStmt(p.CPUSec, r.Queries)
		r.RelayCPUUsPerStmt += p.CPUUsPerStmt
	}
	for _, i := range servers {
		p := &r.Processes[i]
		p.CPUUsPerStmt = usPerStmt(p.CPUSec, r.Queries)
		r.ServerCPUUsPerStmt += p.CPUUsPerStmt
	}
}
