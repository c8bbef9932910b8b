package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpproxy/tpproxy/bench"
)

// loadFlags are the flags every load command shares: targets, workload,
// data set and what to watch.
type loadFlags struct {
	targets      []string
	workload     string
	psMode       string
	tables       int
	tableSize    int
	schemas      int
	scale        float64
	randType     string
	connectPerTx bool
	errorPause   time.Duration
	warmup       time.Duration
	serverDSN    string
	nodeExporter string
	proxyAdmin   []string
	relayPID     []string
	out          string
}

func (f *loadFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.targets, "target", nil, "NAME=DSN (go-sql-driver DSN with the benchmark database); repeat for each target")
	fl.StringVar(&f.workload, "workload", "oltp_point_select", "workload: "+strings.Join(bench.WorkloadNames(), ", "))
	fl.StringVar(&f.psMode, "ps-mode", "auto", "auto: server-side prepared statements, prepared once per connection (sysbench's default); disable: text protocol")
	fl.IntVar(&f.tables, "tables", 4, "sysbench tables (sbtest1..N)")
	fl.IntVar(&f.tableSize, "table-size", 10000, "rows per table")
	fl.IntVar(&f.schemas, "schemas", 1, "databases holding the data (N > 1: <db>_1..<db>_N, clients spread over them)")
	fl.Float64Var(&f.scale, "scale", 1, "ability_attr data scale (1: 200k/300k/1.2M/10k rows)")
	fl.StringVar(&f.randType, "rand-type", "special", "row id distribution: special (sysbench's default), uniform, gaussian, pareto")
	fl.BoolVar(&f.connectPerTx, "connect-per-tx", false, "open a new connection for every transaction (a connection storm)")
	fl.DurationVar(&f.errorPause, "error-pause", 0, "a client pauses this long after a failed transaction before its next one, as a client that backs off when told the server is overloaded (0: it goes on at once, a closed loop)")
	fl.DurationVar(&f.warmup, "warmup", 5*time.Second, "unmeasured load before each step (0: none)")
	fl.StringVar(&f.serverDSN, "server-dsn", "", "DSN for SHOW GLOBAL STATUS on the database server (optional)")
	fl.StringVar(&f.nodeExporter, "node-exporter", "", "node_exporter URL of the database host (http://db:9100/metrics) for host figures; default: this machine's /proc")
	fl.StringArrayVar(&f.proxyAdmin, "proxy-admin", nil, "[NAME=]DSN of a tpproxy admin port (default NAME: proxy): adds the proxy's queue figures to that target")
	fl.StringArrayVar(&f.relayPID, "relay-pid", nil, "NAME=PID|auto: the process id of the relay (proxy) in front of target NAME's server, for its CPU µs per statement; "+
		"auto (the default for every target on a loopback address) finds it by the port it listens on; repeat for each target")
	fl.StringVar(&f.out, "out", "", "write results.json, results.csv, summary.md and report.html to this directory")
}

// schema builds the data set and statement options.
func (f *loadFlags) schema() (bench.Schema, error) {
	if f.psMode != "auto" && f.psMode != "disable" {
		return bench.Schema{}, fmt.Errorf("--ps-mode %q: want auto or disable", f.psMode)
	}
	dist, err := bench.ParseDistribution(f.randType)
	if err != nil {
		return bench.Schema{}, err
	}
	if f.schemas < 1 || f.scale <= 0 || f.tables < 1 || f.tableSize < 1 {
		return bench.Schema{}, errors.New("--schemas, --tables and --table-size must be at least 1 and --scale positive")
	}
	return bench.Schema{Tables: f.tables, TableSize: f.tableSize, Schemas: f.schemas, Scale: f.scale,
		Prepared: f.psMode == "auto", Dist: dist}, nil
}

// monitor builds the monitor settings; targets are the run's targets.
func (f *loadFlags) monitor(targets []bench.Target) (bench.MonitorConfig, error) {
	m := bench.MonitorConfig{NodeExporter: f.nodeExporter}
	if len(f.proxyAdmin) > 0 {
		m.ProxyAdmin = map[string]string{}
	}
	for _, s := range f.proxyAdmin {
		name, dsn, ok := strings.Cut(s, "=")
		if !ok || strings.ContainsAny(name, "@/():") {
			name, dsn = defaultProxyTarget(targets), s
		}
		if name == "" || dsn == "" {
			return m, fmt.Errorf("--proxy-admin %q: want [NAME=]DSN, e.g. proxy='admin:admin@tcp(127.0.0.1:6032)/'", s)
		}
		m.ProxyAdmin[name] = dsn
	}
	pids, err := parseRelayPIDs(f.relayPID)
	if err != nil {
		return m, err
	}
	m.RelayPID = pids
	return m, nil
}

