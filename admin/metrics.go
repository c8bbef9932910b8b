package admin

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tpproxy/tpproxy/internal/autosize"
	"github.com/tpproxy/tpproxy/internal/histogram"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// metricPrefix starts every tpproxy metric family.
const metricPrefix = "tpproxy_"

// desc is one metric family of the collector.
func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(metricPrefix+name, help, labels, nil)
}

// Metric families. README's metrics table lists the same names, types and
// labels; TestMetricsFamilies checks every one appears after traffic.
var (
	descClientConns     = desc("client_connections", "Client sessions connected now, by port (main, extra).", "port")
	descClientAccepted  = desc("client_connections_accepted_total", "Client connections accepted.")
	descClientRejected  = desc("client_connections_rejected_total", "Client connections turned away, by reason.", "reason")
	descHostsBlocked    = desc("client_hosts_blocked", "Client addresses blocked after max_connect_errors failed logins (until FLUSH HOSTS).")
	descSessionsPinned  = desc("sessions_pinned", "Sessions pinned to a backend connection now, by reason (a session may count under several).", "reason")
	descSessionPins     = desc("session_pins_total", "Times a reason started pinning a session.", "reason")
	descStatements      = desc("statements_total", "Client commands answered, by command and outcome (ok, error).", "command", "outcome")
	descStmtDuration    = desc("statement_duration_seconds", "Time from reading a client command to the end of its answer, queue wait included.")
	descQueueWait       = desc("queue_wait_seconds", "Time admitted statements waited in a thread group queue (0 for those that did not queue), by priority.", "priority")
	descSlowQueue       = desc("slow_queue_statements_total", "Statements that waited longer than log.slow_queue in a thread group queue.")
	descBytesIn         = desc("client_bytes_received_total", "Bytes received from clients.")
	descBytesOut        = desc("client_bytes_sent_total", "Bytes sent to clients.")
	descPoolGroups      = desc("thread_pool_groups", "Thread groups (thread_pool_size).")
	descPoolActive      = desc("thread_pool_active", "Statements executing and counting against thread_pool_max_threads.")
	descPoolMaxThreads  = desc("thread_pool_max_threads", "thread_pool_max_threads: cap on statements executing at once over all groups.")
	descGroupQueue      = desc("thread_group_queue_length", "Statements queued in a thread group, by priority.", "group", "priority")
	descGroupActive     = desc("thread_group_active", "Statements executing in a thread group and counting against its cap.", "group")
	descGroupStalled    = desc("thread_group_stalled", "Capacity a thread group has because of stalls: slots granted by stall detection (generic) or statements running past stall_limit (enterprise).", "group")
	descGroupCapacity   = desc("thread_group_capacity", "A thread group's cap on executing statements now.", "group")
	descGroupWaiting    = desc("thread_group_waiting_backend", "Admitted statements of a thread group waiting for a backend connection.", "group")
	descGroupAdmissions = desc("thread_group_admissions_total", "Statements admitted by a thread group.", "group")
	descGroupQueued     = desc("thread_group_queued_total", "Statements that had to queue in a thread group.", "group")
	descGroupStalls     = desc("thread_group_stalls_total", "Stalls detected in a thread group.", "group")
	descGroupKickUps    = desc("thread_group_kickups_total", "Low-priority statements moved to the high-priority queue after thread_pool_prio_kickup_timer.", "group")
	descGroupTimeouts   = desc("thread_group_queue_timeouts_total", "Statements that gave up after thread_pool.queue_timeout in a thread group queue.", "group")
	descGroupShed       = desc("thread_group_shed_total", "Statements admission by queue delay gave up in a thread group queue (ERR 9005; thread_pool.codel_target).", "group")
	descBackendSize     = desc("backend_pool_size", "Configured number of backend connections.")
	descBackendHeld     = desc("backend_held_seconds_total", "Connection-time handed out: its rate is the mean number of backend connections in use (Little's L).")
	descBackendRTs      = desc("backend_round_trips_total", "Commands timed from their write to the end of their result.")
	descBackendRTTime   = desc("backend_round_trip_seconds_total", "Summed durations of backend_round_trips_total: their ratio is the backend's mean round trip.")
	descAutoChanges     = desc("backend_pool_autosize_changes_total", "Changes of backend_pool_size made by the automatic sizer (backend.pool_size: auto), by reason.", "reason")
	descAutoBound       = desc("backend_pool_autosize_bound", "The automatic sizer's bounds (backend.pool_size_min and _max).", "bound")
	descAutoInUse       = desc("backend_pool_autosize_in_use", "Mean backend connections in use over the automatic sizer's last window.")
	descAutoRoundTrip   = desc("backend_pool_autosize_round_trip_seconds", "Mean backend round trip over the automatic sizer's last window, and the reference it judges changes against.", "kind")
	descBackendLent     = desc("backend_lent_connections", "Backend connections kept open beyond backend_pool_size for sessions pinned for good (max_sticky_pinned bounds them).")
	descBackendConns    = desc("backend_connections", "Backend connections by state (idle, in_use, dialing).", "state")
	descBackendPinned   = desc("backend_connections_pinned", "Backend connections held by pinned sessions.")
	descBackendWaiting  = desc("backend_waiting", "Statements waiting for a backend connection now.")
	descBackendUp       = desc("backend_up", "1 when the last readiness check reached the backend, else 0.")
	descBackendAcquires = desc("backend_acquires_total", "Backend connection acquisitions.")
	descBackendTimeouts = desc("backend_acquire_timeouts_total", "Acquisitions that gave up after backend.acquire_timeout.")
	descBackendWait     = desc("backend_acquire_wait_seconds", "Time acquisitions waited for a backend connection (0 for those served at once).")
	descBackendDials    = desc("backend_dials_total", "Backend connections dialed successfully.")
	descBackendDialErrs = desc("backend_dial_errors_total", "Backend dials that failed.")
	descBackendResets   = desc("backend_resets_total", "COM_RESET_CONNECTIONs before a connection was reused.")
	descBackendReplaced = desc("backend_replaced_total", "Connections closed and redialed to fit a session.")
	descBackendBroken   = desc("backend_broken_total", "Connections closed after an error.")
	descBackendExpired  = desc("backend_expired_total", "Connections retired at the end of backend.max_lifetime.")
	descBackendHealth   = desc("backend_health_checks_total", "Health checks of idle connections.")
	descBackendHealthKO = desc("backend_health_failures_total", "Health checks that failed (the connection was replaced).")
	descBackendKills    = desc("backend_kills_total", "KILL statements sent for client sessions.")
	descBackendSwitches = desc("backend_account_switches_total", "COM_CHANGE_USERs that logged a backend connection in as another session's server account (backend.identity passthrough).")
	descBackendRefused  = desc("backend_account_refusals_total", "Account switches the server refused (wrong password, no such account).")
	descBackendAccount  = desc("backend_account_connections", "Backend connections by server account and state (idle, in_use), and acquisitions waiting for one (waiting).", "account", "state")
	descPrepClient      = desc("prepared_statements_client", "Prepared statements client sessions hold open.")
	descPrepCached      = desc("prepared_statements_cached", "Distinct statements in the proxy's statement cache.")
	descPrepBackend     = desc("prepared_statements_backend", "Statements prepared on backend connections now.")
	descPrepReprepares  = desc("prepared_statement_reprepares_total", "Executes retried after the server asked for a new prepare.")
	descCatalogFailures = desc("catalog_lookup_failures_total", "Statements the catalog could not judge in time (the session kept its backend connection instead).")
	descBufferBytes     = desc("client_buffer_bytes", "Memory the sessions' packet buffers hold beyond their resident ones.")
	descBufferLimit     = desc("client_buffer_limit_bytes", "max_buffer_memory (0: no bound).")
	descPrepBackendPrep = desc("backend_prepares_total", "COM_STMT_PREPAREs sent to the backend.")
	descPrepEvictions   = desc("backend_prepared_evictions_total", "Statements closed on a backend connection to stay under its cap.")
	descShuttingDown    = desc("shutting_down", "1 once a graceful shutdown has begun.")
	descPinnedAccount   = desc("sessions_pinned_by_account", "Sessions pinned to a backend connection now, by account and reason (a session may count under several).", "account", "reason")
	descPinHeld         = desc("pinned_connections", "Slots of the pinned-connection budget held now, by account: connections its pinned sessions keep, and statements that may pin it running.", "account")
	descPinLimit        = desc("pinned_connections_limit", "max_pinned_connections in force (automatic: the pool minus a reserve of min(thread_pool.size, pool_size-1) for unpinned work).")
	descPinAcctLimit    = desc("pinned_per_account_limit", "max_pinned_per_account in force.")
	descPinSticky       = desc("pinned_sticky_connections", "Slots held by sessions pinned for good by state tpproxy cannot replay (user variables, temporary tables, GET_LOCK, ...).")
	descPinStickyLimit  = desc("pinned_sticky_limit", "max_sticky_pinned in force (automatic: half of max_pinned_connections, at least 1).")
	descPinWaiting      = desc("pin_waiting", "Statements waiting for a pinned-connection slot now.")
	descPinWaits        = desc("pin_waits_total", "Statements that waited for a pinned-connection slot.")
	descPinRefused      = desc("pin_refusals_total", "Statements refused with ERR 1226 at a pinned-connection limit, by limit (max_pinned_connections, max_pinned_per_account, max_sticky_pinned).", "limit")
	descHandshakeBusy   = desc("handshake_work_seconds_total", "Time the handshake CPU budget's slots were held by private-key operations (RSA for caching_sha2_password, TLS handshakes).")
	descHandshakeWaits  = desc("handshake_work_waits_total", "Private-key operations of handshakes that waited for a slot of the handshake CPU budget.")
	descHandshakeSlots  = desc("handshake_work_slots", "Slots of the handshake CPU budget (half the CPUs, at least 1).")
	descPinShed         = desc("pin_shed_total", "Statements admission by queue delay gave up while waiting for a pinned slot (ERR 9005; thread_pool.codel_target).")
	descPinOverdrafts   = desc("pin_overdrafts_total", "Sessions that became pinned by what no statement text showed (a stored function's state, say) and took a slot past the limits.")
)

