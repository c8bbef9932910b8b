package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ErrNoProxyBinary means the tpproxy binary to run is missing.
var ErrNoProxyBinary = errors.New("bench: no tpproxy binary")

// ErrBadProxyOption marks a ProxyOptions value tpbench cannot use.
var ErrBadProxyOption = errors.New("bench: invalid tpproxy option")

// ProxyOptions configure the tpproxy process the demo and tpbench peers
// run in front of the server.
type ProxyOptions struct {
	// Binary is the tpproxy executable. Required.
	Binary string
	// PoolSize is backend.pool_size. Default 16.
	PoolSize int
	// Set are configuration overrides KEY=VALUE with the file's dotted
	// key names (thread_pool.size=4, backend.pool_size=32). They reach
	// the process as TPPROXY_<KEY> environment variables, which win over
	// the file, and tpproxy validates them as it validates its own.
	Set []string
	// ConfigFile is a YAML file merged over the generated configuration:
	// each key it sets replaces the generated one, except the addresses
	// and accounts the benchmark owns (listen, users, backend.addr, user
	// and password, admin.listen, http_listen, user and password).
	ConfigFile string
	// GOMAXPROCS, when positive, is the process's GOMAXPROCS.
	GOMAXPROCS int
}

// configKey is a dotted configuration key.
var configKey = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)

// ownedKeys are the settings the benchmark needs as it writes them.
var ownedKeys = []string{"listen", "users", "backend.addr", "backend.user", "backend.password",
	"admin.listen", "admin.http_listen", "admin.user", "admin.password"}

// Validate checks the options that tpbench itself reads.
func (o ProxyOptions) Validate() error {
	if o.Binary == "" {
		return fmt.Errorf("%w: no path given", ErrNoProxyBinary)
	}
	if fi, err := os.Stat(o.Binary); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%w: %s is not an executable file (build it with `go build -o bin/ ./cmd/...`, or pass --tpproxy-bin)", ErrNoProxyBinary, o.Binary)
	}
	if o.PoolSize < 0 || o.GOMAXPROCS < 0 {
		return fmt.Errorf("%w: negative pool size or GOMAXPROCS", ErrBadProxyOption)
	}
	for _, s := range o.Set {
		k, _, ok := strings.Cut(s, "=")
		if !ok || !configKey.MatchString(k) {
			return fmt.Errorf("%w: --proxy-set %q: want KEY=VALUE with a configuration key such as thread_pool.size", ErrBadProxyOption, s)
		}
		for _, owned := range ownedKeys {
			if k == owned || strings.HasPrefix(k, owned+".") {
				return fmt.Errorf("%w: --proxy-set %s: the benchmark sets %s itself", ErrBadProxyOption, k, owned)
			}
		}
	}
	return nil
}

// proxyProcess is a running tpproxy binary.
type proxyProcess struct {
	*child
	// Addr is the client port's address; AdminDSN reaches the admin port
	// and MetricsURL the HTTP endpoint's /metrics.
	Addr, AdminDSN, MetricsURL string
	// ConfigPath is the configuration file it runs with.
	ConfigPath string
	readyURL   string
}

// The tpproxy process's admin account (loopback only).
const (
	proxyAdminUser     = "admin"
	proxyAdminPassword = "tpbench"
)

// proxyStopGrace bounds the process's graceful shutdown (its
// shutdown_timeout is 5 s).
const proxyStopGrace = 15 * time.Second

// readyTimeout bounds a relay's start until it answers.
const readyTimeout = 30 * time.Second

// readyPoll is how often a starting relay is asked whether it is ready.
const readyPoll = 50 * time.Millisecond

// startProxyProcess runs `tpproxy serve` in front of backend with user
// and password as both the client and the backend account, writing its
// configuration (tpproxy.yaml) and log (tpproxy.log) into dir, and waits
// until its /readyz answers 200.
func startProxyProcess(ctx context.Context, o ProxyOptions, dir, backend, user, password string, at placement, log *slog.Logger) (*proxyProcess, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.PoolSize == 0 {
		o.PoolSize = 16
	}
	var extra map[string]any
	if o.ConfigFile != "" {
		b, err := os.ReadFile(o.ConfigFile)
		if err == nil {
			err = yaml.Unmarshal(b, &extra)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: --proxy-config: %w", ErrBadProxyOption, err)
		}
	}
	env := childEnv(o)
	// A port picked here can be taken before tpproxy binds it; then pick
	// again.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		p, err := launchProxy(ctx, o, extra, env, dir, backend, user, password, at)
		if err == nil {
			log.Info("tpproxy started", "pid", p.pid(), "listen", p.Addr, "config", p.ConfigPath)
			return p, nil
		}
		if attempt == attempts || !errors.Is(err, ErrChildExited) || !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
		log.Debug("tpproxy's port was taken, retrying", "err", err)
	}
}

