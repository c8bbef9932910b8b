// Package stack wires one tpproxy: the backend pool, the scheduler in front
// of it, the client front end and, when asked for, the extra port, the admin
// port, the HTTP endpoint and pprof — from the components' own configs and
// listeners the caller opened.
//
// It knows nothing of the configuration file: tpproxy serve maps the file
// onto Options, tests fill Options in code. Opening the listeners is the
// caller's too (a taken-over socket, a port 0 for a test).
package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/tpproxy/tpproxy/admin"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// ErrNoListener is returned by Start without Options.Listener.
var ErrNoListener = errors.New("stack: no client listener")

// Options configure a Stack. Each optional part is off while its Listener
// is nil.
type Options struct {
	// Pool, Scheduler and Proxy configure the components; each fills in
	// its own defaults (see their Validate).
	Pool      pool.Config
	Scheduler scheduler.Config
	Proxy     proxy.Config
	// Listener is the client port. Required.
	Listener net.Listener

	Extra Extra
	Admin Admin
	HTTP  HTTP
	Pprof Pprof
}

// Extra is the extra port: sessions that bypass the scheduler, on backend
// connections reserved for them (a pool of their own).
type Extra struct {
	Listener net.Listener
	// MaxConnections caps the extra port's sessions; at least 1.
	MaxConnections int
	// PoolSize is the number of backend connections reserved for them;
	// 0 means MaxConnections.
	PoolSize int
	// Logger receives the extra pool's events; default Options.Pool.Logger.
	Logger *slog.Logger
}

// Admin is the MySQL-protocol admin port.
type Admin struct {
	Listener net.Listener
	Config   admin.Config
}

// HTTP is the /metrics, /healthz and /readyz endpoint.
type HTTP struct {
	Listener net.Listener
	Config   admin.HTTPConfig
}

// Pprof serves Go's /debug/pprof/ on a listener of its own.
type Pprof struct {
	Listener net.Listener
	Logger   *slog.Logger
}

// Stack is a running tpproxy. Its components are exported for what the
// caller does beyond serving: reloads, admin views, tests.
type Stack struct {
	Pool      *pool.Pool
	Scheduler *scheduler.Scheduler
	Server    *proxy.Server
	// ExtraPool, Admin and HTTP are nil when their part is off.
	ExtraPool *pool.Pool
	Admin     *admin.Server
	HTTP      *admin.HTTP

	pprof *http.Server

	// serveCtx is what the serving loops run on; stop ends it.
	serveCtx context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup
	failed   chan error
	close    sync.Once
}

// httpShutdownTimeout bounds the HTTP endpoint's graceful stop in Close.
const httpShutdownTimeout = 5 * time.Second

