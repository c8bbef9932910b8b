package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/bench/internal/sysstat"
)

// ErrSysbench means the sysbench binary failed or printed no result; the
// error carries the end of its output.
var ErrSysbench = errors.New("bench: sysbench failed")

// SysbenchRun is one run of the sysbench binary against a target: its
// own client, not tpbench's, so that anyone can reproduce the figures with
// the tool everyone has.
type SysbenchRun struct {
	// Binary is the sysbench executable. Default: sysbench on PATH.
	Binary string
	// Workload is a sysbench OLTP script: oltp_point_select, ...
	Workload string
	// DSN gives host, port, user, password and database (TCP).
	DSN string
	// Tables and TableSize are --tables and --table-size.
	Tables, TableSize int
	// Threads are the client connections (--threads).
	Threads int
	// Warmup runs before the measurement: sysbench resets its counters
	// then (--report-checkpoints) and the final report covers Duration
	// only. 0: none.
	Warmup time.Duration
	// Duration is the measured time.
	Duration time.Duration
	// PSMode is --db-ps-mode: disable (text queries) or auto.
	PSMode string
	// Extra are more sysbench options (--rand-type=uniform).
	Extra []string
	// Perf, when set, is the perf binary that counts the watched
	// processes' system calls in the measured window.
	Perf string
}

// SysbenchResult is sysbench's final report: the measured part of a run,
// after the warmup.
type SysbenchResult struct {
	Transactions uint64  `json:"transactions"`
	Queries      uint64  `json:"queries"`
	TPS          float64 `json:"tps"`
	QPS          float64 `json:"qps"`
	// IgnoredErrors are the errors sysbench retried (deadlocks and lock
	// wait timeouts by default).
	IgnoredErrors uint64  `json:"ignored_errors"`
	Reconnects    uint64  `json:"reconnects"`
	AvgMs         float64 `json:"avg_ms"`
	P95Ms         float64 `json:"p95_ms"`
	MaxMs         float64 `json:"max_ms"`
}

// args are sysbench's arguments for cmd (prepare or run).
func (r SysbenchRun) args(cmd string) ([]string, error) {
	cfg, err := mysql.ParseDSN(r.DSN)
	if err != nil {
		return nil, fmt.Errorf("bench: sysbench DSN: %w", err)
	}
	if cfg.Net != "tcp" {
		return nil, fmt.Errorf("bench: sysbench needs a TCP DSN, not %s", cfg.Net)
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("bench: sysbench DSN: %w", err)
	}
	a := []string{r.Workload, "--db-driver=mysql", "--mysql-host=" + host, "--mysql-port=" + port,
		"--mysql-user=" + cfg.User, "--mysql-password=" + cfg.Passwd, "--mysql-db=" + cfg.DBName,
		"--tables=" + strconv.Itoa(r.Tables), "--table-size=" + strconv.Itoa(r.TableSize)}
	if r.PSMode != "" {
		a = append(a, "--db-ps-mode="+r.PSMode)
	}
	switch cmd {
	case "prepare":
		a = append(a, "--threads="+strconv.Itoa(max(1, r.Tables)))
	case "run":
		warm := int(r.Warmup.Round(time.Second) / time.Second)
		hold := max(1, int(r.Duration.Round(time.Second)/time.Second))
		// --events=0 (the old --max-requests): the time alone ends the
		// run.
		a = append(a, "--threads="+strconv.Itoa(r.Threads), "--time="+strconv.Itoa(warm+hold), "--events=0",
			"--report-interval=1", "--rand-seed=1")
		if warm > 0 {
			a = append(a, "--report-checkpoints="+strconv.Itoa(warm))
		}
	}
	return append(append(a, r.Extra...), cmd), nil
}

func (r SysbenchRun) binary() (string, error) {
	if r.Binary != "" {
		return r.Binary, nil
	}
	p, err := exec.LookPath("sysbench")
	if err != nil {
		return "", fmt.Errorf("%w: no sysbench on PATH (Debian/Ubuntu: sudo apt-get install -y sysbench): %w", ErrSysbench, err)
	}
	return p, nil
}

// sysbenchPrepare loads the tables as `sysbench prepare` does, one thread
// per table.
func sysbenchPrepare(ctx context.Context, r SysbenchRun) error {
	bin, err := r.binary()
	if err != nil {
		return err
	}
	args, err := r.args("prepare")
	if err != nil {
		return err
	}
	// prepare fails on existing tables.
	if err := dropTables(ctx, r.DSN, r.Tables); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: prepare: %w\n%s", ErrSysbench, err, lastLines(string(out), 15))
	}
	return nil
}

