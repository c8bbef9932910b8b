package bench

import (
	"context"
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

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/bench/internal/tiers"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

// The demo's account and schema on its sandbox.
const (
	DemoUser     = "app"
	DemoPassword = "secret"
	DemoDatabase = "sbtest"
)

// DemoStep is one step of the demo, run once per target.
type DemoStep struct {
	Workload string
	Threads  int
}

// DefaultDemoSteps are the steps of `tpbench demo`: point selects and
// read/write transactions with a few clients, where a proxy can only cost,
// and read/write with 1,000 clients, which the proxy serves on its 16
// backend connections instead of 1,000 server threads.
func DefaultDemoSteps() []DemoStep {
	return []DemoStep{
		{Workload: "oltp_point_select", Threads: 8},
		{Workload: "oltp_read_write", Threads: 8},
		{Workload: "oltp_read_write", Threads: 64},
		{Workload: "oltp_read_write", Threads: 256},
		{Workload: "oltp_read_write", Threads: 1000},
	}
}

// demoWorkloads names the demo's workloads for the report.
func demoWorkloads(steps []DemoStep) string {
	var names []string
	for _, s := range steps {
		if !slices.Contains(names, s.Workload) {
			names = append(names, s.Workload)
		}
	}
	return strings.Join(names, ", ")
}

// ParseDemoSteps reads "oltp_point_select/8,oltp_read_write/1000":
// workload/clients pairs, the labels of the report.
func ParseDemoSteps(s string) ([]DemoStep, error) {
	var out []DemoStep
	for _, f := range strings.Split(s, ",") {
		wl, n, ok := strings.Cut(strings.TrimSpace(f), "/")
		threads, err := strconv.Atoi(n)
		if !ok || err != nil || threads < 1 || !slices.Contains(WorkloadNames(), wl) {
			return nil, fmt.Errorf("%w: --steps %q: want WORKLOAD/CLIENTS,... e.g. oltp_point_select/8,oltp_read_write/1000 (workloads: %s)",
				ErrBadRamp, s, strings.Join(WorkloadNames(), ", "))
		}
		out = append(out, DemoStep{Workload: wl, Threads: threads})
	}
	return out, nil
}

// DemoConfig configures Demo. Zero fields get the documented defaults.
type DemoConfig struct {
	// OutDir receives results.json and summary.md, and the relays'
	// configuration files and logs. Required.
	OutDir string
	// Duration is each run's measured hold. Default 15 s.
	Duration time.Duration
	// Warmup precedes each hold. Default 3 s; negative means none.
	Warmup time.Duration
	// DSN selects an existing server instead of a private sandbox. Its
	// database must exist; the demo (re)creates sbtest1..N in it and drops
	// them at the end unless Keep. Its account is also the proxy's login
	// and backend account. There is no mariadb-pool target then.
	DSN string
	// RootDSN is for SHOW GLOBAL STATUS on the server. Default: the
	// sandbox's root, or DSN.
	RootDSN string
	// Keep leaves the sandbox running after the demo (in SandboxDir, its
	// state saved to StateFile) and the tables in place. The relays and
	// the mariadb-pool server are stopped all the same.
	Keep bool
	// SandboxDir is the sandbox's base directory when Keep is set;
	// otherwise a temporary directory is used and removed.
	SandboxDir string
	// StateFile is where a kept sandbox's state is saved (sandbox.Save).
	StateFile string
	// Tables and TableSize: default 4 × 10000.
	Tables, TableSize int
	// Proxy is the tpproxy process in front of the server; its Binary is
	// required, its pool size 16 by default.
	Proxy ProxyOptions
	// HAProxy says whether haproxy relays TCP 1:1 in front of the server
	// as another target: HAProxyAuto (default: when installed), HAProxyOn
	// or HAProxyOff.
	HAProxy string
	// PoolThreads is the thread_pool_size of the mariadb-pool target, a
	// second sandbox server with thread_handling=pool-of-threads holding
	// the same tables. Default 2; negative leaves that target out.
	PoolThreads int
	// Steps default to DefaultDemoSteps.
	Steps []DemoStep
	// Networks are the networks the whole demo runs over, one after the
	// other, into one report: 0 is loopback (everything in this network
	// namespace, the default), a positive one-way delay puts the servers
	// and the relays in network namespaces of their own joined by links
	// with that delay each way (package tiers; root only; not with DSN or
	// Keep). The targets of a delayed network are named with its label,
	// as in "tpproxy@0.2ms".
	Networks []time.Duration
	// Out receives progress and the final table. Default io.Discard.
	Out io.Writer
	// Interactive redraws a live progress line (for a terminal); otherwise
	// one line per finished run is printed.
	Interactive bool
	// Logger receives the sandbox's and the driver's logs. Default:
	// discard. (The relays log to files in OutDir.)
	Logger *slog.Logger
}

func (c *DemoConfig) defaults() error {
	if c.OutDir == "" {
		return errors.New("bench: demo: no output directory")
	}
	if c.Duration <= 0 {
		c.Duration = 15 * time.Second
	}
	switch {
	case c.Warmup == 0:
		c.Warmup = 3 * time.Second
	case c.Warmup < 0:
		c.Warmup = 0
	}
	if c.Tables <= 0 {
		c.Tables = 4
	}
	if c.TableSize <= 0 {
		c.TableSize = 10000
	}
	if c.Proxy.PoolSize <= 0 {
		c.Proxy.PoolSize = 16
	}
	switch {
	case c.PoolThreads == 0:
		c.PoolThreads = 2
	case c.PoolThreads < 0 || c.DSN != "":
		c.PoolThreads = 0
	}
	if c.HAProxy == "" {
		c.HAProxy = HAProxyAuto
	}
	if len(c.Steps) == 0 {
		c.Steps = DefaultDemoSteps()
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if len(c.Networks) == 0 {
		c.Networks = []time.Duration{0}
	}
	for _, d := range c.Networks {
		if d < 0 {
			return fmt.Errorf("bench: demo: network delay %s", d)
		}
		if d > 0 && (c.DSN != "" || c.Keep) {
			return fmt.Errorf("bench: demo: a %s network runs private servers in network namespaces: not with --dsn or --keep", tiers.Label(d))
		}
	}
	if d := slices.Max(c.Networks); d > 0 {
		if err := tiers.Available(); err != nil {
			return fmt.Errorf("bench: demo: the %s network: %w", tiers.Label(d), err)
		}
	}
	if c.Keep && c.DSN == "" && (c.SandboxDir == "" || c.StateFile == "") {
		return errors.New("bench: demo: keeping the sandbox needs SandboxDir and StateFile")
	}
	if _, err := findHAProxy(c.HAProxy); err != nil {
		return err
	}
	return c.Proxy.Validate()
}

// ErrNoServerBinary wraps sandbox.ErrNotFound with how to get a server.
var ErrNoServerBinary = errors.New("no MariaDB/MySQL server installed; install one (Debian/Ubuntu: sudo apt-get install -y mariadb-server), " +
	"set $" + sandbox.EnvBinary + " to a mariadbd/mysqld binary, or pass --dsn of a running server")

// DemoOutcome is what Demo produced.
type DemoOutcome struct {
	Report      *Report
	ResultsPath string
	SummaryPath string
	HTMLPath    string
	// Kept is the sandbox left running when DemoConfig.Keep was set.
	Kept *sandbox.Server
}

// Demo runs the comparison: a server (a private sandbox unless cfg.DSN is
// set), the tpproxy binary and, when installed, haproxy in front of it, a
// second sandbox server with MariaDB's thread pool, the sysbench tables
// on both servers, and each step on every target in turn (direct,
// tpproxy, haproxy, mariadb-pool, direct, ...). It prints progress and the
// table to cfg.Out and writes the report files. Transaction errors are
// results; Demo fails on setup problems, a step that cannot run, or ctx
// ending.
func Demo(ctx context.Context, cfg DemoConfig) (_ *DemoOutcome, err error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: output dir: %w", err)
	}
	out := cfg.Out
	began := time.Now()
	rep := &Report{
		Started: began,
		Environment: Environment{
			OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
			Sandbox: cfg.DSN == "", Tables: cfg.Tables, TableSize: cfg.TableSize, Workload: demoWorkloads(cfg.Steps),
			Distribution: string(DistSpecial), PSMode: psMode(false),
			WarmupSec: cfg.Warmup.Seconds(), DurationSec: cfg.Duration.Seconds(), PoolSize: cfg.Proxy.PoolSize,
		},
	}
	outcome := &DemoOutcome{Report: rep}
	var interrupted error
	var st *ProxyStats
	for _, delay := range cfg.Networks {
		nst, notes, err := demoNetwork(ctx, cfg, delay, rep, outcome)
		if st == nil {
			st = nst
		}
		rep.Notes = append(rep.Notes, notes...)
		if err != nil {
			if ctx.Err() == nil || len(rep.Steps) == 0 {
				return nil, err
			}
			// Interrupted: report what was measured.
			interrupted = err
			rep.Notes = append(rep.Notes, "Interrupted: the demo stopped before its last step.")
			break
		}
	}

	// 5. The report.
	if st != nil {
		rep.Proxy = st
		rep.Environment.PoolSize = st.Pool.Size
	}
	rep.Finished = time.Now()
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Before/after (ratio = target/%s):\n", TargetDirect)
	if err := RenderTable(out, rep.Comparisons); err != nil {
		return nil, err
	}
	if st != nil {
		fmt.Fprintf(out, "tpproxy pool:      size %d, %d acquires, %d waited (%.1f s total), %d acquire timeouts, %d broken\n",
			st.Pool.Size, st.Pool.Acquires, st.Pool.Waits, st.Pool.WaitSec, st.Pool.AcquireTimeouts, st.Pool.Broken)
		fmt.Fprintf(out, "tpproxy front end: %d sessions accepted, %d statements, %d answered with ERR, %d pins\n",
			st.Front.Accepted, st.Front.Statements, st.Front.Errors, st.Front.Pins)
	}
	for _, l := range errorLines(rep.Steps) {
		fmt.Fprintf(out, "errors: %s\n", l)
	}
	outcome.ResultsPath, outcome.SummaryPath, err = rep.WriteFiles(cfg.OutDir)
	if err != nil {
		return nil, err
	}
	outcome.HTMLPath = filepath.Join(cfg.OutDir, HTMLFile)
	fmt.Fprintf(out, "\nresults: %s\nsummary: %s\nreport:  %s\n", outcome.ResultsPath, outcome.SummaryPath, outcome.HTMLPath)
	return outcome, interrupted
}

// demoServer starts the sandbox (or parses cfg.DSN) and returns the
// direct connection settings. For a sandbox it sets cfg.RootDSN.
func demoServer(ctx context.Context, cfg *DemoConfig, net *tiers.Tiers) (*sandbox.Server, *mysql.Config, error) {
	if cfg.DSN != "" {
		direct, err := driverConfig(cfg.DSN, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("bench: --dsn: %w", err)
		}
		if direct.DBName == "" {
			return nil, nil, fmt.Errorf("bench: --dsn %q names no database for the sbtest tables", cfg.DSN)
		}
		return nil, direct, nil
	}
	opts := sandbox.Options{Logger: cfg.Logger}
	if net != nil {
		opts = inServerNS(opts, net)
		cfg.RootDSN = "" // each network's server has its own
	}
	if cfg.Keep {
		opts.BaseDir, opts.Detach = cfg.SandboxDir, true
	}
	srv, direct, root, err := startSandbox(ctx, opts, DemoUser, DemoPassword, DemoDatabase)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Keep {
		if err := srv.Save(cfg.StateFile); err != nil {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			return nil, nil, errors.Join(err, srv.Stop(stopCtx))
		}
	}
	if cfg.RootDSN == "" {
		cfg.RootDSN = root
	}
	return srv, direct, nil
}

func demoPrepare(ctx context.Context, cfg DemoConfig, dsn, server string) error {
	fmt.Fprintf(cfg.Out, "preparing %d tables × %d rows on %s...", cfg.Tables, cfg.TableSize, server)
	begin := time.Now()
	db, err := OpenDB(dsn, cfg.Tables)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := Prepare(ctx, db, cfg.Tables, cfg.TableSize); err != nil {
		fmt.Fprintln(cfg.Out)
		return err
	}
	fmt.Fprintf(cfg.Out, " %s\n", time.Since(begin).Round(10*time.Millisecond))
	return nil
}

func demoCleanup(ctx context.Context, cfg DemoConfig, dsn string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	db, err := OpenDB(dsn, 1)
	if err != nil {
		return err
	}
	defer db.Close()
	return Cleanup(ctx, db, cfg.Tables)
}

// progressLine returns a Step.Progress that redraws one terminal line, or
// nil when not interactive.
func progressLine(w io.Writer, interactive bool, n, total int, step, target string, warmup, hold time.Duration) func(Progress) {
	if !interactive {
		return nil
	}
	return func(p Progress) {
		phase, elapsed, of := "hold", (p.Elapsed - warmup).Round(time.Second), hold
		if p.Warmup {
			phase, elapsed, of = "warmup", p.Elapsed.Round(time.Second), warmup
		}
		p90 := "-"
		if !math.IsNaN(p.P90) {
			p90 = formatMillis(p.P90) + " ms"
		}
		fmt.Fprintf(w, "\r\033[K[%d/%d] %s %s %s %s/%s  %.1f tps  p90 %s  %d errors",
			n, total, step, target, phase, elapsed, of, p.TPS, p90, p.Errors)
	}
}

// resultLine is the one-line summary of a finished run.
func resultLine(r StepResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %-12s %9.1f tps  p95 %s ms  p99 %s ms  errors %d", r.Label(), r.Target, r.TPS,
		formatMillis(r.Latency.P95), formatMillis(r.Latency.P99), r.ErrorTotal)
	if r.Server != nil {
		fmt.Fprintf(&b, "  server conns max %d", r.Server.ThreadsConnectedMax)
	}
	fmt.Fprintf(&b, "  client CPU %.0f%%", r.ClientCPU.Pct)
	return b.String()
}

