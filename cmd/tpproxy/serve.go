package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tpproxy/tpproxy/admin"
	"github.com/tpproxy/tpproxy/internal/config"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// runServe runs the proxy until ctx is cancelled: the backend pool, the
// scheduler in front of it, the client listener, the admin port and the
// HTTP endpoint. Then it shuts down gracefully: new connections are
// refused, statements in flight and open transactions get
// shutdown_timeout to finish, then sessions are closed and the backend
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
	pcfg, err := poolConfig(cfg, log)
	if err != nil {
		return err
	}
	p, err := pool.New(pcfg)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.Start(ctx); err != nil {
		return err
	}
	scfg, err := schedulerConfig(&cfg.ThreadPool)
	if err != nil {
		return err
	}
	sched, err := scheduler.New(scfg)
	if err != nil {
		return err
	}
	sched.Start()
	defer sched.Close()
	fcfg, err := proxyConfig(cfg, log)
	if err != nil {
		return err
	}
	srv, err := proxy.New(fcfg, p, sched)
	if err != nil {
		return err
	}
	defer srv.Close()
	rl.attach(srv, sched, p)

	// Sessions live on serveCtx, which ends only after the graceful
	// shutdown, so that a signal does not cut statements in flight.
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	var bg sync.WaitGroup
	defer bg.Wait()
	fail := make(chan error, 4) // a listener that stopped by itself
	run := func(name string, serve func() error) {
		bg.Go(func() {
			if err := serve(); err != nil && serveCtx.Err() == nil {
				fail <- fmt.Errorf("%s: %w", name, err)
			}
		})
	}

	listeners := map[string]net.Listener{}
	ln, err := in.listen("listen", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	listeners["listen"] = ln
	if cfg.Admin.Listen != "" {
		adm, err := admin.New(admin.Config{Listen: cfg.Admin.Listen, User: cfg.Admin.User,
			Password: cfg.Admin.Password, Logger: log.With("component", "admin")}, sched, srv, p)
		if err != nil {
			_ = ln.Close()
			return err
		}
		aln, err := in.listen("admin.listen", cfg.Admin.Listen)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("admin listen %s: %w", cfg.Admin.Listen, err)
		}
		listeners["admin.listen"] = aln
		defer adm.Close()
		log.Info("admin port listening", "listen", aln.Addr().String())
		run("admin port", func() error { return adm.Serve(serveCtx, aln) })
	}
	if cfg.Admin.HTTPListen != "" {
		h, err := admin.NewHTTP(admin.HTTPConfig{Version: build.version, Commit: build.commit,
			Collectors: rl.collectors(), Logger: log.With("component", "http"), Pprof: cfg.Admin.PprofOnHTTPListen}, srv, sched, p)
		if err != nil {
			_ = ln.Close()
			return err
		}
		hln, err := in.listen("admin.http_listen", cfg.Admin.HTTPListen)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("http listen %s: %w", cfg.Admin.HTTPListen, err)
		}
		listeners["admin.http_listen"] = hln
		paths := "/metrics /healthz /readyz"
		if cfg.Admin.PprofOnHTTPListen {
			paths += " /debug/pprof/"
		}
		if !isLoopback(hln.Addr()) {
			log.Info("the HTTP endpoint listens beyond loopback and has no authentication", "listen", hln.Addr().String(), "paths", paths)
		}
		log.Info("http endpoint listening", "listen", hln.Addr().String(), "paths", paths)
		run("http endpoint", func() error { return h.Serve(hln) })
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = h.Shutdown(sctx)
		}()
	}
	if cfg.Admin.PprofListen != "" {
		pln, err := in.listen("admin.pprof_listen", cfg.Admin.PprofListen)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("pprof listen %s: %w", cfg.Admin.PprofListen, err)
		}
		listeners["admin.pprof_listen"] = pln
		ps := admin.NewPprofServer(log.With("component", "pprof"))
		if !isLoopback(pln.Addr()) {
			log.Warn("/debug/pprof/ listens beyond loopback and has no authentication", "listen", pln.Addr().String())
		}
		log.Info("pprof endpoint listening", "listen", pln.Addr().String(), "paths", "/debug/pprof/")
		run("pprof endpoint", func() error {
			if err := ps.Serve(pln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		defer func() { _ = ps.Close() }()
	}
	if port := cfg.ThreadPool.ExtraPort; port != 0 {
		xp, xln, err := startExtraPort(ctx, cfg, pcfg, log, in)
		if err != nil {
			_ = ln.Close()
			return err
		}
		defer xp.Close()
		listeners["thread_pool.extra_port"] = xln
		log.Info("extra port listening", "listen", xln.Addr().String(), "max_connections", cfg.ThreadPool.ExtraMaxConnections)
		run("extra port", func() error { return srv.ServeExtra(serveCtx, xln, xp, cfg.ThreadPool.ExtraMaxConnections) })
	}
	log.Info("tpproxy listening", "listen", ln.Addr().String(), "backend", cfg.Backend.Addr,
		"pool_size", cfg.Backend.Size, "server_version", p.ServerVersion(),
		"thread_pool", scfg.Algorithm.String(), "thread_pool_size", scfg.Size,
		"oversubscribe", scfg.Oversubscribe, "max_threads", scfg.MaxThreads)
	run("client listener", func() error { return srv.Serve(serveCtx, ln) })
	if opts.adaptiveProcs {
		bg.Go(func() { governProcs(serveCtx, log, sched, p) })
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
			bg.Go(func() { h.serve(serveCtx) })
			log.Info("upgrade socket listening", "path", cfg.UpgradeSocket)
		}
	}

	var failed error
	handedOver := false
	select {
	case <-ctx.Done():
	case failed = <-fail:
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
		if err := srv.Retire(rctx); err != nil {
			log.Info("sessions still connected after the hand-over; shutting down", "sessions", srv.Stats().Sessions, "shutdown_timeout", timeout)
		}
		cancel()
		timeout = min(timeout, retireGrace)
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	err = srv.Shutdown(sctx)
	cancel()
	if err != nil {
		log.Warn("sessions were still busy at shutdown_timeout and were closed", "shutdown_timeout", timeout)
	}
	stopServing()
	log.Info("tpproxy stopped")
	return failed
}

// isLoopback reports whether a listener address is on loopback only.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// startExtraPort opens thread_pool.extra_port on listen's host, with a pool
// of extra_max_connections backend connections of its own.
func startExtraPort(ctx context.Context, cfg *config.Config, pcfg pool.Config, log *slog.Logger, in *inherited) (*pool.Pool, net.Listener, error) {
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	pcfg.Size = cfg.ThreadPool.ExtraMaxConnections
	pcfg.Logger = log.With("component", "extra_pool")
	xp, err := pool.New(pcfg)
	if err != nil {
		return nil, nil, err
	}
	if err := xp.Start(ctx); err != nil {
		xp.Close()
		return nil, nil, err
	}
	addr := net.JoinHostPort(host, strconv.Itoa(cfg.ThreadPool.ExtraPort))
	xln, err := in.listen("thread_pool.extra_port", addr)
	if err != nil {
		xp.Close()
		return nil, nil, fmt.Errorf("extra port %s: %w", addr, err)
	}
	return xp, xln, nil
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
