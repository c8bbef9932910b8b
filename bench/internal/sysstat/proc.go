package sysstat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// ProcSample is one local process's cumulative figures.
type ProcSample struct {
	At   time.Time
	PID  int
	Name string // comm: the executable's name, at most 15 bytes
	// UserSec and SystemSec are CPU seconds of all the process's threads,
	// live and exited.
	UserSec, SystemSec float64
	// VoluntaryCtx and InvoluntaryCtx are context switches summed over the
	// live threads: Linux keeps no process-wide count in /proc, and a
	// thread's switches drop out of the sum when it exits (ProcDelta
	// then counts no change rather than a negative one). A voluntary
	// switch is a wait (I/O, a lock, epoll); an involuntary one is
	// preemption, the sign of more runnable threads than CPUs.
	VoluntaryCtx, InvoluntaryCtx uint64
	// RSS is the resident set in bytes.
	RSS     uint64
	Threads int

	// start is the process's start time in ticks since boot, which tells
	// a reused PID from the process sampled before.
	start uint64
}

// ProcUsage is what a process did between two samples.
type ProcUsage struct {
	// Seconds is the wall time between the samples.
	Seconds float64
	// CPUPct is user + system CPU time over wall time: 100 is one core.
	CPUPct float64
	// UserSec and SystemSec are the CPU seconds between the samples.
	UserSec, SystemSec float64
	// CtxPerSec is VoluntaryPerSec + InvoluntaryPerSec.
	CtxPerSec, VoluntaryPerSec, InvoluntaryPerSec float64
	// RSS and Threads are the later sample's.
	RSS     uint64
	Threads int
}

// ReadProc reads /proc/<pid>/stat, /proc/<pid>/status and the status of
// each of its threads. It returns an error wrapping ErrNoProcess when the
// process does not exist, and ErrUnsupported on systems other than Linux.
func ReadProc(pid int) (ProcSample, error) {
	if runtime.GOOS != "linux" {
		return ProcSample{}, ErrUnsupported
	}
	return procFS{root: "/proc"}.readProc(pid)
}

// ProcDelta is what the process did between a and b, b being the later
// sample. When a and b are not the same process (a PID reused after the
// first one exited) or b is not later, only RSS and Threads are set.
func ProcDelta(a, b ProcSample) ProcUsage {
	u := ProcUsage{Seconds: b.At.Sub(a.At).Seconds(), RSS: b.RSS, Threads: b.Threads}
	if u.Seconds <= 0 || a.PID != b.PID || a.start != b.start {
		return u
	}
	u.UserSec, u.SystemSec = fdelta(a.UserSec, b.UserSec), fdelta(a.SystemSec, b.SystemSec)
	u.CPUPct = (u.UserSec + u.SystemSec) / u.Seconds * 100
	u.VoluntaryPerSec = float64(delta(a.VoluntaryCtx, b.VoluntaryCtx)) / u.Seconds
	u.InvoluntaryPerSec = float64(delta(a.InvoluntaryCtx, b.InvoluntaryCtx)) / u.Seconds
	u.CtxPerSec = u.VoluntaryPerSec + u.InvoluntaryPerSec
	return u
}

// ListenerPID finds the local process listening on TCP port over IPv4 or
// IPv6: the socket's inode from /proc/net/tcp and /proc/net/tcp6 (state
// 0A, LISTEN), then the process with that inode among its open files.
// When several processes hold the socket it returns the lowest PID: the
// parent of forked workers, but also pid 1 when systemd socket
// activation keeps the socket open next to the server.
//
// It returns an error wrapping ErrNotFound when nothing listens on the
// port in this network namespace (the server is remote, or in a container
// behind a published port), or when the owner's /proc/<pid>/fd is not
// readable (another user's process and the caller is not root). On
// systems other than Linux it returns ErrUnsupported.
func ListenerPID(port int) (int, error) {
	if runtime.GOOS != "linux" {
		return 0, ErrUnsupported
	}
	return procFS{root: "/proc"}.listenerPID(port)
}

// procFS reads processes from a /proc mounted at root.
type procFS struct{ root string }

func (p procFS) readProc(pid int) (ProcSample, error) {
	s := ProcSample{PID: pid, At: time.Now()}
	dir := filepath.Join(p.root, strconv.Itoa(pid))
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return s, procErr(pid, err)
	}
	if err := parsePidStat(b, &s); err != nil {
		return s, fmt.Errorf("sysstat: pid %d: %w", pid, err)
	}
	if b, err = os.ReadFile(filepath.Join(dir, "status")); err != nil {
		return s, procErr(pid, err)
	}
	st, err := parsePidStatus(b)
	if err != nil {
		return s, fmt.Errorf("sysstat: pid %d: %w", pid, err)
	}
	s.RSS = st.rss
	tasks, err := os.ReadDir(filepath.Join(dir, "task"))
	if err != nil {
		return s, procErr(pid, err)
	}
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, "task", t.Name(), "status"))
		if err != nil {
			continue // the thread exited since ReadDir
		}
		st, err := parsePidStatus(b)
		if err != nil {
			return s, fmt.Errorf("sysstat: pid %d task %s: %w", pid, t.Name(), err)
		}
		s.VoluntaryCtx += st.voluntary
		s.InvoluntaryCtx += st.involuntary
	}
	return s, nil
}

