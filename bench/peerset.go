package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/bench/internal/tiers"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

// The names of the targets the demo and tpbench peers compare.
const (
	// TargetDirect is the server itself, one thread per connection.
	TargetDirect = "direct"
	// TargetTpproxy is the tpproxy binary in front of it.
	TargetTpproxy = "tpproxy"
	// TargetHAProxy is haproxy relaying TCP 1:1 in front of it.
	TargetHAProxy = "haproxy"
	// TargetTpproxyUnix is a second tpproxy with the same settings whose
	// backend connections use the server's unix socket (tpbench peers
	// --unix-socket).
	TargetTpproxyUnix = "tpproxy-unix"
	// TargetPool is a second server with MariaDB's thread pool
	// (thread_handling=pool-of-threads) holding the same tables.
	TargetPool = "mariadb-pool"
)

// peerSetConfig configures startPeerSet.
type peerSetConfig struct {
	// Direct is the benchmark account on the server; its user and
	// password are also tpproxy's client and backend account, and the
	// pool server's account.
	Direct *mysql.Config
	// Dir receives the relays' configuration files and logs.
	Dir   string
	Proxy ProxyOptions
	// HAProxy is HAProxyAuto, HAProxyOn or HAProxyOff.
	HAProxy string
	// PoolThreads is the pool server's thread_pool_size; 0 leaves the
	// mariadb-pool target out.
	PoolThreads int
	// Baseline, when its Binary is set, is a second tpproxy (another
	// build: the before of a before/after) run the same way, as the
	// target BaselineName.
	Baseline     ProxyOptions
	BaselineName string
	// Socket, when set, is the server's unix socket: a second tpproxy
	// with Proxy's settings connects to the server over it, as the
	// target TargetTpproxyUnix (loopback only).
	Socket string
	// Tiers, when set, is the network the peers run over: the relays in
	// its proxy namespace, the pool server in its server namespace
	// (where Direct's server runs too). Nil: loopback.
	Tiers  *tiers.Tiers
	Out    io.Writer
	Logger *slog.Logger
}

// peerSet is what the server is compared with: tpproxy and haproxy in
// front of it, and a second sandbox server with MariaDB's thread pool.
type peerSet struct {
	proxy   *proxyProcess
	base    *proxyProcess   // nil: no baseline
	unix    *proxyProcess   // nil: no tpproxy-unix target
	haproxy *haproxyProcess // nil: left out
	pool    *sandbox.Server // nil: left out
	// poolDirect is the benchmark account on pool.
	poolDirect *mysql.Config
	// targets are direct, tpproxy, haproxy and mariadb-pool, those that
	// run.
	targets []Target
	// relayPID names the relays' processes for the monitor.
	relayPID map[string]int
}

