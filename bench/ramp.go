package bench

import (
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
}

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
	// ServerDSN, when set, reads the server's status around each step.
	ServerDSN string
	Stop      StopConditions
	// Out receives a line per step (default io.Discard); Interactive adds
	// a live progress line.
	Out         io.Writer
	Interactive bool
	Logger      *slog.Logger
}

func (c *RampConfig) validate() error {
	switch {
	case len(c.Targets) == 0:
		return fmt.Errorf("%w: no --target", ErrBadRamp)
	case len(c.Steps) == 0:
		return fmt.Errorf("%w: no steps", ErrBadRamp)
	case c.StepDuration <= 0:
		return fmt.Errorf("%w: --step-duration must be positive", ErrBadRamp)
	case c.Warmup < 0:
		return fmt.Errorf("%w: --warmup must not be negative", ErrBadRamp)
	}
	seen := map[string]bool{}
	for _, t := range c.Targets {
		if t.Name == "" || seen[t.Name] {
			return fmt.Errorf("%w: target names must be unique and not empty (%q)", ErrBadRamp, t.Name)
		}
		seen[t.Name] = true
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Title == "" {
		c.Title = "tpbench compare"
	}
	return nil
}

// Ramp runs the steps on every target until a target breaks a stop
// condition (it then sits out the remaining steps) or the steps end. With
// two or more targets the report compares each later target with the
// first. A cancelled ctx ends the ramp with what was measured so far and
// ctx's error.
func Ramp(ctx context.Context, cfg RampConfig) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	wl, err := NewWorkload(cfg.Workload, cfg.Schema)
	if err != nil {
		return nil, err
	}
	rep := &Report{
		Title:   cfg.Title,
		Started: time.Now(),
		Environment: Environment{
			OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
			Tables: cfg.Schema.Tables, TableSize: cfg.Schema.TableSize,
			WarmupSec: cfg.Warmup.Seconds(), DurationSec: cfg.StepDuration.Seconds(),
		},
	}
	stopped := map[string]string{}
	total := len(cfg.Steps) * len(cfg.Targets)
	n := 0
	var runErr error
steps:
	for i, threads := range cfg.Steps {
		for _, t := range cfg.Targets {
			n++
			if stopped[t.Name] != "" {
				continue
			}
			res, err := Run(ctx, Step{
				Target: t, Workload: wl, Threads: threads,
				Duration: cfg.StepDuration, Warmup: cfg.Warmup, ServerDSN: cfg.ServerDSN,
				Seed:     uint64(i+1) << 32, // the same request stream for every target
				Progress: progressLine(cfg.Out, cfg.Interactive, n, total, stepLabel(wl.Name(), threads), t.Name, cfg.Warmup),
				Logger:   cfg.Logger,
			})
			if cfg.Interactive {
				fmt.Fprint(cfg.Out, "\r\033[K")
			}
			if err != nil {
				runErr = err
				break steps
			}
			rep.Steps = append(rep.Steps, res)
			if rep.Environment.ServerVersion == "" && res.Server != nil {
				rep.Environment.ServerVersion = res.Server.Version
			}
			line := fmt.Sprintf("[%d/%d] %s", n, total, resultLine(res))
			if why := cfg.Stop.Check(res); why != "" {
				stopped[t.Name] = why
				line += "  STOP: " + why
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s stopped at %d clients: %s.", t.Name, threads, why))
			}
			fmt.Fprintln(cfg.Out, line)
		}
		if len(stopped) == len(cfg.Targets) {
			break
		}
	}
	for _, t := range cfg.Targets[1:] {
		rep.Comparisons = append(rep.Comparisons, Pair(rep.Steps, cfg.Targets[0].Name, t.Name)...)
	}
	rep.Finished = time.Now()
	return rep, runErr
}
