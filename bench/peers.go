package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tpproxy/tpproxy/bench/internal/tiers"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

// File names Peers writes in its output directory.
const (
	PeersJSONFile = "peers.json"
	PeersMDFile   = "peers.md"
)

// DefaultPeersSteps are the workloads of `tpbench peers`: point selects
// with a few clients, where any relay can only cost, and read/write
// transactions with 1,000 clients, where a server thread per client
// hurts.
func DefaultPeersSteps() []DemoStep {
	return []DemoStep{
		{Workload: "oltp_point_select", Threads: 8},
		{Workload: "oltp_read_write", Threads: 1000},
	}
}

// PeersConfig configures Peers. Zero fields get the documented defaults.
type PeersConfig struct {
	// OutDir receives peers.json and peers.md, and the relays'
	// configuration files and logs. Required.
	OutDir string
	// Proxy is the tpproxy process; its Binary is required, its pool
	// size 16 by default.
	Proxy ProxyOptions
	// HAProxy: HAProxyAuto (default), HAProxyOn or HAProxyOff.
	HAProxy string
	// PoolThreads is the mariadb-pool server's thread_pool_size. Default
	// 2; negative leaves that target out.
	PoolThreads int
	// Baseline, when its Binary is set, is another tpproxy build run as
	// the target BaselineName (default "tpproxy-before"): the before of a
	// before/after in the same run.
	Baseline     ProxyOptions
	BaselineName string
	// BaselineSet are overrides for the baseline target only (KEY=VALUE,
	// after Proxy's): with them and no Baseline.Binary, the baseline is
	// the same build with other settings (backend.pool_size=auto against
	// a fixed size, in one run).
	BaselineSet []string
	// Unix adds the target tpproxy-unix: a second tpproxy with Proxy's
	// settings whose backend connections use the server's unix socket
	// instead of loopback TCP (not with Network).
	Unix bool
	// Tpbench runs tpbench's own load right after every sysbench run, on
	// the same target with the same workload, clients, warmup and
	// measured time, and adds the table of how far the two agree with
	// each tool's own CPU per transaction.
	Tpbench bool
	// CountSyscalls counts the watched processes' system calls in each
	// run's measured window with perf stat (the raw_syscalls:sys_enter
	// tracepoint; perf on PATH, root), for the cost table.
	CountSyscalls bool
	// Sysbench is the sysbench binary. Default: sysbench on PATH.
	Sysbench string
	// Tables and TableSize: default 4 × 100,000.
	Tables, TableSize int
	// Steps default to DefaultPeersSteps; the workloads are sysbench's
	// oltp_* scripts.
	Steps []DemoStep
	// Rounds is how often every step runs on every target, interleaved
	// (direct, tpproxy, haproxy, mariadb-pool, direct, ...). Default 2.
	Rounds int
	// Duration is each run's measured time (default 20 s), after Warmup
	// (default 5 s; negative: none). sysbench counts whole seconds.
	Duration, Warmup time.Duration
	// PSMode is sysbench's --db-ps-mode. Default disable (text queries).
	PSMode string
	// Network, when positive, is a one-way delay on every link between
	// sysbench, the relays and the servers, which then run in network
	// namespaces of their own (package tiers; root only). Zero: loopback.
	Network time.Duration
	// Out receives progress and the table. Default io.Discard.
	Out io.Writer
	// Interactive redraws a live line from sysbench's interval reports
	// (for a terminal).
	Interactive bool
	// Logger receives the sandboxes' logs. Default: discard.
	Logger *slog.Logger
}