// startPeerSet starts tpproxy, haproxy (as cfg.HAProxy says) and the pool
// server. On error whatever started is stopped again.
func startPeerSet(ctx context.Context, cfg peerSetConfig) (_ *peerSet, err error) {
	hap, err := findHAProxy(cfg.HAProxy)
	if err != nil {
		return nil, err
	}
	if err := cfg.Proxy.Validate(); err != nil {
		return nil, err
	}
	ps := &peerSet{relayPID: map[string]int{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, ps.close(ctx))
		}
	}()
	d := cfg.Direct
	ps.targets = []Target{{Name: TargetDirect, DSN: d.FormatDSN()}}
	// The relays' backend: the server's address from where they run.
	backend, at := d.Addr, placement{}
	if t := cfg.Tiers; t != nil {
		_, port, err := net.SplitHostPort(d.Addr)
		if err != nil {
			return nil, fmt.Errorf("bench: server address %q: %w", d.Addr, err)
		}
		backend, at = net.JoinHostPort(t.ServerFromProxy, port), placement{NS: t.ProxyNS, Host: t.ProxyHost}
	}

	ps.proxy, err = startProxyProcess(ctx, cfg.Proxy, cfg.Dir, backend, d.User, d.Passwd, at, cfg.Logger)
	if err != nil {
		return nil, err
	}
	ps.targets = append(ps.targets, Target{Name: TargetTpproxy, DSN: withAddr(d, ps.proxy.Addr)})
	ps.relayPID[TargetTpproxy] = ps.proxy.pid()
	fmt.Fprintf(cfg.Out, "tpproxy %s at %s (pid %d, config %s, log %s)\n", cfg.Proxy.Binary, ps.proxy.Addr, ps.proxy.pid(), ps.proxy.ConfigPath, ps.proxy.logPath)

	if cfg.Baseline.Binary != "" {
		dir := filepath.Join(cfg.Dir, cfg.BaselineName)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		ps.base, err = startProxyProcess(ctx, cfg.Baseline, dir, backend, d.User, d.Passwd, at, cfg.Logger)
		if err != nil {
			return nil, fmt.Errorf("bench: the %s target: %w", cfg.BaselineName, err)
		}
		ps.targets = append(ps.targets, Target{Name: cfg.BaselineName, DSN: withAddr(d, ps.base.Addr)})
		ps.relayPID[cfg.BaselineName] = ps.base.pid()
		fmt.Fprintf(cfg.Out, "%s: tpproxy %s at %s (pid %d, config %s, log %s)\n", cfg.BaselineName, cfg.Baseline.Binary, ps.base.Addr, ps.base.pid(), ps.base.ConfigPath, ps.base.logPath)
	}

	if cfg.Socket != "" {
		if cfg.Tiers != nil {
			return nil, errors.New("bench: the tpproxy-unix target needs the server on this machine's loopback, not over tiers")
		}
		dir := filepath.Join(cfg.Dir, TargetTpproxyUnix)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		ps.unix, err = startProxyProcess(ctx, cfg.Proxy, dir, cfg.Socket, d.User, d.Passwd, at, cfg.Logger)
		if err != nil {
			return nil, fmt.Errorf("bench: the %s target: %w", TargetTpproxyUnix, err)
		}
		ps.targets = append(ps.targets, Target{Name: TargetTpproxyUnix, DSN: withAddr(d, ps.unix.Addr)})
		ps.relayPID[TargetTpproxyUnix] = ps.unix.pid()
		fmt.Fprintf(cfg.Out, "%s: tpproxy at %s, backend %s (pid %d, config %s, log %s)\n", TargetTpproxyUnix, ps.unix.Addr, cfg.Socket, ps.unix.pid(), ps.unix.ConfigPath, ps.unix.logPath)
	}

	if hap != "" {
		ps.haproxy, err = startHAProxy(ctx, hap, cfg.Dir, backend, at, cfg.Logger)
		if err != nil {
			return nil, err
		}
		ps.targets = append(ps.targets, Target{Name: TargetHAProxy, DSN: withAddr(d, ps.haproxy.Addr)})
		ps.relayPID[TargetHAProxy] = ps.haproxy.pid()
		fmt.Fprintf(cfg.Out, "haproxy (TCP, 1:1) at %s (pid %d, log %s)\n", ps.haproxy.Addr, ps.haproxy.pid(), ps.haproxy.logPath)
	}

	if cfg.PoolThreads > 0 {
		opts := sandbox.Options{Logger: cfg.Logger, ServerOptions: []string{
			"thread_handling=pool-of-threads", "thread_pool_size=" + strconv.Itoa(cfg.PoolThreads)}}
		if cfg.Tiers != nil {
			opts = inServerNS(opts, cfg.Tiers)
		}
		var root string
		ps.pool, ps.poolDirect, root, err = startSandbox(ctx, opts, d.User, d.Passwd, d.DBName)
		if err != nil {
			return nil, fmt.Errorf("bench: the mariadb-pool server: %w", err)
		}
		ps.targets = append(ps.targets, Target{Name: TargetPool, DSN: ps.poolDirect.FormatDSN(), ServerDSN: root})
		handling, size, err := threadHandling(ctx, root)
		if err != nil {
			return nil, fmt.Errorf("bench: the mariadb-pool server: %w", err)
		}
		if handling != "pool-of-threads" || size != cfg.PoolThreads {
			return nil, fmt.Errorf("bench: the mariadb-pool server runs thread_handling=%s, thread_pool_size=%d; want pool-of-threads, %d", handling, size, cfg.PoolThreads)
		}
		fmt.Fprintf(cfg.Out, "sandbox server %s at %s with thread_handling=%s, thread_pool_size=%d (%s)\n",
			ps.pool.Version, ps.pool.Addr, handling, size, TargetPool)
	}
	return ps, nil
}

