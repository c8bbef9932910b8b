package sysstat

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"
)

// LocalHost reads this machine's /proc and /sys. On systems other than
// Linux its Sample returns ErrUnsupported.
func LocalHost() Host {
	return &localHost{procRoot: "/proc", sysRoot: "/sys", unsupported: runtime.GOOS != "linux"}
}

// NewLocalHost reads the files LocalHost reads, under procRoot instead of
// /proc and sysRoot instead of /sys: a host's /proc mounted elsewhere, or
// a test's fixture. It works on any system.
func NewLocalHost(procRoot, sysRoot string) Host {
	return &localHost{procRoot: procRoot, sysRoot: sysRoot}
}

type localHost struct {
	procRoot, sysRoot string
	unsupported       bool
}

// Sample reads /proc/stat, /proc/meminfo, /proc/net/dev and the speed of
// the counted interfaces. It does not block, so ctx is only checked.
func (h *localHost) Sample(ctx context.Context) (HostSample, error) {
	if h.unsupported {
		return HostSample{}, ErrUnsupported
	}
	if err := ctx.Err(); err != nil {
		return HostSample{}, err
	}
	s := HostSample{Source: "local", At: time.Now()}
	b, err := os.ReadFile(filepath.Join(h.procRoot, "stat"))
	if err != nil {
		return s, fmt.Errorf("sysstat: %w", err)
	}
	if s.CPU, s.CPUs, s.ContextSwitches, err = parseStat(b); err != nil {
		return s, err
	}
	if b, err = os.ReadFile(filepath.Join(h.procRoot, "meminfo")); err != nil {
		return s, fmt.Errorf("sysstat: %w", err)
	}
	if s.MemTotal, s.MemAvailable, err = parseMeminfo(b); err != nil {
		return s, err
	}
	if b, err = os.ReadFile(filepath.Join(h.procRoot, "net", "dev")); err != nil {
		return s, fmt.Errorf("sysstat: %w", err)
	}
	ifs, err := parseNetDev(b)
	if err != nil {
		return s, err
	}
	for i := range ifs {
		if ifs[i].name == "lo" {
			continue
		}
		dir := filepath.Join(h.sysRoot, "class", "net", ifs[i].name)
		if _, err := os.Stat(filepath.Join(dir, "device")); err == nil {
			ifs[i].physical = true
		}
		ifs[i].speed = readSpeed(filepath.Join(dir, "speed"))
	}
	addInterfaces(&s, ifs)
	return s, nil
}

// netIf is one interface's counters.
type netIf struct {
	name     string
	rx, tx   uint64
	speed    uint64 // bytes/s; 0 unknown
	physical bool
}

// addInterfaces sums ifs into s by the rule HostSample documents.
func addInterfaces(s *HostSample, ifs []netIf) {
	anyPhysical := false
	for _, i := range ifs {
		anyPhysical = anyPhysical || i.physical && i.name != "lo"
	}
	for _, i := range ifs {
		switch {
		case i.name == "lo":
			s.LoRx += i.rx
			s.LoTx += i.tx
		case i.physical || !anyPhysical:
			s.NetRx += i.rx
			s.NetTx += i.tx
			s.NetSpeed += i.speed
		}
	}
}

// readSpeed reads /sys/class/net/<if>/speed (Mb/s) as bytes/s. Virtual
// interfaces fail the read with EINVAL; a link that is down or does not
// know reports -1. Both are 0: unknown.
func readSpeed(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	mbps, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil || mbps <= 0 || mbps > 1<<40 {
		return 0
	}
	return uint64(mbps) * 1_000_000 / 8
}