// childEnv is tpproxy's environment: this process's without TPPROXY_*
// variables (the sandbox's TPPROXY_MYSQLD, a stray TPPROXY_LISTEN would
// be errors or override the file), plus o.Set and GOMAXPROCS.
func childEnv(o ProxyOptions) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TPPROXY_") {
			env = append(env, kv)
		}
	}
	for _, s := range o.Set {
		k, v, _ := strings.Cut(s, "=")
		env = append(env, "TPPROXY_"+strings.ToUpper(strings.ReplaceAll(k, ".", "_"))+"="+v)
	}
	if o.GOMAXPROCS > 0 {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(o.GOMAXPROCS))
	}
	return env
}

func launchProxy(ctx context.Context, o ProxyOptions, extra map[string]any, env []string,
	dir, backend, user, password string, at placement) (*proxyProcess, error) {
	var ports [3]int
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	addr := func(port int) string { return net.JoinHostPort(at.host(), strconv.Itoa(port)) }
	cfg := map[string]any{
		"shutdown_timeout": "5s",
		"watch_config":     false,
		"backend":          map[string]any{"pool_size": o.PoolSize},
		"log":              map[string]any{"level": "info", "format": "text"},
	}
	mergeYAML(cfg, extra)
	set := func(path string, v any) {
		m := cfg
		keys := strings.Split(path, ".")
		for _, k := range keys[:len(keys)-1] {
			sub, ok := m[k].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[k] = sub
			}
			m = sub
		}
		m[keys[len(keys)-1]] = v
	}
	set("listen", addr(ports[0]))
	set("users", []any{map[string]any{"user": user, "password": password}})
	set("backend.addr", backend)
	set("backend.user", user)
	set("backend.password", password)
	set("admin.listen", addr(ports[1]))
	set("admin.http_listen", addr(ports[2]))
	set("admin.user", proxyAdminUser)
	set("admin.password", proxyAdminPassword)
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: tpproxy config: %w", err)
	}
	path := filepath.Join(dir, "tpproxy.yaml")
	head := "# Written by tpbench for the tpproxy it runs; rewritten on every run.\n"
	if err := os.WriteFile(path, append([]byte(head), b...), 0o600); err != nil {
		return nil, fmt.Errorf("bench: tpproxy config: %w", err)
	}
	bin, args := at.command(o.Binary, "serve", "--config", path)
	c, err := startChild("tpproxy", filepath.Join(dir, "tpproxy.log"), env, bin, args...)
	if err != nil {
		return nil, err
	}
	p := &proxyProcess{
		child: c, Addr: addr(ports[0]), ConfigPath: path,
		AdminDSN:   proxyAdminUser + ":" + proxyAdminPassword + "@tcp(" + addr(ports[1]) + ")/",
		MetricsURL: "http://" + addr(ports[2]) + "/metrics",
		readyURL:   "http://" + addr(ports[2]) + "/readyz",
	}
	if err := p.waitReady(ctx); err != nil {
		return nil, errors.Join(err, ignoreExited(c.stop(time.Second)))
	}
	return p, nil
}

// ignoreExited drops the complaint of stopping a process that already
// exited: the error that found it has said so.
func ignoreExited(err error) error {
	if errors.Is(err, ErrChildExited) {
		return nil
	}
	return err
}

// waitReady polls /readyz until it answers 200 (the backend pool is up),
// the process exits, or readyTimeout passes.
func (p *proxyProcess) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-p.exited:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("bench: tpproxy (pid %d) not ready: %w (last: %v); the end of %s:\n%s",
				p.pid(), context.Cause(ctx), last, p.logPath, p.logTail(10))
		case <-tick.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.readyURL, nil)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		resp, err := client.Do(req)
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("/readyz: %s", resp.Status)
	}
}

// stop ends tpproxy with SIGTERM (a graceful shutdown).
func (p *proxyProcess) stop() error { return p.child.stop(proxyStopGrace) }

// mergeYAML sets every key of src in dst, merging nested maps.
func mergeYAML(dst, src map[string]any) {
	for k, v := range src {
		sm, ok := v.(map[string]any)
		dm, dok := dst[k].(map[string]any)
		if ok && dok {
			mergeYAML(dm, sm)
			continue
		}
		dst[k] = v
	}
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench: pick a port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("bench: pick a port: %w", err)
	}
	return port, nil
}