// withAddr is c's DSN with another TCP address.
func withAddr(c *mysql.Config, addr string) string {
	cc := c.Clone()
	cc.Net, cc.Addr = "tcp", addr
	return cc.FormatDSN()
}

// startSandbox starts a sandbox server with the benchmark's account and
// database, returning that account's settings and root's DSN.
func startSandbox(ctx context.Context, opts sandbox.Options, user, password, db string) (*sandbox.Server, *mysql.Config, string, error) {
	srv, err := sandbox.Start(ctx, opts)
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		return nil, nil, "", fmt.Errorf("%w\n(%w)", ErrNoServerBinary, err)
	case err != nil:
		return nil, nil, "", err
	}
	fail := func(err error) (*sandbox.Server, *mysql.Config, string, error) {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		return nil, nil, "", errors.Join(err, srv.Stop(stopCtx))
	}
	if err := srv.CreateUser(ctx, user, password); err != nil {
		return fail(err)
	}
	if err := srv.CreateDatabase(ctx, db); err != nil {
		return fail(err)
	}
	direct, err := driverConfig(srv.DSN(user, password, db), nil)
	if err != nil {
		return fail(err)
	}
	return srv, direct, srv.RootDSN(""), nil
}

// threadHandling reads the server's @@thread_handling and
// @@thread_pool_size.
func threadHandling(ctx context.Context, dsn string) (string, int, error) {
	db, err := openDB(dsn, 1, nil)
	if err != nil {
		return "", 0, err
	}
	defer db.Close()
	var handling string
	var size int
	if err := db.QueryRowContext(ctx, "SELECT @@thread_handling, @@thread_pool_size").Scan(&handling, &size); err != nil {
		return "", 0, fmt.Errorf("bench: thread_handling: %w", err)
	}
	return handling, size, nil
}

// close stops the relays (tpproxy gracefully) and the pool server.
func (ps *peerSet) close(ctx context.Context) error {
	var errs []error
	if ps.proxy != nil {
		errs = append(errs, ps.proxy.stop())
	}
	if ps.base != nil {
		errs = append(errs, ps.base.stop())
	}
	if ps.unix != nil {
		errs = append(errs, ps.unix.stop())
	}
	if ps.haproxy != nil {
		errs = append(errs, ps.haproxy.stop())
	}
	if ps.pool != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := ps.pool.Stop(stopCtx); err != nil {
			errs = append(errs, fmt.Errorf("bench: stop the mariadb-pool server: %w", err))
		}
	}
	return errors.Join(errs...)
}

// exited returns an error for each relay that exited before close: a
// target that stopped answering explains itself.
func (ps *peerSet) exited() error {
	var errs []error
	kids := []*child{ps.proxyChild(), ps.haproxyChild()}
	for _, p := range []*proxyProcess{ps.base, ps.unix} {
		if p != nil {
			kids = append(kids, p.child)
		}
	}
	for _, c := range kids {
		if c == nil {
			continue
		}
		select {
		case <-c.exited:
			errs = append(errs, c.exitError())
		default:
		}
	}
	return errors.Join(errs...)
}

func (ps *peerSet) proxyChild() *child {
	if ps.proxy == nil {
		return nil
	}
	return ps.proxy.child
}

func (ps *peerSet) haproxyChild() *child {
	if ps.haproxy == nil {
		return nil
	}
	return ps.haproxy.child
}

// monitor is the monitor settings for a ramp over ps.targets.
func (ps *peerSet) monitor() MonitorConfig {
	m := MonitorConfig{
		ProxyAdmin: map[string]string{TargetTpproxy: ps.proxy.AdminDSN},
		RelayPID:   ps.relayPID,
	}
	if ps.pool != nil {
		m.TargetServerPID = map[string]int{TargetPool: ps.pool.PID}
	}
	return m
}
