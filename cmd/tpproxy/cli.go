package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tpproxy/tpproxy/internal/config"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // invalid configuration, or the proxy failed
	exitUsage   = 2 // unknown command or flag, missing --config
)

// configHelp is shared by the commands that read a configuration.
const configHelp = `Settings are applied in this order, each overriding the one before:
built-in defaults, the YAML file given by --config, environment variables,
then the flags below.

Every key can be set from the environment as TPPROXY_ followed by the key in
upper case with '.' replaced by '_', for example
  TPPROXY_BACKEND_ADDR=db:3306  TPPROXY_BACKEND_POOL_SIZE=32
  TPPROXY_LOG_LEVEL=debug       TPPROXY_BACKEND_TLS_MODE=required
except the users list, which can only be set in the file. A TPPROXY_
variable that names no key is an error, as is an unknown key in the file.`

// buildInfo is what the linker and the Go toolchain tell about this binary.
type buildInfo struct {
	version, commit string
	// read defaults to debug.ReadBuildInfo.
	read func() (*debug.BuildInfo, bool)
}

// commandError is a failure after the command started, as opposed to a usage
// error cobra reports before running it.
type commandError struct {
	err      error
	reported bool // the problems were already printed
}

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// run executes the command line args and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, env []string, build buildInfo) int {
	root := newRootCommand(stdout, stderr, env, build)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ce *commandError
	if errors.As(err, &ce) {
		if !ce.reported {
			fmt.Fprintf(stderr, "tpproxy: %v\n", ce.err)
		}
		return exitFailure
	}
	fmt.Fprintf(stderr, "tpproxy: %v\nRun 'tpproxy --help' for usage.\n", err)
	return exitUsage
}

func newRootCommand(stdout, stderr io.Writer, env []string, build buildInfo) *cobra.Command {
	root := &cobra.Command{
		Use:           "tpproxy",
		Short:         "MySQL-protocol proxy with a server-style thread pool",
		Version:       versionLine(build),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		newServeCommand(stderr, env, build),
		newCheckConfigCommand(stdout, stderr, env),
		newVersionCommand(stdout, build),
	)
	return root
}

func newServeCommand(stderr io.Writer, env []string, build buildInfo) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve --config FILE",
		Short: "Run the proxy",
		Long:  "Run the proxy until SIGINT or SIGTERM.\n\n" + configHelp,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, _ := cmd.Flags().GetString("config")
			cfg, err := loadConfig(path, cmd.Flags(), env)
			if err != nil {
				printProblems(stderr, path, err)
				return &commandError{err: err, reported: true}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// After the first signal, restore the default handling so a
			// second one kills a shutdown that hangs.
			context.AfterFunc(ctx, stop)

			level := new(slog.LevelVar)
			log := newLeveledLogger(cfg.Log, level, stderr)
			rl := newReloader(path, cmd.Flags(), env, cfg, log, level)
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			watchDone := make(chan struct{})
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				rl.watch(hup, cfg.WatchConfig, watchDone)
			}()
			defer func() { close(watchDone); <-watched }()

			takeover, _ := cmd.Flags().GetBool("takeover")
			err = runServe(ctx, cfg, log, rl, build, serveOptions{adaptiveProcs: defaultProcs(log), takeover: takeover})
			if err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
				return &commandError{err: err}
			}
			return nil
		},
	}
	addConfigFlags(cmd.Flags())
	cmd.Flags().Bool("takeover", false, "take over the listening sockets of the tpproxy serving on upgrade_socket, which then drains and exits (zero-downtime upgrade)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func newCheckConfigCommand(stdout, stderr io.Writer, env []string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check-config --config FILE",
		Short: "Validate a configuration file and exit",
		Long: "Load the configuration exactly as serve would, print every problem,\n" +
			"one per line, and exit 1; or print a summary and exit 0.\n\n" + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, _ := cmd.Flags().GetString("config")
			cfg, err := loadConfig(path, cmd.Flags(), env)
			if err != nil {
				printProblems(stderr, path, err)
				return &commandError{err: err, reported: true}
			}
			fmt.Fprintf(stdout, "config OK: %s\n", path)
			fmt.Fprintf(stdout, "  listen:  %s\n", cfg.Listen)
			fmt.Fprintf(stdout, "  backend: %s (pool_size %s)\n", cfg.Backend.Addr, poolSizeText(cfg.Backend))
			fmt.Fprintf(stdout, "  users:   %d (identity %s)\n", len(cfg.Users), cfg.Backend.Identity)
			return nil
		},
	}
	addConfigFlags(cmd.Flags())
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func newVersionCommand(stdout io.Writer, build buildInfo) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(stdout, versionLine(build))
			return err
		},
	}
}

// printProblems writes each configuration problem on its own line, then
// which file they concern and how many there are.
func printProblems(w io.Writer, path string, err error) {
	problems := config.Errors(err)
	for _, p := range problems {
		fmt.Fprintln(w, p)
	}
	plural := "s"
	if len(problems) == 1 {
		plural = ""
	}
	fmt.Fprintf(w, "%s: invalid configuration (%d problem%s)\n", path, len(problems), plural)
}

// newLeveledLogger builds the process logger on w with its level in level,
// which a reload can change.
func newLeveledLogger(l config.Log, level *slog.LevelVar, w io.Writer) *slog.Logger {
	level.Set(slogLevel(l.Level))
	opts := &slog.HandlerOptions{Level: level}
	if l.Format == config.LogFormatJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// slogLevel maps a validated log.level onto slog's.
func slogLevel(s string) slog.Level {
	switch s {
	case config.LogLevelDebug:
		return slog.LevelDebug
	case config.LogLevelWarn:
		return slog.LevelWarn
	case config.LogLevelError:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// versionLine formats "tpproxy <version> (commit <c>, <go version>)". Values
// not set at link time come from the build info the Go toolchain embeds.
func versionLine(b buildInfo) string {
	version, commit := b.version, b.commit
	read := b.read
	if read == nil {
		read = debug.ReadBuildInfo
	}
	if bi, ok := read(); ok {
		if version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		if commit == "unknown" {
			var rev, dirty string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					if s.Value == "true" {
						dirty = "-dirty"
					}
				}
			}
			if rev != "" {
				commit = rev + dirty
			}
		}
	}
	return fmt.Sprintf("tpproxy %s (commit %s, %s)", version, commit, runtime.Version())
}