// demoNotes are the caveats of a demo on one machine.
func demoNotes(r *Report, cfg DemoConfig, ps *peerSet) []string {
	notes := []string{
		"tpproxy runs as its own process (the tpproxy binary), as do haproxy and the servers: client CPU is the benchmark's only. " +
			"Proxy and server CPU µs/stmt are each process's user+system time in the hold over the statements the clients completed in it.",
		"Server conns max includes the sampler's own connection and, in runs on the first server, tpproxy's idle backend pool (the base figure in All runs).",
	}
	if ps.haproxy != nil {
		notes = append(notes, "haproxy relays TCP 1:1 (mode tcp): each client has a server connection and thread of its own, as directly; it shows what a relay costs without pooling.")
	}
	if ps.pool != nil {
		notes = append(notes, fmt.Sprintf("mariadb-pool is a second sandbox server with thread_handling=pool-of-threads and thread_pool_size=%d, "+
			"holding the same tables: the server's own thread pool, without a proxy.", cfg.PoolThreads))
	}
	notes = append(notes, "Each run is short: treat differences under ~10% as noise.")
	if r.Environment.CPUs <= 4 {
		notes = append(notes, fmt.Sprintf("Client, relays and servers share %d CPUs: absolute figures are low; the ratios are the point.", r.Environment.CPUs))
	}
	return notes
}

