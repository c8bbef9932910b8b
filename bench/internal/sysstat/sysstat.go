// Package sysstat samples what a machine and some of its processes are
// doing while a benchmark loads them: CPU, memory, network and context
// switches of the host, read from the local /proc or scraped from a
// Prometheus node_exporter when the database runs elsewhere, and CPU,
// context switches and RSS of single local processes.
//
// Samples are cumulative counters; Usage and ProcDelta turn two of them
// into rates and percentages. A counter that went backwards between two
// samples (a reboot, an exporter restart, a thread that exited) counts as
// no change, so a rate is never negative nor a wrapped-around huge number.
//
// Linux reports CPU time in clock ticks of USER_HZ, which is 100 on every
// Linux architecture Go supports; sysconf(_SC_CLK_TCK) is not reachable
// without cgo, so the package assumes 100.
package sysstat

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrUnsupported is returned by the local readers (LocalHost, ReadProc,
// ListenerPID) on systems other than Linux, which have no /proc to read.
// It wraps errors.ErrUnsupported.
var ErrUnsupported = fmt.Errorf("sysstat: local sampling needs Linux /proc: %w", errors.ErrUnsupported)

// ErrScrape is wrapped by every error of a node_exporter Host: the URL was
// unreachable, answered a status other than 200, or served a body that is
// not the text exposition format or lacks a metric family Sample needs.
var ErrScrape = errors.New("sysstat: node_exporter scrape failed")

// ErrNoProcess is returned by ReadProc when the process does not exist
// (any more).
var ErrNoProcess = errors.New("sysstat: no such process")

// ErrNotFound is returned by ListenerPID when no process visible to the
// caller listens on the port.
var ErrNotFound = errors.New("sysstat: no local process listens on the port")

// userHZ is the unit of CPU times in /proc: clock ticks per second.
const userHZ = 100

// CPUTimes is time spent in each CPU state, in seconds summed over all
// CPUs. Guest time is part of User and Nice already, as the kernel counts it.
type CPUTimes struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal float64
}

// Total is the sum of all states: wall time × CPUs, give or take CPUs
// going on- or offline.
func (c CPUTimes) Total() float64 {
	return c.User + c.Nice + c.System + c.Idle + c.IOWait + c.IRQ + c.SoftIRQ + c.Steal
}

// HostSample is cumulative counters of a machine at one instant.
//
// Network interfaces are split in three: loopback (lo) goes to LoRx/LoTx,
// because a benchmark on one machine talks over it; virtual interfaces
// (bridges, veth pairs, tunnels, bonds) are left out, because their
// traffic also crosses a physical interface and would count twice; the
// rest is NetRx/NetTx. Locally an interface is physical when
// /sys/class/net/<if>/device exists; node_exporter does not export that,
// so there interfaces are left out by name (see NodeExporter). When no
// interface but lo is physical (inside a container, whose eth0 is one end
// of a veth pair), every interface but lo is counted.
type HostSample struct {
	At   time.Time
	CPU  CPUTimes
	CPUs int // CPUs online
	// MemTotal and MemAvailable are in bytes. MemAvailable is the kernel's
	// estimate of memory available without swapping (page cache that can
	// be dropped counts as available).
	MemTotal, MemAvailable uint64
	// NetRx and NetTx are bytes received and sent on the counted
	// interfaces.
	NetRx, NetTx uint64
	// LoRx and LoTx are bytes received and sent on loopback.
	LoRx, LoTx uint64
	// NetSpeed is the link speed in bytes/s summed over the counted
	// interfaces whose speed is known; 0 means unknown (virtio and most
	// cloud NICs do not report one).
	NetSpeed uint64
	// ContextSwitches is the number of context switches on all CPUs since
	// boot.
	ContextSwitches uint64
	// Source is "local" or the node_exporter URL.
	Source string
}

