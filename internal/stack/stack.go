// Package stack wires tpproxy's parts together: the backend pool, the
// thread-pool scheduler, the front end and the extra port's reserved pool.
// `tpproxy serve`, the in-process benchmark target and the test harness
// all build their proxy with Start, so the three cannot drift apart. What
// only the daemon has (listeners from a config file, the admin port and
// HTTP endpoint, reload, signals, upgrade hand-over) stays in cmd/tpproxy.
package stack

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// Options are the parts' configurations, owned by their packages.
type Options struct {
	Pool      pool.Config
	Scheduler scheduler.Config
	Proxy     proxy.Config
	// Extra, when not nil, configures the extra port's reserved pool
	// (thread_pool.extra_port): its own backend connections, outside the
	// scheduler.
	Extra *pool.Config
}

// Stack is a started proxy: its pool connected, its scheduler running, its
// front end ready to serve listeners.
type Stack struct {
	Pool      *pool.Pool
	Scheduler *scheduler.Scheduler
	Server    *proxy.Server
	// ExtraPool is the extra port's pool (nil without Options.Extra).
	ExtraPool *pool.Pool
}

// Start builds and starts the parts in order: pool (its first connections
// dialled within ctx), scheduler, front end, extra pool. On error what was
// started is closed again. ctx bounds the pools' background work too: the
// stack stops dialling when it ends.
func Start(ctx context.Context, o Options) (*Stack, error) {
	st := &Stack{}
	p, err := pool.New(o.Pool)
	if err != nil {
		return nil, fmt.Errorf("pool: %w", err)
	}
	st.Pool = p
	if err := p.Start(ctx); err != nil {
		st.Close()
		return nil, err
	}
	sched, err := scheduler.New(o.Scheduler)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("thread_pool: %w", err)
	}
	sched.Start()
	st.Scheduler = sched
	srv, err := proxy.New(o.Proxy, p, sched)
	if err != nil {
		st.Close()
		return nil, err
	}
	st.Server = srv
	if o.Extra != nil {
		xp, err := pool.New(*o.Extra)
		if err != nil {
			st.Close()
			return nil, fmt.Errorf("extra port pool: %w", err)
		}
		st.ExtraPool = xp
		if err := xp.Start(ctx); err != nil {
			st.Close()
			return nil, fmt.Errorf("extra port pool: %w", err)
		}
	}
	return st, nil
}

// Serve serves client sessions on ln until ctx ends (proxy.Server.Serve).
func (st *Stack) Serve(ctx context.Context, ln net.Listener) error {
	return st.Server.Serve(ctx, ln)
}

// ServeExtra serves the extra port on ln for at most maxConns sessions on
// the extra pool.
func (st *Stack) ServeExtra(ctx context.Context, ln net.Listener, maxConns int) error {
	if st.ExtraPool == nil {
		_ = ln.Close()
		return errors.New("stack: no extra port configured")
	}
	return st.Server.ServeExtra(ctx, ln, st.ExtraPool, maxConns)
}

// Close stops the parts in reverse order: the front end (its sessions
// end), the scheduler, then the pools. Serve calls should have returned
// first.
func (st *Stack) Close() {
	if st.Server != nil {
		st.Server.Close()
	}
	if st.Scheduler != nil {
		st.Scheduler.Close()
	}
	if st.ExtraPool != nil {
		st.ExtraPool.Close()
	}
	if st.Pool != nil {
		st.Pool.Close()
	}
}
