package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

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

// DemoConfig configures Demo. Zero fields get the documented defaults.
type DemoConfig struct {
	// OutDir receives results.json and summary.md. Required.
	OutDir string
	// Duration is each run's measured hold. Default 15 s.
	Duration time.Duration
	// Warmup precedes each hold. Default 3 s; negative means none.
	Warmup time.Duration
	// DSN selects an existing server instead of a private sandbox. Its
	// database must exist; the demo (re)creates sbtest1..N in it and drops
	// them at the end unless Keep. Its account is also the proxy's login
	// and backend account.
	DSN string
	// RootDSN is for SHOW GLOBAL STATUS on the server. Default: the
	// sandbox's root, or DSN.
	RootDSN string
	// Keep leaves the sandbox running after the demo (in SandboxDir, its
	// state saved to StateFile) and the tables in place.
	Keep bool
	// SandboxDir is the sandbox's base directory when Keep is set;
	// otherwise a temporary directory is used and removed.
	SandboxDir string
	// StateFile is where a kept sandbox's state is saved (sandbox.Save).
	StateFile string
	// Tables and TableSize: default 4 × 10000.
	Tables, TableSize int
	// PoolSize is tpproxy's backend connection count. Default 16.
	PoolSize int
	// Steps default to DefaultDemoSteps.
	Steps []DemoStep
	// Out receives progress and the final table. Default io.Discard.
	Out io.Writer
	// Interactive redraws a live progress line (for a terminal); otherwise
	// one line per finished run is printed.
	Interactive bool
	// Logger receives the sandbox's, the proxy's and the driver's logs.
	// Default: discard.
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
	if c.PoolSize <= 0 {
		c.PoolSize = 16
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
	if c.Keep && c.DSN == "" && (c.SandboxDir == "" || c.StateFile == "") {
		return errors.New("bench: demo: keeping the sandbox needs SandboxDir and StateFile")
	}
	return nil
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

// Demo runs the before/after comparison: a server (a private sandbox
// unless cfg.DSN is set), tpproxy in-process in front of it, the sysbench
// tables, and each step on the server directly and then through the proxy
// (A/B/A/B...). It prints progress and the table to cfg.Out and writes
// the report files. Transaction errors are results; Demo fails on setup
// problems, a step that cannot run, or ctx ending.
func Demo(ctx context.Context, cfg DemoConfig) (_ *DemoOutcome, err error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	out := cfg.Out
	began := time.Now()
	rep := &Report{
		Title:   "tpbench demo: direct vs tpproxy",
		Started: began,
		Environment: Environment{
			OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
			Sandbox: cfg.DSN == "", Tables: cfg.Tables, TableSize: cfg.TableSize, Workload: demoWorkloads(cfg.Steps),
			Distribution: string(DistSpecial), PSMode: psMode(false),
			WarmupSec: cfg.Warmup.Seconds(), DurationSec: cfg.Duration.Seconds(), PoolSize: cfg.PoolSize,
		},
	}
	outcome := &DemoOutcome{Report: rep}

	// 1. The server.
	srv, direct, err := demoServer(ctx, &cfg)
	if err != nil {
		return nil, err
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

	// 2. The proxy.
	px, err := startLocalProxy(ctx, direct.Addr, direct.User, direct.Passwd, cfg.PoolSize, cfg.Logger)
	if err != nil {
		return nil, err
	}
	defer func() {
		if perr := px.close(); perr != nil {
			err = errors.Join(err, fmt.Errorf("bench: proxy: %w", perr))
		}
	}()
	proxied := direct.Clone()
	proxied.Net, proxied.Addr = "tcp", px.Addr
	targets := []Target{{Name: "direct", DSN: direct.FormatDSN()}, {Name: "proxy", DSN: proxied.FormatDSN()}}
	fmt.Fprintf(out, "tpproxy in-process at %s, %d backend connections\n", px.Addr, cfg.PoolSize)

	// 3. The tables.
	if err := demoPrepare(ctx, cfg, targets[0].DSN); err != nil {
		return nil, err
	}
	if cfg.DSN != "" && !cfg.Keep {
		defer func() {
			if cerr := demoCleanup(ctx, cfg, targets[0].DSN); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}()
	}

	// 4. The steps, direct then proxy: one ramp per run of steps with
	// the same workload.
	schema := Schema{Tables: cfg.Tables, TableSize: cfg.TableSize, Dist: DistSpecial}
	var interrupted error
	for i := 0; i < len(cfg.Steps); {
		j := i
		var threads []int
		for ; j < len(cfg.Steps) && cfg.Steps[j].Workload == cfg.Steps[i].Workload; j++ {
			threads = append(threads, cfg.Steps[j].Threads)
		}
		fmt.Fprintf(out, "%s, %v clients:\n", cfg.Steps[i].Workload, threads)
		r, err := Ramp(ctx, RampConfig{
			Title: rep.Title, Targets: targets, Workload: cfg.Steps[i].Workload, Schema: schema,
			Steps: threads, Warmup: cfg.Warmup, StepDuration: cfg.Duration, ServerDSN: serverDSN,
			Monitor: MonitorConfig{ProxyAdmin: map[string]string{"proxy": px.AdminDSN}},
			Out:     out, Interactive: cfg.Interactive, Logger: cfg.Logger,
		})
		if r != nil {
			rep.Steps = append(rep.Steps, r.Steps...)
			rep.Comparisons = append(rep.Comparisons, r.Comparisons...)
			if rep.Environment.ServerVersion == "" {
				rep.Environment.ServerVersion = r.Environment.ServerVersion
			}
		}
		if err != nil {
			if ctx.Err() == nil || len(rep.Steps) == 0 {
				return nil, err
			}
			// Interrupted: report what was measured.
			interrupted = err
			rep.Notes = append(rep.Notes, "Interrupted: the demo stopped before its last step.")
			break
		}
		i = j
	}

	// 5. The report.
	st := px.stats()
	rep.Proxy = &st
	rep.Notes = append(demoNotes(rep), rep.Notes...)
	rep.Finished = time.Now()
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Before/after (ratio = proxy/direct):")
	if err := RenderTable(out, rep.Comparisons); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "tpproxy pool:      size %d, %d acquires, %d waited (%.1f s total), %d acquire timeouts, %d broken\n",
		st.Pool.Size, st.Pool.Acquires, st.Pool.Waits, st.Pool.WaitSec, st.Pool.AcquireTimeouts, st.Pool.Broken)
	fmt.Fprintf(out, "tpproxy front end: %d sessions accepted, %d statements, %d answered with ERR, %d pins\n",
		st.Front.Accepted, st.Front.Statements, st.Front.Errors, st.Front.Pins)
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
func demoServer(ctx context.Context, cfg *DemoConfig) (*sandbox.Server, *mysql.Config, error) {
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
	if cfg.Keep {
		opts.BaseDir, opts.Detach = cfg.SandboxDir, true
	}
	srv, err := sandbox.Start(ctx, opts)
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		return nil, nil, fmt.Errorf("%w\n(%w)", ErrNoServerBinary, err)
	case err != nil:
		return nil, nil, err
	}
	fail := func(err error) (*sandbox.Server, *mysql.Config, error) {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		return nil, nil, errors.Join(err, srv.Stop(stopCtx))
	}
	if err := srv.CreateUser(ctx, DemoUser, DemoPassword); err != nil {
		return fail(err)
	}
	if err := srv.CreateDatabase(ctx, DemoDatabase); err != nil {
		return fail(err)
	}
	if cfg.Keep {
		if err := srv.Save(cfg.StateFile); err != nil {
			return fail(err)
		}
	}
	if cfg.RootDSN == "" {
		cfg.RootDSN = srv.RootDSN("")
	}
	direct, err := driverConfig(srv.DSN(DemoUser, DemoPassword, DemoDatabase), nil)
	if err != nil {
		return fail(err)
	}
	return srv, direct, nil
}

func demoPrepare(ctx context.Context, cfg DemoConfig, dsn string) error {
	fmt.Fprintf(cfg.Out, "preparing %d tables × %d rows...", cfg.Tables, cfg.TableSize)
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
	fmt.Fprintf(&b, "%-22s %-6s %9.1f tps  p95 %s ms  p99 %s ms  errors %d", r.Label(), r.Target, r.TPS,
		formatMillis(r.Latency.P95), formatMillis(r.Latency.P99), r.ErrorTotal)
	if r.Server != nil {
		fmt.Fprintf(&b, "  server conns max %d", r.Server.ThreadsConnectedMax)
	}
	fmt.Fprintf(&b, "  client CPU %.0f%%", r.ClientCPU.Pct)
	return b.String()
}

// demoNotes are the caveats of an in-process demo on one machine.
func demoNotes(r *Report) []string {
	notes := []string{
		"tpproxy runs inside the benchmark process, so client CPU of the proxy runs includes the proxy's own work.",
		"Server conns max includes the sampler's own connection and, in direct runs, the proxy's idle backend pool (the base figure in All runs).",
		"Each run is short: treat differences under ~10% as noise.",
	}
	if r.Environment.CPUs <= 4 {
		notes = append(notes, fmt.Sprintf("Client, proxy and server share %d CPUs: absolute figures are low; the ratios are the point.", r.Environment.CPUs))
	}
	return notes
}
