package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpproxy/tpproxy/bench"
)

func newCompareCmd(a *app) *cobra.Command {
	var (
		lf loadFlags
		rf rampFlags
	)
	cmd := &cobra.Command{
		Use:   "compare --target NAME=DSN [--target NAME=DSN ...]",
		Short: "Run the same stepped load on several targets and compare them",
		Long: `Run a stepped load on each target: every step runs on all targets in turn
(direct, proxy, direct, proxy, ...) before the next step, so that the machine's
drift affects them alike. A target that breaks a stop condition sits out the
remaining steps; --confirm reruns its last passing step. With two or more
targets the later ones are compared with the first. The data must exist
(tpbench prepare with the same --workload, --tables, --schemas, --scale).

  tpbench compare --target direct='root@tcp(127.0.0.1:3306)/sbtest' \
    --target proxy='root@tcp(127.0.0.1:6033)/sbtest' \
    --proxy-admin 'admin:admin@tcp(127.0.0.1:6032)/' \
    --workload oltp_read_write --threads 40 --step 40 --max-threads 400 \
    --step-duration 5m --stop-p90 100ms --stop-success 99.99 --stop-cpu 70 \
    --confirm 5m --out results/

Ctrl-C ends the run and writes what was measured so far.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := buildRamp(cmd, a, &lf, &rf, "tpbench compare")
			if err != nil {
				return err
			}
			rep, runErr := bench.Ramp(cmd.Context(), cfg)
			if runErr != nil {
				runErr = fmt.Errorf("compare: %w", runErr)
			}
			return finish(cmd, rep, lf.out, runErr)
		},
	}
	lf.register(cmd)
	rf.register(cmd)
	return cmd
}

func newSweepCmd(a *app) *cobra.Command {
	var (
		lf       loadFlags
		rf       rampFlags
		params   []string
		baseline string
	)
	cmd := &cobra.Command{
		Use:   "sweep --target proxy=DSN --proxy-admin DSN --param NAME=V1,V2 [--param ...]",
		Short: "Run the ramp for every combination of thread-pool settings and recommend one",
		Long: `For every combination of the --param values, set them on tpproxy through its
admin port (one SET GLOBAL for all), run the ramp on the proxy target, and
recommend the combination with the widest plateau: the most steps passing the
stop conditions, then the highest TPS within them. The settings found at the
start are restored at the end. --baseline runs the ramp once on another target
(the server directly) for comparison.

  tpbench sweep --target proxy='app:pw@tcp(127.0.0.1:6033)/sbtest' \
    --proxy-admin 'admin:admin@tcp(127.0.0.1:6032)/' \
    --param thread_pool_size=1,2,4 --param thread_pool_oversubscribe=1,3 \
    --workload oltp_read_write --threads 64 --step 64 --max-threads 512 \
    --step-duration 1m --stop-p90 100ms --out sweep/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(lf.proxyAdmin) != 1 {
				return fmt.Errorf("sweep needs exactly one --proxy-admin DSN")
			}
			adminDSN := lf.proxyAdmin[0]
			lf.proxyAdmin = nil
			cfg, err := buildRamp(cmd, a, &lf, &rf, "tpbench sweep")
			if err != nil {
				return err
			}
			sc := bench.SweepConfig{Ramp: cfg, AdminDSN: adminDSN}
			for _, p := range params {
				sp, err := bench.ParseParam(p)
				if err != nil {
					return err
				}
				sc.Params = append(sc.Params, sp)
			}
			if baseline != "" {
				ts, err := parseTargets([]string{baseline})
				if err != nil {
					return fmt.Errorf("--baseline: %w", err)
				}
				sc.Baseline = &ts[0]
			}
			rep, runErr := bench.Sweep(cmd.Context(), sc)
			if runErr != nil {
				runErr = fmt.Errorf("sweep: %w", runErr)
			}
			return finish(cmd, rep, lf.out, runErr)
		},
	}
	lf.register(cmd)
	rf.register(cmd)
	fl := cmd.Flags()
	fl.StringArrayVar(&params, "param", nil, "NAME=V1,V2,...: a tpproxy variable and the values to try; repeat for more variables")
	fl.StringVar(&baseline, "baseline", "", "NAME=DSN run once before the sweep for comparison (e.g. direct=...)")
	return cmd
}

func newSoakCmd(a *app) *cobra.Command {
	var (
		lf                loadFlags
		threads, spikeTh  int
		duration, sample  time.Duration
		spikeAt, spikeDur time.Duration
	)
	cmd := &cobra.Command{
		Use:   "soak --target NAME=DSN --duration 12h --threads 52",
		Short: "Hold a stable load for hours, with an optional spike, and flag decay",
		Long: `Hold --threads clients on one target for --duration, sampling TPS, latency,
errors, host CPU and memory, and the local server's and proxy's RSS every
--sample into soak.csv. --spike-threads more clients join at --spike-at for
--spike-duration. At the end the run is flagged for TPS decay, a rising error
rate, and growing server or proxy memory (first quarter vs last quarter).

  tpbench soak --target proxy='app:pw@tcp(127.0.0.1:6033)/sbtest' \
    --workload oltp_read_write --threads 52 --duration 12h --sample 5m \
    --spike-at 6h --spike-threads 200 --spike-duration 5m --out soak/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			targets, err := parseTargets(lf.targets)
			if err != nil {
				return err
			}
			if len(targets) != 1 {
				return fmt.Errorf("soak takes exactly one --target")
			}
			schema, err := lf.schema()
			if err != nil {
				return err
			}
			mon, err := lf.monitor(targets)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			rep, runErr := bench.Soak(cmd.Context(), bench.SoakConfig{
				Target: targets[0], Workload: lf.workload, Schema: schema, Threads: threads,
				Duration: duration, Sample: sample, Warmup: lf.warmup,
				SpikeAt: spikeAt, SpikeThreads: spikeTh, SpikeDuration: spikeDur,
				ConnectPerTx: lf.connectPerTx, ServerDSN: lf.serverDSN, Monitor: mon,
				Out: out, Interactive: isTerminal(out), Logger: a.log,
			})
			if runErr != nil {
				runErr = fmt.Errorf("soak: %w", runErr)
			}
			return finish(cmd, rep, lf.out, runErr)
		},
	}
	lf.register(cmd)
	fl := cmd.Flags()
	fl.IntVar(&threads, "threads", 52, "clients of the stable load")
	fl.DurationVar(&duration, "duration", time.Hour, "length of the soak")
	fl.DurationVar(&sample, "sample", time.Minute, "time-series interval")
	fl.DurationVar(&spikeAt, "spike-at", 0, "when the spike starts (after the warmup)")
	fl.IntVar(&spikeTh, "spike-threads", 0, "extra clients of the spike (0: no spike)")
	fl.DurationVar(&spikeDur, "spike-duration", 5*time.Minute, "length of the spike")
	return cmd
}

func newReportCmd(*app) *cobra.Command {
	return &cobra.Command{
		Use:   "report DIR",
		Short: "Regenerate summary.md, results.csv and report.html from DIR/results.json",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := bench.ReadReport(filepath.Join(args[0], bench.ResultsFile))
			if err != nil {
				return err
			}
			if _, _, err := rep.WriteFiles(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report: %s\n", filepath.Join(args[0], bench.HTMLFile))
			return nil
		},
	}
}
