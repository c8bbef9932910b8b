package sysstat_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/bench/internal/sysstat"
)

// near reports whether a and b agree to 1e-9 relative (sums of float
// seconds need not be bit-exact).
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func checkNear(t *testing.T, name string, got, want float64) {
	t.Helper()
	if !near(got, want) {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

// TestLocalHostFixture reads the fake /proc and /sys under testdata: CPU
// ticks become seconds, meminfo kB become bytes, lo is set apart, the
// virtual docker0 and veth are left out, and only the known link speed of
// the physical interfaces is summed (eth1 says -1, veth's 10000 is not
// counted).
func TestLocalHostFixture(t *testing.T) {
	h := sysstat.NewLocalHost("testdata/proc", "testdata/sys")
	s, err := h.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(s.At) > time.Minute || s.Source != "local" {
		t.Errorf("At %v Source %q", s.At, s.Source)
	}
	want := sysstat.CPUTimes{
		User: 10871.41, Nice: 2.5, System: 3968.12, Idle: 14692.77,
		IOWait: 203.46, IRQ: 0, SoftIRQ: 1043.31, Steal: 122.21,
	}
	if s.CPU != want {
		t.Errorf("CPU = %+v, want %+v", s.CPU, want)
	}
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"CPUs", uint64(s.CPUs), 2},
		{"MemTotal", s.MemTotal, 24684084 * 1024},
		{"MemAvailable", s.MemAvailable, 24241936 * 1024},
		{"NetRx", s.NetRx, 324567680 + 12345678901234},
		{"NetTx", s.NetTx, 1015850 + 98765432109},
		{"LoRx", s.LoRx, 162609740708},
		{"LoTx", s.LoTx, 162609740708},
		{"NetSpeed", s.NetSpeed, 1000 * 1000 * 1000 / 8},
		{"ContextSwitches", s.ContextSwitches, 281569816},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// writeFiles creates files (path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLocalHostContainer: inside a container eth0 is one end of a veth
// pair, with no device behind it; with no physical interface at all,
// every interface but lo counts. Also: a kernel without MemAvailable
// (before 3.14) gets MemFree + Buffers + Cached.
func TestLocalHostContainer(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"proc/stat":    "cpu  1 2 3 4\ncpu0 1 2 3 4\nctxt 5\n",
		"proc/meminfo": "MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 20 kB\nCached: 300 kB\n",
		"proc/net/dev": "Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes\n" +
			"    lo: 10 1 0 0 0 0 0 0 10 1 0 0 0 0 0 0\n" +
			"  eth0: 700 7 0 0 0 0 0 0 800 8 0 0 0 0 0 0\n" +
			"  eth1: 70 7 0 0 0 0 0 0 80 8 0 0 0 0 0 0\n",
		"sys/class/net/eth0/speed": "10000\n",
		"sys/class/net/eth1/speed": "\n",
	})
	s, err := sysstat.NewLocalHost(filepath.Join(dir, "proc"), filepath.Join(dir, "sys")).Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.NetRx != 770 || s.NetTx != 880 || s.LoRx != 10 || s.NetSpeed != 1250000000 {
		t.Errorf("NetRx %d NetTx %d LoRx %d NetSpeed %d, want 770 880 10 1250000000", s.NetRx, s.NetTx, s.LoRx, s.NetSpeed)
	}
	if s.MemAvailable != 420*1024 || s.CPUs != 1 || s.CPU.Idle != 0.04 || s.CPU.Steal != 0 {
		t.Errorf("MemAvailable %d CPUs %d CPU %+v", s.MemAvailable, s.CPUs, s.CPU)
	}
}

