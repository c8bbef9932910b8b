package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/tpproxy/tpproxy/internal/sandbox"
)

func newSandboxDownCmd(a *app) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the sandbox in --dir and remove its data (no-op if there is none)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSandboxDown(cmd, a, dir)
		},
	}
	addDirFlag(cmd, &dir)
	return cmd
}

func runSandboxDown(cmd *cobra.Command, a *app, dir string) error {
	dir, state, err := statePath(dir)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	srv, err := sandbox.Load(state)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(out, "no sandbox in %s\n", dir)
		return nil
	}
	if err != nil {
		return err
	}
	wasAlive := srv.Alive()
	if err := srv.Stop(cmd.Context()); err != nil {
		return fmt.Errorf("stop sandbox in %s: %w", dir, err)
	}
	if err := os.Remove(state); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove state: %w", err)
	}
	// DIR itself goes only when nothing else is left in it.
	if err := os.Remove(dir); err != nil {
		a.log.Debug("sandbox dir kept", "dir", dir, "err", err)
	}
	if wasAlive {
		fmt.Fprintf(out, "sandbox in %s stopped (pid %d) and removed\n", dir, srv.PID)
	} else {
		fmt.Fprintf(out, "sandbox in %s was not running; removed its files\n", dir)
	}
	return nil
}
