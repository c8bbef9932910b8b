package operate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	dto "github.com/prometheus/client_model/go"

	"github.com/tpproxy/tpproxy/internal/dashboard"
	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// families is every metric family tpproxy documents, with its type.
var families = map[string]dto.MetricType{
	"tpproxy_build_info":                                   dto.MetricType_GAUGE,
	"tpproxy_client_connections":                           dto.MetricType_GAUGE,
	"tpproxy_client_connections_accepted_total":            dto.MetricType_COUNTER,
	"tpproxy_client_connections_rejected_total":            dto.MetricType_COUNTER,
	"tpproxy_sessions_pinned":                              dto.MetricType_GAUGE,
	"tpproxy_session_pins_total":                           dto.MetricType_COUNTER,
	"tpproxy_statements_total":                             dto.MetricType_COUNTER,
	"tpproxy_statement_duration_seconds":                   dto.MetricType_HISTOGRAM,
	"tpproxy_queue_wait_seconds":                           dto.MetricType_HISTOGRAM,
	"tpproxy_slow_queue_statements_total":                  dto.MetricType_COUNTER,
	"tpproxy_client_bytes_received_total":                  dto.MetricType_COUNTER,
	"tpproxy_client_bytes_sent_total":                      dto.MetricType_COUNTER,
	"tpproxy_thread_pool_groups":                           dto.MetricType_GAUGE,
	"tpproxy_thread_pool_active":                           dto.MetricType_GAUGE,
	"tpproxy_thread_pool_max_threads":                      dto.MetricType_GAUGE,
	"tpproxy_thread_group_queue_length":                    dto.MetricType_GAUGE,
	"tpproxy_thread_group_active":                          dto.MetricType_GAUGE,
	"tpproxy_thread_group_stalled":                         dto.MetricType_GAUGE,
	"tpproxy_thread_group_capacity":                        dto.MetricType_GAUGE,
	"tpproxy_thread_group_waiting_backend":                 dto.MetricType_GAUGE,
	"tpproxy_thread_group_admissions_total":                dto.MetricType_COUNTER,
	"tpproxy_thread_group_queued_total":                    dto.MetricType_COUNTER,
	"tpproxy_thread_group_stalls_total":                    dto.MetricType_COUNTER,
	"tpproxy_thread_group_kickups_total":                   dto.MetricType_COUNTER,
	"tpproxy_thread_group_queue_timeouts_total":            dto.MetricType_COUNTER,
	"tpproxy_thread_group_shed_total":                      dto.MetricType_COUNTER,
	"tpproxy_backend_pool_size":                            dto.MetricType_GAUGE,
	"tpproxy_backend_held_seconds_total":                   dto.MetricType_COUNTER,
	"tpproxy_backend_round_trips_total":                    dto.MetricType_COUNTER,
	"tpproxy_backend_round_trip_seconds_total":             dto.MetricType_COUNTER,
	"tpproxy_backend_lent_connections":                     dto.MetricType_GAUGE,
	"tpproxy_backend_connections":                          dto.MetricType_GAUGE,
	"tpproxy_backend_connections_pinned":                   dto.MetricType_GAUGE,
	"tpproxy_backend_waiting":                              dto.MetricType_GAUGE,
	"tpproxy_backend_up":                                   dto.MetricType_GAUGE,
	"tpproxy_backend_acquires_total":                       dto.MetricType_COUNTER,
	"tpproxy_backend_acquire_timeouts_total":               dto.MetricType_COUNTER,
	"tpproxy_backend_acquire_wait_seconds":                 dto.MetricType_HISTOGRAM,
	"tpproxy_backend_dials_total":                          dto.MetricType_COUNTER,
	"tpproxy_backend_dial_errors_total":                    dto.MetricType_COUNTER,
	"tpproxy_backend_resets_total":                         dto.MetricType_COUNTER,
	"tpproxy_backend_replaced_total":                       dto.MetricType_COUNTER,
	"tpproxy_backend_broken_total":                         dto.MetricType_COUNTER,
	"tpproxy_backend_expired_total":                        dto.MetricType_COUNTER,
	"tpproxy_backend_health_checks_total":                  dto.MetricType_COUNTER,
	"tpproxy_backend_health_failures_total":                dto.MetricType_COUNTER,
	"tpproxy_backend_kills_total":                          dto.MetricType_COUNTER,
	"tpproxy_client_hosts_blocked":                         dto.MetricType_GAUGE,
	"tpproxy_backend_account_switches_total":               dto.MetricType_COUNTER,
	"tpproxy_backend_account_refusals_total":               dto.MetricType_COUNTER,
	"tpproxy_backend_account_connections":                  dto.MetricType_GAUGE,
	"tpproxy_prepared_statements_client":                   dto.MetricType_GAUGE,
	"tpproxy_prepared_statements_cached":                   dto.MetricType_GAUGE,
	"tpproxy_prepared_statements_backend":                  dto.MetricType_GAUGE,
	"tpproxy_prepared_statement_reprepares_total":          dto.MetricType_COUNTER,
	"tpproxy_catalog_lookup_failures_total":                dto.MetricType_COUNTER,
	"tpproxy_client_buffer_bytes":                          dto.MetricType_GAUGE,
	"tpproxy_client_buffer_limit_bytes":                    dto.MetricType_GAUGE,
	"tpproxy_handshake_work_seconds_total":                 dto.MetricType_COUNTER,
	"tpproxy_handshake_work_waits_total":                   dto.MetricType_COUNTER,
	"tpproxy_handshake_work_slots":                         dto.MetricType_GAUGE,
	"tpproxy_sessions_pinned_by_account":                   dto.MetricType_GAUGE,
	"tpproxy_pinned_connections":                           dto.MetricType_GAUGE,
	"tpproxy_pinned_connections_limit":                     dto.MetricType_GAUGE,
	"tpproxy_pinned_per_account_limit":                     dto.MetricType_GAUGE,
	"tpproxy_pinned_sticky_connections":                    dto.MetricType_GAUGE,
	"tpproxy_pinned_sticky_limit":                          dto.MetricType_GAUGE,
	"tpproxy_pin_waiting":                                  dto.MetricType_GAUGE,
	"tpproxy_pin_waits_total":                              dto.MetricType_COUNTER,
	"tpproxy_pin_refusals_total":                           dto.MetricType_COUNTER,
	"tpproxy_pin_overdrafts_total":                         dto.MetricType_COUNTER,
	"tpproxy_pin_shed_total":                               dto.MetricType_COUNTER,
	"tpproxy_backend_prepares_total":                       dto.MetricType_COUNTER,
	"tpproxy_backend_prepared_evictions_total":             dto.MetricType_COUNTER,
	"tpproxy_shutting_down":                                dto.MetricType_GAUGE,
	"tpproxy_config_reloads_total":                         dto.MetricType_COUNTER,
	"tpproxy_gc_percent":                                   dto.MetricType_GAUGE,
	"tpproxy_gc_headroom_bytes":                            dto.MetricType_GAUGE,
	"tpproxy_gc_tuner_collections_total":                   dto.MetricType_COUNTER,
	"tpproxy_config_restart_required":                      dto.MetricType_GAUGE,
	"tpproxy_config_last_reload_success_timestamp_seconds": dto.MetricType_GAUGE,
	"process_resident_memory_bytes":                        dto.MetricType_GAUGE,
	"process_cpu_seconds_total":                            dto.MetricType_COUNTER,
	"go_goroutines":                                        dto.MetricType_GAUGE,
}

