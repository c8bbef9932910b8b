// Package sandbox starts private MySQL/MariaDB servers for tests, tpbench
// and the demo: a fresh datadir, a generated option file, a loopback port,
// a readiness wait, and Stop that removes it all again.
//
// A server runs as the current OS user (with user=root when that is root),
// listens on 127.0.0.1 only (or, with Options.NetNS, in a network namespace
// of the caller's on that namespace's addresses), and keeps its socket, pid
// file and error log in its datadir. Unix only.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Errors of Start and Stop.
var (
	// ErrInitFailed means initialising the datadir (mariadb-install-db or
	// mysqld --initialize-insecure) failed; the error carries its output.
	ErrInitFailed = errors.New("sandbox: datadir initialisation failed")
	// ErrExited means the server process exited before it accepted
	// connections; the error carries the tail of its error log.
	ErrExited = errors.New("sandbox: server exited during startup")
	// ErrNotReady means the server did not answer a ping within
	// Options.StartTimeout.
	ErrNotReady = errors.New("sandbox: server not ready in time")
	// ErrDataDirInUse means another server process runs on the datadir
	// that Start was asked to reuse.
	ErrDataDirInUse = errors.New("sandbox: datadir in use by a running server")
	// ErrNotRunning means the server's process is gone (Status, Load'ed
	// state of a dead sandbox).
	ErrNotRunning = errors.New("sandbox: server not running")
)

// Server is a running (or stopped) sandbox server. Fields are read-only.
type Server struct {
	// Addr is "<Options.Host>:<port>", "127.0.0.1:<port>" by default.
	Addr string
	// Port is the TCP port.
	Port int
	// DataDir holds the data, option file, socket, pid file and error log.
	DataDir string
	// Socket is the Unix socket path.
	Socket string
	// PID is the server process id.
	PID int
	// Flavor is MariaDB or MySQL.
	Flavor Flavor
	// Version is the server's VERSION().
	Version string

	tmpDir       string // the server's tmpdir, next to DataDir
	binary       string
	rootPassword string
	rootHost     string
	keepDataDir  bool
	removeBase   string // temporary BaseDir that Stop removes too
	stopTimeout  time.Duration
	startedAt    time.Time
	log          *slog.Logger
	// createdDataDir is set when this Start initialised DataDir, so that
	// removing it needs no further proof that it is a sandbox's.
	createdDataDir bool

	// proc and exited are set for an owned child (nil after Load); exited
	// is closed once it has been reaped, and waitErr is valid from then.
	proc    *os.Process
	exited  chan struct{}
	waitErr error

	// stopMu serialises Stop; it is held while the server shuts down.
	stopMu  sync.Mutex
	stopped bool
	stopErr error
}

// Start initialises a datadir (unless BaseDir/data already holds one),
// starts the server and waits until it answers a ping as root over TCP. The
// whole start is bounded by ctx and opts.StartTimeout. If the server exits
// early the error wraps ErrExited and includes the tail of its error log.
// Cancelling ctx after Start returned does not affect the server.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	begin := time.Now()

	bin, err := findBinary(ctx, opts.Binary)
	if err != nil {
		return nil, err
	}
	baseDir, removeBase, err := prepareBaseDir(opts.BaseDir)
	if err != nil {
		return nil, err
	}
	s := &Server{
		DataDir:      filepath.Join(baseDir, "data"),
		Flavor:       bin.flavor,
		binary:       bin.path,
		rootPassword: opts.RootPassword,
		rootHost:     opts.RootHost,
		keepDataDir:  opts.KeepDataDir,
		removeBase:   removeBase,
		stopTimeout:  opts.StopTimeout,
		log:          opts.Logger,
	}
	s.tmpDir = filepath.Join(baseDir, "tmp")
	s.Socket = layout{dataDir: s.DataDir}.socket()
	if len(s.Socket) > maxSocketPath {
		s.cleanup(false)
		return nil, fmt.Errorf("%w: socket path %s is longer than %d bytes; use a shorter BaseDir", ErrInvalidOptions, s.Socket, maxSocketPath)
	}

	fresh, err := needsInit(s.DataDir)
	if err != nil {
		s.cleanup(false)
		return nil, err
	}
	if !fresh {
		if pid := runningPID(s.DataDir); pid != 0 {
			// Not cleanup: everything here belongs to that server.
			return nil, fmt.Errorf("%w: pid %d on %s", ErrDataDirInUse, pid, s.DataDir)
		}
	}
	// Servers sharing /tmp as tmpdir trip over each other's temporary
	// tables (concurrent mariadb-install-db runs fail), so each gets its own.
	if err := os.MkdirAll(s.tmpDir, 0o700); err != nil {
		s.cleanup(fresh)
		return nil, fmt.Errorf("sandbox: tmpdir: %w", err)
	}
	if fresh {
		s.createdDataDir = true
		s.log.Debug("initialising datadir", "datadir", s.DataDir, "binary", bin.path)
		if err := initDataDir(ctx, bin, s.DataDir, s.tmpDir); err != nil {
			s.cleanup(true)
			return nil, err
		}
	}

	// A port picked here can be taken by someone else before the server
	// binds it; then pick again.
	const portAttempts = 3
	for attempt := 1; ; attempt++ {
		port := opts.Port
		if port == 0 {
			if port, err = freePort(); err != nil {
				s.cleanup(fresh)
				return nil, err
			}
		}
		err = s.launch(bin, port, opts)
		if err == nil {
			err = s.waitReady(ctx, fresh)
		}
		if err == nil {
			break
		}
		s.kill()
		if opts.Port == 0 && attempt < portAttempts && errors.Is(err, errPortInUse) {
			s.log.Debug("port taken, retrying", "port", port)
			continue
		}
		s.cleanup(fresh)
		return nil, err
	}

	s.log.Info("sandbox server ready", "addr", s.Addr, "pid", s.PID, "version", s.Version,
		"datadir", s.DataDir, "elapsed", time.Since(begin).Round(time.Millisecond))
	return s, nil
}

