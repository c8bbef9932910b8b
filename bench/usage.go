package bench

import (
	"fmt"
	"runtime"
	"syscall"
	"time"
)

// ClientCPU is the CPU time the benchmark process used during a step's
// measured hold. A client near Cores×100% cannot load the target any
// harder, and its figures measure itself. When tpproxy runs in-process
// (the demo), its CPU is included in the proxy target's figure.
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

// ProcessUsage is one local process's use during a hold: mysqld and
// tpproxy, found by the ports they listen on.
type ProcessUsage struct {
	// Role is "server" or the target name of a proxy.
	Role string `json:"role"`
	PID  int    `json:"pid"`
	Name string `json:"name"`
	// CPUPct: 100 is one core.
	CPUPct float64 `json:"cpu_pct"`
	// CtxSwitchesPerSec sums voluntary and involuntary switches over the
	// process's threads.
	CtxSwitchesPerSec float64 `json:"ctx_switches_per_s"`
	RSSBytes          uint64  `json:"rss_bytes"`
	Threads           int     `json:"threads"`
}
