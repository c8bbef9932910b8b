package scheduler

import (
	"time"

	"github.com/tpproxy/tpproxy/internal/histogram"
)

// GroupStats are a thread group's event counts (THREAD_POOL_STATS).
type GroupStats struct {
	Admitted     uint64        // statements admitted
	HighAdmitted uint64        // of which from or straight past the high-priority queue
	Queued       uint64        // statements that had to queue
	QueueWait    time.Duration // total time queued statements waited
	Timeouts     uint64        // statements that gave up after queue_timeout
	Shed         uint64        // statements given up by admission by queue delay (codel_target)
	Stalls       uint64        // generic: ticks that found the group stalled; enterprise: statements past stall_limit
	KickUps      uint64        // low-priority statements moved to the high queue
}

// GroupInfo describes a thread group now (THREAD_POOL_GROUPS, _QUEUES).
type GroupInfo struct {
	ID int
	// Active counts executing statements that count against Capacity,
	// Waiting those of them waiting for a backend connection; Stalled
	// (enterprise) those running past stall_limit; Pinned those of
	// sessions holding a backend, admitted past the cap.
	Active, Waiting, Stalled, Pinned int
	// Capacity is the group's cap now: 1+oversubscribe plus Extra, the
	// capacity stalls granted (generic), or query_threads_per_group.
	Capacity, Extra       int
	QueuedHigh, QueuedLow int
	OldestHigh, OldestLow time.Duration // how long the head of each queue has waited
	Stats                 GroupStats
}

// Groups returns a snapshot of every group.
func (s *Scheduler) Groups() []GroupInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	out := make([]GroupInfo, len(s.groups))
	for i, g := range s.groups {
		gi := GroupInfo{ID: g.id, Active: g.active, Waiting: g.waiting, Stalled: g.stalled, Pinned: g.pinned,
			Capacity: s.capacity(g), Extra: g.extra, QueuedHigh: g.high.Len(), QueuedLow: g.low.Len(), Stats: g.stats}
		if t := g.high.Front(); t != nil {
			gi.OldestHigh = now.Sub(t.since)
		}
		if t := g.low.Front(); t != nil {
			gi.OldestLow = now.Sub(t.since)
		}
		out[i] = gi
	}
	return out
}

// FlushStats zeroes the groups' counters (FLUSH THREAD_POOL_STATS).
func (s *Scheduler) FlushStats() {
	s.mu.Lock()
	for _, g := range s.groups {
		g.stats = GroupStats{}
	}
	s.mu.Unlock()
}

// Stats is a scheduler-wide snapshot.
type Stats struct {
	Groups  int
	Active  int // statements counting against max_threads
	Waiting int // of Active: statements waiting for a backend connection
	Pinned  int // executing statements of sessions holding a backend (not capped)
	Queued  int // statements in queues now

	Admitted uint64 // Admit calls that succeeded
	Waited   uint64 // Admit calls that queued
	Timeouts uint64
	Shed     uint64 // statements given up by admission by queue delay
	Stalls   uint64
	KickUps  uint64
	// QueueWait is the time statements that were queued and then
	// admitted spent in the queue, summed.
	QueueWait time.Duration
	// QueueWaitHigh and QueueWaitLow are the distributions of the queue
	// wait of every admitted statement (0 for those that did not queue),
	// by the priority it was admitted with.
	QueueWaitHigh, QueueWaitLow histogram.Snapshot
	// Config is the configuration in force.
	Config Config
}

// Stats returns a snapshot.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	st := Stats{Groups: len(s.groups), Active: s.active, Config: s.cfg}
	for _, g := range s.groups {
		st.Waiting += g.waiting
		st.Pinned += g.pinned
		st.Queued += g.high.Len() + g.low.Len()
		st.Stalls += g.stats.Stalls
		st.KickUps += g.stats.KickUps
	}
	s.mu.Unlock()
	st.Admitted = s.admitted.Load()
	st.Waited = s.queued.Load()
	st.Timeouts = s.timeouts.Load()
	st.Shed = s.shed.Load()
	st.QueueWait = time.Duration(s.queueWait.Load())
	st.QueueWaitHigh = s.waitHigh.Snapshot()
	st.QueueWaitLow = s.waitLow.Snapshot()
	return st
}

// Counters are the scheduler's cumulative admission counters, read
// without a lock (for callers that sample often).
type Counters struct {
	Admitted uint64 // Admit calls that succeeded
	Waited   uint64 // Admit calls that queued
}

// Counters returns the admission counters.
func (s *Scheduler) Counters() Counters {
	return Counters{Admitted: s.admitted.Load(), Waited: s.queued.Load()}
}

// QueuedStatement is one statement waiting in a queue (THREAD_POOL_QUEUES).
type QueuedStatement struct {
	Group    int
	Position int // 0-based, within its queue
	High     bool
	ConnID   uint32
	Waited   time.Duration
}

// Queues lists every queued statement, per group high queue first.
func (s *Scheduler) Queues() []QueuedStatement {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	var out []QueuedStatement
	for _, g := range s.groups {
		for _, l := range []*taskList{&g.high, &g.low} {
			pos := 0
			for t := range l.All() {
				out = append(out, QueuedStatement{Group: g.id, Position: pos, High: l == &g.high,
					ConnID: t.ConnID, Waited: now.Sub(t.since)})
				pos++
			}
		}
	}
	return out
}

// GroupOf returns the group a connection id belongs to now.
func (s *Scheduler) GroupOf(connID uint32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(connID) % len(s.groups)
}