// prepareBaseDir returns the absolute base directory, creating it; the
// second result is set when it is a temporary directory of our own.
func prepareBaseDir(dir string) (string, string, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "tpproxy-sandbox-")
		if err != nil {
			return "", "", fmt.Errorf("sandbox: base dir: %w", err)
		}
		return d, d, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", fmt.Errorf("sandbox: base dir: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", "", fmt.Errorf("sandbox: base dir: %w", err)
	}
	return abs, "", nil
}

// needsInit reports whether dataDir must be initialised. An initialised
// datadir (it has the mysql system schema) is reused; a non-empty one that
// is not initialised is refused rather than wiped.
func needsInit(dataDir string) (bool, error) {
	entries, err := os.ReadDir(dataDir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("sandbox: datadir: %w", err)
	case len(entries) == 0:
		return true, nil
	}
	if fi, err := os.Stat(filepath.Join(dataDir, "mysql")); err == nil && fi.IsDir() {
		return false, nil
	}
	return false, fmt.Errorf("%w: %s is neither empty nor an initialised datadir", ErrInvalidOptions, dataDir)
}

// runningPID returns the pid of a live server on dataDir according to its
// pid file, or 0.
func runningPID(dataDir string) int {
	b, err := os.ReadFile(layout{dataDir: dataDir}.pidFile())
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !pidRunning(pid, dataDir) {
		return 0
	}
	return pid
}

// initDataDir creates the system tables with root@localhost and an empty
// password.
func initDataDir(ctx context.Context, bin binaryInfo, dataDir, tmpDir string) error {
	var cmd *exec.Cmd
	switch bin.flavor {
	case MySQL:
		// --initialize wants the datadir absent or empty.
		args := []string{"--no-defaults", "--initialize-insecure", "--datadir=" + dataDir, "--tmpdir=" + tmpDir}
		if os.Geteuid() == 0 {
			args = append(args, "--user=root")
		}
		cmd = exec.CommandContext(ctx, bin.path, args...)
	default:
		script, basedir, err := installScript(bin.path)
		if err != nil {
			return err
		}
		// Options the script does not know (--tmpdir) go to mariadbd.
		args := []string{"--no-defaults", "--datadir=" + dataDir, "--auth-root-authentication-method=normal",
			"--skip-test-db", "--skip-name-resolve", "--tmpdir=" + tmpDir}
		if basedir != "" {
			args = append(args, "--basedir="+basedir)
		}
		if os.Geteuid() == 0 {
			args = append(args, "--user=root")
		}
		cmd = exec.CommandContext(ctx, script, args...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
		}
		return fmt.Errorf("%w: %s: %w\n%s", ErrInitFailed, strings.Join(cmd.Args, " "), err, errorLines(out, 20))
	}
	return nil
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("sandbox: pick port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("sandbox: pick port: %w", err)
	}
	return port, nil
}

// errPortInUse marks an early exit caused by a taken port; Start retries
// with another port when it picked the port itself.
var errPortInUse = errors.New("sandbox: port in use")

// launch writes the option file and starts the server process. It returns
// once the process runs; waitReady does the rest.
func (s *Server) launch(bin binaryInfo, port int, opts Options) error {
	l := layout{dataDir: s.DataDir, tmpDir: s.tmpDir, port: port, host: opts.Host}
	if opts.NetNS != "" {
		// Every address of its namespace: the namespace has only the
		// links that lead to it.
		l.host = "0.0.0.0"
	}
	if err := writeOptionFile(l.optionFile(), mergeOptions(defaultServerOptions(bin, l), opts.ServerOptions)); err != nil {
		return err
	}
	// Old logs would make the tail of a failed start misleading.
	for _, p := range []string{l.errorLog(), l.stdoutFile()} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	out, err := os.OpenFile(l.stdoutFile(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	defer out.Close()

	// Not CommandContext: the server must outlive ctx once started.
	cmd := exec.Command(bin.path, "--defaults-file="+l.optionFile())
	if opts.NetNS != "" {
		// nsenter execs the server: the process keeps its pid.
		cmd = exec.Command("nsenter", "--net="+filepath.Join("/run/netns", opts.NetNS), "--", bin.path, "--defaults-file="+l.optionFile())
	}
	cmd.Dir = s.DataDir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr(opts.Detach)
	s.log.Debug("starting server", "cmd", strings.Join(cmd.Args, " "), "port", port)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("sandbox: start %s: %w", bin.path, err)
	}
	s.Port = port
	s.Addr = net.JoinHostPort(opts.Host, strconv.Itoa(port))
	s.PID = cmd.Process.Pid
	s.proc = cmd.Process
	s.startedAt = time.Now()
	exited := make(chan struct{})
	s.exited = exited
	go func() {
		s.waitErr = cmd.Wait()
		close(exited)
	}()
	return nil
}
