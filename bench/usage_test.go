package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

const procStatA = `cpu  1000 0 500 8000 500 0 0 0 0 0
cpu0 500 0 250 4000 250 0 0 0 0 0
intr 1 2 3
ctxt 100000
btime 1
`

const procStatB = `cpu  1600 0 800 8800 800 0 0 0 100 0
cpu0 800 0 400 4400 400 0 0 0 50 0
ctxt 150000
`

func TestHostUsage(t *testing.T) {
	at := time.Unix(1000, 0)
	a, err := parseProcStat([]byte(procStatA), at)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseProcStat([]byte(procStatB), at.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// Deltas: user 600, system 300, idle 800, iowait 300 (guest ignored).
	u := hostUsage(a, b)
	if math.Abs(u.CPUBusyPct-900.0/2000*100) > 1e-9 || math.Abs(u.IOWaitPct-15) > 1e-9 || u.CtxSwitchesPerSec != 25000 {
		t.Errorf("usage %+v", u)
	}
	if _, err := parseProcStat([]byte("cpu 1 2 3\n"), at); err == nil {
		t.Error("no ctxt accepted")
	}
	if _, err := readProcStat(); err != nil && strings.Contains(err.Error(), "lacks") {
		t.Errorf("this machine's /proc/stat: %v", err)
	}
}

func TestClientCPU(t *testing.T) {
	c := clientCPU(rusage{user: time.Second, sys: time.Second}, rusage{user: 3 * time.Second, sys: 2 * time.Second}, 2*time.Second)
	if c.UserSec != 2 || c.SystemSec != 1 || c.Pct != 150 || c.Cores < 1 {
		t.Errorf("cpu %+v", c)
	}
	if _, err := readRusage(); err != nil {
		t.Error(err)
	}
}
