package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpproxy/tpproxy/bench"
)

// demoFlags are the flags of `tpbench demo`.
type demoFlags struct {
	out      string
	duration time.Duration
	warmup   time.Duration
	keep     bool
	dsn      string
	rootDSN  string
}

func newDemoCmd(a *app) *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start a sandbox server and tpproxy, and compare direct vs proxy in three to four minutes",
		Long: `Start a private sandbox server (one thread per connection) and tpproxy
(in-process, with its admin port) in front of it, load the sysbench tables,
and run each step directly and through the proxy: oltp_point_select with 8
clients, then oltp_read_write with 8, 64, 256 and 1000. Prints a before/after
table and writes results.json, results.csv, summary.md and report.html to
--out. The sandbox is stopped and removed at the end unless --keep. Ctrl-C
writes what was measured so far.

With --dsn the demo uses that server instead (its database gets tables
sbtest1..4, dropped at the end unless --keep; the DSN's account is also the
proxy's login and backend account).`,
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
	cfg := bench.DemoConfig{
		OutDir: f.out, Duration: f.duration, Warmup: warmup,
		DSN: f.dsn, RootDSN: f.rootDSN, Keep: f.keep,
		Out: out, Interactive: isTerminal(out), Logger: a.log,
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
