package main

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/tpproxy/tpproxy/internal/sandbox"
)

func newSandboxStatusCmd(a *app) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the sandbox in --dir; exit 1 when it is not running",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSandboxStatus(cmd, a, dir)
		},
	}
	addDirFlag(cmd, &dir)
	return cmd
}

func runSandboxStatus(cmd *cobra.Command, a *app, dir string) error {
	dir, state, err := statePath(dir)
	if err != nil {
		return err
	}
	srv, err := sandbox.Load(state)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: no sandbox in %s", sandbox.ErrNotRunning, dir)
	}
	if err != nil {
		return err
	}
	st, err := srv.Status(cmd.Context())
	if err != nil {
		return fmt.Errorf("sandbox in %s: %w", dir, err)
	}
	a.log.Debug("sandbox status", "state", state)
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "sandbox running in %s\n", dir)
	fmt.Fprintf(w, "  pid:               %d\n", st.PID)
	fmt.Fprintf(w, "  address:           %s\n", st.Addr)
	fmt.Fprintf(w, "  version:           %s\n", st.Version)
	fmt.Fprintf(w, "  uptime:            %s\n", st.Uptime)
	fmt.Fprintf(w, "  threads_connected: %d\n", st.ThreadsConnected)
	fmt.Fprintf(w, "  max_connections:   %d\n", st.MaxConnections)
	fmt.Fprintf(w, "  datadir:           %s\n", st.DataDir)
	return nil
}
