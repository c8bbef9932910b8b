package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// ErrBadRamp marks an invalid RampConfig or step list.
var ErrBadRamp = errors.New("bench: invalid ramp")

// StopConditions end a target's ramp at the first step that breaks one,
// as the published capacity tests do (p90 > 100 ms, success < 99.99 %).
// Zero values are off.
type StopConditions struct {
	P90        time.Duration
	P99        time.Duration
	MinSuccess float64 // percent
	// Host limits in percent, checked against StepResult.Host (the local
	// machine or the node_exporter host); a step without host figures
	// passes them.
	CPU    float64
	Mem    float64
	IOWait float64
	Net    float64
}

// Validate rejects thresholds that cannot be met.
func (c StopConditions) Validate() error {
	for _, v := range []struct {
		name string
		pct  float64
	}{{"--stop-success", c.MinSuccess}, {"--stop-cpu", c.CPU}, {"--stop-mem", c.Mem}, {"--stop-iowait", c.IOWait}, {"--stop-net", c.Net}} {
		if v.pct < 0 || v.pct > 100 {
			return fmt.Errorf("%w: %s %g: want a percentage 0..100 (0: off)", ErrBadRamp, v.name, v.pct)
		}
	}
	if c.P90 < 0 || c.P99 < 0 {
		return fmt.Errorf("%w: --stop-p90 and --stop-p99 must not be negative", ErrBadRamp)
	}
	return nil
}

// HostLimits reports whether a host threshold is set (the ramp then needs
// host figures).
func (c StopConditions) HostLimits() bool { return c.CPU > 0 || c.Mem > 0 || c.IOWait > 0 || c.Net > 0 }

// Check returns why r breaks a condition, or "" when it passes.
func (c StopConditions) Check(r StepResult) string {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	switch {
	case c.P90 > 0 && r.Latency.P90 > ms(c.P90):
		return fmt.Sprintf("p90 %.1f ms > %s", r.Latency.P90, c.P90)
	case c.P99 > 0 && r.Latency.P99 > ms(c.P99):
		return fmt.Sprintf("p99 %.1f ms > %s", r.Latency.P99, c.P99)
	case c.MinSuccess > 0 && r.SuccessPct < c.MinSuccess:
		return fmt.Sprintf("success %.3f %% < %g %%", r.SuccessPct, c.MinSuccess)
	case r.Host != nil && c.CPU > 0 && r.Host.CPUBusyPct > c.CPU:
		return fmt.Sprintf("host CPU %.1f %% > %g %%", r.Host.CPUBusyPct, c.CPU)
	case r.Host != nil && c.Mem > 0 && r.Host.MemUsedPct > c.Mem:
		return fmt.Sprintf("host memory %.1f %% > %g %%", r.Host.MemUsedPct, c.Mem)
	case r.Host != nil && c.IOWait > 0 && r.Host.IOWaitPct > c.IOWait:
		return fmt.Sprintf("iowait %.1f %% > %g %%", r.Host.IOWaitPct, c.IOWait)
	case r.Host != nil && c.Net > 0 && r.Host.NetPct > c.Net:
		return fmt.Sprintf("network %.1f %% > %g %%", r.Host.NetPct, c.Net)
	case r.Transactions == 0:
		return "no transaction completed"
	}
	return ""
}

// ParseSteps turns --threads, --step and --max-threads into the client
// counts of a ramp: "8,64,512" is a list; "40" with step 40 and max 200 is
// 40, 80, ..., 200; "40" alone is one step.
func ParseSteps(threads string, step, maxThreads int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(threads, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%w: --threads %q: want positive integers separated by commas", ErrBadRamp, threads)
		}
		out = append(out, n)
	}
	switch {
	case step < 0 || maxThreads < 0:
		return nil, fmt.Errorf("%w: --step and --max-threads must not be negative", ErrBadRamp)
	case step == 0 && maxThreads == 0:
		return out, nil
	case len(out) != 1:
		return nil, fmt.Errorf("%w: --step and --max-threads take a single --threads start value", ErrBadRamp)
	case step == 0 || maxThreads < out[0]:
		return nil, fmt.Errorf("%w: a ramp needs --step > 0 and --max-threads >= --threads", ErrBadRamp)
	}
	for n := out[0] + step; n <= maxThreads; n += step {
		out = append(out, n)
	}
	return out, nil
}

// RampConfig is a stepped load over one or more targets (tpbench
// compare). Every step runs on each target in turn before the next step
// starts, so a machine's drift over time affects the targets alike.
type RampConfig struct {
	Title    string
	Targets  []Target
	Workload string
	Schema   Schema
	// Steps are the client counts, in order.
	Steps []int
	// Warmup precedes each step's hold (0: none).
	Warmup       time.Duration
	StepDuration time.Duration
	// ConnectPerTx opens a connection per transaction (Step.ConnectPerTx).
	ConnectPerTx bool
	// ErrorPause is Step.ErrorPause.
	ErrorPause time.Duration
	// ServerDSN, when set, reads the server's status around each step.
	ServerDSN string
	Stop      StopConditions
	// Confirm, when positive, reruns each target's last passing step for
	// this long once its ramp is over: the capacity holds or it does not.
	Confirm time.Duration
	Monitor MonitorConfig
	// Params label the results (a sweep's settings).
	Params map[string]string
	// Out receives a line per step (default io.Discard); Interactive adds
	// a live progress line.
	Out         io.Writer
	Interactive bool
	Logger      *slog.Logger
	// Shard, when set, runs this process's part of a distributed ramp:
	// its share of each step's clients, every step started at the
	// shards' barrier, stop conditions left to Merge.
	Shard *Shard
}

