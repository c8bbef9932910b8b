package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/tpproxy/tpproxy/admin"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// localProxy is tpproxy running inside the test process on a loopback
// port, wired as cmd/tpproxy serve wires it: pool, scheduler, front end.
// The ramp and sweep tests use it; the demo runs the tpproxy binary.
type localProxy struct {
	Addr string
	// AdminDSN reaches its admin port (SHOW STATUS, SET GLOBAL).
	AdminDSN string
	admin    *admin.Server
	pool     *pool.Pool
	sched    *scheduler.Scheduler
	srv      *proxy.Server
	cancel   context.CancelFunc
	served   chan error
}

// The in-process proxy's admin account (loopback only).
const (
	localAdminUser     = "admin"
	localAdminPassword = "tpbench"
)

// startLocalProxy starts a proxy in front of backend that lets user log in
// with password and uses the same account for its poolSize backend
// connections.
func startLocalProxy(ctx context.Context, backend, user, password string, poolSize int, log *slog.Logger) (*localProxy, error) {
	p, err := pool.New(pool.Config{
		Addr:     backend,
		User:     user,
		Password: password,
		Size:     poolSize,
		Logger:   log.With("component", "pool"),
	})
	if err != nil {
		return nil, fmt.Errorf("bench: proxy pool: %w", err)
	}
	if err := p.Start(ctx); err != nil {
		p.Close()
		return nil, fmt.Errorf("bench: proxy pool: %w", err)
	}
	sched, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("bench: proxy scheduler: %w", err)
	}
	sched.Start()
	srv, err := proxy.New(proxy.Config{
		Users:  []proxy.User{{Name: user, Plain: password}},
		Logger: log.With("component", "proxy"),
	}, p, sched)
	if err != nil {
		sched.Close()
		p.Close()
		return nil, fmt.Errorf("bench: proxy: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		sched.Close()
		p.Close()
		return nil, fmt.Errorf("bench: proxy listener: %w", err)
	}
	// Serve's context is not ctx: the proxy lives until close, so that
	// cleanup after a cancelled run is orderly.
	serveCtx, cancel := context.WithCancel(context.Background())
	lp := &localProxy{Addr: ln.Addr().String(), pool: p, sched: sched, srv: srv, cancel: cancel, served: make(chan error, 2)}
	adm, err := admin.New(admin.Config{Listen: "127.0.0.1:0", User: localAdminUser, Password: localAdminPassword,
		Logger: log.With("component", "admin")}, sched, srv, p)
	var aln net.Listener
	if err == nil {
		aln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		cancel()
		ln.Close()
		srv.Close()
		sched.Close()
		p.Close()
		return nil, fmt.Errorf("bench: proxy admin port: %w", err)
	}
	lp.admin = adm
	lp.AdminDSN = localAdminUser + ":" + localAdminPassword + "@tcp(" + aln.Addr().String() + ")/"
	go func() { lp.served <- srv.Serve(serveCtx, ln) }()
	go func() { lp.served <- adm.Serve(serveCtx, aln) }()
	return lp, nil
}

// close stops accepting, ends the sessions and closes the pool. It
// returns Serve's error.
func (lp *localProxy) close() error {
	lp.cancel()
	err := errors.Join(<-lp.served, <-lp.served)
	lp.admin.Close()
	lp.srv.Close()
	lp.sched.Close()
	lp.pool.Close()
	return err
}
