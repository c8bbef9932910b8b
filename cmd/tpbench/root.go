package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"
)

// app is what all tpbench commands share. Commands receive it when they
// are built and read it when they run, after the root's PersistentPreRunE
// has filled it in. (A subcommand with its own PersistentPreRun(E) would
// replace the root's: use PreRunE there.)
type app struct {
	logLevel string
	log      *slog.Logger
}

// newRootCmd builds the tpbench command tree. A new command is one
// constructor taking *app and one line in AddCommand.
func newRootCmd() *cobra.Command {
	a := &app{}
	root := &cobra.Command{
		Use:           "tpbench",
		Short:         "Benchmark MySQL/MariaDB directly and through tpproxy",
		SilenceUsage:  true,
		SilenceErrors: true, // main prints the error once
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.setup(cmd)
		},
	}
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(
		newSandboxCmd(a),
		newDemoCmd(a),
		newPeersCmd(a),
		newCompareCmd(a),
		newSweepCmd(a),
		newSoakCmd(a),
		newReportCmd(a),
		newMergeCmd(a),
		newPrepareCmd(a),
		newCleanupCmd(a),
		newIdleCmd(a),
	)
	return root
}

// setup builds the logger; logs go to the command's stderr so that stdout
// carries only results.
func (a *app) setup(cmd *cobra.Command) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: %w", a.logLevel, err)
	}
	a.log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	return nil
}
