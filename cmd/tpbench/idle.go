package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpproxy/tpproxy/bench"
)

// newIdleCmd builds "tpbench idle": a crowd of idle sessions held open
// (what an idle-memory benchmark puts beside its active clients).
func newIdleCmd(a *app) *cobra.Command {
	var (
		o    bench.IdleOptions
		hold time.Duration
	)
	cmd := &cobra.Command{
		Use:   "idle --dsn DSN [--sessions N] [--hold D]",
		Short: "Hold idle sessions open (every other one runs a statement first) until interrupted",
		Long: `idle opens --sessions connections to --dsn, --workers at a time; every
other one runs SELECT @@version_comment, CONNECTION_ID() first, as a
driver's first queries do. It prints "holding N idle sessions" once all are
open, then holds them until SIGINT or SIGTERM (or for --hold), pings each
one and closes them. The process needs an open-file limit above N.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.DSN == "" {
				return errors.New("--dsn is required")
			}
			if o.Sessions < 1 || o.Workers < 1 {
				return fmt.Errorf("--sessions %d, --workers %d: want at least 1 each", o.Sessions, o.Workers)
			}
			if err := needOpenFiles(uint64(o.Sessions) + 64); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			start := time.Now()
			h, err := bench.HoldIdle(ctx, o)
			if err != nil {
				return err
			}
			defer h.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "holding %d idle sessions (opened in %s)\n", h.Len(), time.Since(start).Round(time.Millisecond))
			if hold > 0 {
				t := time.NewTimer(hold)
				defer t.Stop()
				select {
				case <-ctx.Done():
				case <-t.C:
				}
			} else {
				<-ctx.Done()
			}
			pctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := h.Ping(pctx); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "all %d sessions answered after idling\n", h.Len())
			a.log.Debug("idle sessions closed", "sessions", h.Len())
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.DSN, "dsn", "", "go-sql-driver DSN to connect to, e.g. 'app:secret@tcp(127.0.0.1:6033)/sbtest' (required)")
	fl.IntVar(&o.Sessions, "sessions", 1000, "sessions to hold")
	fl.IntVar(&o.Workers, "workers", 64, "sessions opened at a time")
	fl.DurationVar(&hold, "hold", 0, "hold this long, then ping and close (0: until SIGINT or SIGTERM)")
	return cmd
}

// needOpenFiles fails clearly when the open-file limit (which Go raises
// to the hard limit at start) is below want.
func needOpenFiles(want uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur < want {
		return fmt.Errorf("%d sessions need %d open files; the limit is %d", want-64, want, lim.Cur)
	}
	return nil
}
