package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/tpproxy/tpproxy/admin"
	"github.com/tpproxy/tpproxy/internal/config"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// runServe runs the proxy until ctx is cancelled: the backend pool, the
// scheduler in front of it, and the client listener.
func runServe(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
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
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	adminDone := make(chan error, 1)
	if cfg.Admin.Listen != "" {
		adm, err := admin.New(admin.Config{Listen: cfg.Admin.Listen, User: cfg.Admin.User,
			Password: cfg.Admin.Password, Logger: log.With("component", "admin")}, sched, srv, p)
		if err != nil {
			_ = ln.Close()
			return err
		}
		aln, err := net.Listen("tcp", cfg.Admin.Listen)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("admin listen %s: %w", cfg.Admin.Listen, err)
		}
		defer adm.Close()
		if cfg.Admin.Password == "admin" && !isLoopback(aln.Addr()) {
			log.Warn("the admin port listens beyond loopback with the default password; set admin.password", "listen", aln.Addr().String())
		}
		log.Info("admin port listening", "listen", aln.Addr().String())
		go func() { adminDone <- adm.Serve(ctx, aln) }()
	} else {
		adminDone <- nil
	}
	extraDone := make(chan error, 1)
	if port := cfg.ThreadPool.ExtraPort; port != 0 {
		xp, xln, err := startExtraPort(ctx, cfg, pcfg, log)
		if err != nil {
			_ = ln.Close()
			return err
		}
		defer xp.Close()
		log.Info("extra port listening", "listen", xln.Addr().String(), "max_connections", cfg.ThreadPool.ExtraMaxConnections)
		go func() { extraDone <- srv.ServeExtra(ctx, xln, xp, cfg.ThreadPool.ExtraMaxConnections) }()
	} else {
		extraDone <- nil
	}
	log.Info("tpproxy listening", "listen", ln.Addr().String(), "backend", cfg.Backend.Addr,
		"pool_size", cfg.Backend.PoolSize, "server_version", p.ServerVersion(),
		"thread_pool", scfg.Algorithm.String(), "thread_pool_size", scfg.Size,
		"oversubscribe", scfg.Oversubscribe, "max_threads", scfg.MaxThreads)
	err = srv.Serve(ctx, ln)
	if xerr := <-extraDone; err == nil {
		err = xerr
	}
	if aerr := <-adminDone; err == nil {
		err = aerr
	}
	srv.Close()
	log.Info("tpproxy stopped")
	return err
}

// isLoopback reports whether a listener address is on loopback only.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// startExtraPort opens thread_pool.extra_port on listen's host, with a pool
// of extra_max_connections backend connections of its own.
func startExtraPort(ctx context.Context, cfg *config.Config, pcfg pool.Config, log *slog.Logger) (*pool.Pool, net.Listener, error) {
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
	xln, err := net.Listen("tcp", addr)
	if err != nil {
		xp.Close()
		return nil, nil, fmt.Errorf("extra port %s: %w", addr, err)
	}
	return xp, xln, nil
}

// schedulerConfig maps the file's thread_pool section onto the scheduler's.
func schedulerConfig(t *config.ThreadPool) (scheduler.Config, error) {
	alg, err := scheduler.ParseAlgorithm(t.Algorithm)
	if err != nil {
		return scheduler.Config{}, err
	}
	mode, err := scheduler.ParseHighPrioMode(t.HighPrioMode)
	if err != nil {
		return scheduler.Config{}, err
	}
	c := scheduler.DefaultConfig()
	c.Algorithm = alg
	if t.Size > 0 {
		c.Size = t.Size
	}
	c.StallLimit = t.StallLimit
	c.Oversubscribe = t.Oversubscribe
	c.QueryThreadsPerGroup = t.QueryThreadsPerGroup
	c.MaxThreads = t.MaxThreads
	c.IdleTimeout = t.IdleTimeout
	c.PrioKickupTimer = t.PrioKickupTimer
	c.HighPrioMode = mode
	c.HighPrioTickets = t.HighPrioTickets
	c.QueueTimeout = t.QueueTimeout
	return c, c.Validate()
}

// poolConfig maps the file's backend section onto the pool's config.
func poolConfig(cfg *config.Config, log *slog.Logger) (pool.Config, error) {
	b := cfg.Backend
	tlsConf, err := b.TLSConfig()
	if err != nil {
		return pool.Config{}, err
	}
	mode := pool.TLSDisabled
	switch b.TLS.Mode {
	case config.TLSPreferred:
		mode = pool.TLSPreferred
	case config.TLSRequired:
		mode = pool.TLSRequired
	}
	return pool.Config{
		Addr:               b.Addr,
		User:               b.User,
		Password:           b.Password,
		Size:               b.PoolSize,
		AcquireTimeout:     b.AcquireTimeout,
		ConnectTimeout:     b.ConnectTimeout,
		HealthInterval:     b.HealthInterval,
		MaxLifetime:        b.MaxLifetime,
		Collation:          b.Collation,
		MaxPreparedPerConn: b.MaxPreparedPerConnection,
		TLS:                tlsConf,
		TLSMode:            mode,
		LocalInfile:        cfg.LoadDataLocal,
		Logger:             log.With("component", "pool"),
	}, nil
}

// proxyConfig maps the file's front-end settings onto the proxy's config.
func proxyConfig(cfg *config.Config, log *slog.Logger) (proxy.Config, error) {
	tlsConf, err := cfg.TLS.Load()
	if err != nil {
		return proxy.Config{}, err
	}
	users := make([]proxy.User, 0, len(cfg.Users))
	for _, u := range cfg.Users {
		h, err := u.NativeHash()
		if err != nil {
			return proxy.Config{}, err
		}
		plain, _ := u.Plain()
		users = append(users, proxy.User{Name: u.User, Plain: plain, NativeHash: h})
	}
	return proxy.Config{
		MaxClientConnections: cfg.MaxClientConnections,
		MaxAllowedPacket:     int(cfg.MaxAllowedPacket),
		ServerVersion:        cfg.ServerVersion,
		AuthPlugin:           string(cfg.AuthPlugin),
		LoadDataLocal:        cfg.LoadDataLocal,
		Users:                users,
		TLS:                  tlsConf,
		Logger:               log,
	}, nil
}