// demoNetwork runs the whole demo over one network (delay 0: loopback):
// the server, the relays and the pool server, the tables, and every step
// on every target, appending the runs to rep. It returns tpproxy's totals,
// read while it still runs, and the notes for the report.
func demoNetwork(ctx context.Context, cfg DemoConfig, delay time.Duration, rep *Report, outcome *DemoOutcome) (_ *ProxyStats, _ []string, err error) {
	out := cfg.Out
	suffix := ""
	var net *tiers.Tiers
	if delay > 0 {
		suffix = "@" + tiers.Label(delay)
		if net, err = startNetwork(ctx, delay, out); err != nil {
			return nil, nil, err
		}
		// Last: after every process in the namespaces has stopped.
		defer func() {
			if cerr := net.Close(); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}()
	} else if len(cfg.Networks) > 1 {
		fmt.Fprintln(out, "network loopback:")
	}

	// 1. The server.
	srv, direct, err := demoServer(ctx, &cfg, net)
	if err != nil {
		return nil, nil, err
	}
	if srv != nil {
		defer func() {
			if cfg.Keep {
				outcome.Kept = srv
				if err != nil {
					err = fmt.Errorf("%w (the sandbox keeps running at %s, state in %s)", err, srv.Addr, cfg.StateFile)
				}
				return
			}
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if serr := srv.Stop(stopCtx); serr != nil {
				err = errors.Join(err, fmt.Errorf("bench: stop sandbox: %w", serr))
			}
		}()
		fmt.Fprintf(out, "sandbox server %s at %s (datadir %s)\n", srv.Version, srv.Addr, srv.DataDir)
	} else {
		fmt.Fprintf(out, "server at %s\n", direct.Addr)
	}
	serverDSN := cfg.RootDSN
	if serverDSN == "" {
		serverDSN = cfg.DSN
	}

	// 2. The relays and the pool server; they stop before the server.
	// A delayed network's relays keep their configuration and logs in a
	// directory of its own: network-0.2ms/.
	relayDir := cfg.OutDir
	if net != nil {
		relayDir = filepath.Join(cfg.OutDir, "network-"+tiers.Label(delay))
		if err := os.MkdirAll(relayDir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("bench: %w", err)
		}
	}
	peers, err := startPeerSet(ctx, peerSetConfig{Direct: direct, Dir: relayDir, Proxy: cfg.Proxy,
		HAProxy: cfg.HAProxy, PoolThreads: cfg.PoolThreads, Tiers: net, Out: out, Logger: cfg.Logger})
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if perr := peers.close(ctx); perr != nil {
			err = errors.Join(err, perr)
		}
	}()
	targets := peers.targets
	if rep.Title == "" {
		var names []string
		for _, t := range targets {
			names = append(names, t.Name)
		}
		rep.Title = "tpbench demo: " + strings.Join(names, " vs ")
	}
	var notes []string
	var nr *netRun
	if net != nil {
		if nr, err = startNetRun(ctx, net, direct.Addr, peers); err != nil {
			return nil, nil, err
		}
		notes = append(notes, nr.note)
		fmt.Fprintln(out, nr.note)
	}

	// 3. The tables, on both servers.
	if err := demoPrepare(ctx, cfg, targets[0].DSN, direct.Addr); err != nil {
		return nil, nil, err
	}
	if peers.poolDirect != nil {
		if err := demoPrepare(ctx, cfg, peers.poolDirect.FormatDSN(), TargetPool); err != nil {
			return nil, nil, err
		}
	}
	if cfg.DSN != "" && !cfg.Keep {
		defer func() {
			if cerr := demoCleanup(ctx, cfg, targets[0].DSN); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}()
	}

	// 4. The steps on every target in turn: one ramp per run of steps
	// with the same workload.
	schema := Schema{Tables: cfg.Tables, TableSize: cfg.TableSize, Dist: DistSpecial}
	if nr != nil {
		nr.begin()
	}
	monitor := peers.monitor()
	if srv != nil {
		monitor.ServerPID = srv.PID
	}
	var rampErr error
	for i := 0; i < len(cfg.Steps); {
		j := i
		var threads []int
		for ; j < len(cfg.Steps) && cfg.Steps[j].Workload == cfg.Steps[i].Workload; j++ {
			threads = append(threads, cfg.Steps[j].Threads)
		}
		fmt.Fprintf(out, "%s, %v clients%s:\n", cfg.Steps[i].Workload, threads, strings.Replace(suffix, "@", " over ", 1))
		r, err := Ramp(ctx, RampConfig{
			Title: rep.Title, Targets: targets, Workload: cfg.Steps[i].Workload, Schema: schema,
			Steps: threads, Warmup: cfg.Warmup, StepDuration: cfg.Duration, ServerDSN: serverDSN,
			Monitor: monitor,
			Out:     out, Interactive: cfg.Interactive, Logger: cfg.Logger,
		})
		if r != nil {
			for k := range r.Steps {
				r.Steps[k].Target += suffix
			}
			for k := range r.Comparisons {
				r.Comparisons[k].Direct += suffix
				r.Comparisons[k].Proxy += suffix
			}
			rep.Steps = append(rep.Steps, r.Steps...)
			rep.Comparisons = append(rep.Comparisons, r.Comparisons...)
			if rep.Environment.ServerVersion == "" {
				rep.Environment.ServerVersion = r.Environment.ServerVersion
			}
		}
		if err != nil {
			rampErr = errors.Join(err, peers.exited())
			break
		}
		i = j
	}
	if nr != nil {
		note, err := nr.end()
		if rampErr == nil {
			rampErr = err
		}
		if note != "" {
			notes = append(notes, note)
		}
		rep.Networks = append(rep.Networks, nr.info)
	}

	// tpproxy's totals come from its admin port and /metrics while it
	// still runs.
	statsCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	st, serr := readProxyStats(statsCtx, peers.proxy.AdminDSN, peers.proxy.MetricsURL)
	cancel()
	if serr != nil {
		cfg.Logger.Warn("tpproxy's totals", "err", serr)
	}
	if len(rep.Notes) == 0 {
		notes = append(demoNotes(rep, cfg, peers), notes...)
	}
	return st, notes, rampErr
}
