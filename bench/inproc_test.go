package bench

import (
	"context"
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
	stack    *stack.Stack
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: proxy listener: %w", err)
	}
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("bench: proxy admin port: %w", err)
	}
	// The stack serves until close (not until ctx ends), so that cleanup
	// after a cancelled run is orderly.
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
		Listener: ln,
		Addons: []stack.Addon{admin.PortAddon(admin.Config{Listen: "127.0.0.1:0", User: localAdminUser,
			Password: localAdminPassword, Logger: log.With("component", "admin")}, aln)},
	})
	if err != nil {
		return nil, fmt.Errorf("bench: proxy: %w", err)
	}
	return &localProxy{
		Addr:     ln.Addr().String(),
		AdminDSN: localAdminUser + ":" + localAdminPassword + "@tcp(" + aln.Addr().String() + ")/",
		stack:    st,
	}, nil
}

// close stops accepting, ends the sessions and closes the pool. It
// returns the error of a listener that stopped serving by itself.
func (lp *localProxy) close() error {
	var err error
	select {
	case err = <-lp.stack.Failed():
	default:
	}
	lp.stack.Close()
	return err
}
