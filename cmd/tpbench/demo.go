package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpproxy/tpproxy/bench"
)

// demoFlags are the flags of `tpbench demo`.
type demoFlags struct {
	out         string
	duration    time.Duration
	warmup      time.Duration
	keep        bool
	dsn         string
	rootDSN     string
	steps       string
	poolThreads int
	haproxy     string
	network     string
	proxy       proxyFlags
}

// proxyFlags configure the tpproxy process of demo and peers.
type proxyFlags struct {
	bin      string
	poolSize int
	set      []string
	config   string
}

func (f *proxyFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.bin, "tpproxy-bin", "", "the tpproxy binary to run (default: tpproxy next to this tpbench executable)")
	fl.IntVar(&f.poolSize, "pool-size", 16, "tpproxy's backend connections (backend.pool_size)")
	fl.StringArrayVar(&f.set, "proxy-set", nil, "KEY=VALUE: a tpproxy configuration override with the file's dotted key, e.g. thread_pool.size=4 (repeatable; passed as TPPROXY_<KEY>)")
	fl.StringVar(&f.config, "proxy-config", os.Getenv("TPBENCH_PROXY_CONFIG"), "a YAML file merged over the generated tpproxy configuration (default $TPBENCH_PROXY_CONFIG)")
}

// options resolves the flags, $TPPROXY_GOMAXPROCS and the binary's
// default place.
func (f *proxyFlags) options() (bench.ProxyOptions, error) {
	o := bench.ProxyOptions{Binary: f.bin, PoolSize: f.poolSize, Set: f.set, ConfigFile: f.config}
	if v := os.Getenv("TPPROXY_GOMAXPROCS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return o, fmt.Errorf("$TPPROXY_GOMAXPROCS %q: want a positive integer", v)
		}
		o.GOMAXPROCS = n
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return o, fmt.Errorf("%w: cannot locate this executable (%w); pass --tpproxy-bin", bench.ErrNoProxyBinary, err)
		}
		o.Binary = filepath.Join(filepath.Dir(exe), "tpproxy")
		if _, err := os.Stat(o.Binary); errors.Is(err, os.ErrNotExist) {
			return o, fmt.Errorf("%w: %s does not exist; build both with `go build -o bin/ ./cmd/...` (scripts/demo.sh does) or pass --tpproxy-bin", bench.ErrNoProxyBinary, o.Binary)
		}
	}
	return o, nil
}

func newDemoCmd(a *app) *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Compare a sandbox server directly, through tpproxy and haproxy, and with MariaDB's thread pool",
		Long: `Start a private sandbox server (one thread per connection), the tpproxy binary
in front of it (its own process, with its admin port), haproxy relaying TCP 1:1
in front of it when installed (--haproxy), and a second sandbox server with
thread_handling=pool-of-threads (mariadb-pool); load the sysbench tables on both
servers, and run each step on every target in turn: oltp_point_select with 8
clients, then oltp_read_write with 8, 64, 256 and 1000. Prints a before/after
table (each target against direct) and writes results.json, results.csv,
summary.md and report.html to --out, with tpproxy.yaml, tpproxy.log,
haproxy.cfg and haproxy.log. The servers are stopped and removed at the end
unless --keep (which keeps the first).

--network loopback,0.2ms runs the whole demo twice into one report: over
loopback, then with the servers and the relays in network namespaces of their
own, every link between the load, the relays and the servers delayed 0.2 ms
each way (a netem qdisc, or where the kernel has none an NFQUEUE delayer; root
only; the second run's targets are named direct@0.2ms, tpproxy@0.2ms, ...). Ctrl-C writes what was measured so far.

tpproxy is found next to this executable unless --tpproxy-bin; --proxy-set,
--proxy-config and $TPPROXY_GOMAXPROCS tune it.

With --dsn the demo uses that server instead (its database gets tables
sbtest1..4, dropped at the end unless --keep; the DSN's account is also the
proxy's login and backend account; there is no mariadb-pool target).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "", "output directory (default ./tpbench-demo-<timestamp>)")
	fl.DurationVar(&f.duration, "duration", 15*time.Second, "measured time of each run")
	fl.DurationVar(&f.warmup, "warmup", 3*time.Second, "warmup before each run (0: none)")
	fl.BoolVar(&f.keep, "keep", false, "leave the sandbox running in "+defaultSandboxDir+" (and the tables in place)")
	fl.StringVar(&f.dsn, "dsn", "", "use this server (go-sql-driver DSN with a database) instead of a sandbox")
	fl.StringVar(&f.rootDSN, "root-dsn", "", "admin DSN for SHOW GLOBAL STATUS (default: sandbox root, or --dsn)")
	fl.StringVar(&f.steps, "steps", "", "WORKLOAD/CLIENTS,... instead of the default steps, e.g. oltp_point_select/8,oltp_read_write/1000")
	fl.IntVar(&f.poolThreads, "pool-of-threads-size", 2, "thread_pool_size of the mariadb-pool server (0: leave that target out)")
	fl.StringVar(&f.haproxy, "haproxy", bench.HAProxyAuto, "haproxy target: auto (when installed), on or off")
	fl.StringVar(&f.network, "network", "loopback", "networks to run the whole demo over, one after the other into one report: loopback, and/or a one-way delay such as 0.2ms "+
		"(servers and relays in network namespaces of their own, every link delayed that much each way; root only), e.g. loopback,0.2ms")
	f.proxy.register(cmd)
	return cmd
}

func runDemo(cmd *cobra.Command, a *app, f demoFlags) error {
	out := cmd.OutOrStdout()
	if f.out == "" {
		f.out = "tpbench-demo-" + time.Now().Format("20060102-150405")
	}
	warmup := f.warmup
	if warmup == 0 {
		warmup = -1 // bench: negative means none, zero the default
	}
	proxy, err := f.proxy.options()
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	poolThreads := f.poolThreads
	if poolThreads == 0 {
		poolThreads = -1 // bench: negative leaves the target out
	}
	cfg := bench.DemoConfig{
		OutDir: f.out, Duration: f.duration, Warmup: warmup,
		DSN: f.dsn, RootDSN: f.rootDSN, Keep: f.keep,
		Proxy: proxy, HAProxy: f.haproxy, PoolThreads: poolThreads,
		Out: out, Interactive: isTerminal(out), Logger: a.log,
	}
	if f.steps != "" {
		if cfg.Steps, err = bench.ParseDemoSteps(f.steps); err != nil {
			return err
		}
	}
	if cfg.Networks, err = bench.ParseNetworks(f.network); err != nil {
		return err
	}
	if f.keep && f.dsn == "" {
		dir, state, err := statePath(defaultSandboxDir)
		if err != nil {
			return err
		}
		cfg.SandboxDir, cfg.StateFile = dir, state
	}
	res, err := bench.Demo(cmd.Context(), cfg)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if res.Kept != nil {
		fmt.Fprintln(out, "\nsandbox kept running:")
		printServer(out, res.Kept, cfg.SandboxDir, bench.DemoUser, bench.DemoPassword, bench.DemoDatabase)
	}
	return nil
}

// isTerminal reports whether w is a terminal, for live progress lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
