package sysstat

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestReadProcFixture reads testdata/proc/4242, a fake mysqld with two
// threads: CPU ticks become seconds, VmRSS kB become bytes, and context
// switches are summed over task/*/status, not taken from the main
// thread's /proc/4242/status.
func TestReadProcFixture(t *testing.T) {
	s, err := procFS{root: "testdata/proc"}.readProc(4242)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(s.At) > time.Minute {
		t.Errorf("At = %v", s.At)
	}
	s.At = time.Time{}
	want := ProcSample{
		PID: 4242, Name: "mysqld", UserSec: 123.45, SystemSec: 67.89,
		VoluntaryCtx: 1500, InvoluntaryCtx: 27, RSS: 524288 * 1024, Threads: 2,
		start: 987654,
	}
	if s != want {
		t.Errorf("readProc = %+v, want %+v", s, want)
	}
	if _, err := (procFS{root: "testdata/proc"}).readProc(4243); !errors.Is(err, ErrNoProcess) {
		t.Errorf("readProc(4243) = %v, want ErrNoProcess", err)
	}
}

// TestParsePidStatComm: comm may hold spaces and parentheses; fields are
// counted from the last ')'.
func TestParsePidStatComm(t *testing.T) {
	b, err := os.ReadFile("testdata/proc/4242/stat")
	if err != nil {
		t.Fatal(err)
	}
	weird := []byte("4242 (my (sql) d) " + string(b[len("4242 (mysqld) "):]))
	var s ProcSample
	if err := parsePidStat(weird, &s); err != nil {
		t.Fatal(err)
	}
	if s.Name != "my (sql) d" || s.UserSec != 123.45 || s.Threads != 2 || s.start != 987654 {
		t.Errorf("parsePidStat = %+v", s)
	}
	for _, bad := range []string{"", "4242 mysqld S 1", "4242 (mysqld) S 1 2 3", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 -11 12 13 14 15 16 17 18 19 20 21 22"} {
		if err := parsePidStat([]byte(bad), &s); err == nil {
			t.Errorf("parsePidStat(%q) succeeded", bad)
		}
	}
}

// TestProcDeltaReusedPID: a PID that belongs to a new process (another
// start time) gives no rates.
func TestProcDeltaReusedPID(t *testing.T) {
	t0 := time.Now()
	a := ProcSample{At: t0, PID: 9, UserSec: 100, start: 1}
	b := ProcSample{At: t0.Add(time.Second), PID: 9, UserSec: 1, start: 5000, RSS: 10}
	if u := ProcDelta(a, b); u.CPUPct != 0 || u.RSS != 10 {
		t.Errorf("ProcDelta across PID reuse = %+v", u)
	}
}

// TestParseNetTCP finds the listening sockets on a port in
// testdata/proc/net/tcp and tcp6, ignoring connections on it.
func TestParseNetTCP(t *testing.T) {
	inodes := map[uint64]bool{}
	for _, f := range []string{"testdata/proc/net/tcp", "testdata/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := parseNetTCP(b, 3306, inodes); err != nil {
			t.Fatal(err)
		}
	}
	if len(inodes) != 2 || !inodes[77777] || !inodes[77778] {
		t.Errorf("inodes for 3306 = %v, want 77777 and 77778", inodes)
	}
	// The fixture has nothing that owns the sockets.
	if _, err := (procFS{root: "testdata/proc"}).listenerPID(3306); !errors.Is(err, ErrNotFound) {
		t.Errorf("listenerPID(3306) = %v, want ErrNotFound", err)
	}
	if _, err := (procFS{root: "testdata/proc"}).listenerPID(3307); !errors.Is(err, ErrNotFound) {
		t.Errorf("listenerPID(3307) = %v, want ErrNotFound", err)
	}
	if err := parseNetTCP([]byte("h\n 0: 0100007F:XYZ 00000000:0000 0A 0 0 0 0 0 1 1\n"), 1, inodes); err == nil {
		t.Error("parseNetTCP accepted a bad port")
	}
}