// parseRelayPIDs reads --relay-pid NAME=PID flags; NAME=auto leaves the
// target to the port lookup.
func parseRelayPIDs(flags []string) (map[string]int, error) {
	var out map[string]int
	for _, s := range flags {
		name, v, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--relay-pid %q: want NAME=PID or NAME=auto, e.g. proxy=4242", s)
		}
		if v == "auto" {
			delete(out, name)
			continue
		}
		pid, err := strconv.Atoi(v)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("--relay-pid %q: %q is not a process id (or auto)", s, v)
		}
		if out == nil {
			out = map[string]int{}
		}
		out[name] = pid
	}
	return out, nil
}

// defaultProxyTarget is the target an unnamed --proxy-admin belongs to:
// the one named "proxy", else the last.
func defaultProxyTarget(targets []bench.Target) string {
	for _, t := range targets {
		if t.Name == "proxy" {
			return t.Name
		}
	}
	if len(targets) == 0 {
		return ""
	}
	return targets[len(targets)-1].Name
}

// parseTargets reads NAME=DSN flags.
func parseTargets(flags []string) ([]bench.Target, error) {
	var ts []bench.Target
	for _, s := range flags {
		name, dsn, ok := strings.Cut(s, "=")
		if !ok || name == "" || dsn == "" || strings.ContainsAny(name, "@/()") {
			return nil, fmt.Errorf("--target %q: want NAME=DSN, e.g. direct='root@tcp(127.0.0.1:3306)/sbtest'", s)
		}
		ts = append(ts, bench.Target{Name: name, DSN: dsn})
	}
	if len(ts) == 0 {
		return nil, errors.New("at least one --target NAME=DSN is required")
	}
	return ts, nil
}

// rampFlags are the stepped-load flags of compare and sweep.
type rampFlags struct {
	threads      string
	step         int
	maxThreads   int
	stepDuration time.Duration
	stopP90      time.Duration
	stopP99      time.Duration
	stopSuccess  float64
	stopCPU      float64
	stopMem      float64
	stopIOWait   float64
	stopNet      float64
	confirm      time.Duration
}

func (f *rampFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.threads, "threads", "8", "client counts: a list (8,64,512) or the start of a ramp with --step and --max-threads")
	fl.IntVar(&f.step, "step", 0, "clients added per step")
	fl.IntVar(&f.maxThreads, "max-threads", 0, "last step's clients")
	fl.DurationVar(&f.stepDuration, "step-duration", 30*time.Second, "measured time of each step")
	fl.DurationVar(&f.stopP90, "stop-p90", 0, "stop a target at the first step whose p90 latency exceeds this (0: off)")
	fl.DurationVar(&f.stopP99, "stop-p99", 0, "stop a target at the first step whose p99 latency exceeds this (0: off)")
	fl.Float64Var(&f.stopSuccess, "stop-success", 0, "stop a target at the first step with a lower success percentage (0: off)")
	fl.Float64Var(&f.stopCPU, "stop-cpu", 0, "stop at the first step with host CPU above this percentage (0: off)")
	fl.Float64Var(&f.stopMem, "stop-mem", 0, "stop at the first step with host memory use above this percentage (0: off)")
	fl.Float64Var(&f.stopIOWait, "stop-iowait", 0, "stop at the first step with host iowait above this percentage (0: off)")
	fl.Float64Var(&f.stopNet, "stop-net", 0, "stop at the first step with network use above this percentage of link speed (0: off)")
	fl.DurationVar(&f.confirm, "confirm", 0, "rerun each target's last passing step for this long to confirm its capacity (0: off)")
}