func (c *RampConfig) validate() error {
	switch {
	case len(c.Targets) == 0:
		return fmt.Errorf("%w: no --target", ErrBadRamp)
	case len(c.Steps) == 0:
		return fmt.Errorf("%w: no steps", ErrBadRamp)
	case c.StepDuration <= 0:
		return fmt.Errorf("%w: --step-duration must be positive", ErrBadRamp)
	case c.Warmup < 0 || c.Confirm < 0:
		return fmt.Errorf("%w: --warmup and --confirm must not be negative", ErrBadRamp)
	}
	if err := c.Stop.Validate(); err != nil {
		return err
	}
	if c.Shard != nil {
		if err := c.Shard.validate(c); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for _, t := range c.Targets {
		if t.Name == "" || seen[t.Name] {
			return fmt.Errorf("%w: target names must be unique and not empty (%q)", ErrBadRamp, t.Name)
		}
		seen[t.Name] = true
	}
	for name := range c.Monitor.ProxyAdmin {
		if !seen[name] {
			return fmt.Errorf("%w: --proxy-admin names target %q, which is not a --target", ErrBadRamp, name)
		}
	}
	for name, pid := range c.Monitor.RelayPID {
		if !seen[name] || pid <= 0 {
			return fmt.Errorf("%w: --relay-pid %s=%d: want the name of a --target and a process id", ErrBadRamp, name, pid)
		}
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Title == "" {
		c.Title = "tpbench compare"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Capacity is a target's outcome in a ramp: the largest client count
// that passed every stop condition, and why the next one did not.
type Capacity struct {
	Target string `json:"target"`
	// Clients is the last passing step's client count (0: none passed).
	Clients int     `json:"clients"`
	TPS     float64 `json:"tps"`
	P90     float64 `json:"p90_ms"`
	// PassedSteps counts the steps that passed.
	PassedSteps int `json:"passed_steps"`
	// StoppedBy is the broken condition; "" when the steps ran out first.
	StoppedBy string `json:"stopped_by,omitempty"`
	// Confirmed is set when a --confirm rerun of the last passing step
	// passed again; ConfirmNote says what the rerun found otherwise.
	Confirmed   bool    `json:"confirmed,omitempty"`
	ConfirmTPS  float64 `json:"confirm_tps,omitempty"`
	ConfirmNote string  `json:"confirm_note,omitempty"`
}

// Ramp runs the steps on every target until a target breaks a stop
// condition (it then sits out the remaining steps) or the steps end, then
// the --confirm reruns. With two or more targets the report compares each
// later target with the first. A cancelled ctx ends the ramp with what was
// measured so far and ctx's error.
func Ramp(ctx context.Context, cfg RampConfig) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	wl, err := NewWorkload(cfg.Workload, cfg.Schema)
	if err != nil {
		return nil, err
	}
	for _, t := range cfg.Targets {
		if err := CheckTarget(ctx, t, wl); err != nil {
			return nil, err
		}
	}
	mon, err := newMonitor(ctx, cfg.Monitor, cfg.ServerDSN, cfg.Targets, cfg.Logger)
	if err != nil {
		return nil, err
	}
	defer mon.close()
	gate, err := joinShards(ctx, cfg.Shard)
	if err != nil {
		return nil, err
	}
	defer gate.close()
	rep := newReport(cfg)
	caps := make([]Capacity, len(cfg.Targets))
	last := make([]*StepResult, len(cfg.Targets)) // last passing step
	total := len(cfg.Steps) * len(cfg.Targets)
	if cfg.Confirm > 0 {
		total += len(cfg.Targets)
	}
	n := 0
	runErr := func() error {
		for i, threads := range cfg.Steps {
			running := 0
			for k, t := range cfg.Targets {
				n++
				if caps[k].StoppedBy != "" {
					continue
				}
				running++
				res, err := runStep(ctx, cfg, wl, mon, t, threads, cfg.StepDuration, uint64(i+1)<<32, n, total, gate)
				if err != nil {
					return err
				}
				res.Params = cfg.Params
				rep.Steps = append(rep.Steps, res)
				line := fmt.Sprintf("[%d/%d] %s", n, total, resultLine(res))
				why := ""
				if cfg.Shard == nil {
					// Every shard runs every step: the stop conditions
					// apply to the merged step (Merge).
					why = cfg.Stop.Check(res)
				}
				if why != "" {
					caps[k].StoppedBy = why
					line += "  STOP: " + why
					rep.Notes = append(rep.Notes, fmt.Sprintf("%s stopped at %d clients: %s.", t.Name, threads, why))
				} else {
					caps[k].PassedSteps++
					last[k] = &rep.Steps[len(rep.Steps)-1]
					caps[k].Clients, caps[k].TPS, caps[k].P90 = threads, res.TPS, res.Latency.P90
				}
				fmt.Fprintln(cfg.Out, line)
			}
			if running == 0 {
				break
			}
		}
		if cfg.Confirm <= 0 {
			return nil
		}
		for k, t := range cfg.Targets {
			n++
			if last[k] == nil {
				caps[k].ConfirmNote = "no passing step to confirm"
				continue
			}
			threads := last[k].Threads
			res, err := runStep(ctx, cfg, wl, mon, t, threads, cfg.Confirm, uint64(len(cfg.Steps)+1)<<32, n, total, nil)
			if err != nil {
				return err
			}
			res.Confirm = true
			res.Params = cfg.Params
			rep.Steps = append(rep.Steps, res)
			line := fmt.Sprintf("[%d/%d] confirm %s", n, total, resultLine(res))
			caps[k].ConfirmTPS = res.TPS
			if why := cfg.Stop.Check(res); why != "" {
				caps[k].ConfirmNote = "confirmation failed: " + why
				line += "  NOT CONFIRMED: " + why
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %d clients not confirmed over %s: %s.", t.Name, threads, cfg.Confirm, why))
			} else {
				caps[k].Confirmed = true
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %d clients confirmed over %s (%.1f TPS).", t.Name, threads, cfg.Confirm, res.TPS))
			}
			fmt.Fprintln(cfg.Out, line)
		}
		return nil
	}()
	for k, t := range cfg.Targets {
		caps[k].Target = t.Name
	}
	if cfg.Shard == nil {
		rep.Capacity = caps
	}
	for _, t := range cfg.Targets[1:] {
		rep.Comparisons = append(rep.Comparisons, Pair(rep.Steps, cfg.Targets[0].Name, t.Name)...)
	}
	for _, s := range rep.Steps {
		if s.Server != nil {
			rep.Environment.ServerVersion = s.Server.Version
			break
		}
	}
	if s := cfg.Shard; s != nil {
		rep.Shard = &ShardInfo{Index: s.Index, Count: s.Count, Steps: cfg.Steps, Stop: cfg.Stop}
		rep.Notes = append(rep.Notes, fmt.Sprintf("Shard %s: this process ran its share of each step's clients; "+
			"tpbench merge combines the shards' results.json and applies the stop conditions.", s))
	}
	rep.Finished = time.Now()
	return rep, runErr
}

// newReport starts a ramp's report.
func newReport(cfg RampConfig) *Report {
	return &Report{
		Title:   cfg.Title,
		Started: time.Now(),
		Environment: Environment{
			OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
			Workload: cfg.Workload, Tables: cfg.Schema.Tables, TableSize: cfg.Schema.TableSize,
			Schemas: max(cfg.Schema.Schemas, 1), Scale: cfg.Schema.Scale, Distribution: string(cfg.Schema.Dist),
			PSMode: psMode(cfg.Schema.Prepared), ConnectPerTx: cfg.ConnectPerTx,
			ErrorPauseMs: float64(cfg.ErrorPause) / float64(time.Millisecond),
			WarmupSec:    cfg.Warmup.Seconds(), DurationSec: cfg.StepDuration.Seconds(),
		},
	}
}

func psMode(prepared bool) string {
	if prepared {
		return "auto"
	}
	return "disable"
}

// runStep runs one step of a ramp with its progress line; threads are
// the whole step's clients, of which a shard runs its share, started at
// gate (nil: at once).
func runStep(ctx context.Context, cfg RampConfig, wl Workload, mon *monitor, t Target, threads int,
	hold time.Duration, seed uint64, n, total int, gate *shardGate) (StepResult, error) {
	var start func(context.Context) error
	if s := cfg.Shard; s != nil {
		seed += uint64(shardFirst(threads, s.Index, s.Count))
		threads = ShardShare(threads, s.Index, s.Count)
		start = gate.next()
	}
	res, err := Run(ctx, Step{
		Target: t, Workload: wl, Threads: threads,
		Duration: hold, Warmup: cfg.Warmup, ServerDSN: cmp.Or(t.ServerDSN, cfg.ServerDSN),
		ConnectPerTx: cfg.ConnectPerTx, ErrorPause: cfg.ErrorPause,
		Seed:     seed, // the same request stream for every target
		Progress: progressLine(cfg.Out, cfg.Interactive, n, total, stepLabel(wl.Name(), threads), t.Name, cfg.Warmup, hold),
		Logger:   cfg.Logger,
		monitor:  mon,
		start:    start,
	})
	if cfg.Interactive {
		fmt.Fprint(cfg.Out, "\r\033[K")
	}
	return res, err
}
