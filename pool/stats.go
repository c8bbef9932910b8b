package pool

import (
	"sync/atomic"
	"time"

	"github.com/tpproxy/tpproxy/internal/histogram"
)

// counters are the pool's event counts, updated without the pool lock.
type counters struct {
	acquires atomic.Uint64
	// accountSwitches counts COM_CHANGE_USERs that took a connection to
	// another session's account.
	accountSwitches atomic.Uint64
	refusals        atomic.Uint64 // of those, refused by the server
	waits           atomic.Uint64
	timeouts        atomic.Uint64
	waitNanos       atomic.Int64
	heldNanos       atomic.Int64 // connection-time handed out, summed at Release
	roundTrips      atomic.Uint64
	roundTripNanos  atomic.Int64
	dials           atomic.Uint64
	dialErrors      atomic.Uint64
	resets          atomic.Uint64
	replaced        atomic.Uint64
	schemaClears    atomic.Uint64
	broken          atomic.Uint64
	expired         atomic.Uint64
	retired         atomic.Uint64
	healthChecks    atomic.Uint64
	healthFailures  atomic.Uint64
	kills           atomic.Uint64
	prepares        atomic.Uint64
	evictions       atomic.Uint64
	preparedOpen    atomic.Int64
}

// Stats is a snapshot of a pool, the list database/sql's DBStats keeps plus
// what a fixed pool in front of a thread pool needs to show.
type Stats struct {
	Size    int // configured number of connections
	Lent    int // kept open beyond Size for sessions pinned for good (Lend)
	Open    int // alive or being dialed
	Idle    int
	InUse   int
	Dialing int
	Waiting int // Acquire calls waiting now

	Acquires        uint64        // Acquire calls
	Waits           uint64        // Acquire calls that had to wait
	WaitDuration    time.Duration // total time spent waiting
	AcquireTimeouts uint64
	Dials           uint64 // successful dials
	DialErrors      uint64
	Resets          uint64 // COM_RESET_CONNECTION before reuse
	Replaced        uint64 // closed and redialed to fit a session (found_rows)
	SchemaClears    uint64 // COM_CHANGE_USER to leave a schema for a session without one
	Broken          uint64 // closed after an error
	Expired         uint64 // retired at the end of their lifetime
	Retired         uint64 // closed instead of reset because they held a prepared XA branch
	HealthChecks    uint64
	HealthFailures  uint64
	Kills           uint64 // KILL statements sent on the control connection
	AccountSwitches uint64 // COM_CHANGE_USER to another session's account
	AccountRefusals uint64 // of those, refused by the server (wrong password, no such account)

	// AcquireWait is the distribution of the time Acquire calls spent
	// queued for a connection: every finished call is observed once,
	// whatever its outcome, with 0 when it was served without queueing.
	// Its Count therefore trails Acquires only by the calls in progress.
	AcquireWait histogram.Snapshot

	PreparedOpen      int64  // statements prepared on backend connections now
	PreparedLimit     int    // per-connection cap of prepared statements
	Prepares          uint64 // COM_STMT_PREPAREs sent to the backend
	PreparedEvictions uint64 // statements closed to stay within PreparedLimit
}

// Counters are the pool's cumulative counters that controllers sample
// often (the GOMAXPROCS governor, the automatic sizer), read without a
// lock.
type Counters struct {
	Acquires uint64 // Acquire calls
	Waits    uint64 // Acquire calls that had to wait
	// Held is the connection-time handed out: the sum over released
	// connections of the time from Acquire's return to Release. Its rate
	// is the mean number of connections in use (Little's L).
	Held time.Duration
	// RoundTrips counts the commands the proxy timed with NoteRoundTrip,
	// RoundTripTime sums their durations.
	RoundTrips    uint64
	RoundTripTime time.Duration
}

// Counters returns the counters.
func (p *Pool) Counters() Counters {
	return Counters{Acquires: p.stats.acquires.Load(), Waits: p.stats.waits.Load(),
		Held: time.Duration(p.stats.heldNanos.Load()), RoundTrips: p.stats.roundTrips.Load(),
		RoundTripTime: time.Duration(p.stats.roundTripNanos.Load())}
}

// NoteRoundTrip records one command's round trip on a connection of the
// pool: from its write to the end of its result. The automatic sizer
// watches their mean for the backend's latency.
func (p *Pool) NoteRoundTrip(d time.Duration) {
	p.stats.roundTrips.Add(1)
	p.stats.roundTripNanos.Add(int64(d))
}

// Stats returns a snapshot of the pool.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	s := Stats{
		Size:    p.size(),
		Lent:    p.lent,
		Open:    p.open,
		Idle:    len(p.idle),
		Dialing: p.dialing,
		Waiting: p.waiters.Len(),
	}
	p.mu.Unlock()
	s.InUse = s.Open - s.Idle - s.Dialing
	s.Acquires = p.stats.acquires.Load()
	s.Waits = p.stats.waits.Load()
	s.WaitDuration = time.Duration(p.stats.waitNanos.Load())
	s.AcquireWait = p.acquireWait.Snapshot()
	s.AcquireTimeouts = p.stats.timeouts.Load()
	s.Dials = p.stats.dials.Load()
	s.DialErrors = p.stats.dialErrors.Load()
	s.Resets = p.stats.resets.Load()
	s.Replaced = p.stats.replaced.Load()
	s.SchemaClears = p.stats.schemaClears.Load()
	s.Broken = p.stats.broken.Load()
	s.Expired = p.stats.expired.Load()
	s.Retired = p.stats.retired.Load()
	s.HealthChecks = p.stats.healthChecks.Load()
	s.HealthFailures = p.stats.healthFailures.Load()
	s.Kills = p.stats.kills.Load()
	s.AccountSwitches = p.stats.accountSwitches.Load()
	s.AccountRefusals = p.stats.refusals.Load()
	s.PreparedOpen = p.stats.preparedOpen.Load()
	s.PreparedLimit = p.preparedLimit()
	s.Prepares = p.stats.prepares.Load()
	s.PreparedEvictions = p.stats.evictions.Load()
	return s
}
