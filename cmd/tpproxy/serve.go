package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/tpproxy/tpproxy/admin"
	"github.com/tpproxy/tpproxy/internal/autosize"
	"github.com/tpproxy/tpproxy/internal/config"
	"github.com/tpproxy/tpproxy/internal/stack"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// runServe runs the proxy until ctx is cancelled: the backend pool, the
// scheduler in front of it, the client listener, the admin port and the
// HTTP endpoint, wired by internal/stack. Then it shuts down gracefully:
// new connections are refused, statements in flight and open transactions
// get shutdown_timeout to finish, then sessions are closed and the backend
// connections released. rl reloads the configuration meanwhile.
func runServe(ctx context.Context, cfg *config.Config, log *slog.Logger, rl *reloader, build buildInfo, opts serveOptions) error {
	var in *inherited
	if opts.takeover {
		if cfg.UpgradeSocket == "" {
			return errors.New("--takeover needs upgrade_socket in the configuration (the running tpproxy's)")
		}
		var err error
		if in, err = takeOver(cfg.UpgradeSocket); err != nil {
			return err
		}
		log.Info("takeover: received the running process's listeners", "pid", in.pid, "listeners", len(in.lns))
		// Until READY the previous process serves on: giving up closes
		// only this process's copies.
		defer in.close()
	}
	o, err := stackOptions(cfg, log)
	if err != nil {
		return err
	}
	listeners, err := openListeners(cfg, &o, in)
	if err != nil {
		return err
	}
	o.Addons = addons(cfg, log, rl, build, listeners)
	st, err := stack.Start(ctx, o)
	if err != nil {
		return err
	}
	defer st.Close()
	rl.attach(st.Server, st.Scheduler, st.Pool, st.Sizer)

	// The process's own work beyond the stack runs until the front end has
	// shut down.
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	defer bg.Wait()
	defer stopBackground()

	if aln := listeners["admin.listen"]; aln != nil {
		log.Info("admin port listening", "listen", aln.Addr().String())
	}
	if hln := listeners["admin.http_listen"]; hln != nil {
		paths := "/metrics /healthz /readyz"
		if cfg.Admin.PprofOnHTTPListen {
			paths += " /debug/pprof/"
		}
		if !isLoopback(hln.Addr()) {
			log.Info("the HTTP endpoint listens beyond loopback and has no authentication", "listen", hln.Addr().String(), "paths", paths)
		}
		log.Info("http endpoint listening", "listen", hln.Addr().String(), "paths", paths)
	}
	if pln := listeners["admin.pprof_listen"]; pln != nil {
		if !isLoopback(pln.Addr()) {
			log.Warn("/debug/pprof/ listens beyond loopback and has no authentication", "listen", pln.Addr().String())
		}
		log.Info("pprof endpoint listening", "listen", pln.Addr().String(), "paths", "/debug/pprof/")
	}
	if xln := o.Extra.Listener; xln != nil {
		log.Info("extra port listening", "listen", xln.Addr().String(), "max_connections", cfg.ThreadPool.ExtraMaxConnections)
	}
	scfg := st.Scheduler.Config()
	log.Info("tpproxy listening", "listen", o.Listener.Addr().String(), "backend", cfg.Backend.Addr,
		"pool_size", poolSizeText(cfg.Backend), "server_version", st.Pool.ServerVersion(),
		"thread_pool", scfg.Algorithm.String(), "thread_pool_size", scfg.Size,
		"oversubscribe", scfg.Oversubscribe, "max_threads", scfg.MaxThreads)
	if rl.gc.Disabled() {
		log.Info("GOGC=off: gc_headroom does not apply")
	} else {
		bg.Go(func() { rl.gc.Run(bgCtx) })
	}
	if opts.adaptiveProcs {
		bg.Go(func() { governProcs(bgCtx, log, st.Server, st.Scheduler, st.Pool) })
	}
	if in != nil {
		in.ready(log)
	}
	var handed chan struct{}
	if cfg.UpgradeSocket != "" {
		h, err := listenHandoff(cfg.UpgradeSocket, log.With("component", "upgrade"), listeners)
		if err != nil {
			log.Error("no zero-downtime upgrade for this process", "err", err)
		} else {
			handed = h.handed
			bg.Go(func() { h.serve(bgCtx) })
			log.Info("upgrade socket listening", "path", cfg.UpgradeSocket)
		}
	}

	var failed error
	handedOver := false
	select {
	case <-ctx.Done():
	case failed = <-st.Failed():
		log.Error("a listener failed; shutting down", "err", failed)
	case <-handed:
		handedOver = true
	}
	timeout := time.Duration(rl.shutdownTimeout.Load())
	if handedOver {
		// The successor accepts on the same sockets. Stop accepting here
		// (Retire closes the client ports), end idle sessions, and serve
		// the busy ones until their clients leave, for at most
		// shutdown_timeout (a signal cuts it short); then shut down.
		for name, l := range listeners {
			if name != "listen" && name != "thread_pool.extra_port" {
				_ = l.Close()
			}
		}
		rctx, cancel := context.WithTimeout(ctx, timeout)
		if err := st.Server.Retire(rctx); err != nil {
			log.Info("sessions still connected after the hand-over; shutting down", "sessions", st.Server.Stats().Sessions, "shutdown_timeout", timeout)
		}
		cancel()
		timeout = min(timeout, retireGrace)
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	err = st.Server.Shutdown(sctx)
	cancel()
	if err != nil {
		log.Warn("sessions were still busy at shutdown_timeout and were closed", "shutdown_timeout", timeout)
	}
	// The background work ends before the components close (st.Close,
	// deferred).
	stopBackground()
	bg.Wait()
	log.Info("tpproxy stopped")
	return failed
}

// stackOptions maps the configuration onto the stack's components'
// configs. The listeners are openListeners', the add-ons addons'.
func stackOptions(cfg *config.Config, log *slog.Logger) (stack.Options, error) {
	pcfg, err := poolConfig(cfg, log)
	if err != nil {
		return stack.Options{}, err
	}
	scfg, err := schedulerConfig(&cfg.ThreadPool)
	if err != nil {
		return stack.Options{}, err
	}
	fcfg, err := proxyConfig(cfg, log)
	if err != nil {
		return stack.Options{}, err
	}
	var auto *autosize.Config
	if cfg.Backend.Size == 0 {
		auto = &autosize.Config{Min: cfg.Backend.PoolSizeMin, Max: cfg.Backend.PoolSizeMax}
	}
	return stack.Options{
		Pool: pcfg, Scheduler: scfg, Proxy: fcfg, AutoSize: auto,
		Extra: stack.Extra{MaxConnections: cfg.ThreadPool.ExtraMaxConnections,
			PoolSize: cfg.ThreadPool.ExtraMaxConnections, Logger: log.With("component", "extra_pool")},
	}, nil
}

// addons are the admin port, the HTTP endpoint and pprof on the listeners
// openListeners opened for them.
func addons(cfg *config.Config, log *slog.Logger, rl *reloader, build buildInfo, listeners map[string]net.Listener) []stack.Addon {
	var a []stack.Addon
	if ln := listeners["admin.listen"]; ln != nil {
		a = append(a, admin.PortAddon(admin.Config{Listen: cfg.Admin.Listen, User: cfg.Admin.User,
			Password: cfg.Admin.Password, Logger: log.With("component", "admin")}, ln))
	}
	if ln := listeners["admin.http_listen"]; ln != nil {
		a = append(a, admin.HTTPAddon(admin.HTTPConfig{Version: build.version, Commit: build.commit,
			Collectors: rl.collectors(), Logger: log.With("component", "http"), Pprof: cfg.Admin.PprofOnHTTPListen}, ln))
	}
	if ln := listeners["admin.pprof_listen"]; ln != nil {
		a = append(a, admin.PprofAddon(log.With("component", "pprof"), ln))
	}
	return a
}

// openListeners opens (or takes from in) every listener the configuration
// asks for and sets them in o. It returns them by key for the upgrade
// hand-over; on an error it closes those it opened.
func openListeners(cfg *config.Config, o *stack.Options, in *inherited) (_ map[string]net.Listener, err error) {
	listeners := map[string]net.Listener{}
	defer func() {
		if err != nil {
			for _, l := range listeners {
				_ = l.Close()
			}
		}
	}()
	open := func(key, addr, what string) (net.Listener, error) {
		ln, err := in.listen(key, addr)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, addr, err)
		}
		listeners[key] = ln
		return ln, nil
	}
	if o.Listener, err = open("listen", cfg.Listen, "listen"); err != nil {
		return nil, err
	}
	if cfg.Admin.Listen != "" {
		if _, err = open("admin.listen", cfg.Admin.Listen, "admin listen"); err != nil {
			return nil, err
		}
	}
	if cfg.Admin.HTTPListen != "" {
		if _, err = open("admin.http_listen", cfg.Admin.HTTPListen, "http listen"); err != nil {
			return nil, err
		}
	}
	if cfg.Admin.PprofListen != "" {
		if _, err = open("admin.pprof_listen", cfg.Admin.PprofListen, "pprof listen"); err != nil {
			return nil, err
		}
	}
	if port := cfg.ThreadPool.ExtraPort; port != 0 {
		// On listen's host.
		host, _, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
		}
		if o.Extra.Listener, err = open("thread_pool.extra_port", net.JoinHostPort(host, strconv.Itoa(port)), "extra port"); err != nil {
			return nil, err
		}
	}
	return listeners, nil
}