// TestMetricsFamilies runs real traffic of every kind through the binary
// and checks that /metrics shows each documented family with its type, and
// that the traffic moved the figures it should.
func TestMetricsFamilies(t *testing.T) {
	s := defaults(t)
	s.GroupSize, s.Oversubscribe, s.SlowQueue = 1, 0, "20ms"
	pprofPort := freePort(t)
	s.AdminExtra = fmt.Sprintf("  pprof_listen: 127.0.0.1:%d\n", pprofPort)
	d := start(t, s)
	ctx := ctxT(t, time.Minute)

	if code, body := d.get(t, "/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := d.get(t, "/readyz"); code != http.StatusOK || strings.TrimSpace(body) != "ready" {
		t.Errorf("/readyz: %d %q", code, body)
	}
	// Profiles are not served next to /metrics unless asked
	// (admin.pprof_on_http_listen), only on admin.pprof_listen.
	if code, _ := d.get(t, "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ on http_listen: %d, want 404", code)
	}
	if code, body := d.getPort(t, pprofPort, "/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ on pprof_listen: %d", code)
	}
	if code, _ := d.getPort(t, pprofPort, "/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics on pprof_listen: %d, want 404", code)
	}

	text := d.open(t, "interpolateParams=true")
	mustExec(t, text, "CREATE TABLE IF NOT EXISTS metrics_t (id INT PRIMARY KEY AUTO_INCREMENT, v INT)")
	mustExec(t, text, "INSERT INTO metrics_t (v) VALUES (1), (2)")
	// A transaction pins its session (reason transaction).
	tx, err := text.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE metrics_t SET v = v + 1"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// An error answer.
	if _, err := text.ExecContext(ctx, "SELECT * FROM no_such_table"); err == nil {
		t.Fatal("query of a missing table succeeded")
	}
	// Prepared statements (binary protocol).
	bin := d.open(t, "interpolateParams=false")
	var n int
	if err := bin.QueryRowContext(ctx, "SELECT v FROM metrics_t WHERE id = ?", 1).Scan(&n); err != nil {
		t.Fatal(err)
	}
	// A session holding a user variable stays pinned while it is open.
	held, err := text.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := held.ExecContext(ctx, "SET @x = 1"); err != nil {
		t.Fatal(err)
	}
	// A wrong password.
	bad, err := sql.Open("mysql", strings.Replace(d.dsn(), ":"+proxytest.Password+"@", ":wrong@", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	var me *mysql.MySQLError
	if err := bad.PingContext(ctx); !errors.As(err, &me) || me.Number != 1045 {
		t.Fatalf("wrong password: %v, want ERR 1045", err)
	}
	// One thread group admitting one statement at a time: concurrent
	// sleeps queue, longer than the 20ms slow queue threshold.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := text.ExecContext(ctx, "SELECT SLEEP(0.1)"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	slow := d.waitLog(t, 10*time.Second, msgIs("slow queue"))
	for _, k := range []string{"conn_id", "user", "remote", "group", "priority", "queue_wait", "threshold", "command"} {
		if _, ok := slow[k]; !ok {
			t.Errorf("slow queue record has no %s: %v", k, slow)
		}
	}
	if slow["level"] != "WARN" || slow["command"] != "query" || slow["user"] != proxytest.User {
		t.Errorf("slow queue record %v", slow)
	}

	fams := d.metrics(t)
	for name, typ := range families {
		f := fams[name]
		switch {
		case f == nil:
			t.Errorf("family %s missing", name)
		case f.GetType() != typ:
			t.Errorf("family %s is a %s, want %s", name, f.GetType(), typ)
		}
	}
	for name := range fams {
		if _, known := families[name]; strings.HasPrefix(name, "tpproxy_") && !known {
			t.Errorf("family %s is exposed but not in the test's list (nor, probably, in README)", name)
		}
	}
	atLeast := func(name string, labels map[string]string, min float64) {
		t.Helper()
		v, ok := value(fams, name, labels)
		if !ok || v < min {
			t.Errorf("%s%v = %v (found %v), want >= %v", name, labels, v, ok, min)
		}
	}
	equal := func(name string, labels map[string]string, want float64) {
		t.Helper()
		if v, ok := value(fams, name, labels); !ok || v != want {
			t.Errorf("%s%v = %v (found %v), want %v", name, labels, v, ok, want)
		}
	}
	atLeast("tpproxy_statements_total", map[string]string{"command": "query", "outcome": "ok"}, 5)
	atLeast("tpproxy_statements_total", map[string]string{"command": "query", "outcome": "error"}, 1)
	atLeast("tpproxy_statements_total", map[string]string{"command": "stmt_prepare", "outcome": "ok"}, 1)
	atLeast("tpproxy_statements_total", map[string]string{"command": "stmt_execute", "outcome": "ok"}, 1)
	atLeast("tpproxy_statement_duration_seconds", nil, 8)
	atLeast("tpproxy_queue_wait_seconds", map[string]string{"priority": "low"}, 4)
	atLeast("tpproxy_slow_queue_statements_total", nil, 1)
	atLeast("tpproxy_thread_group_queued_total", map[string]string{"group": "0"}, 1)
	atLeast("tpproxy_thread_group_admissions_total", map[string]string{"group": "0"}, 8)
	atLeast("tpproxy_client_bytes_received_total", nil, 100)
	atLeast("tpproxy_client_bytes_sent_total", nil, 100)
	atLeast("tpproxy_client_connections", map[string]string{"port": "main"}, 2)
	atLeast("tpproxy_client_connections_accepted_total", nil, 3)
	atLeast("tpproxy_client_connections_rejected_total", map[string]string{"reason": "auth_failed"}, 1)
	atLeast("tpproxy_session_pins_total", map[string]string{"reason": "transaction"}, 1)
	atLeast("tpproxy_session_pins_total", map[string]string{"reason": "user_variable"}, 1)
	equal("tpproxy_sessions_pinned", map[string]string{"reason": "user_variable"}, 1)
	equal("tpproxy_backend_connections_pinned", nil, 1)
	atLeast("tpproxy_backend_acquire_wait_seconds", nil, 5)
	atLeast("tpproxy_backend_acquires_total", nil, 5)
	atLeast("tpproxy_backend_dials_total", nil, 4)
	atLeast("tpproxy_prepared_statements_backend", nil, 0)
	atLeast("tpproxy_backend_prepares_total", nil, 1)
	equal("tpproxy_backend_up", nil, 1)
	equal("tpproxy_backend_pool_size", nil, 4)
	equal("tpproxy_thread_pool_groups", nil, 1)
	equal("tpproxy_shutting_down", nil, 0)
	equal("tpproxy_config_restart_required", nil, 0)
	atLeast("process_resident_memory_bytes", nil, 1<<20)
	if v, ok := value(fams, "tpproxy_build_info", nil); !ok || v != 1 {
		t.Errorf("tpproxy_build_info = %v", v)
	}

	// Every metric the Grafana dashboard queries exists: the names are
	// the vector selectors of every panel query as Prometheus' parser
	// reads it (internal/dashboard); a histogram's _bucket, _sum and
	// _count name its family.
	dash, err := os.ReadFile("../../configs/grafana/dashboards/tpproxy.json")
	if err != nil {
		t.Fatal(err)
	}
	_, queries, err := dashboard.Load(dash)
	if err != nil {
		t.Fatal(err)
	}
	used := make(map[string]bool)
	for _, q := range queries {
		for _, name := range q.Metrics() {
			used[name] = true
		}
	}
	if len(used) < 10 {
		t.Fatalf("the dashboard queries only %d metrics", len(used))
	}
	isHistogram := func(f string) bool { return fams[f] != nil && fams[f].GetType() == dto.MetricType_HISTOGRAM }
	for name := range used {
		if fams[dashboard.MetricFamily(name, isHistogram)] == nil {
			t.Errorf("the dashboard queries %s, which /metrics does not expose", name)
		}
	}
	t.Logf("%d panel queries read %d metrics, all exposed", len(queries), len(used))
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
