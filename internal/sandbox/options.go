package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Defaults applied by Start to zero Options fields.
const (
	// DefaultStartTimeout bounds initialising the datadir plus starting the
	// server until it answers a ping.
	DefaultStartTimeout = 60 * time.Second
	// DefaultStopTimeout is how long Stop waits after SIGTERM before it
	// sends SIGKILL.
	DefaultStopTimeout = 30 * time.Second
	// DefaultMaxConnections leaves room for benchmarks that drive 1000+
	// direct client connections.
	DefaultMaxConnections = 4000
	// wantOpenFiles is the open-files-limit asked for, capped by what the
	// process may raise its RLIMIT_NOFILE to.
	wantOpenFiles = 65535
)

// ErrInvalidOptions is wrapped by Options.Validate errors.
var ErrInvalidOptions = errors.New("sandbox: invalid options")

// Options configures Start. The zero value starts a throw-away server in a
// new temporary directory on a free loopback port.
type Options struct {
	// Binary is the server binary (mariadbd or mysqld). Default: Find("").
	Binary string
	// BaseDir is the parent of the datadir (BaseDir/data) and of the
	// server's tmpdir (BaseDir/tmp). Default: a new
	// os.MkdirTemp directory that Stop removes. When BaseDir/data already
	// holds an initialised datadir, Start reuses it instead of initialising.
	// The server's socket lives in the datadir, so BaseDir must be short
	// enough for a Unix socket path (about 90 bytes).
	BaseDir string
	// Port is the TCP port on Host. Default 0: a free port is picked
	// (and picked again if another process takes it first).
	Port int
	// NetNS runs the server in that network namespace (a name under
	// /run/netns, as `ip netns add` makes; root only), through nsenter.
	// Default: this process's namespace.
	NetNS string
	// Host is the address the server binds and DSNs name. Default
	// 127.0.0.1; with NetNS, an address of that namespace (the server then
	// binds all of that namespace's addresses).
	Host string
	// RootHost is the host part of root's TCP account: where root's TCP
	// logins come from. Default 127.0.0.1; with NetNS, the address this
	// process has on the link to it.
	RootHost string
	// ServerOptions are extra option-file lines for the [mysqld] group, such
	// as "max_connections=3000" or "skip-log-bin". A line whose option name
	// matches a default (ignoring -/_ and skip-/disable-/enable-/loose-
	// prefixes) replaces that default. datadir, port, socket, pid-file and
	// log-error are owned by the sandbox and rejected.
	ServerOptions []string
	// StartTimeout bounds initialisation plus startup. Default 60 s.
	StartTimeout time.Duration
	// StopTimeout is how long Stop waits for a clean shutdown before it sends
	// SIGKILL. Default 30 s.
	StopTimeout time.Duration
	// Logger receives progress at debug/info level. Default: discard.
	Logger *slog.Logger
	// KeepDataDir makes Stop (and a failed Start) leave the datadir behind.
	KeepDataDir bool
	// RootPassword is set for root@localhost and root@127.0.0.1. Default
	// empty.
	RootPassword string
	// Detach lets the server outlive the process that started it (used by
	// `tpbench sandbox up`). Without it the server gets SIGTERM when its
	// parent dies (Linux), so a crashed test binary leaves no server behind.
	// The server always runs in its own process group, so a terminal's
	// Ctrl-C does not reach it.
	Detach bool
}

// ownedOptions are set by the sandbox itself; ServerOptions may not change them.
func ownedOptions() []string {
	return []string{"datadir", "port", "socket", "pid_file", "log_error"}
}

// Validate reports option values Start cannot use.
func (o Options) Validate() error {
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("%w: port %d out of range", ErrInvalidOptions, o.Port)
	}
	if strings.ContainsAny(o.NetNS, "/\x00") || strings.HasPrefix(o.NetNS, ".") {
		return fmt.Errorf("%w: network namespace %q is not a name", ErrInvalidOptions, o.NetNS)
	}
	for _, h := range []string{o.Host, o.RootHost} {
		if h != "" && net.ParseIP(h) == nil {
			return fmt.Errorf("%w: %q is not an IP address", ErrInvalidOptions, h)
		}
	}
	if o.StartTimeout < 0 || o.StopTimeout < 0 {
		return fmt.Errorf("%w: negative timeout", ErrInvalidOptions)
	}
	for _, line := range o.ServerOptions {
		key := optionKey(line)
		switch {
		case key == "":
			return fmt.Errorf("%w: empty server option %q", ErrInvalidOptions, line)
		case strings.ContainsAny(line, "\n\r"), strings.HasPrefix(strings.TrimSpace(line), "["):
			return fmt.Errorf("%w: server option %q is not a single option line", ErrInvalidOptions, line)
		}
		for _, owned := range ownedOptions() {
			if key == owned {
				return fmt.Errorf("%w: server option %q is set by the sandbox", ErrInvalidOptions, line)
			}
		}
	}
	return nil
}

