package admin

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/tpproxy/tpproxy/internal/stack"
)

// httpShutdownTimeout bounds the HTTP endpoint's graceful stop.
const httpShutdownTimeout = 5 * time.Second

// PortAddon is the admin port on ln, served by a stack over its scheduler,
// front end and pool.
func PortAddon(cfg Config, ln net.Listener) stack.Addon {
	return stack.Addon{Name: "admin port", Listener: ln, Build: func(st *stack.Stack) (stack.Service, error) {
		cfg.Sizer = st.Sizer
		a, err := New(cfg, st.Scheduler, st.Server, st.Pool)
		if err != nil {
			return stack.Service{}, err
		}
		return stack.Service{Serve: func(ctx context.Context) error { return a.Serve(ctx, ln) }, Stop: a.Close}, nil
	}}
}

// HTTPAddon is the /metrics, /healthz and /readyz endpoint on ln.
func HTTPAddon(cfg HTTPConfig, ln net.Listener) stack.Addon {
	return stack.Addon{Name: "http endpoint", Listener: ln, Build: func(st *stack.Stack) (stack.Service, error) {
		cfg.Sizer = st.Sizer
		h, err := NewHTTP(cfg, st.Server, st.Scheduler, st.Pool)
		if err != nil {
			return stack.Service{}, err
		}
		return stack.Service{
			Serve: func(context.Context) error { return h.Serve(ln) },
			Stop: func() {
				ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
				defer cancel()
				_ = h.Shutdown(ctx)
			},
		}, nil
	}}
}

// PprofAddon serves Go's /debug/pprof/ on a listener of its own.
func PprofAddon(log *slog.Logger, ln net.Listener) stack.Addon {
	return stack.Addon{Name: "pprof endpoint", Listener: ln, Build: func(*stack.Stack) (stack.Service, error) {
		if log == nil {
			log = slog.Default()
		}
		ps := NewPprofServer(log)
		return stack.Service{
			Serve: func(context.Context) error {
				if err := ps.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
					return err
				}
				return nil
			},
			Stop: func() { _ = ps.Close() },
		}, nil
	}}
}