// isLoopback reports whether a listener address is on loopback only.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// schedulerConfig is the file's thread_pool section as the scheduler
// takes it: validated, size 0 resolved to the number of CPUs.
func schedulerConfig(t *config.ThreadPool) (scheduler.Config, error) {
	c := t.Config
	return c, c.Validate()
}

// poolConfig is the file's backend section as the pool takes it, with the
// settings the file states elsewhere or in its own terms: TLS,
// load_data_local and the logger.
func poolConfig(cfg *config.Config, log *slog.Logger) (pool.Config, error) {
	b := cfg.Backend
	tlsConf, err := b.TLSConfig()
	if err != nil {
		return pool.Config{}, err
	}
	c := b.Config
	if c.Size == 0 {
		c.Size = b.PoolSizeMin // auto: the sizer starts there
	}
	c.TLS = tlsConf
	switch b.TLS.Mode {
	case config.TLSPreferred:
		c.TLSMode = pool.TLSPreferred
	case config.TLSRequired:
		c.TLSMode = pool.TLSRequired
	default:
		c.TLSMode = pool.TLSDisabled
	}
	c.LocalInfile = cfg.LoadDataLocal
	c.Logger = log.With("component", "pool")
	return c, nil
}

// poolSizeText is backend.pool_size as the file writes it, with auto's
// bounds.
func poolSizeText(b config.Backend) string {
	if b.Size == 0 {
		return fmt.Sprintf("auto %d..%d", b.PoolSizeMin, b.PoolSizeMax)
	}
	return strconv.Itoa(b.Size)
}

