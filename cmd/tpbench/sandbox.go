package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tpproxy/tpproxy/internal/sandbox"
)

// defaultSandboxDir is relative to the working directory, so that each
// checkout (and each benchmark directory) has its own sandbox and nothing
// lands in a shared $TMPDIR.
const defaultSandboxDir = ".tpbench/sandbox"

// stateFileName is the sandbox state inside --dir, next to data/ and tmp/.
const stateFileName = "sandbox.json"

func newSandboxCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run a private MySQL/MariaDB server for benchmarks and the demo",
		Long: `Run a private MySQL/MariaDB server for benchmarks and the demo.

The server keeps its datadir in DIR/data and its state in DIR/` + stateFileName + `;
DIR defaults to ` + defaultSandboxDir + ` under the current directory. It listens on
127.0.0.1 only. The server binary is --binary, else $` + sandbox.EnvBinary + `, else
mariadbd or mysqld from PATH, /usr/sbin, /usr/libexec or /usr/local/mysql/bin.`,
	}
	cmd.AddCommand(
		newSandboxUpCmd(a),
		newSandboxStatusCmd(a),
		newSandboxDownCmd(a),
	)
	return cmd
}

// addDirFlag adds --dir to a sandbox subcommand.
func addDirFlag(cmd *cobra.Command, dir *string) {
	cmd.Flags().StringVar(dir, "dir", defaultSandboxDir, "sandbox directory (datadir, tmpdir and state file)")
}

// statePath returns the absolute dir and its state file.
func statePath(dir string) (string, string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", fmt.Errorf("--dir: %w", err)
	}
	return abs, filepath.Join(abs, stateFileName), nil
}

// printServer writes where the server is and how to reach it.
func printServer(w io.Writer, srv *sandbox.Server, dir, user, password, database string) {
	client := "mysql"
	if srv.Flavor == sandbox.MariaDB {
		client = "mariadb"
	}
	fmt.Fprintf(w, "  pid:      %d\n", srv.PID)
	fmt.Fprintf(w, "  address:  %s\n", srv.Addr)
	fmt.Fprintf(w, "  version:  %s\n", srv.Version)
	fmt.Fprintf(w, "  datadir:  %s\n", srv.DataDir)
	fmt.Fprintf(w, "  socket:   %s\n", srv.Socket)
	fmt.Fprintf(w, "  root DSN: %s\n", srv.RootDSN(""))
	fmt.Fprintf(w, "  root cli: %s\n", clientLine(client, srv, "root", "", ""))
	if user != "" {
		fmt.Fprintf(w, "  app DSN:  %s\n", srv.DSN(user, password, database))
		fmt.Fprintf(w, "  app cli:  %s\n", clientLine(client, srv, user, password, database))
	}
	fmt.Fprintf(w, "  stop:     tpbench sandbox down --dir %s\n", shellQuote(dir))
}

// clientLine is a ready-to-paste mysql/mariadb command line over TCP. The
// root line relies on root having no password unless --root-password was
// given (then the client prompts for it with -p).
func clientLine(client string, srv *sandbox.Server, user, password, database string) string {
	parts := []string{client, "-h", "127.0.0.1", "-P", fmt.Sprint(srv.Port), "-u", shellQuote(user)}
	if password != "" {
		parts = append(parts, shellQuote("-p"+password))
	}
	if database != "" {
		parts = append(parts, shellQuote(database))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	unsafe := func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r))
	}
	if s != "" && strings.IndexFunc(s, unsafe) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