// TestLocalHostBadInput: missing or malformed files are errors, not
// zeros.
func TestLocalHostBadInput(t *testing.T) {
	good := map[string]string{
		"proc/stat":    "cpu  1 2 3 4 5 6 7 8 0 0\nctxt 5\n",
		"proc/meminfo": "MemTotal: 1000 kB\nMemAvailable: 500 kB\n",
		"proc/net/dev": "h|\nh|\n  eth0: 1 0 0 0 0 0 0 0 2 0 0 0 0 0 0 0\n",
	}
	for name, bad := range map[string]map[string]string{
		"no ctxt":          {"proc/stat": "cpu  1 2 3 4\n"},
		"short cpu line":   {"proc/stat": "cpu  1 2 3\nctxt 5\n"},
		"bad tick":         {"proc/stat": "cpu  1 2 x 4\nctxt 5\n"},
		"no MemTotal":      {"proc/meminfo": "MemAvailable: 500 kB\n"},
		"short net/dev":    {"proc/net/dev": "h|\nh|\n  eth0: 1 0 0\n"},
		"garbage net/dev":  {"proc/net/dev": "h|\nh|\n  eth0: 1 0 0 0 0 0 0 0 -2 0 0 0 0 0 0 0\n"},
		"missing net/dev":  {"proc/net/dev": ""},
		"missing /proc/xx": {"proc/stat": ""},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{}
			for k, v := range good {
				files[k] = v
			}
			for k, v := range bad {
				if v == "" {
					delete(files, k)
				} else {
					files[k] = v
				}
			}
			writeFiles(t, dir, files)
			_, err := sysstat.NewLocalHost(filepath.Join(dir, "proc"), filepath.Join(dir, "sys")).Sample(context.Background())
			if err == nil {
				t.Fatal("Sample succeeded")
			}
		})
	}
}

// TestUsage checks the arithmetic between two samples, including
// counters that went backwards and degenerate intervals.
func TestUsage(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := sysstat.HostSample{
		At:  t0,
		CPU: sysstat.CPUTimes{User: 100, Nice: 10, System: 50, Idle: 1000, IOWait: 20, IRQ: 1, SoftIRQ: 9, Steal: 5},
		// 2 CPUs, 10 s: 20 CPU-seconds pass.
		CPUs: 2, MemTotal: 1000, MemAvailable: 600,
		NetRx: 1_000, NetTx: 2_000, LoRx: 50, LoTx: 50, NetSpeed: 1000,
		ContextSwitches: 10_000,
	}
	b := a
	b.At = t0.Add(10 * time.Second)
	b.CPU = sysstat.CPUTimes{User: 105, Nice: 11, System: 52, Idle: 1008, IOWait: 21, IRQ: 1, SoftIRQ: 10, Steal: 7}
	b.MemAvailable = 250
	b.NetRx, b.NetTx = 3_000, 9_000 // 200 B/s, 700 B/s
	b.LoRx, b.LoTx = 1_050, 1_050
	b.ContextSwitches = 15_000

	u := sysstat.Usage(a, b)
	checkNear(t, "Seconds", u.Seconds, 10)
	checkNear(t, "CPUPct", u.CPUPct, 55) // 20 - 8 idle - 1 iowait = 11 of 20
	checkNear(t, "UserPct", u.UserPct, 30)
	checkNear(t, "SystemPct", u.SystemPct, 15)
	checkNear(t, "IOWaitPct", u.IOWaitPct, 5)
	checkNear(t, "StealPct", u.StealPct, 10)
	checkNear(t, "MemUsedPct", u.MemUsedPct, 75)
	if u.MemUsedBytes != 750 {
		t.Errorf("MemUsedBytes = %d, want 750", u.MemUsedBytes)
	}
	checkNear(t, "NetRxBps", u.NetRxBps, 200)
	checkNear(t, "NetTxBps", u.NetTxBps, 700)
	checkNear(t, "NetPct", u.NetPct, 70)
	checkNear(t, "LoBps", u.LoBps, 100)
	checkNear(t, "ContextSwitchesPerSec", u.ContextSwitchesPerSec, 500)

	t.Run("speed unknown", func(t *testing.T) {
		b := b
		b.NetSpeed = 0
		if u := sysstat.Usage(a, b); u.NetPct != 0 || u.NetTxBps != 700 {
			t.Errorf("NetPct %v NetTxBps %v, want 0 and 700", u.NetPct, u.NetTxBps)
		}
	})
	t.Run("counters backwards", func(t *testing.T) {
		// b is a host that rebooted (or an exporter that restarted)
		// since a: every counter is smaller.
		u := sysstat.Usage(b, a)
		zero := sysstat.Usage(a, a)
		zero.Seconds, zero.MemUsedPct, zero.MemUsedBytes = -10, 40, 400
		if u != zero {
			t.Errorf("Usage(later, earlier) = %+v, want %+v", u, zero)
		}
		c := b
		c.At = b.At.Add(10 * time.Second)
		c.NetRx = 10 // reset; NetTx moved on
		c.NetTx = b.NetTx + 1000
		c.CPU.Idle = 0 // reset alone: the other states' deltas are all there is
		c.CPU.User += 10
		u = sysstat.Usage(b, c)
		if u.NetRxBps != 0 || !near(u.NetTxBps, 100) || !near(u.CPUPct, 100) || !near(u.UserPct, 100) {
			t.Errorf("partial reset: %+v", u)
		}
	})
	t.Run("no time", func(t *testing.T) {
		u := sysstat.Usage(a, a)
		if u.NetRxBps != 0 || u.ContextSwitchesPerSec != 0 || u.CPUPct != 0 || math.IsNaN(u.CPUPct) {
			t.Errorf("Usage(a, a) = %+v", u)
		}
	})
	t.Run("available above total", func(t *testing.T) {
		b := b
		b.MemAvailable = 2000
		if u := sysstat.Usage(a, b); u.MemUsedPct != 0 || u.MemUsedBytes != 0 {
			t.Errorf("MemUsedPct %v MemUsedBytes %d", u.MemUsedPct, u.MemUsedBytes)
		}
	})
}