// proxyConfig maps the file's front-end settings onto the proxy's config.
func proxyConfig(cfg *config.Config, log *slog.Logger) (proxy.Config, error) {
	tlsConf, err := cfg.TLS.Load()
	if err != nil {
		return proxy.Config{}, err
	}
	identity, err := proxy.ParseIdentity(cfg.Backend.Identity)
	if err != nil {
		return proxy.Config{}, err
	}
	users, err := proxyUsers(cfg)
	if err != nil {
		return proxy.Config{}, err
	}
	lookup, err := newHashLookup(cfg)
	if err != nil {
		return proxy.Config{}, err
	}
	return proxy.Config{
		MaxClientConnections:   cfg.MaxClientConnections,
		MaxAllowedPacket:       int(cfg.MaxAllowedPacket),
		MaxBufferMemory:        int64(cfg.MaxBufferMemory),
		MaxPinned:              cfg.MaxPinnedConnections,
		MaxPinnedPerAccount:    cfg.MaxPinnedPerAccount,
		MaxStickyPinned:        cfg.MaxStickyPinned,
		ServerVersion:          cfg.ServerVersion,
		AuthPlugin:             string(cfg.AuthPlugin),
		LoadDataLocal:          cfg.LoadDataLocal,
		Users:                  users,
		Identity:               identity,
		MaxConnectErrors:       cfg.MaxConnectErrors,
		AuthLookup:             lookup,
		AuthLookupTTL:          cfg.AuthLookup.TTL,
		RequireSecureTransport: cfg.RequireSecureTransport,
		TLS:                    tlsConf,
		SlowQueue:              cfg.Log.SlowQueue,
		CatalogTTL:             catalogTTL(cfg.CatalogTTL),
		Logger:                 log,
	}, nil
}

// catalogTTL maps the file's catalog_ttl (0: read every time) onto the
// proxy's (0: the default, negative: every time).
func catalogTTL(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// proxyUsers maps the file's users onto the proxy's.
func proxyUsers(cfg *config.Config) ([]proxy.User, error) {
	users := make([]proxy.User, 0, len(cfg.Users))
	for _, u := range cfg.Users {
		h, err := u.NativeHash()
		if err != nil {
			return nil, err
		}
		plain, _ := u.Plain()
		users = append(users, proxy.User{Name: u.User, Plain: plain, NativeHash: h,
			BackendUser: u.BackendUser, BackendPassword: u.BackendPassword})
	}
	return users, nil
}

// retireGrace is what statements and transactions in flight get to finish
// when a handed-over process still has sessions at shutdown_timeout.
const retireGrace = 5 * time.Second

// serveOptions are serve's command-line choices beyond the configuration.
type serveOptions struct {
	// adaptiveProcs: GOMAXPROCS follows the load (governProcs).
	adaptiveProcs bool
	// takeover: take the listeners of the tpproxy serving on
	// upgrade_socket (zero-downtime upgrade).
	takeover bool
}
