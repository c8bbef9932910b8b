package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
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
}

// procStat is the part of /proc/stat HostUsage needs.
type procStat struct {
	at         time.Time
	total      uint64 // all jiffies of the aggregate cpu line
	idle, wait uint64
	ctxt       uint64
}

func readProcStat() (procStat, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b, time.Now())
}

// parseProcStat reads the aggregate "cpu" line (user nice system idle
// iowait irq softirq steal ...; guest time is already in user) and "ctxt".
func parseProcStat(b []byte, at time.Time) (procStat, error) {
	st := procStat{at: at}
	var haveCPU, haveCtxt bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 {
			continue
		}
		switch string(f[0]) {
		case "cpu":
			for i, v := range f[1:] {
				if i >= 8 { // guest, guest_nice: counted in user already
					break
				}
				n, err := strconv.ParseUint(string(v), 10, 64)
				if err != nil {
					return st, fmt.Errorf("bench: /proc/stat cpu: %w", err)
				}
				st.total += n
				switch i {
				case 3:
					st.idle = n
				case 4:
					st.wait = n
				}
			}
			haveCPU = true
		case "ctxt":
			n, err := strconv.ParseUint(string(f[1]), 10, 64)
			if err != nil {
				return st, fmt.Errorf("bench: /proc/stat ctxt: %w", err)
			}
			st.ctxt = n
			haveCtxt = true
		}
	}
	if !haveCPU || !haveCtxt {
		return st, fmt.Errorf("bench: /proc/stat lacks cpu or ctxt")
	}
	return st, nil
}

func hostUsage(a, b procStat) HostUsage {
	var u HostUsage
	if total := float64(b.total - a.total); total > 0 {
		idle := float64(b.idle - a.idle)
		wait := float64(b.wait - a.wait)
		u.CPUBusyPct = (total - idle - wait) / total * 100
		u.IOWaitPct = wait / total * 100
	}
	if secs := b.at.Sub(a.at).Seconds(); secs > 0 {
		u.CtxSwitchesPerSec = float64(b.ctxt-a.ctxt) / secs
	}
	return u
}
