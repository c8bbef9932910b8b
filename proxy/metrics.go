package proxy

import (
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpproxy/tpproxy/internal/histogram"
)

// commandNames are the metric labels of the command bytes 0x00..0x1f;
// anything else counts as "other".
var commandNames = [...]string{
	"sleep", "quit", "init_db", "query", "field_list", "create_db", "drop_db", "refresh",
	"shutdown", "statistics", "process_info", "connect", "process_kill", "debug", "ping", "time",
	"delayed_insert", "change_user", "binlog_dump", "table_dump", "connect_out", "register_slave",
	"stmt_prepare", "stmt_execute", "stmt_send_long_data", "stmt_close", "stmt_reset", "set_option",
	"stmt_fetch", "daemon", "binlog_dump_gtid", "reset_connection",
	"other",
}

const otherCommand = len(commandNames) - 1

// commandIndex maps a command packet to its counter.
func commandIndex(p []byte) int {
	if len(p) == 0 || int(p[0]) >= otherCommand {
		return otherCommand
	}
	return int(p[0])
}

// CommandCount is how many commands of one kind were answered, split by
// whether the answer was an error.
type CommandCount struct {
	Command    string // e.g. "query", "stmt_execute"
	OK, Errors uint64
}

// RejectReason says why a client connection was turned away.
type RejectReason int

// Reasons a client connection is turned away.
const (
	RejectMaxConnections  RejectReason = iota // over max_client_connections (ERR 1040)
	RejectExtraPortFull                       // over extra_max_connections (ERR 1040)
	RejectAuthFailed                          // wrong user or password (ERR 1045)
	RejectHandshakeFailed                     // a broken or abandoned handshake
	RejectShuttingDown                        // the proxy is shutting down (ERR 1053)
	RejectHostBlocked                         // the client address reached max_connect_errors (ERR 1129)
	rejectReasons
)

var rejectNames = [rejectReasons]string{"max_connections", "extra_port_full", "auth_failed", "handshake_failed", "shutting_down", "host_blocked"}

// String is the reason's metric label.
func (r RejectReason) String() string { return rejectNames[r] }

// Metrics is the front end's detail for Prometheus, beyond Stats.
type Metrics struct {
	// Sessions counts connected sessions by port ("main", "extra").
	Sessions, ExtraSessions int
	// Rejected counts turned-away connections by RejectReason.
	Rejected [rejectReasons]uint64
	// BlockedHosts counts the client addresses max_connect_errors blocks now.
	BlockedHosts int
	// PinnedBy counts sessions pinned now by reason name; a session
	// pinned for two reasons counts under both. PinsBy counts the times
	// a reason started pinning a session.
	PinnedBy, PinsBy map[string]uint64
	// PinnedSessions counts sessions holding a backend connection now.
	PinnedSessions int
	// PinnedByAccount counts them by account and reason (a session pinned
	// for two reasons counts under both), in account then reason order.
	PinnedByAccount []PinnedCount
	// Commands lists the commands seen so far.
	Commands []CommandCount
	// Duration is the time from reading a command to the end of its
	// answer, queue wait included, for commands that get an answer.
	Duration histogram.Snapshot
	// BytesReceived and BytesSent count client traffic on the wire (TLS
	// included).
	BytesReceived, BytesSent uint64
	// SlowQueue counts statements that waited longer than the slow queue
	// threshold in the scheduler.
	SlowQueue uint64
	// Draining is true once Shutdown has begun.
	Draining bool
}

// PinnedCount is how many of an account's sessions are pinned for a
// reason.
type PinnedCount struct {
	Account, Reason string
	Sessions        uint64
}

// metricCounters are the counters behind Metrics.
type metricCounters struct {
	commands  [len(commandNames)][2]atomic.Uint64 // [command][0 ok, 1 error]
	rejected  [rejectReasons]atomic.Uint64
	pinsBy    [len(pinNames)]atomic.Uint64
	duration  *histogram.Histogram
	bytesIn   atomic.Uint64
	bytesOut  atomic.Uint64
	slowQueue atomic.Uint64
}

// countPins counts the reasons in added as having started a pin.
func (m *metricCounters) countPins(added pinReason) {
	for i := range m.pinsBy {
		if added&(1<<i) != 0 {
			m.pinsBy[i].Add(1)
		}
	}
}

