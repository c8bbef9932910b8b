package bench

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
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
