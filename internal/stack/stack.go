// Package stack wires one tpproxy: the backend pool, the scheduler in front
// of it, the client front end and, when asked for, the extra port and
// add-ons served over them (the admin port, the HTTP endpoint and pprof:
// admin.PortAddon, admin.HTTPAddon, admin.PprofAddon) — from the
// components' own configs and listeners the caller opened. `tpproxy
// serve`, the in-process benchmark target and the test harness
// (internal/proxytest) all build their proxy with Start.
//
// It knows nothing of the configuration file: tpproxy serve maps the file
// onto Options, tests fill Options in code. Opening the listeners is the
// caller's too (a taken-over socket, a port 0 for a test). It does not
// import the admin package (whose tests run on proxytest, which runs on
// this): add-ons come in as values.
package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/tpproxy/tpproxy/internal/autosize"
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
	// AutoSize, when set, sizes the pool while it runs (backend.pool_size:
	// auto): the pool starts at its Min, whatever Pool.Size says, and an
	// autosize.Sizer changes it every Interval. nil keeps Pool.Size.
	AutoSize *autosize.Config
	// Addons are served once the components exist, in order.
	Addons []Addon
}

// Addon is one more port the stack serves over its components: the admin
// port, the HTTP endpoint, pprof.
type Addon struct {
	// Name names it in errors ("admin port").
	Name string
	// Listener is where it serves; Start closes it when it fails.
	Listener net.Listener
	// Build makes the service from the started components.
	Build func(*Stack) (Service, error)
}

// Service is a built add-on: Serve serves its listener until ctx ends or
// Stop is called; Stop ends it (Close calls it before waiting for Serve).
type Service struct {
	Serve func(ctx context.Context) error
	Stop  func()
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

// Stack is a running tpproxy. Its components are exported for what the
// caller does beyond serving: reloads, admin views, tests.
type Stack struct {
	Pool      *pool.Pool
	Scheduler *scheduler.Scheduler
	Server    *proxy.Server
	// ExtraPool is nil without an extra port.
	ExtraPool *pool.Pool
	// Sizer sizes Pool; nil unless Options.AutoSize.
	Sizer *autosize.Sizer

	services []Service

	// serveCtx is what the serving loops run on; stop ends it.
	serveCtx context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup
	failed   chan error
	close    sync.Once
}

// Start builds the components, starts them and serves every listener of o
// until Shutdown or Close. ctx bounds the start only — the pools' first
// dial (see pool.Start) — not the serving. When Start fails it tears down
// what it built and closes every listener of o.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	lns := []net.Listener{o.Listener, o.Extra.Listener}
	for _, a := range o.Addons {
		lns = append(lns, a.Listener)
	}
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
	if o.AutoSize != nil {
		if s.Sizer, err = autosize.NewSizer(*o.AutoSize, s.sizerWindow, s.Pool.Resize, time.Now()); err != nil {
			return nil, err
		}
		s.wg.Go(func() { s.Sizer.Run(s.serveCtx) })
	}
	if o.Extra.Listener != nil {
		if err := s.startExtraPool(ctx, o); err != nil {
			return nil, err
		}
	}
	svcs := make([]Service, len(o.Addons))
	for i, a := range o.Addons {
		if svcs[i], err = a.Build(s); err != nil {
			s.services = svcs[:i]
			return nil, fmt.Errorf("%s: %w", a.Name, err)
		}
	}
	s.services = svcs

	// Everything is built: serve.
	s.serve("client listener", func() error { return s.Server.Serve(s.serveCtx, o.Listener) })
	if s.ExtraPool != nil {
		s.serve("extra port", func() error {
			return s.Server.ServeExtra(s.serveCtx, o.Extra.Listener, s.ExtraPool, o.Extra.MaxConnections)
		})
	}
	for i, a := range o.Addons {
		svc := svcs[i]
		s.serve(a.Name, func() error { return svc.Serve(s.serveCtx) })
	}
	return s, nil
}

// sizerWindow is what the Sizer reads: the pool's counters, with the
// requests for a pinned slot and their waits counted as acquires and
// waits, since the pinned budget is a share of the pool's size (with 1,000
// read/write clients on a pool of 16, transactions queue there and nowhere
// else).
func (s *Stack) sizerWindow() autosize.Window {
	c := s.Pool.Counters()
	takes, waits := s.Server.PinQueue()
	return autosize.Window{Acquires: c.Acquires + takes, Waits: c.Waits + waits, Held: c.Held,
		RoundTrips: c.RoundTrips, RoundTripTime: c.RoundTripTime}
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
// session, stops the add-ons, waits for the serving loops, then closes the
// scheduler and the pools. It is safe to
// call more than once.
func (s *Stack) Close() {
	s.close.Do(func() {
		s.stop()
		if s.Server != nil {
			s.Server.Close()
		}
		for _, svc := range s.services {
			if svc.Stop != nil {
				svc.Stop()
			}
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