// Metrics returns the front end's metrics. It visits every session, so it
// is meant for a scrape every few seconds, not for the hot path.
func (srv *Server) Metrics() Metrics {
	m := Metrics{PinnedBy: make(map[string]uint64), PinsBy: make(map[string]uint64)}
	var byBit [len(pinNames)]uint64
	byAccount := map[string]*[len(pinNames)]uint64{}
	srv.mu.Lock()
	for _, s := range srv.sessions {
		if s.extra != nil {
			m.ExtraSessions++
		} else {
			m.Sessions++
		}
		pins := pinReason(s.pinsNow.Load())
		if pins == 0 {
			continue
		}
		m.PinnedSessions++
		s.inflight.mu.Lock()
		user, pubPins := s.pubUser, s.pubPins
		s.inflight.mu.Unlock()
		acct := byAccount[user]
		if acct == nil {
			acct = new([len(pinNames)]uint64)
			byAccount[user] = acct
		}
		for i := range byBit {
			if pins&(1<<i) != 0 {
				byBit[i]++
			}
			if pubPins&(1<<i) != 0 {
				acct[i]++
			}
		}
	}
	srv.mu.Unlock()
	for _, user := range slices.Sorted(maps.Keys(byAccount)) {
		for i, n := range byAccount[user] {
			if n > 0 {
				m.PinnedByAccount = append(m.PinnedByAccount, PinnedCount{Account: user, Reason: pinNames[i], Sessions: n})
			}
		}
	}
	for i, name := range pinNames {
		m.PinnedBy[name] = byBit[i]
		m.PinsBy[name] = srv.metrics.pinsBy[i].Load()
	}
	for i := range m.Rejected {
		m.Rejected[i] = srv.metrics.rejected[i].Load()
	}
	m.Rejected[RejectAuthFailed] = srv.stats.authFailures.Load()
	m.BlockedHosts = srv.hosts.blockedHosts()
	for i, name := range commandNames {
		ok, bad := srv.metrics.commands[i][0].Load(), srv.metrics.commands[i][1].Load()
		if ok+bad > 0 {
			m.Commands = append(m.Commands, CommandCount{Command: name, OK: ok, Errors: bad})
		}
	}
	m.Duration = srv.metrics.duration.Snapshot()
	m.BytesReceived = srv.metrics.bytesIn.Load()
	m.BytesSent = srv.metrics.bytesOut.Load()
	m.SlowQueue = srv.metrics.slowQueue.Load()
	m.Draining = srv.draining.Load()
	return m
}

// countingConn counts a client connection's bytes into the server's
// totals: one atomic add per read or write system call, which the buffered
// reader and writer keep to about one each per command.
type countingConn struct {
	net.Conn
	in, out *atomic.Uint64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.in.Add(uint64(n))
	}
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.out.Add(uint64(n))
	}
	return n, err
}

// slowQueueLog writes the "slow queue" warnings, at most slowQueueBurst a
// second; the lines it drops are counted in the next one it writes.
type slowQueueLog struct {
	mu         sync.Mutex
	second     time.Time
	written    int
	suppressed int
}

const slowQueueBurst = 10

// allow reports whether a line may be written now and how many were
// dropped since the last one.
func (l *slowQueueLog) allow(now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.second) >= time.Second {
		l.second, l.written = now, 0
	}
	if l.written >= slowQueueBurst {
		l.suppressed++
		return false, 0
	}
	l.written++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// noteQueueWait counts and logs a statement that waited at least the slow
// queue threshold in its thread group's queue.
func (s *Session) noteQueueWait() {
	limit := time.Duration(s.srv.slowQueue.Load())
	if limit <= 0 {
		return
	}
	waited, high := s.task.QueueWait()
	if waited < limit {
		return
	}
	s.srv.metrics.slowQueue.Add(1)
	ok, suppressed := s.srv.slowLog.allow(time.Now())
	if !ok {
		return
	}
	prio := "low"
	if high {
		prio = "high"
	}
	args := []any{"group", s.srv.sched.GroupOf(s.id), "priority", prio,
		"queue_wait", waited, "threshold", limit, "command", commandNames[s.cmdIndex]}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	s.logger().Warn("slow queue", args...)
}