// Start builds the components, starts them and serves every listener of o
// until Shutdown or Close. ctx bounds the start only — the pools' first
// dial (see pool.Start) — not the serving. When Start fails it tears down
// what it built and closes every listener of o.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	lns := []net.Listener{o.Listener, o.Extra.Listener, o.Admin.Listener, o.HTTP.Listener, o.Pprof.Listener}
	if o.Listener == nil {
		closeAll(lns)
		return nil, ErrNoListener
	}
	s := &Stack{failed: make(chan error, len(lns))}
	s.serveCtx, s.stop = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			s.Close()
			closeAll(lns)
		}
	}()

	if s.Pool, err = pool.New(o.Pool); err != nil {
		return nil, err
	}
	if err := s.Pool.Start(ctx); err != nil {
		return nil, err
	}
	if s.Scheduler, err = scheduler.New(o.Scheduler); err != nil {
		return nil, err
	}
	s.Scheduler.Start()
	if s.Server, err = proxy.New(o.Proxy, s.Pool, s.Scheduler); err != nil {
		return nil, err
	}
	if o.Extra.Listener != nil {
		if err := s.startExtraPool(ctx, o); err != nil {
			return nil, err
		}
	}
	if o.Admin.Listener != nil {
		if s.Admin, err = admin.New(o.Admin.Config, s.Scheduler, s.Server, s.Pool); err != nil {
			return nil, err
		}
	}
	if o.HTTP.Listener != nil {
		if s.HTTP, err = admin.NewHTTP(o.HTTP.Config, s.Server, s.Scheduler, s.Pool); err != nil {
			return nil, err
		}
	}
	if o.Pprof.Listener != nil {
		log := o.Pprof.Logger
		if log == nil {
			log = slog.Default()
		}
		s.pprof = admin.NewPprofServer(log)
	}

	// Everything is built: serve.
	s.serve("client listener", func() error { return s.Server.Serve(s.serveCtx, o.Listener) })
	if s.ExtraPool != nil {
		s.serve("extra port", func() error {
			return s.Server.ServeExtra(s.serveCtx, o.Extra.Listener, s.ExtraPool, o.Extra.MaxConnections)
		})
	}
	if s.Admin != nil {
		s.serve("admin port", func() error { return s.Admin.Serve(s.serveCtx, o.Admin.Listener) })
	}
	if s.HTTP != nil {
		s.serve("http endpoint", func() error { return s.HTTP.Serve(o.HTTP.Listener) })
	}
	if s.pprof != nil {
		s.serve("pprof endpoint", func() error {
			if err := s.pprof.Serve(o.Pprof.Listener); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	return s, nil
}

// startExtraPool starts the extra port's pool: o.Pool with the reserved
// size.
func (s *Stack) startExtraPool(ctx context.Context, o Options) error {
	cfg := o.Pool
	cfg.Size = o.Extra.PoolSize
	if cfg.Size <= 0 {
		cfg.Size = max(o.Extra.MaxConnections, 1)
	}
	if o.Extra.Logger != nil {
		cfg.Logger = o.Extra.Logger
	}
	xp, err := pool.New(cfg)
	if err != nil {
		return err
	}
	s.ExtraPool = xp
	return xp.Start(ctx)
}

// serve runs one serving loop; an error from a loop that stopped by itself
// (not by Shutdown or Close) goes to Failed.
func (s *Stack) serve(name string, loop func() error) {
	s.wg.Go(func() {
		if err := loop(); err != nil && s.serveCtx.Err() == nil {
			s.failed <- fmt.Errorf("%s: %w", name, err)
		}
	})
}

// Failed receives an error for each listener that stopped serving by
// itself; the stack goes on serving the others until Shutdown or Close.
func (s *Stack) Failed() <-chan error { return s.failed }

// Shutdown stops the stack gracefully: no new connections, statements in
// flight and open transactions get until ctx ends to finish (see
// proxy.Server.Shutdown), then everything is closed as by Close. It returns
// ctx's error when sessions had to be closed.
func (s *Stack) Shutdown(ctx context.Context) error {
	err := s.Server.Shutdown(ctx)
	s.Close()
	return err
}

// Close stops the stack at once: it closes the listeners and every
// session, stops the admin port and the HTTP endpoints, waits for the
// serving loops, then closes the scheduler and the pools. It is safe to
// call more than once.
func (s *Stack) Close() {
	s.close.Do(func() {
		s.stop()
		if s.Server != nil {
			s.Server.Close()
		}
		if s.Admin != nil {
			s.Admin.Close()
		}
		if s.HTTP != nil {
			ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
			_ = s.HTTP.Shutdown(ctx)
			cancel()
		}
		if s.pprof != nil {
			_ = s.pprof.Close()
		}
		s.wg.Wait()
		if s.Scheduler != nil {
			s.Scheduler.Close()
		}
		if s.ExtraPool != nil {
			s.ExtraPool.Close()
		}
		if s.Pool != nil {
			s.Pool.Close()
		}
	})
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		if ln != nil {
			_ = ln.Close()
		}
	}
}