// collector reads the proxy's snapshots at scrape time; nothing is counted
// twice and the hot path pays for no Prometheus types.
type collector struct {
	front *proxy.Server
	sched *scheduler.Scheduler
	pool  *pool.Pool
	ready *readiness
	sizer *autosize.Sizer // nil for a fixed pool_size
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		descClientConns, descClientAccepted, descClientRejected, descHostsBlocked, descSessionsPinned, descSessionPins,
		descStatements, descStmtDuration, descQueueWait, descSlowQueue, descBytesIn, descBytesOut,
		descPoolGroups, descPoolActive, descPoolMaxThreads, descGroupQueue, descGroupActive,
		descGroupStalled, descGroupCapacity, descGroupWaiting, descGroupAdmissions, descGroupQueued,
		descGroupStalls, descGroupKickUps, descGroupTimeouts, descGroupShed, descBackendSize, descBackendLent, descBackendConns,
		descBackendHeld, descBackendRTs, descBackendRTTime, descAutoChanges, descAutoBound, descAutoInUse, descAutoRoundTrip,
		descBackendPinned, descBackendWaiting, descBackendUp, descBackendAcquires, descBackendTimeouts,
		descBackendWait, descBackendDials, descBackendDialErrs, descBackendResets, descBackendReplaced,
		descBackendBroken, descBackendExpired, descBackendHealth, descBackendHealthKO, descBackendKills,
		descBackendSwitches, descBackendRefused, descBackendAccount,
		descPrepClient, descPrepCached, descPrepBackend, descPrepReprepares, descCatalogFailures, descBufferBytes, descBufferLimit, descPrepBackendPrep,
		descPrepEvictions, descShuttingDown, descPinnedAccount, descPinHeld, descPinLimit, descPinAcctLimit,
		descPinWaiting, descPinWaits, descPinRefused, descPinShed, descPinOverdrafts, descPinSticky, descPinStickyLimit,
		descHandshakeBusy, descHandshakeWaits, descHandshakeSlots,
	} {
		ch <- d
	}
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func hist(ch chan<- prometheus.Metric, d *prometheus.Desc, s histogram.Snapshot, labels ...string) {
	ch <- prometheus.MustNewConstHistogram(d, s.Count, s.Sum.Seconds(), s.Cumulative(), labels...)
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	m := c.front.Metrics()
	st := c.front.Stats()
	gauge(ch, descClientConns, float64(m.Sessions), "main")
	gauge(ch, descClientConns, float64(m.ExtraSessions), "extra")
	counter(ch, descClientAccepted, st.Accepted)
	gauge(ch, descHostsBlocked, float64(m.BlockedHosts))
	for i, n := range m.Rejected {
		counter(ch, descClientRejected, n, proxy.RejectReason(i).String())
	}
	for _, reason := range proxy.PinReasons() {
		gauge(ch, descSessionsPinned, float64(m.PinnedBy[reason]), reason)
		counter(ch, descSessionPins, m.PinsBy[reason], reason)
	}
	for _, cc := range m.Commands {
		counter(ch, descStatements, cc.OK, cc.Command, "ok")
		counter(ch, descStatements, cc.Errors, cc.Command, "error")
	}
	hist(ch, descStmtDuration, m.Duration)
	counter(ch, descSlowQueue, m.SlowQueue)
	counter(ch, descBytesIn, m.BytesReceived)
	counter(ch, descBytesOut, m.BytesSent)
	counter(ch, descPrepReprepares, st.Reprepares)
	counter(ch, descCatalogFailures, st.CatalogFailures)
	gauge(ch, descBufferBytes, float64(st.BufferBytes))
	gauge(ch, descBufferLimit, float64(st.BufferLimit))
	hw := c.front.HandshakeWork()
	ch <- prometheus.MustNewConstMetric(descHandshakeBusy, prometheus.CounterValue, hw.Busy.Seconds())
	counter(ch, descHandshakeWaits, hw.Waits)
	gauge(ch, descHandshakeSlots, float64(hw.Slots))
	gauge(ch, descPrepClient, float64(st.ClientStatements))
	gauge(ch, descPrepCached, float64(st.CachedStatements))
	gauge(ch, descShuttingDown, b2f(m.Draining))
	for _, pc := range m.PinnedByAccount {
		gauge(ch, descPinnedAccount, float64(pc.Sessions), pc.Account, pc.Reason)
	}
	pst := c.front.PinStats()
	for _, a := range pst.Accounts {
		gauge(ch, descPinHeld, float64(a.Held), a.Account)
	}
	gauge(ch, descPinLimit, float64(pst.Limits.Total))
	gauge(ch, descPinAcctLimit, float64(pst.Limits.PerAccount))
	gauge(ch, descPinSticky, float64(pst.Sticky))
	gauge(ch, descPinStickyLimit, float64(pst.Limits.Sticky))
	gauge(ch, descPinWaiting, float64(pst.Waiting))
	counter(ch, descPinWaits, pst.Waits)
	counter(ch, descPinRefused, pst.RefusedTotal, "max_pinned_connections")
	counter(ch, descPinRefused, pst.RefusedAccount, "max_pinned_per_account")
	counter(ch, descPinRefused, pst.RefusedSticky, "max_sticky_pinned")
	counter(ch, descPinOverdrafts, pst.Overdrafts)
	counter(ch, descPinShed, pst.Shed)

	ss := c.sched.Stats()
	gauge(ch, descPoolGroups, float64(ss.Groups))
	gauge(ch, descPoolActive, float64(ss.Active))
	gauge(ch, descPoolMaxThreads, float64(ss.Config.MaxThreads))
	hist(ch, descQueueWait, ss.QueueWaitHigh, "high")
	hist(ch, descQueueWait, ss.QueueWaitLow, "low")
	for _, g := range c.sched.Groups() {
		id := strconv.Itoa(g.ID)
		gauge(ch, descGroupQueue, float64(g.QueuedHigh), id, "high")
		gauge(ch, descGroupQueue, float64(g.QueuedLow), id, "low")
		gauge(ch, descGroupActive, float64(g.Active), id)
		gauge(ch, descGroupStalled, float64(g.Stalled+g.Extra), id)
		gauge(ch, descGroupCapacity, float64(g.Capacity), id)
		gauge(ch, descGroupWaiting, float64(g.Waiting), id)
		counter(ch, descGroupAdmissions, g.Stats.Admitted, id)
		counter(ch, descGroupQueued, g.Stats.Queued, id)
		counter(ch, descGroupStalls, g.Stats.Stalls, id)
		counter(ch, descGroupKickUps, g.Stats.KickUps, id)
		counter(ch, descGroupTimeouts, g.Stats.Timeouts, id)
		counter(ch, descGroupShed, g.Stats.Shed, id)
	}

	ps := c.pool.Stats()
	gauge(ch, descBackendSize, float64(ps.Size))
	gauge(ch, descBackendLent, float64(ps.Lent))
	pc := c.pool.Counters()
	ch <- prometheus.MustNewConstMetric(descBackendHeld, prometheus.CounterValue, pc.Held.Seconds())
	counter(ch, descBackendRTs, pc.RoundTrips)
	ch <- prometheus.MustNewConstMetric(descBackendRTTime, prometheus.CounterValue, pc.RoundTripTime.Seconds())
	if c.sizer != nil {
		z := c.sizer.Status()
		for _, r := range autosize.Reasons() {
			counter(ch, descAutoChanges, z.Changes[r], string(r))
		}
		gauge(ch, descAutoBound, float64(z.Config.Min), "min")
		gauge(ch, descAutoBound, float64(z.Config.Max), "max")
		gauge(ch, descAutoInUse, z.Last.InUse)
		gauge(ch, descAutoRoundTrip, z.Last.RoundTrip.Seconds(), "window")
		gauge(ch, descAutoRoundTrip, z.Last.Reference.Seconds(), "reference")
	}
	gauge(ch, descBackendConns, float64(ps.Idle), "idle")
	gauge(ch, descBackendConns, float64(ps.InUse), "in_use")
	gauge(ch, descBackendConns, float64(ps.Dialing), "dialing")
	gauge(ch, descBackendPinned, float64(m.PinnedSessions))
	gauge(ch, descBackendWaiting, float64(ps.Waiting))
	gauge(ch, descBackendUp, b2f(c.ready.backend() == nil))
	counter(ch, descBackendAcquires, ps.Acquires)
	counter(ch, descBackendTimeouts, ps.AcquireTimeouts)
	hist(ch, descBackendWait, ps.AcquireWait)
	counter(ch, descBackendDials, ps.Dials)
	counter(ch, descBackendDialErrs, ps.DialErrors)
	counter(ch, descBackendResets, ps.Resets)
	counter(ch, descBackendReplaced, ps.Replaced)
	counter(ch, descBackendBroken, ps.Broken)
	counter(ch, descBackendExpired, ps.Expired)
	counter(ch, descBackendHealth, ps.HealthChecks)
	counter(ch, descBackendHealthKO, ps.HealthFailures)
	counter(ch, descBackendKills, ps.Kills)
	counter(ch, descBackendSwitches, ps.AccountSwitches)
	counter(ch, descBackendRefused, ps.AccountRefusals)
	for _, a := range c.pool.Accounts() {
		gauge(ch, descBackendAccount, float64(a.Idle), a.User, "idle")
		gauge(ch, descBackendAccount, float64(a.InUse), a.User, "in_use")
		gauge(ch, descBackendAccount, float64(a.Waiting), a.User, "waiting")
	}
	gauge(ch, descPrepBackend, float64(ps.PreparedOpen))
	counter(ch, descPrepBackendPrep, ps.Prepares)
	counter(ch, descPrepEvictions, ps.PreparedEvictions)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// readiness runs the backend check for /readyz and backend_up, at most
// once per readyCacheFor however often it is asked, so that a scrape and
// a probe arriving together cost one COM_PING.
type readiness struct {
	pool    *pool.Pool
	timeout time.Duration

	mu      sync.Mutex // held across the check: concurrent callers share it
	at      time.Time
	lastErr error
}

// readyCacheFor is how long a check's result is reused.
const readyCacheFor = time.Second

// backend returns the result of a recent backend check, running one if the
// last is older than readyCacheFor.
func (r *readiness) backend() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.at.IsZero() && time.Since(r.at) < readyCacheFor {
		return r.lastErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	r.lastErr = r.pool.Ready(ctx)
	r.at = time.Now()
	return r.lastErr
}
