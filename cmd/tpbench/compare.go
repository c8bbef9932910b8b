package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpproxy/tpproxy/bench"
)

// compareFlags are the flags of `tpbench compare`.
type compareFlags struct {
	targets      []string
	workload     string
	psMode       string
	tables       int
	tableSize    int
	threads      string
	step         int
	maxThreads   int
	warmup       time.Duration
	stepDuration time.Duration
	stopP90      time.Duration
	stopP99      time.Duration
	stopSuccess  float64
	serverDSN    string
	out          string
}

func newCompareCmd(a *app) *cobra.Command {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare --target NAME=DSN [--target NAME=DSN ...]",
		Short: "Run the same stepped load on several targets and compare them",
		Long: `Run a stepped load on each target: every step runs on all targets in turn
(direct, proxy, direct, proxy, ...) before the next step, so that the machine's
drift affects them alike. A target that breaks a stop condition sits out the
remaining steps. With two or more targets the later ones are compared with the
first. The sysbench tables must exist (sysbench prepare, or the same --tables and
--table-size as when they were loaded).

  tpbench compare --target direct='root@tcp(127.0.0.1:3306)/sbtest' \
    --target proxy='root@tcp(127.0.0.1:6033)/sbtest' \
    --workload oltp_read_write --threads 40 --step 40 --max-threads 400 \
    --step-duration 60s --stop-p90 100ms --stop-success 99.99 --out results/

Ctrl-C ends the run and writes what was measured so far.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCompare(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.targets, "target", nil, "NAME=DSN (go-sql-driver DSN with the sysbench database); repeat for each target")
	fl.StringVar(&f.workload, "workload", "oltp_point_select", "workload: "+strings.Join(bench.WorkloadNames(), ", "))
	fl.StringVar(&f.psMode, "ps-mode", "auto", "auto: server-side prepared statements, prepared once per connection (sysbench's default); disable: text protocol")
	fl.IntVar(&f.tables, "tables", 4, "sysbench tables (sbtest1..N)")
	fl.IntVar(&f.tableSize, "table-size", 10000, "rows per table")
	fl.StringVar(&f.threads, "threads", "8", "client counts: a list (8,64,512) or the start of a ramp with --step and --max-threads")
	fl.IntVar(&f.step, "step", 0, "clients added per step")
	fl.IntVar(&f.maxThreads, "max-threads", 0, "last step's clients")
	fl.DurationVar(&f.warmup, "warmup", 5*time.Second, "unmeasured load before each step (0: none)")
	fl.DurationVar(&f.stepDuration, "step-duration", 30*time.Second, "measured time of each step")
	fl.DurationVar(&f.stopP90, "stop-p90", 0, "stop a target at the first step whose p90 latency exceeds this (0: off)")
	fl.DurationVar(&f.stopP99, "stop-p99", 0, "stop a target at the first step whose p99 latency exceeds this (0: off)")
	fl.Float64Var(&f.stopSuccess, "stop-success", 0, "stop a target at the first step with a lower success percentage (0: off)")
	fl.StringVar(&f.serverDSN, "server-dsn", "", "DSN for SHOW GLOBAL STATUS on the database server (optional)")
	fl.StringVar(&f.out, "out", "", "write results.json and summary.md to this directory")
	return cmd
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

func runCompare(cmd *cobra.Command, a *app, f compareFlags) error {
	targets, err := parseTargets(f.targets)
	if err != nil {
		return err
	}
	steps, err := bench.ParseSteps(f.threads, f.step, f.maxThreads)
	if err != nil {
		return err
	}
	if f.psMode != "auto" && f.psMode != "disable" {
		return fmt.Errorf("--ps-mode %q: want auto or disable", f.psMode)
	}
	if f.stopSuccess < 0 || f.stopSuccess > 100 || f.stopP90 < 0 || f.stopP99 < 0 {
		return errors.New("--stop-success must be 0..100 and --stop-p90/--stop-p99 not negative")
	}
	out := cmd.OutOrStdout()
	rep, runErr := bench.Ramp(cmd.Context(), bench.RampConfig{
		Targets: targets, Workload: f.workload,
		Schema: bench.Schema{Tables: f.tables, TableSize: f.tableSize, Prepared: f.psMode == "auto"},
		Steps:  steps, Warmup: f.warmup, StepDuration: f.stepDuration, ServerDSN: f.serverDSN,
		Stop: bench.StopConditions{P90: f.stopP90, P99: f.stopP99, MinSuccess: f.stopSuccess},
		Out:  out, Interactive: isTerminal(out), Logger: a.log,
	})
	if rep == nil {
		return fmt.Errorf("compare: %w", runErr)
	}
	if len(rep.Comparisons) > 0 {
		fmt.Fprintf(out, "\n%s vs %s (ratio = second/first):\n", targets[0].Name, strings.Join(targetNames(targets[1:]), ", "))
		if err := bench.RenderTable(out, rep.Comparisons); err != nil {
			return err
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(out, n)
	}
	if f.out != "" && len(rep.Steps) > 0 {
		results, summary, err := rep.WriteFiles(f.out)
		if err != nil {
			return errors.Join(runErr, err)
		}
		fmt.Fprintf(out, "\nresults: %s\nsummary: %s\n", results, summary)
	}
	if runErr != nil {
		return fmt.Errorf("compare: %w", runErr)
	}
	return nil
}

func targetNames(ts []bench.Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}
