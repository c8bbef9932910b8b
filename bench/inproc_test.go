package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/tpproxy/tpproxy/admin"
	"github.com/tpproxy/tpproxy/internal/stack"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// localProxy is tpproxy running inside the test process on a loopback
// port, wired as cmd/tpproxy serve wires it (stack.Start: pool, scheduler,
// front end) plus the admin port.
// The ramp and sweep tests use it; the demo runs the tpproxy binary.
type localProxy struct {
	Addr string
	// AdminDSN reaches its admin port (SHOW STATUS, SET GLOBAL).
	AdminDSN string
	admin    *admin.Server
	stack    *stack.Stack
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
	st, err := stack.Start(ctx, stack.Options{
		Pool: pool.Config{
			Addr:     backend,
			User:     user,
			Password: password,
			Size:     poolSize,
			Logger:   log.With("component", "pool"),
		},
		Scheduler: scheduler.DefaultConfig(),
		Proxy: proxy.Config{
			Users:  []proxy.User{{Name: user, Plain: password}},
			Logger: log.With("component", "proxy"),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("bench: proxy: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("bench: proxy listener: %w", err)
	}
	// Serve's context is not ctx: the proxy lives until close, so that
	// cleanup after a cancelled run is orderly.
	serveCtx, cancel := context.WithCancel(context.Background())
	lp := &localProxy{Addr: ln.Addr().String(), stack: st, cancel: cancel, served: make(chan error, 2)}
	adm, err := admin.New(admin.Config{Listen: "127.0.0.1:0", User: localAdminUser, Password: localAdminPassword,
		Logger: log.With("component", "admin")}, st.Scheduler, st.Server, st.Pool)
	var aln net.Listener
	if err == nil {
		aln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		cancel()
		ln.Close()
		st.Close()
		return nil, fmt.Errorf("bench: proxy admin port: %w", err)
	}
	lp.admin = adm
	lp.AdminDSN = localAdminUser + ":" + localAdminPassword + "@tcp(" + aln.Addr().String() + ")/"
	go func() { lp.served <- st.Serve(serveCtx, ln) }()
	go func() { lp.served <- adm.Serve(serveCtx, aln) }()
	return lp, nil
}

// close stops accepting, ends the sessions and closes the pool. It
// returns Serve's error.
func (lp *localProxy) close() error {
	lp.cancel()
	err := errors.Join(<-lp.served, <-lp.served)
	lp.admin.Close()
	lp.stack.Close()
	return err
}
