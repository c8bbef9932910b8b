package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tpproxy/tpproxy/internal/autosize"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// HTTPConfig configures the HTTP endpoint.
type HTTPConfig struct {
	// Version and Commit label tpproxy_build_info.
	Version, Commit string
	// ReadyTimeout bounds the backend check behind /readyz. Default 2 s.
	ReadyTimeout time.Duration
	// Collectors are registered next to the proxy's own (for example the
	// configuration reload metrics of cmd/tpproxy).
	Collectors []prometheus.Collector
	// Logger receives HTTP server errors. Default slog.Default().
	Logger *slog.Logger
	// Pprof also serves /debug/pprof/ on this endpoint (off by default:
	// scrapers are often exposed, profiles should not be).
	Pprof bool
	// Sizer is the pool's automatic sizer, nil for a fixed pool_size
	// (HTTPAddon takes it from the stack).
	Sizer *autosize.Sizer
}

// HTTP serves /metrics, /healthz, /readyz and, when asked, /debug/pprof/.
type HTTP struct {
	srv   *http.Server
	front *proxy.Server
	ready *readiness
	// Registry holds every metric /metrics exposes.
	Registry *prometheus.Registry
}

// NewHTTP builds the HTTP endpoint over the proxy's front end, scheduler
// and pool, with its own Prometheus registry (nothing global).
func NewHTTP(cfg HTTPConfig, front *proxy.Server, sched *scheduler.Scheduler, p *pool.Pool) (*HTTP, error) {
	if front == nil || sched == nil || p == nil {
		return nil, fmt.Errorf("%w: scheduler, proxy server and pool are all required", ErrBadConfig)
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &HTTP{front: front, ready: &readiness{pool: p, timeout: cfg.ReadyTimeout}, Registry: prometheus.NewRegistry()}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: metricPrefix + "build_info",
		Help: "Always 1; the labels say which tpproxy build is running.",
	}, []string{"version", "commit", "go_version"})
	build.WithLabelValues(cfg.Version, cfg.Commit, runtime.Version()).Set(1)
	cs := []prometheus.Collector{
		&collector{front: front, sched: sched, pool: p, ready: h.ready, sizer: cfg.Sizer},
		build,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
	for _, c := range append(cs, cfg.Collectors...) {
		if err := h.Registry.Register(c); err != nil {
			return nil, fmt.Errorf("admin: metrics: %w", err)
		}
	}

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(h.Registry, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		EnableOpenMetrics: true,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", h.serveReady)
	if cfg.Pprof {
		addPprof(mux)
	}
	h.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	return h, nil
}

// serveReady answers 200 when the proxy can serve statements: not shutting
// down, and the backend answers a ping with the pool holding connections.
// Otherwise 503 with the reason, for a load balancer to stop sending
// clients here.
func (h *HTTP) serveReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if h.front.Draining() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintln(w, "not ready: shutting down")
		return
	}
	if err := h.ready.backend(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "not ready: %v\n", err)
		return
	}
	_, _ = fmt.Fprintln(w, "ready")
}

// Handler is the endpoint's handler, for tests.
func (h *HTTP) Handler() http.Handler { return h.srv.Handler }

// Serve serves HTTP on ln until Shutdown; it returns nil after Shutdown.
func (h *HTTP) Serve(ln net.Listener) error {
	err := h.srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops the endpoint, letting requests in progress finish until
// ctx ends.
func (h *HTTP) Shutdown(ctx context.Context) error { return h.srv.Shutdown(ctx) }

func addPprof(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}

// NewPprofServer is an HTTP server of /debug/pprof/ alone, for a listener
// of its own (admin.pprof_listen).
func NewPprofServer(log *slog.Logger) *http.Server {
	mux := http.NewServeMux()
	addPprof(mux)
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
}
