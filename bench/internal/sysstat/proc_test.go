package sysstat_test

import (
	"errors"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/bench/internal/sysstat"
)

func skipUnlessLinux(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux /proc")
	}
}

// TestReadProcSelf reads this test process.
func TestReadProcSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, err := sysstat.ReadProc(os.Getpid()); !errors.Is(err, sysstat.ErrUnsupported) {
			t.Fatalf("ReadProc on %s: %v, want ErrUnsupported", runtime.GOOS, err)
		}
		return
	}
	s, err := sysstat.ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", s)
	if s.PID != os.Getpid() || s.Name == "" || s.Threads < 1 || s.RSS == 0 || s.VoluntaryCtx+s.InvoluntaryCtx == 0 {
		t.Errorf("implausible sample %+v", s)
	}
}

// TestReadProcGone: a PID above any pid_max is no process.
func TestReadProcGone(t *testing.T) {
	skipUnlessLinux(t)
	if _, err := sysstat.ReadProc(1 << 30); !errors.Is(err, sysstat.ErrNoProcess) {
		t.Fatalf("ReadProc = %v, want ErrNoProcess", err)
	}
}

// TestProcDelta checks the arithmetic, counters that went backwards (a
// thread exited and took its context switches along) and samples of two
// different processes.
func TestProcDelta(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := sysstat.ProcSample{At: t0, PID: 7, UserSec: 10, SystemSec: 5, VoluntaryCtx: 1000, InvoluntaryCtx: 100, RSS: 1 << 20, Threads: 4}
	b := sysstat.ProcSample{At: t0.Add(2 * time.Second), PID: 7, UserSec: 11.5, SystemSec: 5.5, VoluntaryCtx: 3000, InvoluntaryCtx: 300, RSS: 2 << 20, Threads: 5}
	u := sysstat.ProcDelta(a, b)
	want := sysstat.ProcUsage{Seconds: 2, CPUPct: 100, UserSec: 1.5, SystemSec: 0.5, CtxPerSec: 1100, VoluntaryPerSec: 1000, InvoluntaryPerSec: 100, RSS: 2 << 20, Threads: 5}
	if u != want {
		t.Errorf("ProcDelta = %+v, want %+v", u, want)
	}

	c := b
	c.At = b.At.Add(time.Second)
	c.VoluntaryCtx = 2500 // a thread with 600 switches exited, 100 new ones
	c.InvoluntaryCtx = 400
	c.Threads = 4
	u = sysstat.ProcDelta(b, c)
	want = sysstat.ProcUsage{Seconds: 1, CtxPerSec: 100, InvoluntaryPerSec: 100, RSS: 2 << 20, Threads: 4}
	if u != want {
		t.Errorf("ProcDelta with a thread gone = %+v, want %+v", u, want)
	}

	other := b
	other.PID = 8
	if u := sysstat.ProcDelta(a, other); u.CPUPct != 0 || u.CtxPerSec != 0 || u.RSS != b.RSS {
		t.Errorf("ProcDelta of two processes = %+v, want only RSS and Threads", u)
	}
	if u := sysstat.ProcDelta(b, a); u.CPUPct != 0 || u.CtxPerSec != 0 {
		t.Errorf("ProcDelta(later, earlier) = %+v, want no rates", u)
	}
}

// TestListenerPID finds this process by the port it listens on, over
// IPv4 and, where the machine has it, IPv6.
func TestListenerPID(t *testing.T) {
	skipUnlessLinux(t)
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Skipf("cannot listen on %s: %v", addr, err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			pid, err := sysstat.ListenerPID(port)
			if err != nil {
				t.Fatal(err)
			}
			if pid != os.Getpid() {
				t.Errorf("ListenerPID(%d) = %d, want %d", port, pid, os.Getpid())
			}
		})
	}
}

// TestListenerPIDFree: nothing listens on a port just released, and a
// connected (not listening) socket on it does not count.
func TestListenerPIDFree(t *testing.T) {
	skipUnlessLinux(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if pid, err := sysstat.ListenerPID(port); !errors.Is(err, sysstat.ErrNotFound) {
		t.Fatalf("ListenerPID(%d) = %d, %v, want ErrNotFound", port, pid, err)
	}

	// Our end of a connection to another listener has a local port that
	// nobody listens on.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	c, err := net.Dial("tcp", ln2.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	local := c.LocalAddr().(*net.TCPAddr).Port
	if pid, err := sysstat.ListenerPID(local); !errors.Is(err, sysstat.ErrNotFound) {
		t.Fatalf("ListenerPID(%d) of a connected socket = %d, %v, want ErrNotFound", local, pid, err)
	}
	if _, err := sysstat.ListenerPID(70000); err == nil || errors.Is(err, sysstat.ErrNotFound) {
		t.Errorf("ListenerPID(70000) = %v, want an out-of-range error", err)
	}
}