// HostUsage is what happened on a machine between two samples.
type HostUsage struct {
	// Seconds is the wall time between the samples.
	Seconds float64
	// The percentages are of all CPUs' time: 100 is every CPU busy.
	// CPUPct is 100 - idle - iowait. UserPct is user + nice. SystemPct is
	// kernel time: system + irq + softirq, where network processing
	// lands. StealPct is time a hypervisor gave to another guest.
	CPUPct, UserPct, SystemPct, IOWaitPct, StealPct float64
	// MemUsedPct is (total - available) / total at the later sample, and
	// MemUsedBytes total - available.
	MemUsedPct   float64
	MemUsedBytes uint64
	// NetRxBps and NetTxBps are bytes/s on the counted interfaces.
	NetRxBps, NetTxBps float64
	// NetPct is max(NetRxBps, NetTxBps) / NetSpeed × 100: links are full
	// duplex, so each direction has the whole speed. It is 0 when the
	// speed is unknown.
	NetPct float64
	// LoBps is bytes/s through loopback. Every byte sent on lo is also
	// received on it, so this is one direction, not the sum.
	LoBps float64
	// ContextSwitchesPerSec is the host's context-switch rate.
	ContextSwitchesPerSec float64
}

// Host reads samples of a machine.
type Host interface {
	// Sample reads the machine's counters now. ctx bounds any network
	// request.
	Sample(ctx context.Context) (HostSample, error)
}

// Usage is what happened between a and b, b being the later sample.
// Counters that went backwards count as unchanged, and rates are 0 when
// b is not later than a.
func Usage(a, b HostSample) HostUsage {
	u := HostUsage{Seconds: b.At.Sub(a.At).Seconds()}
	d := CPUTimes{
		User:    fdelta(a.CPU.User, b.CPU.User),
		Nice:    fdelta(a.CPU.Nice, b.CPU.Nice),
		System:  fdelta(a.CPU.System, b.CPU.System),
		Idle:    fdelta(a.CPU.Idle, b.CPU.Idle),
		IOWait:  fdelta(a.CPU.IOWait, b.CPU.IOWait),
		IRQ:     fdelta(a.CPU.IRQ, b.CPU.IRQ),
		SoftIRQ: fdelta(a.CPU.SoftIRQ, b.CPU.SoftIRQ),
		Steal:   fdelta(a.CPU.Steal, b.CPU.Steal),
	}
	if total := d.Total(); total > 0 {
		pct := func(v float64) float64 { return v / total * 100 }
		u.CPUPct = pct(total - d.Idle - d.IOWait)
		u.UserPct = pct(d.User + d.Nice)
		u.SystemPct = pct(d.System + d.IRQ + d.SoftIRQ)
		u.IOWaitPct = pct(d.IOWait)
		u.StealPct = pct(d.Steal)
	}
	if b.MemTotal > 0 && b.MemAvailable <= b.MemTotal {
		u.MemUsedBytes = b.MemTotal - b.MemAvailable
		u.MemUsedPct = float64(u.MemUsedBytes) / float64(b.MemTotal) * 100
	}
	if u.Seconds > 0 {
		rate := func(x, y uint64) float64 { return float64(delta(x, y)) / u.Seconds }
		u.NetRxBps = rate(a.NetRx, b.NetRx)
		u.NetTxBps = rate(a.NetTx, b.NetTx)
		u.LoBps = max(rate(a.LoRx, b.LoRx), rate(a.LoTx, b.LoTx))
		u.ContextSwitchesPerSec = rate(a.ContextSwitches, b.ContextSwitches)
		if b.NetSpeed > 0 {
			u.NetPct = max(u.NetRxBps, u.NetTxBps) / float64(b.NetSpeed) * 100
		}
	}
	return u
}

// delta is b - a, or 0 when the counter went backwards.
func delta(a, b uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

// fdelta is b - a, or 0 when the counter went backwards.
func fdelta(a, b float64) float64 {
	if b < a {
		return 0
	}
	return b - a
}