// procErr turns a failed read of a process's files into ErrNoProcess when
// the process is gone.
func procErr(pid int, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%w: pid %d", ErrNoProcess, pid)
	}
	return fmt.Errorf("sysstat: pid %d: %w", pid, err)
}

// parsePidStat reads /proc/<pid>/stat: "pid (comm) state ppid ...". comm
// may hold spaces and parentheses, so the fields are counted from the
// last ')'.
func parsePidStat(b []byte, s *ProcSample) error {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return errors.New("stat: no (comm)")
	}
	s.Name = string(b[open+1 : end])
	// Field n of proc(5) is f[n-3].
	f := bytes.Fields(b[end+1:])
	if len(f) < 22 {
		return fmt.Errorf("stat: %d fields after comm, want at least 22", len(f))
	}
	num := func(n int) (uint64, error) {
		v, err := strconv.ParseUint(string(f[n-3]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat field %d: %w", n, err)
		}
		return v, nil
	}
	utime, err1 := num(14)
	stime, err2 := num(15)
	threads, err3 := num(20)
	start, err4 := num(22)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	s.UserSec, s.SystemSec = ticks(utime), ticks(stime)
	s.Threads = int(min(threads, 1<<31))
	s.start = start
	return nil
}

type pidStatus struct {
	rss                    uint64
	voluntary, involuntary uint64
}

// parsePidStatus reads VmRSS (absent for kernel threads) and the context
// switch counts from /proc/<pid>/status or /proc/<pid>/task/<tid>/status.
func parsePidStatus(b []byte) (pidStatus, error) {
	var st pidStatus
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		switch string(name) {
		case "VmRSS":
			dst = &st.rss
		case "voluntary_ctxt_switches":
			dst = &st.voluntary
		case "nonvoluntary_ctxt_switches":
			dst = &st.involuntary
		default:
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return st, fmt.Errorf("status %s has no value", name)
		}
		n, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil {
			return st, fmt.Errorf("status %s: %w", name, err)
		}
		if len(f) > 1 && string(f[1]) == "kB" {
			n = min(n, 1<<53) * 1024
		}
		*dst = n
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("status: %w", err)
	}
	return st, nil
}

func (p procFS) listenerPID(port int) (int, error) {
	if port <= 0 || port > 65535 {
		return 0, fmt.Errorf("sysstat: port %d out of range", port)
	}
	inodes := map[uint64]bool{}
	var readable int
	for _, name := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join(p.root, "net", name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // tcp6 without IPv6
		}
		if err != nil {
			return 0, fmt.Errorf("sysstat: %w", err)
		}
		readable++
		if err := parseNetTCP(b, port, inodes); err != nil {
			return 0, err
		}
	}
	if readable == 0 {
		return 0, fmt.Errorf("sysstat: no %s/net/tcp or tcp6", p.root)
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("%w: nothing listens on port %d", ErrNotFound, port)
	}
	entries, err := os.ReadDir(p.root)
	if err != nil {
		return 0, fmt.Errorf("sysstat: %w", err)
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	for _, pid := range pids {
		fdDir := filepath.Join(p.root, strconv.Itoa(pid), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // exited, or another user's
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil {
				continue
			}
			if ino, ok := socketInode(target); ok && inodes[ino] {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: port %d is listened on, but by no process whose open files are readable", ErrNotFound, port)
}

// socketInode parses an fd link target "socket:[12345]".
func socketInode(target string) (uint64, bool) {
	const prefix = "socket:["
	if len(target) < len(prefix)+2 || target[:len(prefix)] != prefix || target[len(target)-1] != ']' {
		return 0, false
	}
	n, err := strconv.ParseUint(target[len(prefix):len(target)-1], 10, 64)
	return n, err == nil
}

// parseNetTCP adds to inodes the inode of every socket in /proc/net/tcp
// or tcp6 that listens (st 0A) on port. A line is "sl local_address
// rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
// ...", the address being hex "ADDR:PORT".
func parseNetTCP(b []byte, port int, inodes map[uint64]bool) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	first := true
	for sc.Scan() {
		if first { // header
			first = false
			continue
		}
		f := bytes.Fields(sc.Bytes())
		if len(f) < 10 {
			continue
		}
		if string(f[3]) != "0A" {
			continue
		}
		i := bytes.LastIndexByte(f[1], ':')
		if i < 0 {
			return fmt.Errorf("sysstat: /proc/net/tcp: bad local address %q", f[1])
		}
		lport, err := strconv.ParseUint(string(f[1][i+1:]), 16, 16)
		if err != nil {
			return fmt.Errorf("sysstat: /proc/net/tcp: bad local address %q", f[1])
		}
		if int(lport) != port {
			continue
		}
		ino, err := strconv.ParseUint(string(f[9]), 10, 64)
		if err != nil {
			return fmt.Errorf("sysstat: /proc/net/tcp: bad inode %q", f[9])
		}
		if ino != 0 {
			inodes[ino] = true
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("sysstat: /proc/net/tcp: %w", err)
	}
	return nil
}