func dropTables(ctx context.Context, dsn string, tables int) error {
	db, err := OpenDB(dsn, 1)
	if err != nil {
		return err
	}
	defer db.Close()
	return Cleanup(ctx, db, tables)
}

// cpuWindow is the CPU the watched processes used while sysbench
// measured.
type cpuWindow struct {
	// Seconds is the window's wall time: the measured time plus the
	// transactions still in flight at its end, which sysbench lets
	// finish and counts.
	Seconds float64
	Procs   map[int]ProcessUsage
	// Machine is the whole machine's CPU in the window (nil when
	// /proc/stat could not be read).
	Machine *MachineCPU
	// SyscallsErr is why system calls were not counted, when asked to.
	SyscallsErr error
}

// MachineCPU is the whole machine's CPU time in a window, from
// /proc/stat, in seconds summed over the CPUs.
type MachineCPU struct {
	// UserSec is user + nice, SystemSec system; IRQSec and SoftIRQSec
	// are interrupt handling, where the kernel's network processing of
	// loopback packets lands when it is not charged to a process.
	UserSec    float64 `json:"user_s"`
	SystemSec  float64 `json:"system_s"`
	IRQSec     float64 `json:"irq_s"`
	SoftIRQSec float64 `json:"softirq_s"`
}

// BusySec is the machine's CPU time not idle, iowait or steal.
func (m MachineCPU) BusySec() float64 { return m.UserSec + m.SystemSec + m.IRQSec + m.SoftIRQSec }

// machineCPU is what the machine did between a and b.
func machineCPU(a, b sysstat.HostSample) *MachineCPU {
	d := func(x, y float64) float64 { return max(y-x, 0) }
	return &MachineCPU{
		UserSec:    d(a.CPU.User+a.CPU.Nice, b.CPU.User+b.CPU.Nice),
		SystemSec:  d(a.CPU.System, b.CPU.System),
		IRQSec:     d(a.CPU.IRQ, b.CPU.IRQ),
		SoftIRQSec: d(a.CPU.SoftIRQ, b.CPU.SoftIRQ),
	}
}