func (c *PeersConfig) defaults() error {
	if c.OutDir == "" {
		return errors.New("bench: peers: no output directory")
	}
	if c.Proxy.PoolSize <= 0 {
		c.Proxy.PoolSize = 16
	}
	if c.Baseline.Binary != "" || len(c.BaselineSet) > 0 {
		// The same settings (and BaselineSet), another build or the same.
		bin := c.Baseline.Binary
		if bin == "" {
			bin = c.Proxy.Binary
		}
		c.Baseline = c.Proxy
		c.Baseline.Binary = bin
		c.Baseline.Set = append(slices.Clone(c.Proxy.Set), c.BaselineSet...)
		if c.BaselineName == "" {
			c.BaselineName = "tpproxy-before"
		}
		if !configKey.MatchString(strings.ReplaceAll(c.BaselineName, "-", "_")) || c.BaselineName == TargetTpproxy || c.BaselineName == TargetTpproxyUnix {
			return fmt.Errorf("bench: peers: baseline name %q: want lower-case letters, digits, - and _ and not %q or %q", c.BaselineName, TargetTpproxy, TargetTpproxyUnix)
		}
	} else {
		c.BaselineName = "" // no baseline target
	}
	if c.Unix && c.Network > 0 {
		return errors.New("bench: peers: the tpproxy-unix target runs on loopback only, not over tiers")
	}
	switch {
	case c.PoolThreads == 0:
		c.PoolThreads = 2
	case c.PoolThreads < 0:
		c.PoolThreads = 0
	}
	if c.HAProxy == "" {
		c.HAProxy = HAProxyAuto
	}
	if c.Tables <= 0 {
		c.Tables = 4
	}
	if c.TableSize <= 0 {
		c.TableSize = 100000
	}
	if len(c.Steps) == 0 {
		c.Steps = DefaultPeersSteps()
	}
	for _, s := range c.Steps {
		if !strings.HasPrefix(s.Workload, "oltp_") {
			return fmt.Errorf("%w: peers runs sysbench's oltp_* workloads, not %s", ErrBadRamp, s.Workload)
		}
	}
	if c.Rounds <= 0 {
		c.Rounds = 2
	}
	if c.Duration <= 0 {
		c.Duration = 20 * time.Second
	}
	switch {
	case c.Warmup == 0:
		c.Warmup = 5 * time.Second
	case c.Warmup < 0:
		c.Warmup = 0
	}
	if c.Duration < time.Second || (c.Warmup > 0 && c.Warmup < time.Second) {
		return fmt.Errorf("%w: sysbench counts whole seconds: --duration and --warmup must be at least 1s (or a warmup of 0)", ErrBadRamp)
	}
	if c.PSMode == "" {
		c.PSMode = "disable"
	}
	if c.PSMode != "disable" && c.PSMode != "auto" {
		return fmt.Errorf("%w: --ps-mode %q: want disable or auto", ErrBadRamp, c.PSMode)
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Network < 0 {
		return fmt.Errorf("%w: network delay %s", ErrBadRamp, c.Network)
	}
	if c.Network > 0 {
		if err := tiers.Available(); err != nil {
			return fmt.Errorf("bench: peers: the %s network: %w", tiers.Label(c.Network), err)
		}
	}
	if _, err := (SysbenchRun{Binary: c.Sysbench}).binary(); err != nil {
		return err
	}
	if _, err := findHAProxy(c.HAProxy); err != nil {
		return err
	}
	if c.BaselineName != "" {
		if err := c.Baseline.Validate(); err != nil {
			return fmt.Errorf("%s: %w", c.BaselineName, err)
		}
	}
	return c.Proxy.Validate()
}

// PeersReport is what Peers measured: peers.json.
type PeersReport struct {
	Title       string      `json:"title"`
	Started     time.Time   `json:"started"`
	Finished    time.Time   `json:"finished"`
	Environment Environment `json:"environment"`
	// Targets in the order they ran in each round.
	Targets []string `json:"targets"`
	// Rounds is how often each step ran on each target.
	Rounds int `json:"rounds"`
	// PoolThreads is the mariadb-pool server's thread_pool_size.
	PoolThreads int `json:"mariadb_thread_pool_size,omitempty"`
	// ProxySet are the tpproxy overrides the run used (--proxy-set),
	// ProxyConfig its extra YAML and ProxyGOMAXPROCS its GOMAXPROCS.
	ProxySet        []string `json:"proxy_set,omitempty"`
	ProxyConfig     string   `json:"proxy_config,omitempty"`
	ProxyGOMAXPROCS int      `json:"proxy_gomaxprocs,omitempty"`
	// BaselineName and BaselineBinary are the second tpproxy build's
	// target and executable, when there was one.
	BaselineName   string   `json:"baseline_name,omitempty"`
	BaselineBinary string   `json:"baseline_binary,omitempty"`
	BaselineSet    []string `json:"baseline_set,omitempty"`
	// CountedSyscalls: the processes' system calls were counted (perf).
	CountedSyscalls bool `json:"counted_syscalls,omitempty"`
	// Network is the delayed network the runs were over (nil: loopback).
	Network *NetworkInfo `json:"network,omitempty"`
	// Runs are every sysbench run in the order they ran.
	Runs  []PeerRun `json:"runs"`
	Notes []string  `json:"notes,omitempty"`
}

// PeerRun is one sysbench run on one target.
type PeerRun struct {
	Workload string `json:"workload"`
	Threads  int    `json:"threads"`
	Round    int    `json:"round"`
	Target   string `json:"target"`
	SysbenchResult
	// Processes are the server's, the relay's and sysbench's (kinds
	// server, relay, client; role = the target) CPU while sysbench
	// measured, with CPUUsPerStmt per statement sysbench reported.
	Processes []ProcessUsage `json:"processes,omitempty"`
	// RelayCPUUsPerStmt and ServerCPUUsPerStmt are those of the target's
	// relay (tpproxy, haproxy) and server; ClientCPUUsPerStmt sysbench's.
	RelayCPUUsPerStmt  float64 `json:"relay_cpu_us_per_stmt,omitempty"`
	ServerCPUUsPerStmt float64 `json:"server_cpu_us_per_stmt,omitempty"`
	ClientCPUUsPerStmt float64 `json:"client_cpu_us_per_stmt,omitempty"`
	// Machine is the whole machine's CPU in the window (/proc/stat), and
	// MachineCPUUsPerTx its busy time per transaction sysbench reported.
	Machine           *MachineCPU `json:"machine_cpu,omitempty"`
	MachineCPUUsPerTx float64     `json:"machine_cpu_us_per_tx,omitempty"`
	// CPUWindowSec is how long the CPU was read: the measured time plus
	// the transactions in flight at its end, which sysbench lets finish
	// and counts (seconds with 1,000 clients).
	CPUWindowSec float64 `json:"cpu_window_s,omitempty"`
	// Error is why the run failed (its figures are then 0).
	Error string `json:"error,omitempty"`
	// Tpbench is tpbench's own load on the same step and target right
	// after this run (PeersConfig.Tpbench).
	Tpbench *TpbenchCheck `json:"tpbench,omitempty"`
}

// Peers reproduces the comparison with the real tools on one machine: a
// sandbox MariaDB, the tpproxy binary, haproxy (when installed) and a
// second sandbox with MariaDB's thread pool, the same sysbench tables on
// both servers, and sysbench itself as the client; every step runs
// cfg.Rounds times on every target, interleaved. It prints progress and
// the table to cfg.Out and writes peers.json and peers.md. A failed
// sysbench run is a result; Peers fails on setup problems or ctx ending
// (with what was measured so far).
func Peers(ctx context.Context, cfg PeersConfig) (_ *PeersReport, err error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: output dir: %w", err)
	}
	out := cfg.Out
	rep := &PeersReport{
		Title: "tpbench peers", Started: time.Now(), Rounds: cfg.Rounds,
		ProxySet: cfg.Proxy.Set, ProxyConfig: cfg.Proxy.ConfigFile, ProxyGOMAXPROCS: cfg.Proxy.GOMAXPROCS,
		BaselineName: cfg.BaselineName, BaselineBinary: cfg.Baseline.Binary, BaselineSet: cfg.BaselineSet, CountedSyscalls: cfg.CountSyscalls,
		Environment: Environment{
			OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
			Sandbox: true, Tables: cfg.Tables, TableSize: cfg.TableSize, Workload: demoWorkloads(cfg.Steps),
			Distribution: string(DistSpecial), PSMode: cfg.PSMode,
			WarmupSec: cfg.Warmup.Seconds(), DurationSec: cfg.Duration.Seconds(), PoolSize: cfg.Proxy.PoolSize,
		},
	}

	var net *tiers.Tiers
	opts := startOptions(cfg.Logger)
	if cfg.Network > 0 {
		if net, err = startNetwork(ctx, cfg.Network, out); err != nil {
			return nil, err
		}
		// Last: after the relays and the servers have stopped.
		defer func() {
			if cerr := net.Close(); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}()
		opts = inServerNS(opts, net)
		rep.Title = "tpbench peers over " + tiers.Label(cfg.Network) + " tiers"
	}
	srv, direct, _, err := startSandbox(ctx, opts, DemoUser, DemoPassword, DemoDatabase)
	if err != nil {
		return nil, err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if serr := srv.Stop(stopCtx); serr != nil {
			err = errors.Join(err, fmt.Errorf("bench: stop sandbox: %w", serr))
		}
	}()
	rep.Environment.ServerVersion = srv.Version
	fmt.Fprintf(out, "sandbox server %s at %s (direct)\n", srv.Version, srv.Addr)
	socket := ""
	if cfg.Unix {
		socket = srv.Socket
	}
	peers, err := startPeerSet(ctx, peerSetConfig{Direct: direct, Dir: cfg.OutDir, Proxy: cfg.Proxy, Socket: socket,
		HAProxy: cfg.HAProxy, PoolThreads: cfg.PoolThreads, Baseline: cfg.Baseline, BaselineName: cfg.BaselineName,
		Tiers: net, Out: out, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer func() {
		if perr := peers.close(ctx); perr != nil {
			err = errors.Join(err, perr)
		}
	}()
	for _, t := range peers.targets {
		rep.Targets = append(rep.Targets, t.Name)
	}
	rep.Title += ": " + strings.Join(rep.Targets, ", ")
	var nr *netRun
	if net != nil {
		if nr, err = startNetRun(ctx, net, direct.Addr, peers); err != nil {
			return nil, err
		}
		fmt.Fprintln(out, nr.note)
	}
	if peers.pool != nil {
		rep.PoolThreads = cfg.PoolThreads
	}
	// The server behind each target, and its relay.
	type watched struct{ server, relay int }
	procs := map[string]watched{}
	for _, t := range peers.targets {
		w := watched{server: srv.PID, relay: peers.relayPID[t.Name]}
		if t.Name == TargetPool {
			w.server = peers.pool.PID
		}
		procs[t.Name] = w
	}

	base := SysbenchRun{Binary: cfg.Sysbench, Tables: cfg.Tables, TableSize: cfg.TableSize, PSMode: cfg.PSMode,
		Warmup: cfg.Warmup, Duration: cfg.Duration}
	if cfg.CountSyscalls {
		if base.Perf, err = findPerf(); err != nil {
			return nil, err
		}
	}
	servers := []Target{peers.targets[0]}
	if peers.poolDirect != nil {
		servers = append(servers, Target{Name: TargetPool, DSN: peers.poolDirect.FormatDSN()})
	}
	for _, s := range servers {
		fmt.Fprintf(out, "sysbench prepare: %d tables × %d rows on %s...", cfg.Tables, cfg.TableSize, s.Name)
		began := time.Now()
		r := base
		r.Workload, r.DSN = cfg.Steps[0].Workload, s.DSN
		if err := sysbenchPrepare(ctx, r); err != nil {
			fmt.Fprintln(out)
			return nil, err
		}
		fmt.Fprintf(out, " %s\n", time.Since(began).Round(100*time.Millisecond))
	}

	total := len(cfg.Steps) * cfg.Rounds * len(peers.targets)
	if nr != nil {
		nr.begin()
	}
	n := 0
	var interrupted error
runs:
	for _, st := range cfg.Steps {
		for round := 1; round <= cfg.Rounds; round++ {
			for _, t := range peers.targets {
				n++
				r := base
				r.Workload, r.Threads, r.DSN = st.Workload, st.Threads, t.DSN
				w := procs[t.Name]
				watch := map[int]string{w.server: ProcServer}
				if w.relay != 0 {
					watch[w.relay] = ProcRelay
				}
				var progress func(string)
				if cfg.Interactive {
					head := fmt.Sprintf("[%d/%d] %s round %d %s: ", n, total, stepLabel(st.Workload, st.Threads), round, t.Name)
					progress = func(l string) { fmt.Fprintf(out, "\r\033[K%s%s", head, l) }
				}
				res, win, rerr := runSysbench(ctx, r, watch, progress)
				if cfg.Interactive {
					fmt.Fprint(out, "\r\033[K")
				}
				run := PeerRun{Workload: st.Workload, Threads: st.Threads, Round: round, Target: t.Name, SysbenchResult: res}
				if rerr != nil {
					if ctx.Err() != nil {
						interrupted = rerr
						break runs
					}
					run.Error = errors.Join(rerr, peers.exited()).Error()
				}
				run.setCPU(win, t.Name)
				if win.SyscallsErr != nil {
					fmt.Fprintf(out, "system calls not counted: %v\n", win.SyscallsErr)
				}
				fmt.Fprintf(out, "[%d/%d] %s\n", n, total, run.line())
				if cfg.Tpbench && run.Error == "" {
					run.Tpbench = runTpbenchCheck(ctx, cfg, st, t)
					if ctx.Err() != nil {
						interrupted = ctx.Err()
						rep.Runs = append(rep.Runs, run)
						break runs
					}
					fmt.Fprintf(out, "      %s\n", run.Tpbench.line(run))
				}
				rep.Runs = append(rep.Runs, run)
			}
		}
	}
	rep.Finished = time.Now()
	rep.Notes = peersNotes(rep, peers)
	if nr != nil {
		note, nerr := nr.end()
		if nerr != nil && interrupted == nil {
			return nil, nerr
		}
		rep.Network = &nr.info
		rep.Notes = append(rep.Notes, nr.note)
		if note != "" {
			rep.Notes = append(rep.Notes, note)
		}
	}
	if interrupted != nil {
		rep.Notes = append(rep.Notes, "Interrupted: the run stopped before its last step.")
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "\n%s", md.Bytes())
	if err := rep.WriteFiles(cfg.OutDir, md.Bytes()); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "\nresults: %s\ntable:   %s\n", filepath.Join(cfg.OutDir, PeersJSONFile), filepath.Join(cfg.OutDir, PeersMDFile))
	return rep, interrupted
}

// setCPU fills the run's processes and per-statement figures from the
// CPU window and the statements sysbench reported.
func (r *PeerRun) setCPU(win cpuWindow, target string) {
	r.CPUWindowSec = win.Seconds
	if r.Machine = win.Machine; r.Machine != nil && r.Transactions > 0 {
		r.MachineCPUUsPerTx = r.Machine.BusySec() * 1e6 / float64(r.Transactions)
	}
	for _, p := range win.Procs {
		kind := p.Role
		p.Role, p.Kind = target, kind
		p.CPUUsPerStmt = usPerStmt(p.CPUSec, r.Queries)
		switch kind {
		case ProcRelay:
			r.RelayCPUUsPerStmt += p.CPUUsPerStmt
		case ProcServer:
			r.ServerCPUUsPerStmt += p.CPUUsPerStmt
		case ProcClient:
			r.ClientCPUUsPerStmt += p.CPUUsPerStmt
		}
		r.Processes = append(r.Processes, p)
	}
	slices.SortFunc(r.Processes, func(a, b ProcessUsage) int { return strings.Compare(a.Kind, b.Kind) })
}

// line is the one-line summary of a run.
func (r PeerRun) line() string {
	head := fmt.Sprintf("%-22s round %d  %-12s", stepLabel(r.Workload, r.Threads), r.Round, r.Target)
	if r.Error != "" {
		first, _, _ := strings.Cut(r.Error, "\n")
		return head + "  FAILED: " + first
	}
	return fmt.Sprintf("%s %9.1f tps  p95 %s ms  errors %d  proxy CPU %s  server CPU %s µs/stmt",
		head, r.TPS, formatMillis(r.P95Ms), r.IgnoredErrors, formatMicros(r.RelayCPUUsPerStmt), formatMicros(r.ServerCPUUsPerStmt))
}

// startOptions are the direct sandbox's options.
func startOptions(log *slog.Logger) sandbox.Options { return sandbox.Options{Logger: log} }

// peersNotes are the caveats of the table.
func peersNotes(r *PeersReport, ps *peerSet) []string {
	notes := []string{
		"Every process runs on this machine: sysbench, the relays and the servers share its CPUs; the ratios are the point.",
		"Proxy and server CPU µs/stmt: the process's utime+stime (/proc/PID/stat) from the end of the warmup to sysbench's final report, " +
			"over the statements sysbench reported (queries, BEGIN/COMMIT included).",
		"errors are sysbench's ignored errors: deadlocks and lock wait timeouts it retried. " +
			"The client's own CPU per statement is in peers.json (client_cpu_us_per_stmt).",
		fmt.Sprintf("tpproxy: %d backend connections, the binary's defaults otherwise.", r.Environment.PoolSize),
	}
	if ps.haproxy != nil {
		notes = append(notes, "haproxy relays TCP 1:1 (mode tcp): a server connection and thread per client, as directly.")
	} else {
		notes = append(notes, "No haproxy target: haproxy is not installed (apt-get install haproxy) or --haproxy off.")
	}
	if r.CountedSyscalls {
		notes = append(notes, "System calls were counted with perf stat on the raw_syscalls:sys_enter tracepoint of every watched process: "+
			"each call pays for the count (tens of ns), on every target alike.")
	}
	if ps.unix != nil {
		notes = append(notes, "tpproxy-unix: a second tpproxy with the same settings whose backend connections use the server's unix socket instead of loopback TCP.")
	}
	if ps.pool != nil {
		notes = append(notes, fmt.Sprintf("mariadb-pool: a second sandbox with thread_handling=pool-of-threads, thread_pool_size=%d, and the same tables.", r.PoolThreads))
	}
	return notes
}

// WriteFiles writes peers.json and md (peers.md) into dir.
func (r *PeersReport) WriteFiles(dir string, md []byte) error {
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: peers: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, PeersJSONFile), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, PeersMDFile), md, 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// peerStep is one step's runs by target, in round order.
type peerStep struct {
	label string
	wl    string
	n     int
	runs  map[string][]PeerRun
}