// parseStat reads /proc/stat: the aggregate "cpu" line (user nice system
// idle iowait irq softirq steal guest guest_nice, in USER_HZ ticks; older
// kernels have fewer columns), one "cpuN" line per online CPU, and ctxt.
func parseStat(b []byte) (cpu CPUTimes, cpus int, ctxt uint64, err error) {
	var haveCPU, haveCtxt bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20) // the intr line has one column per interrupt
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 {
			continue
		}
		switch name := string(f[0]); {
		case name == "cpu":
			if len(f) < 5 {
				return cpu, 0, 0, fmt.Errorf("sysstat: /proc/stat cpu line has %d columns, want at least 4", len(f)-1)
			}
			var t [8]uint64
			for i := 0; i < len(t) && i+1 < len(f); i++ {
				if t[i], err = strconv.ParseUint(string(f[i+1]), 10, 64); err != nil {
					return cpu, 0, 0, fmt.Errorf("sysstat: /proc/stat cpu: %w", err)
				}
			}
			cpu = CPUTimes{
				User: ticks(t[0]), Nice: ticks(t[1]), System: ticks(t[2]), Idle: ticks(t[3]),
				IOWait: ticks(t[4]), IRQ: ticks(t[5]), SoftIRQ: ticks(t[6]), Steal: ticks(t[7]),
			}
			haveCPU = true
		case len(name) > 3 && name[:3] == "cpu":
			cpus++
		case name == "ctxt":
			if ctxt, err = strconv.ParseUint(string(f[1]), 10, 64); err != nil {
				return cpu, 0, 0, fmt.Errorf("sysstat: /proc/stat ctxt: %w", err)
			}
			haveCtxt = true
		}
	}
	if err := sc.Err(); err != nil {
		return cpu, 0, 0, fmt.Errorf("sysstat: /proc/stat: %w", err)
	}
	if !haveCPU || !haveCtxt {
		return cpu, 0, 0, errors.New("sysstat: /proc/stat lacks the cpu or ctxt line")
	}
	return cpu, cpus, ctxt, nil
}

func ticks(n uint64) float64 { return float64(n) / userHZ }

// parseMeminfo reads MemTotal and MemAvailable (kB, meaning KiB) from
// /proc/meminfo. Kernels before 3.14 have no MemAvailable; there it is
// estimated as MemFree + Buffers + Cached.
func parseMeminfo(b []byte) (total, avail uint64, err error) {
	var have struct{ total, avail bool }
	var free, buffers, cached uint64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		switch string(name) {
		case "MemTotal":
			dst, have.total = &total, true
		case "MemAvailable":
			dst, have.avail = &avail, true
		case "MemFree":
			dst = &free
		case "Buffers":
			dst = &buffers
		case "Cached":
			dst = &cached
		default:
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0, 0, fmt.Errorf("sysstat: /proc/meminfo %s has no value", name)
		}
		n, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil || n > 1<<53 {
			return 0, 0, fmt.Errorf("sysstat: /proc/meminfo %s: bad value %q", name, f[0])
		}
		if len(f) > 1 && string(f[1]) == "kB" {
			n *= 1024
		}
		*dst = n
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("sysstat: /proc/meminfo: %w", err)
	}
	if !have.total {
		return 0, 0, errors.New("sysstat: /proc/meminfo lacks MemTotal")
	}
	if !have.avail {
		avail = free + buffers + cached
	}
	return total, avail, nil
}

// parseNetDev reads /proc/net/dev: two header lines, then per interface
// "name: rx_bytes rx_packets ... (8 receive columns) tx_bytes ...".
func parseNetDev(b []byte) ([]netIf, error) {
	var ifs []netIf
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// Large counters leave no space after the colon, so split there;
		// header lines have a '|' before any colon.
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok || bytes.IndexByte(name, '|') >= 0 {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) < 9 {
			return nil, fmt.Errorf("sysstat: /proc/net/dev %s: %d columns, want 16", bytes.TrimSpace(name), len(f))
		}
		rx, err1 := strconv.ParseUint(string(f[0]), 10, 64)
		tx, err2 := strconv.ParseUint(string(f[8]), 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("sysstat: /proc/net/dev %s: %w", bytes.TrimSpace(name), err)
		}
		ifs = append(ifs, netIf{name: string(bytes.TrimSpace(name)), rx: rx, tx: tx})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sysstat: /proc/net/dev: %w", err)
	}
	return ifs, nil
}