// TestLocalHostReal samples this machine twice: the figures are
// percentages, whatever else runs here.
func TestLocalHostReal(t *testing.T) {
	h := sysstat.LocalHost()
	ctx := context.Background()
	a, err := h.Sample(ctx)
	if runtime.GOOS != "linux" {
		if !errors.Is(err, sysstat.ErrUnsupported) || !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("Sample on %s: %v, want ErrUnsupported", runtime.GOOS, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if a.CPUs < runtime.NumCPU() || a.MemTotal == 0 || a.MemAvailable > a.MemTotal || a.ContextSwitches == 0 {
		t.Errorf("implausible sample %+v (NumCPU %d)", a, runtime.NumCPU())
	}
	<-time.After(200 * time.Millisecond)
	b, err := h.Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u := sysstat.Usage(a, b)
	t.Logf("%+v", u)
	if u.Seconds < 0.2 {
		t.Errorf("Seconds = %v, want >= 0.2", u.Seconds)
	}
	for name, v := range map[string]float64{
		"CPUPct": u.CPUPct, "UserPct": u.UserPct, "SystemPct": u.SystemPct, "IOWaitPct": u.IOWaitPct,
		"StealPct": u.StealPct, "MemUsedPct": u.MemUsedPct, "NetPct": u.NetPct,
	} {
		if !(v >= 0 && v <= 100) {
			t.Errorf("%s = %v, want 0..100", name, v)
		}
	}
	if u.MemUsedPct <= 0 || u.ContextSwitchesPerSec <= 0 {
		t.Errorf("MemUsedPct %v ContextSwitchesPerSec %v, want > 0", u.MemUsedPct, u.ContextSwitchesPerSec)
	}
}

// TestLocalHostCancelled: a cancelled context is honoured even though
// reading /proc does not block.
func TestLocalHostCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sysstat.NewLocalHost("testdata/proc", "testdata/sys").Sample(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sample = %v, want context.Canceled", err)
	}
}