func (r *PeersReport) steps() []peerStep {
	var out []peerStep
	for _, run := range r.Runs {
		label := stepLabel(run.Workload, run.Threads)
		i := slices.IndexFunc(out, func(s peerStep) bool { return s.label == label })
		if i < 0 {
			out = append(out, peerStep{label: label, wl: run.Workload, n: run.Threads, runs: map[string][]PeerRun{}})
			i = len(out) - 1
		}
		out[i].runs[run.Target] = append(out[i].runs[run.Target], run)
	}
	return out
}

// peersHeader and peersRatioHeader are peers.md's tables.
var (
	peersHeader = []string{"workload", "clients", "target", "TPS", "p95 ms", "errors", "proxy CPU µs/stmt", "server CPU µs/stmt"}
	// The ratios compare tpproxy with each other target.
	peersRatioHeader = []string{"workload", "clients", "ratio", "TPS", "p95", "proxy CPU µs/stmt", "proxy + server CPU µs/stmt"}
)

// perRound joins a figure of each round: "50,940 / 62,295"; a failed
// run is "failed".
func perRound(runs []PeerRun, f func(PeerRun) string) string {
	var parts []string
	for _, r := range runs {
		if r.Error != "" {
			parts = append(parts, "failed")
			continue
		}
		parts = append(parts, f(r))
	}
	return strings.Join(parts, " / ")
}

