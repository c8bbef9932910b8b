package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpproxy/tpproxy/internal/sandbox"
)

// sandboxUpFlags are the flags of `tpbench sandbox up`.
type sandboxUpFlags struct {
	dir          string
	port         int
	binary       string
	options      []string
	user         string
	password     string
	database     string
	rootPassword string
	startTimeout time.Duration
}

func newSandboxUpCmd(a *app) *cobra.Command {
	var f sandboxUpFlags
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a persistent sandbox server (no-op if one runs in --dir)",
		Long: `Start a persistent sandbox server and leave it running.

It creates the --user account (all privileges, from any host) and the --database,
saves its state in DIR/` + stateFileName + ` and prints the address, DSNs and client
command lines. If a sandbox already runs in DIR, up says so, makes sure the user
and database exist, and exits 0. A datadir left in DIR by a crashed sandbox is
reused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSandboxUp(cmd, a, f)
		},
	}
	addDirFlag(cmd, &f.dir)
	fl := cmd.Flags()
	fl.IntVar(&f.port, "port", 0, "TCP port on 127.0.0.1 (0: pick a free one)")
	fl.StringVar(&f.binary, "binary", "", "server binary (default: $"+sandbox.EnvBinary+", else mariadbd/mysqld from PATH and sbin dirs)")
	fl.StringArrayVar(&f.options, "option", nil, "extra server option K=V for the [mysqld] group (repeatable), e.g. --option max_connections=3000")
	fl.StringVar(&f.user, "user", "app", "application user to create (empty: none)")
	fl.StringVar(&f.password, "password", "secret", "password of --user")
	fl.StringVar(&f.database, "database", "sbtest", "database to create (empty: none)")
	fl.StringVar(&f.rootPassword, "root-password", "", "password for root (default: none)")
	fl.DurationVar(&f.startTimeout, "start-timeout", sandbox.DefaultStartTimeout, "bound for initialising and starting the server")
	return cmd
}

func runSandboxUp(cmd *cobra.Command, a *app, f sandboxUpFlags) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	dir, state, err := statePath(f.dir)
	if err != nil {
		return err
	}

	srv, err := sandbox.Load(state)
	switch {
	case err == nil && srv.Alive():
		if err := ensureUserAndDatabase(cmd, srv, f); err != nil {
			return err
		}
		fmt.Fprintf(out, "sandbox already running in %s\n", dir)
		printServer(out, srv, dir, f.user, f.password, f.database)
		return nil
	case err == nil:
		a.log.Warn("removing state of a sandbox that is no longer running", "state", state, "pid", srv.PID)
		if err := os.Remove(state); err != nil {
			return fmt.Errorf("remove stale state: %w", err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}

	srv, err = sandbox.Start(ctx, sandbox.Options{
		Binary:        f.binary,
		BaseDir:       dir,
		Port:          f.port,
		ServerOptions: f.options,
		StartTimeout:  f.startTimeout,
		Logger:        a.log,
		RootPassword:  f.rootPassword,
		Detach:        true,
	})
	if err != nil {
		return err
	}
	if err := ensureUserAndDatabase(cmd, srv, f); err != nil {
		return stopAfter(cmd, srv, err)
	}
	if err := srv.Save(state); err != nil {
		return stopAfter(cmd, srv, err)
	}
	fmt.Fprintf(out, "sandbox started in %s\n", dir)
	printServer(out, srv, dir, f.user, f.password, f.database)
	return nil
}

func ensureUserAndDatabase(cmd *cobra.Command, srv *sandbox.Server, f sandboxUpFlags) error {
	if f.user != "" {
		if err := srv.CreateUser(cmd.Context(), f.user, f.password); err != nil {
			return fmt.Errorf("create user %s: %w", f.user, err)
		}
	}
	if f.database != "" {
		if err := srv.CreateDatabase(cmd.Context(), f.database); err != nil {
			return fmt.Errorf("create database %s: %w", f.database, err)
		}
	}
	return nil
}

// stopAfter stops a server that up cannot hand over, keeping cause as the
// error. The stop is not bound to the command's context, which may be the
// reason for giving up.
func stopAfter(cmd *cobra.Command, srv *sandbox.Server, cause error) error {
	if err := srv.Stop(context.WithoutCancel(cmd.Context())); err != nil {
		return errors.Join(cause, fmt.Errorf("stop sandbox: %w", err))
	}
	return cause
}
