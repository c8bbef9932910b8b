package bench

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ProxyStep is what tpproxy did during a step, from SHOW STATUS on its
// admin port before and after the hold.
type ProxyStep struct {
	// Statements is the increase of Questions: statements the proxy ran.
	Statements int64 `json:"statements"`
	// Queued is the statements that waited in a thread group's queue
	// (Threadpool_waited); QueueWaitMs their total wait and
	// QueueWaitAvgMs the mean per queued statement.
	Queued         int64   `json:"queued"`
	QueueWaitMs    float64 `json:"queue_wait_ms"`
	QueueWaitAvgMs float64 `json:"queue_wait_avg_ms"`
	// QueueWaitPerStmtMs spreads the wait over all statements: the
	// latency the thread pool added on average.
	QueueWaitPerStmtMs float64 `json:"queue_wait_per_stmt_ms"`
	QueueTimeouts      int64   `json:"queue_timeouts"`
	Stalls             int64   `json:"stalls"`
	KickUps            int64   `json:"kickups"`
	// PoolWaits counts statements that waited for a backend connection.
	PoolWaits int64 `json:"pool_waits"`
	// PoolSize is the backend connections at the end; SessionsPinned the
	// sessions holding one of their own at the end.
	PoolSize       int64 `json:"pool_size"`
	SessionsPinned int64 `json:"sessions_pinned"`
	Pins           int64 `json:"pins"`
}

// proxyAdmin reads tpproxy's SHOW STATUS over its admin port.
type proxyAdmin struct {
	db *sql.DB
}

func openProxyAdmin(dsn string) (*proxyAdmin, error) {
	db, err := openDB(dsn, 1, nil)
	if err != nil {
		return nil, fmt.Errorf("bench: proxy admin: %w", err)
	}
	return &proxyAdmin{db: db}, nil
}

func (p *proxyAdmin) close() { p.db.Close() }

// status returns SHOW STATUS as lower-case name → value.
func (p *proxyAdmin) status(ctx context.Context) (map[string]int64, error) {
	rows, err := p.db.QueryContext(ctx, "SHOW STATUS")
	if err != nil {
		return nil, fmt.Errorf("bench: proxy admin SHOW STATUS: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, fmt.Errorf("bench: proxy admin SHOW STATUS: %w", err)
		}
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			out[strings.ToLower(name)] = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("bench: proxy admin SHOW STATUS: %w", err)
	}
	return out, nil
}

// proxyDelta computes a step's ProxyStep from two SHOW STATUS readings.
func proxyDelta(a, b map[string]int64) ProxyStep {
	d := func(k string) int64 { return max(b[k]-a[k], 0) }
	p := ProxyStep{
		Statements:     d("questions"),
		Queued:         d("threadpool_waited"),
		QueueWaitMs:    float64(d("threadpool_queue_wait_us")) / 1000,
		QueueTimeouts:  d("threadpool_queue_timeouts"),
		Stalls:         d("threadpool_stalls"),
		KickUps:        d("threadpool_kickups"),
		PoolWaits:      d("backend_pool_waits"),
		PoolSize:       b["backend_pool_size"],
		SessionsPinned: b["sessions_pinned"],
		Pins:           d("pins_total"),
	}
	if p.Queued > 0 {
		p.QueueWaitAvgMs = p.QueueWaitMs / float64(p.Queued)
	}
	if p.Statements > 0 {
		p.QueueWaitPerStmtMs = p.QueueWaitMs / float64(p.Statements)
	}
	return p
}

// readProxyStats reads a tpproxy process's totals for the report: SHOW
// STATUS on its admin port, and what that does not show (sessions
// accepted, acquisitions and their wait, dials, resets, broken
// connections, statements answered with ERR) from its /metrics. Without
// metricsURL, or when /metrics fails, those stay 0 and the error says so.
func readProxyStats(ctx context.Context, adminDSN, metricsURL string) (*ProxyStats, error) {
	a, err := openProxyAdmin(adminDSN)
	if err != nil {
		return nil, err
	}
	defer a.close()
	st, err := a.status(ctx)
	if err != nil {
		return nil, err
	}
	ps := &ProxyStats{
		Pool: PoolStats{Size: int(st["backend_pool_size"]), Waits: uint64(st["backend_pool_waits"])},
		Front: FrontStats{Sessions: int(st["threads_connected"]), AuthFailures: uint64(st["aborted_connects"]),
			Statements: uint64(st["questions"]), Pins: uint64(st["pins_total"])},
	}
	if metricsURL == "" {
		return ps, nil
	}
	m, err := scrapeMetrics(ctx, metricsURL)
	if err != nil {
		return ps, err
	}
	n := func(name string, labels ...string) uint64 { return uint64(m.sum("tpproxy_"+name, labels...)) }
	ps.Pool.Open = int(n("backend_connections", "state", "idle") + n("backend_connections", "state", "in_use"))
	ps.Pool.Acquires = n("backend_acquires_total")
	ps.Pool.WaitSec = m.sum("tpproxy_backend_acquire_wait_seconds")
	ps.Pool.AcquireTimeouts = n("backend_acquire_timeouts_total")
	ps.Pool.Dials = n("backend_dials_total")
	ps.Pool.DialErrors = n("backend_dial_errors_total")
	ps.Pool.Resets = n("backend_resets_total")
	ps.Pool.Broken = n("backend_broken_total")
	ps.Front.Accepted = n("client_connections_accepted_total")
	ps.Front.Rejected = n("client_connections_rejected_total")
	ps.Front.Errors = n("statements_total", "outcome", "error")
	return ps, nil
}

// metricFamilies is a parsed /metrics page.
type metricFamilies map[string]*dto.MetricFamily

// scrapeMetrics reads a Prometheus text page.
func scrapeMetrics(ctx context.Context, url string) (metricFamilies, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("bench: tpproxy metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("bench: tpproxy metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("bench: tpproxy metrics: %w", err)
	}
	return fams, nil
}

// sum adds the values of a family's series whose label name has value
// (all series without a label filter): counters, gauges, and the sum of
// a histogram.
func (m metricFamilies) sum(name string, label ...string) float64 {
	f := m[name]
	if f == nil {
		return 0
	}
	var total float64
	for _, s := range f.GetMetric() {
		if len(label) == 2 && !hasLabel(s, label[0], label[1]) {
			continue
		}
		switch {
		case s.Counter != nil:
			total += s.GetCounter().GetValue()
		case s.Gauge != nil:
			total += s.GetGauge().GetValue()
		case s.Histogram != nil:
			total += s.GetHistogram().GetSampleSum()
		case s.Untyped != nil:
			total += s.GetUntyped().GetValue()
		}
	}
	return total
}

func hasLabel(s *dto.Metric, name, value string) bool {
	for _, l := range s.GetLabel() {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}