// ratioRange is a/b of each round that both ran, as "0.34–0.38×" (or one
// figure); "" when no round has both.
func ratioRange(a, b []PeerRun, f func(PeerRun) float64) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range min(len(a), len(b)) {
		if a[i].Error != "" || b[i].Error != "" || f(b[i]) == 0 {
			continue
		}
		q := f(a[i]) / f(b[i])
		lo, hi = min(lo, q), max(hi, q)
	}
	switch {
	case math.IsInf(lo, 1):
		return ""
	case fmt.Sprintf("%.2f", lo) == fmt.Sprintf("%.2f", hi):
		return fmt.Sprintf("%.2f×", lo)
	}
	return fmt.Sprintf("%.2f–%.2f×", lo, hi)
}

// WriteMarkdown writes peers.md: the setup, one row per step and target
// with each round's figures, and tpproxy's ratios to the others.
func (r *PeersReport) WriteMarkdown(w io.Writer) error {
	var b bytes.Buffer
	e := r.Environment
	fmt.Fprintf(&b, "# %s\n\n", r.Title)
	fmt.Fprintf(&b, "- started %s, took %s; %s/%s, %d CPUs\n", r.Started.Format(time.RFC3339), r.Finished.Sub(r.Started).Round(time.Second), e.OS, e.Arch, e.CPUs)
	fmt.Fprintf(&b, "- server: %s (sandboxes); client: sysbench, --db-ps-mode=%s, %s key distribution\n", e.ServerVersion, e.PSMode, e.Distribution)
	rounds := "1 round"
	if r.Rounds != 1 {
		rounds = strconv.Itoa(r.Rounds) + " rounds, targets interleaved"
	}
	fmt.Fprintf(&b, "- data: %d tables × %d rows; each run %s warmup + %s measured; %s (%s)\n",
		e.Tables, e.TableSize, secs(e.WarmupSec), secs(e.DurationSec), rounds, strings.Join(r.Targets, ", "))
	tp := fmt.Sprintf("- tpproxy: pool_size %d", e.PoolSize)
	if len(r.ProxySet) > 0 {
		tp += ", " + strings.Join(r.ProxySet, ", ")
	}
	if r.ProxyConfig != "" {
		tp += ", config " + r.ProxyConfig
	}
	if r.ProxyGOMAXPROCS > 0 {
		tp += ", GOMAXPROCS " + strconv.Itoa(r.ProxyGOMAXPROCS)
	}
	b.WriteString(tp + "\n")
	if r.BaselineName != "" {
		if len(r.BaselineSet) > 0 {
			fmt.Fprintf(&b, "- %s: the tpproxy build %s, the same settings but %s\n", r.BaselineName, r.BaselineBinary,
				strings.Join(r.BaselineSet, ", "))
		} else {
			fmt.Fprintf(&b, "- %s: the tpproxy build %s, the same settings\n", r.BaselineName, r.BaselineBinary)
		}
	}
	if r.PoolThreads > 0 {
		fmt.Fprintf(&b, "- mariadb-pool: thread_handling=pool-of-threads, thread_pool_size=%d\n", r.PoolThreads)
	}
	if n := r.Network; n != nil {
		var rtt []string
		for _, l := range n.RTT {
			rtt = append(rtt, fmt.Sprintf("%s p50 %.0f µs", l.Link, l.P50Us))
		}
		fmt.Fprintf(&b, "- network: %s each way on every link (%s; the servers and the relays in network namespaces of their own, sysbench here); measured round trips %s\n",
			n.Label, n.Mechanism, strings.Join(rtt, ", "))
	}
	b.WriteString("\n")

	thousands := func(v float64) string { return formatThousands(v) }
	var rows [][]string
	steps := r.steps()
	for _, s := range steps {
		for _, t := range r.Targets {
			runs := s.runs[t]
			if len(runs) == 0 {
				continue
			}
			rows = append(rows, []string{s.wl, strconv.Itoa(s.n), t,
				perRound(runs, func(x PeerRun) string { return thousands(x.TPS) }),
				perRound(runs, func(x PeerRun) string { return formatMillis(x.P95Ms) }),
				perRound(runs, func(x PeerRun) string { return strconv.FormatUint(x.IgnoredErrors, 10) }),
				perRound(runs, func(x PeerRun) string { return formatMicros(x.RelayCPUUsPerStmt) }),
				perRound(runs, func(x PeerRun) string { return formatMicros(x.ServerCPUUsPerStmt) }),
			})
		}
	}
	if err := renderMarkdownAligned(&b, peersHeader, rows, "lrl"); err != nil {
		return err
	}

	rows = rows[:0]
	tps := func(x PeerRun) float64 { return x.TPS }
	p95 := func(x PeerRun) float64 { return x.P95Ms }
	relay := func(x PeerRun) float64 { return x.RelayCPUUsPerStmt }
	total := func(x PeerRun) float64 { return x.RelayCPUUsPerStmt + x.ServerCPUUsPerStmt }
	for _, s := range steps {
		px := s.runs[TargetTpproxy]
		others := []string{TargetHAProxy, TargetPool, TargetDirect}
		for _, t := range r.Targets {
			if !slices.Contains(others, t) && t != TargetTpproxy {
				others = append(others, t) // a baseline build
			}
		}
		for _, other := range others {
			o := s.runs[other]
			if len(px) == 0 || len(o) == 0 {
				continue
			}
			rr := ""
			if other == TargetHAProxy || other == r.BaselineName || other == TargetTpproxyUnix {
				rr = ratioRange(px, o, relay)
			}
			rows = append(rows, []string{s.wl, strconv.Itoa(s.n), TargetTpproxy + "/" + other,
				ratioRange(px, o, tps), ratioRange(px, o, p95), rr, ratioRange(px, o, total)})
		}
	}
	if len(rows) > 0 {
		b.WriteString("\nRatios, round by round (lowest–highest):\n\n")
		if err := renderMarkdownAligned(&b, peersRatioHeader, rows, "lrl"); err != nil {
			return err
		}
	}
	if err := r.writeCostTable(&b); err != nil {
		return err
	}
	if err := r.writeCheckTable(&b); err != nil {
		return err
	}
	var failed []string
	for _, run := range r.Runs {
		if run.Error != "" {
			first, _, _ := strings.Cut(run.Error, "\n")
			failed = append(failed, fmt.Sprintf("- %s round %d on %s: %s", stepLabel(run.Workload, run.Threads), run.Round, run.Target, first))
		}
	}
	if len(failed) > 0 {
		b.WriteString("\nFailed runs:\n\n" + strings.Join(failed, "\n") + "\n")
	}
	if len(r.Notes) > 0 {
		b.WriteString("\nNotes:\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// formatThousands prints a rate without decimals and with thousands
// separators, as the README's tables do: 50,940.
func formatThousands(v float64) string {
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
