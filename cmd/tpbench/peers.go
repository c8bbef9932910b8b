package main

import (
	"fmt"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpproxy/tpproxy/bench"
)

func newPeersCmd(a *app) *cobra.Command {
	var (
		pf                                proxyFlags
		out, steps, haproxy               string
		baselineBin, baselineName         string
		baselineSet                       []string
		sysbench, psMode                  string
		tables, tableSize                 int
		rounds, poolThreads               int
		duration, warmup                  time.Duration
		network                           string
		unix, countSyscalls, checkTpbench bool
	)
	cmd := &cobra.Command{
		Use:   "peers",
		Short: "Reproduce the comparison table with sysbench: direct, tpproxy, haproxy, MariaDB's thread pool",
		Long: `Start a private sandbox MariaDB (one thread per connection), the tpproxy binary
in front of it, haproxy relaying TCP 1:1 in front of it when installed, and a
second sandbox with thread_handling=pool-of-threads; load the same sysbench
tables into both servers with sysbench prepare; then run sysbench itself
(--db-ps-mode=disable by default) for every step, --rounds times on every target,
interleaved. For each run: TPS, p95, sysbench's ignored errors, and the CPU
per statement of the relay (tpproxy, haproxy) and of the server: utime+stime
from /proc/PID/stat between the end of the warmup and sysbench's final
report, over the statements sysbench reported. Prints a markdown table with
tpproxy's ratios to haproxy, mariadb-pool and direct, and a table of where a
transaction's CPU goes: the whole machine's busy time (/proc/stat) per
transaction split into the relay's user and system time, the server's, the
client's, interrupts (softirq: loopback's network processing) and the rest,
with each process's context switches per statement and, with
--count-syscalls, its system calls per statement (perf stat on the
raw_syscalls:sys_enter tracepoint; root). Writes peers.md and peers.json (plus
tpproxy.yaml, tpproxy.log, haproxy.cfg, haproxy.log) to --out.

--tpbench runs tpbench's own load right after every sysbench run, on the same
target with the same workload, clients, warmup and measured time, and adds a
table of the two tools' TPS side by side with each one's own CPU per
transaction and how many step/target pairs agree within 10%.

--unix-socket adds tpproxy-unix, a second tpproxy with the same settings whose
backend connections use the server's unix socket instead of loopback TCP.

tpproxy is found next to this executable unless --tpproxy-bin; --proxy-set
KEY=VALUE (repeatable), --proxy-config FILE (or $TPBENCH_PROXY_CONFIG) and
$TPPROXY_GOMAXPROCS tune it. scripts/bench-peers.sh builds both binaries and
runs this.

--network 0.2ms runs it over delayed tiers instead of loopback: the servers in
one network namespace, the relays in another, sysbench here, every link
delayed 0.2 ms each way (root only).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			proxy, err := pf.options()
			if err != nil {
				return fmt.Errorf("peers: %w", err)
			}
			cfg := bench.PeersConfig{
				OutDir: out, Proxy: proxy, HAProxy: haproxy, Sysbench: sysbench,
				Baseline: bench.ProxyOptions{Binary: baselineBin}, BaselineName: baselineName, BaselineSet: baselineSet, Unix: unix, CountSyscalls: countSyscalls, Tpbench: checkTpbench,
				Tables: tables, TableSize: tableSize, Rounds: rounds,
				Duration: duration, Warmup: warmup, PSMode: psMode,
				Out: cmd.OutOrStdout(), Interactive: isTerminal(cmd.OutOrStdout()), Logger: a.log,
			}
			if cfg.OutDir == "" {
				cfg.OutDir = "tpbench-peers-" + time.Now().Format("20060102-150405")
			}
			if warmup == 0 {
				cfg.Warmup = -1 // bench: negative means none, zero the default
			}
			cfg.PoolThreads = poolThreads
			if poolThreads == 0 {
				cfg.PoolThreads = -1
			}
			if steps != "" {
				if cfg.Steps, err = bench.ParseDemoSteps(steps); err != nil {
					return err
				}
			}
			nets, err := bench.ParseNetworks(network)
			if err != nil {
				return err
			}
			if len(nets) != 1 {
				return fmt.Errorf("peers: --network %q: one network per run (tpbench demo runs several side by side)", network)
			}
			cfg.Network = nets[0]
			raiseOpenFiles(a)
			if _, err := bench.Peers(cmd.Context(), cfg); err != nil {
				return fmt.Errorf("peers: %w", err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "output directory (default ./tpbench-peers-<timestamp>)")
	fl.StringVar(&steps, "steps", "oltp_point_select/8,oltp_read_write/1000", "WORKLOAD/CLIENTS,... (sysbench oltp_* workloads)")
	fl.IntVar(&rounds, "rounds", 2, "runs of every step on every target, interleaved")
	fl.DurationVar(&duration, "duration", 20*time.Second, "measured time of each run (whole seconds)")
	fl.DurationVar(&warmup, "warmup", 5*time.Second, "warmup before each run, not counted (0: none)")
	fl.IntVar(&tables, "tables", 4, "sysbench tables")
	fl.IntVar(&tableSize, "table-size", 100000, "rows per table")
	fl.StringVar(&psMode, "ps-mode", "disable", "sysbench --db-ps-mode: disable (text queries) or auto")
	fl.StringVar(&sysbench, "sysbench", "", "the sysbench binary (default: sysbench on PATH)")
	fl.IntVar(&poolThreads, "pool-of-threads-size", 2, "thread_pool_size of the mariadb-pool server (0: leave that target out)")
	fl.StringVar(&haproxy, "haproxy", bench.HAProxyAuto, "haproxy target: auto (when installed), on or off")
	fl.StringVar(&baselineBin, "baseline-bin", "", "another tpproxy build to run as a target of its own with the same settings (the before of a before/after)")
	fl.StringVar(&baselineName, "baseline-name", "tpproxy-before", "the --baseline-bin (or --baseline-set) target's name")
	fl.StringArrayVar(&baselineSet, "baseline-set", nil, "KEY=VALUE: an override for the baseline target only, after --proxy-set (repeatable); without --baseline-bin the baseline is this tpproxy build, e.g. --baseline-set backend.pool_size=auto")
	fl.BoolVar(&countSyscalls, "count-syscalls", false, "count each watched process's system calls in the measured window with perf stat (root; perf on PATH) for the cost table")
	fl.BoolVar(&checkTpbench, "tpbench", false, "after every sysbench run, run tpbench's own load the same way on the same target, and compare the two (TPS within 10%, each tool's CPU per transaction)")
	fl.BoolVar(&unix, "unix-socket", false, "add the target tpproxy-unix: a second tpproxy, the same settings, connecting to the server over its unix socket (loopback only)")
	fl.StringVar(&network, "network", "loopback", "loopback, or a one-way delay such as 0.2ms on every link between sysbench, the relays and the servers (network namespaces of their own; root only)")
	pf.register(cmd)
	return cmd
}

// raiseOpenFiles lifts the soft limit on open files to the hard one, for
// the children: sysbench needs one descriptor per client (1,000 and
// more). Go raises its own limit at start but gives children the
// original one unless the program sets it itself.
func raiseOpenFiles(a *app) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		a.log.Warn("open files limit", "err", err)
		return
	}
	rl.Cur = rl.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		a.log.Warn("open files limit", "err", err)
	}
}
