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
		sf shardFlags
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

Ctrl-C ends the run and writes what was measured so far.

From several load hosts: run one process per host with --shard I/N (each runs
its share of every step's clients) and --barrier HOST:PORT of shard 0 (which
listens there; every step starts on all shards at once), each with its own
--out; then tpbench merge DIR... combines them. Stop conditions are applied
by the merge, on the merged steps: every shard runs every step.

  tpbench compare --shard 1/3 --barrier loadhost0:7070 --target ... --out shard1/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := buildRamp(cmd, a, &lf, &rf, "tpbench compare")
			if err != nil {
				return err
			}
			if err := sf.apply(&cfg); err != nil {
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
	sf.register(cmd)
	return cmd
}

func newSweepCmd(a *app) *cobra.Command {
	var (
		lf       loadFlags
		rf       rampFlags
		params   []string
		baseline string
		sf       shardFlags
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
			if err := sf.refuse("sweep", "it changes one proxy's settings between ramps"); err != nil {
				return err
			}
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
	sf.register(cmd)
	return cmd
}

func newSoakCmd(a *app) *cobra.Command {
	var (
		lf                loadFlags
		threads, spikeTh  int
		duration, sample  time.Duration
		spikeAt, spikeDur time.Duration
		sf                shardFlags
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
			if err := sf.refuse("soak", "its decay flags need one time series"); err != nil {
				return err
			}
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
	sf.register(cmd)
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

func newMergeCmd(*app) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge DIR... --out DIR",
		Short: "Merge the results of tpbench compare --shard I/N runs into one report",
		Long: `Read DIR/results.json of every shard of a distributed run (tpbench compare
--shard I/N, any order) and write the whole run's results.json, results.csv,
summary.md and report.html to --out. Per step, clients, transactions,
queries and errors are summed; TPS and QPS are the sums over the union of the
shards' holds (the largest start skew between shards is reported); latency
percentiles come from the merged HDR histograms. Client CPU is summed, host
figures are the busiest shard's, server and tpproxy figures shard 0's. The
stop conditions are applied here. Parts of different runs (another shard
count, workload or step list, a missing or repeated shard) are refused.

  tpbench merge shard0/ shard1/ shard2/ --out merged/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("merge needs --out DIR")
			}
			var parts []*bench.Report
			for _, dir := range args {
				rep, err := bench.ReadReport(filepath.Join(dir, bench.ResultsFile))
				if err != nil {
					return err
				}
				parts = append(parts, rep)
			}
			rep, err := bench.Merge(parts)
			if err != nil {
				return err
			}
			rep.Merged.Sources = make([]string, len(parts))
			for i, p := range parts {
				rep.Merged.Sources[p.Shard.Index] = args[i]
			}
			return finish(cmd, rep, out, nil)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the merged results.json, results.csv, summary.md and report.html to this directory")
	return cmd
}