// runSysbench runs r and reads the watched processes' CPU from the end of
// the warmup (sysbench's checkpoint, or "Threads started!" without one:
// the connections are open) until its final report, and sysbench's own
// (role ProcClient). progress, when set,
// receives each of sysbench's interval lines.
func runSysbench(ctx context.Context, r SysbenchRun, watch map[int]string, progress func(string)) (SysbenchResult, cpuWindow, error) {
	var win cpuWindow
	bin, err := r.binary()
	if err != nil {
		return SysbenchResult{}, win, err
	}
	args, err := r.args("run")
	if err != nil {
		return SysbenchResult{}, win, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return SysbenchResult{}, win, fmt.Errorf("bench: sysbench: %w", err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return SysbenchResult{}, win, fmt.Errorf("%w: %w", ErrSysbench, err)
	}
	watch = maps.Clone(watch)
	watch[cmd.Process.Pid] = ProcClient
	host := sysstat.LocalHost()
	var hostBegin, hostEnd sysstat.HostSample
	var hostErr error
	sample := func(hs *sysstat.HostSample) map[int]sysstat.ProcSample {
		out := map[int]sysstat.ProcSample{}
		for pid := range watch {
			if s, err := sysstat.ReadProc(pid); err == nil {
				out[pid] = s
			}
		}
		s, err := host.Sample(ctx)
		*hs, hostErr = s, errors.Join(hostErr, err)
		return out
	}
	var (
		begin, end     map[int]sysstat.ProcSample
		beganAt, endAt time.Time
		counters       = map[int]*syscallCounter{}
		calls          = map[int]uint64{}
	)
	countCalls := func() {
		if r.Perf == "" {
			return
		}
		for pid := range watch {
			c, err := startSyscallCount(ctx, r.Perf, pid)
			if err != nil {
				win.SyscallsErr = errors.Join(win.SyscallsErr, err)
				continue
			}
			counters[pid] = c
		}
	}
	stopCounting := func() {
		for pid, c := range counters {
			n, err := c.stop()
			if err != nil {
				win.SyscallsErr = errors.Join(win.SyscallsErr, fmt.Errorf("pid %d: %w", pid, err))
				continue
			}
			calls[pid] = n
		}
		clear(counters)
	}
	defer stopCounting()
	p := newSysbenchParser(r.Warmup >= time.Second)
	var tail []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		tail = append(tail, line)
		if len(tail) > 30 {
			tail = tail[1:]
		}
		switch p.line(line) {
		case sbMeasuring:
			countCalls()
			begin, beganAt = sample(&hostBegin), time.Now()
		case sbFinal:
			end, endAt = sample(&hostEnd), time.Now()
			stopCounting()
		case sbInterval:
			if progress != nil {
				progress(line)
			}
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	out := strings.Join(tail, "\n") + "\n" + stderr.String()
	switch {
	case ctx.Err() != nil:
		return SysbenchResult{}, win, fmt.Errorf("bench: sysbench: %w", context.Cause(ctx))
	case werr != nil:
		return SysbenchResult{}, win, fmt.Errorf("%w: %w\n%s", ErrSysbench, werr, lastLines(out, 15))
	case !p.done || p.res.Queries == 0 && p.res.Transactions == 0:
		return SysbenchResult{}, win, fmt.Errorf("%w: no final report\n%s", ErrSysbench, lastLines(out, 15))
	}
	win.Seconds, win.Procs = endAt.Sub(beganAt).Seconds(), map[int]ProcessUsage{}
	if hostErr == nil && !hostBegin.At.IsZero() && !hostEnd.At.IsZero() {
		win.Machine = machineCPU(hostBegin, hostEnd)
	}
	for pid, role := range watch {
		a, okA := begin[pid]
		b, okB := end[pid]
		if !okA || !okB {
			continue
		}
		u := sysstat.ProcDelta(a, b)
		win.Procs[pid] = ProcessUsage{Role: role, PID: pid, Name: b.Name, CPUPct: u.CPUPct, CPUSec: u.UserSec + u.SystemSec,
			UserSec: u.UserSec, SystemSec: u.SystemSec, Syscalls: calls[pid],
			CtxSwitchesPerSec: u.CtxPerSec, RSSBytes: u.RSS, Threads: u.Threads}
	}
	return p.res, win, nil
}

// lastLines returns the last n lines of s, indented.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	return "  " + strings.Join(lines, "\n  ")
}

// What a line of sysbench's output means to the run.
type sbEvent int

const (
	sbNothing sbEvent = iota
	// sbMeasuring: the measured part begins (the warmup checkpoint, or
	// the threads started without a warmup).
	sbMeasuring
	// sbInterval: a --report-interval line.
	sbInterval
	// sbFinal: the final report begins; the load has stopped.
	sbFinal
)

// sysbenchParser reads sysbench 1.0's output line by line.
type sysbenchParser struct {
	warmup       bool // a checkpoint report ends the warmup
	inCheckpoint bool // inside the checkpoint's report
	final        bool // inside the final report
	done         bool // the final report had its figures
	res          SysbenchResult
}

func newSysbenchParser(warmup bool) *sysbenchParser { return &sysbenchParser{warmup: warmup} }

var (
	sbCheckpoint = regexp.MustCompile(`^\[ *\d+s \] Checkpoint report:`)
	sbIntervalRe = regexp.MustCompile(`^\[ *\d+s \] thds:`)
	// "    transactions:   19936  (9959.12 per sec.)"
	sbCounter = regexp.MustCompile(`^\s+(transactions|queries|ignored errors|reconnects):\s+(\d+)\s+\(([\d.]+) per sec\.\)`)
	// "         95th percentile:   0.35"
	sbLatency = regexp.MustCompile(`^\s+(avg|max|\d+th percentile):\s+([\d.]+)`)
)

func (p *sysbenchParser) line(l string) sbEvent {
	switch {
	case sbIntervalRe.MatchString(l):
		return sbInterval
	case sbCheckpoint.MatchString(l):
		p.inCheckpoint = true
		return sbMeasuring
	case strings.HasPrefix(l, "Threads started!"):
		if !p.warmup {
			return sbMeasuring
		}
	case strings.HasPrefix(l, "SQL statistics:"):
		if !p.inCheckpoint {
			p.final = true
			return sbFinal
		}
	case strings.HasPrefix(l, "Threads fairness:"):
		// Ends a report: a checkpoint's, or the final one.
		p.inCheckpoint = false
	}
	if !p.final {
		return sbNothing
	}
	if m := sbCounter.FindStringSubmatch(l); m != nil {
		n, _ := strconv.ParseUint(m[2], 10, 64)
		rate, _ := strconv.ParseFloat(m[3], 64)
		switch m[1] {
		case "transactions":
			p.res.Transactions, p.res.TPS = n, rate
		case "queries":
			p.res.Queries, p.res.QPS = n, rate
		case "ignored errors":
			p.res.IgnoredErrors = n
		case "reconnects":
			p.res.Reconnects = n
		}
		return sbNothing
	}
	if m := sbLatency.FindStringSubmatch(l); m != nil {
		v, _ := strconv.ParseFloat(m[2], 64)
		switch {
		case m[1] == "avg":
			p.res.AvgMs = v
		case m[1] == "max":
			p.res.MaxMs = v
		default:
			p.res.P95Ms = v
			p.done = true
		}
	}
	return sbNothing
}