// withDefaults returns o with zero fields replaced by their defaults
// (except Binary and BaseDir, which Start resolves).
func (o Options) withDefaults() Options {
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.RootHost == "" {
		o.RootHost = "127.0.0.1"
	}
	return o
}

// layout is where a server keeps its files.
type layout struct {
	dataDir string
	tmpDir  string
	port    int
	host    string
}

func (l layout) optionFile() string { return filepath.Join(l.dataDir, "sandbox.cnf") }
func (l layout) socket() string     { return filepath.Join(l.dataDir, "mysqld.sock") }
func (l layout) pidFile() string    { return filepath.Join(l.dataDir, "mysqld.pid") }
func (l layout) errorLog() string   { return filepath.Join(l.dataDir, "error.log") }

// stdoutFile catches what the server prints before it opens its error log
// (option parsing errors, rlimit warnings).
func (l layout) stdoutFile() string { return filepath.Join(l.dataDir, "server.out") }

// maxSocketPath is sun_path's size on Linux minus the terminating NUL.
const maxSocketPath = 107

// defaultServerOptions are the option-file lines of a fast private server.
func defaultServerOptions(bin binaryInfo, l layout) []string {
	opts := []string{
		"bind-address=" + l.host,
		"port=" + strconv.Itoa(l.port),
		"datadir=" + l.dataDir,
		"socket=" + l.socket(),
		"pid-file=" + l.pidFile(),
		"log-error=" + l.errorLog(),
		"tmpdir=" + l.tmpDir,
		"skip-name-resolve",
		"local-infile=1",
		"max_connections=" + strconv.Itoa(DefaultMaxConnections),
		"open-files-limit=" + strconv.FormatUint(openFilesLimit(), 10),
		"innodb_flush_log_at_trx_commit=2",
		"innodb_buffer_pool_size=256M",
		// A sandbox is thrown away; dumping and loading the buffer pool
		// only slows down stop and start.
		"innodb_buffer_pool_dump_at_shutdown=OFF",
		"innodb_buffer_pool_load_at_startup=OFF",
		"performance_schema=OFF",
		"character-set-server=utf8mb4",
		"collation-server=utf8mb4_general_ci",
	}
	switch bin.flavor {
	case MySQL:
		opts = append(opts,
			"disable-log-bin",
			// X Protocol listens on 33060 by default: two sandboxes would
			// collide, and nothing here uses it.
			"mysqlx=OFF",
		)
		if bin.version.atLeast(8, 4) && !bin.version.atLeast(9, 0) {
			// 8.4 ships mysql_native_password disabled; CreateUser uses it.
			opts = append(opts, "mysql_native_password=ON")
		}
	default:
		opts = append(opts, "skip-log-bin")
	}
	if os.Geteuid() == 0 {
		opts = append(opts, "user=root")
	}
	return opts
}

// openFilesLimit asks for wantOpenFiles unless the hard RLIMIT_NOFILE is
// lower and we cannot raise it (only root may, and not in every container).
func openFilesLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return wantOpenFiles
	}
	if rl.Max != 0 && rl.Max < wantOpenFiles {
		return rl.Max
	}
	return wantOpenFiles
}

// mergeOptions applies extra over defaults: an extra line replaces the
// default with the same key in place; other extras are appended in order.
func mergeOptions(defaults, extra []string) []string {
	out := append([]string(nil), defaults...)
	index := make(map[string]int, len(out))
	for i, line := range out {
		index[optionKey(line)] = i
	}
	for _, line := range extra {
		line = strings.TrimSpace(line)
		k := optionKey(line)
		if i, ok := index[k]; ok {
			out[i] = line
			continue
		}
		index[k] = len(out)
		out = append(out, line)
	}
	return out
}

// optionKey normalises an option line to its option name, so that
// "max-connections=10" matches "max_connections=4000" and "log-bin"
// matches "skip-log-bin".
func optionKey(line string) string {
	k, _, _ := strings.Cut(strings.TrimSpace(line), "=")
	k = strings.TrimLeft(strings.TrimSpace(k), "-")
	k = strings.ReplaceAll(strings.ToLower(k), "-", "_")
	k = strings.TrimPrefix(k, "loose_")
	for _, p := range []string{"skip_", "disable_", "enable_"} {
		if strings.HasPrefix(k, p) {
			k = strings.TrimPrefix(k, p)
			break
		}
	}
	return k
}

// writeOptionFile writes the [mysqld] group.
func writeOptionFile(path string, lines []string) error {
	var b strings.Builder
	b.WriteString("# Generated by tpproxy internal/sandbox; rewritten on every start.\n[mysqld]\n")
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("sandbox: write option file: %w", err)
	}
	return nil
}