// ramp builds a RampConfig from both flag sets.
func buildRamp(cmd *cobra.Command, a *app, lf *loadFlags, rf *rampFlags, title string) (bench.RampConfig, error) {
	targets, err := parseTargets(lf.targets)
	if err != nil {
		return bench.RampConfig{}, err
	}
	steps, err := bench.ParseSteps(rf.threads, rf.step, rf.maxThreads)
	if err != nil {
		return bench.RampConfig{}, err
	}
	schema, err := lf.schema()
	if err != nil {
		return bench.RampConfig{}, err
	}
	stop := bench.StopConditions{P90: rf.stopP90, P99: rf.stopP99, MinSuccess: rf.stopSuccess,
		CPU: rf.stopCPU, Mem: rf.stopMem, IOWait: rf.stopIOWait, Net: rf.stopNet}
	if err := stop.Validate(); err != nil {
		return bench.RampConfig{}, err
	}
	mon, err := lf.monitor(targets)
	if err != nil {
		return bench.RampConfig{}, err
	}
	if _, err := bench.NewWorkload(lf.workload, schema); err != nil {
		return bench.RampConfig{}, err
	}
	out := cmd.OutOrStdout()
	return bench.RampConfig{
		Title: title, Targets: targets, Workload: lf.workload, Schema: schema,
		Steps: steps, Warmup: lf.warmup, StepDuration: rf.stepDuration, ConnectPerTx: lf.connectPerTx,
		ErrorPause: lf.errorPause, ServerDSN: lf.serverDSN, Stop: stop, Confirm: rf.confirm, Monitor: mon,
		Out: out, Interactive: isTerminal(out), Logger: a.log,
	}, nil
}

// finish prints the report's tables and writes its files; runErr is the
// run's own error (Ctrl-C: what was measured is still written).
func finish(cmd *cobra.Command, rep *bench.Report, outDir string, runErr error) error {
	out := cmd.OutOrStdout()
	if rep == nil {
		return runErr
	}
	if len(rep.Comparisons) > 0 {
		fmt.Fprintf(out, "\nbefore/after (ratio = second/first):\n")
		if err := bench.RenderTable(out, rep.Comparisons); err != nil {
			return errors.Join(runErr, err)
		}
	}
	for _, c := range rep.Capacity {
		fmt.Fprintf(out, "capacity %s: %d clients (%d passing steps)", c.Target, c.Clients, c.PassedSteps)
		if c.StoppedBy != "" {
			fmt.Fprintf(out, ", stopped by %s", c.StoppedBy)
		}
		if c.Confirmed {
			fmt.Fprint(out, ", confirmed")
		}
		fmt.Fprintln(out)
	}
	if rep.Sweep != nil {
		fmt.Fprintf(out, "recommendation: %s\n", rep.Sweep.Recommendation)
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(out, n)
	}
	if outDir != "" && (len(rep.Steps) > 0 || rep.Soak != nil) {
		results, summary, err := rep.WriteFiles(outDir)
		if err != nil {
			return errors.Join(runErr, err)
		}
		fmt.Fprintf(out, "\nresults: %s\nsummary: %s\nreport:  %s\n", results, summary, strings.TrimSuffix(summary, bench.SummaryFile)+bench.HTMLFile)
	}
	return runErr
}

// shardFlags make a load command one part of a distributed run.
type shardFlags struct {
	shard          string
	barrier        string
	barrierTimeout time.Duration
}

func (f *shardFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.shard, "shard", "", "I/N: run shard I (0-based) of N: its share of each step's clients; combine the shards' --out directories with tpbench merge")
	fl.StringVar(&f.barrier, "barrier", "", "HOST:PORT where shard 0 listens and the other shards connect, so that every step starts on all shards at once")
	fl.DurationVar(&f.barrierTimeout, "barrier-timeout", 2*time.Minute, "how long a shard waits at the barrier for the others")
}

// apply sets cfg.Shard from the flags (none: not sharded).
func (f *shardFlags) apply(cfg *bench.RampConfig) error {
	if f.shard == "" {
		if f.barrier != "" {
			return errors.New("--barrier needs --shard I/N")
		}
		return nil
	}
	s, err := bench.ParseShard(f.shard)
	if err != nil {
		return err
	}
	s.Barrier, s.BarrierTimeout = f.barrier, f.barrierTimeout
	cfg.Shard = &s
	return nil
}

// refuse rejects --shard on a command that cannot be split.
func (f *shardFlags) refuse(command, why string) error {
	if f.shard != "" || f.barrier != "" {
		return fmt.Errorf("%s does not take --shard or --barrier: %s; shard tpbench compare instead", command, why)
	}
	return nil
}
