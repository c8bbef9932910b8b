// Package scheduler decides when a client statement may execute: the
// thread-group model of the MariaDB/Percona and MySQL Enterprise thread
// pools, applied to statements instead of server threads (DESIGN.md §3).
//
// Sessions map to thread_pool_size groups by connection id. A group lets
// at most 1+oversubscribe statements execute at once (generic) or
// query_threads_per_group (enterprise); the rest wait in the group's high-
// or low-priority queue. A timer ticking every stall_limit finds stalled
// groups and lets more in, so statements blocked on the server (locks) can
// never block a group for good. A statement that waits for a backend
// connection keeps its slot; a session holding a backend of its own is
// admitted past the caps, so it can always finish the transaction others
// wait for.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpproxy/tpproxy/internal/codel"
	"github.com/tpproxy/tpproxy/internal/histogram"
	"github.com/tpproxy/tpproxy/internal/ilist"
)

// ErrQueueTimeout is returned by Admit when a statement waited longer than
// Config.QueueTimeout in its group's queue.
var ErrQueueTimeout = errors.New("scheduler: statement waited too long in the thread pool queue")

// ErrShed is returned by Admit when admission by queue delay gave the
// statement up: its group's queue stood (overloaded) and it had waited
// longer than 2×codel_target.
var ErrShed = errors.New("scheduler: statement given up: the thread pool's queue stands")

// ErrBadConfig marks an invalid Config.
var ErrBadConfig = errors.New("scheduler: invalid config")

// Task is a session's handle for admission. The session keeps one and
// passes it to Admit and Release for each statement; it is used by one
// goroutine at a time, and its unexported fields belong to the scheduler.
type Task struct {
	// ConnID maps the session to its group (ConnID % size).
	ConnID uint32
	// Pinned is set when the session holds a backend connection of its
	// own (transaction, locks): high priority in transactions mode.
	Pinned bool

	s        *Scheduler
	g        *group
	admitted bool // between a successful Admit and Release
	counted  bool // counts against its group's cap and max_threads
	waiting  bool // between WaitBegin and WaitEnd
	stalled  bool // enterprise: ran past stall_limit
	bypass   bool // admitted past the caps (holds a backend, has tickets)
	granted  bool // admitted by another goroutine while queued
	shed     bool // given up by another goroutine while queued (ErrShed)
	high     bool // queued in the high-priority queue
	tickets  uint32
	ticketed bool              // tickets were handed out
	since    time.Time         // queued or started at
	links    ilist.Links[Task] // in the queue or running list t is in, if any
	ch       chan struct{}
	timer    *time.Timer // queue timeout, reused
	// waited is how long the last admitted statement queued.
	waited time.Duration
}

// QueueWait is how long the statement last admitted waited in its group's
// queue (0 when it went straight in), and whether it was admitted with
// high priority (from the high queue, kicked up, or past the caps). Read it
// between Admit and the next Admit.
func (t *Task) QueueWait() (waited time.Duration, high bool) { return t.waited, t.high }

// Trim drops the channel and timer a task that once queued keeps for its
// next wait, so that a session idle for long holds neither; the next
// wait makes them again. Call it between statements (after Release, or
// before the first Admit), never while t waits.
func (t *Task) Trim() {
	t.ch, t.timer = nil, nil
}

// taskList is a FIFO of tasks (a queue or a running list), linked through
// Task.links: a task is in one at most.
type taskList struct{ ilist.List[Task] }

func (l *taskList) push(t *Task) { l.PushBack(t, &t.links) }

// remove takes t, which is in l or in no list, out of l.
func (l *taskList) remove(t *Task) { l.Remove(&t.links) }

// group is one thread group.
type group struct {
	id      int
	active  int // executing statements that count against the cap
	waiting int // admitted statements waiting for a backend connection
	stalled int // enterprise: executing past stall_limit, not counted
	pinned  int // statements of sessions holding a backend, admitted past the caps
	// extra is capacity stall detection granted (generic); it is given
	// back one unit per idle_timeout while the group does not need it.
	extra     int
	idleSince time.Time
	// admittedSinceTick is false when a tick finds the group has admitted
	// nothing since the previous one.
	admittedSinceTick bool
	high, low         taskList
	// delay judges the queues' waits (codel_target); off by default.
	delay codel.Detector
	// running lists counted executing statements admitted under the
	// enterprise algorithm (after a switch it drains as they end).
	running taskList

	stats GroupStats
}

// Scheduler admits statements into thread groups.
type Scheduler struct {
	// mu guards everything below and the scheduler-owned fields of tasks.
	// Nothing blocks while it is held.
	mu     sync.Mutex
	cfg    Config
	groups []*group
	active int // counted statements over all groups (max_threads)
	closed bool

	// update serialises configuration changes (Update, Reconfigure), so
	// that read-modify-write updates from different callers never lose
	// each other's changes. Taken before mu.
	update sync.Mutex

	reconf chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup

	// size is len(groups), for readers that must not take mu (Size).
	size atomic.Int32
	// codelTarget, codelInterval and queueTimeout are settings in force
	// (ns), for readers that must not take mu (Codel, QueueTimeout).
	codelTarget, codelInterval, queueTimeout atomic.Int64

	admitted atomic.Uint64
	queued   atomic.Uint64
	timeouts atomic.Uint64
	shed     atomic.Uint64
	// queueWait sums the time admitted statements spent queued (ns).
	queueWait atomic.Int64
	// waitHigh and waitLow are the queue waits of every admission (0 for
	// one that did not queue), by the priority it was admitted with.
	waitHigh, waitLow *histogram.Histogram

	// onQueue, when set (tests), is called with mu held as a task queues.
	onQueue func(t *Task)
}

// New returns a scheduler for cfg. Its stall timer runs after Start.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Scheduler{cfg: cfg, reconf: make(chan struct{}, 1), done: make(chan struct{}),
		waitHigh: histogram.New(nil), waitLow: histogram.New(nil)}
	s.groups = newGroups(cfg.Size, cfg.codel())
	s.size.Store(int32(cfg.Size))
	s.publish(cfg)
	return s, nil
}

// publish makes cfg's queue settings readable without mu.
func (s *Scheduler) publish(cfg Config) {
	s.codelTarget.Store(int64(cfg.CodelTarget))
	s.codelInterval.Store(int64(cfg.CodelInterval))
	s.queueTimeout.Store(int64(cfg.QueueTimeout))
}

// QueueTimeout is queue_timeout in force, read without the scheduler's
// lock: the pinned-connection budget's queue waits as long.
func (s *Scheduler) QueueTimeout() time.Duration { return time.Duration(s.queueTimeout.Load()) }

// Codel is the admission-by-queue-delay configuration in force, read
// without the scheduler's lock: the pinned-connection budget's queue
// follows the same settings.
func (s *Scheduler) Codel() codel.Config {
	return codel.Config{Target: time.Duration(s.codelTarget.Load()), Interval: time.Duration(s.codelInterval.Load())}
}

func newGroups(n int, c codel.Config) []*group {
	gs := make([]*group, n)
	for i := range gs {
		gs[i] = &group{id: i}
		gs[i].delay.SetConfig(c)
	}
	return gs
}

// Start runs the stall timer until Close.
func (s *Scheduler) Start() {
	s.wg.Add(1)
	go s.timer()
}

// Close stops the stall timer. Queued statements keep waiting until their
// timeout or context ends.
func (s *Scheduler) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	close(s.done)
	s.wg.Wait()
}

func (s *Scheduler) timer() {
	defer s.wg.Done()
	s.mu.Lock()
	every := s.cfg.StallLimit
	s.mu.Unlock()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-s.reconf:
			s.mu.Lock()
			every = s.cfg.StallLimit
			s.mu.Unlock()
			t.Reset(every)
		case <-t.C:
			s.Tick()
		}
	}
}

// Size is the number of thread groups now, read without the scheduler's
// lock.
func (s *Scheduler) Size() int { return int(s.size.Load()) }

// Config returns the configuration in force.
func (s *Scheduler) Config() Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// Admit returns when t's statement may execute, or with an error when it
// waited longer than the queue timeout or ctx ended. Every successful
// Admit is followed by Release.
func (s *Scheduler) Admit(ctx context.Context, t *Task) error {
	s.mu.Lock()
	t.s = s
	g := s.groups[int(t.ConnID)%len(s.groups)]
	t.g = g
	t.high = s.priority(t)
	if t.high && t.Pinned && s.cfg.HighPrioMode == PrioTransactions {
		// A session holding a backend of its own goes straight in and does
		// not count against the caps: its backend is reserved anyway, and
		// holding its statement back would only keep that backend idle
		// while it holds the locks and the connection others wait for.
		t.admitted, t.counted, t.stalled, t.waiting, t.bypass = true, false, false, false, true
		g.pinned++
		g.admittedSinceTick = true
		g.stats.Admitted++
		g.stats.HighAdmitted++
		s.mu.Unlock()
		s.admitted.Add(1)
		s.observeWait(t, 0)
		return nil
	}
	if g.high.Len() == 0 && (t.high || g.low.Len() == 0) && s.room(g) {
		now := s.cfg.Now()
		s.admit(g, t, now)
		g.delay.Observe(now, 0)
		s.mu.Unlock()
		s.admitted.Add(1)
		s.observeWait(t, 0)
		return nil
	}
	t.since = s.cfg.Now()
	// The wait is measured on the clock of the moment (a Reconfigure may
	// replace s.cfg once mu is released).
	queuedAt, clock := t.since, s.cfg.Now
	t.granted, t.shed = false, false
	if t.high {
		g.high.push(t)
	} else {
		g.low.push(t)
	}
	g.stats.Queued++
	if s.onQueue != nil {
		s.onQueue(t)
	}
	timeout := s.cfg.QueueTimeout
	if t.ch == nil {
		t.ch = make(chan struct{}, 1)
	}
	s.mu.Unlock()
	s.queued.Add(1)

	if t.timer == nil {
		t.timer = time.NewTimer(timeout)
	} else {
		t.timer.Reset(timeout)
	}
	defer t.timer.Stop()
	var err error
	select {
	case <-t.ch:
		if t.shed {
			return s.shedError(clock().Sub(queuedAt))
		}
		s.admitted.Add(1)
		s.observeWait(t, clock().Sub(queuedAt))
		return nil
	case <-t.timer.C:
		err = fmt.Errorf("%w (%s)", ErrQueueTimeout, timeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.mu.Lock()
	if t.granted {
		// Admitted while giving up: take it.
		s.mu.Unlock()
		<-t.ch
		s.admitted.Add(1)
		s.observeWait(t, clock().Sub(queuedAt))
		return nil
	}
	if t.shed {
		// Given up while giving up: the shed's word is sent.
		s.mu.Unlock()
		<-t.ch
		return s.shedError(clock().Sub(queuedAt))
	}
	g = t.g // a resize may have moved it
	if t.high {
		g.high.remove(t)
	} else {
		g.low.remove(t)
	}
	if errors.Is(err, ErrQueueTimeout) {
		g.stats.Timeouts++
	}
	t.g = nil
	s.mu.Unlock()
	if errors.Is(err, ErrQueueTimeout) {
		s.timeouts.Add(1)
	}
	return err
}

// shedError is Admit's error for a statement given up after waiting d.
func (s *Scheduler) shedError(d time.Duration) error {
	return fmt.Errorf("%w (%s)", ErrShed, s.Codel().Reason(d))
}

// observeWait records an admitted statement's queue wait.
func (s *Scheduler) observeWait(t *Task, d time.Duration) {
	t.waited = d
	if d > 0 {
		s.queueWait.Add(int64(d))
	}
	if t.high {
		s.waitHigh.Observe(d)
	} else {
		s.waitLow.Observe(d)
	}
}

// priority decides whether t is high priority, spending a ticket; mu is
// held. In transactions mode a high-priority statement (its session holds a
// backend and has tickets left) is admitted at once.
func (s *Scheduler) priority(t *Task) bool {
	switch s.cfg.HighPrioMode {
	case PrioStatements:
		return true
	case PrioNone:
		return false
	}
	if !t.Pinned || !t.ticketed {
		// A new stretch of holding a backend starts with a full set.
		t.tickets, t.ticketed = s.cfg.HighPrioTickets, true
		if !t.Pinned {
			return false
		}
	}
	if t.tickets == 0 {
		return false
	}
	t.tickets--
	return true
}

// capacity is a group's cap of counted statements; mu is held.
func (s *Scheduler) capacity(g *group) int {
	if s.cfg.Algorithm == Enterprise {
		return s.cfg.QueryThreadsPerGroup
	}
	return 1 + s.cfg.Oversubscribe + g.extra
}

// room reports whether g may admit one more statement; mu is held.
func (s *Scheduler) room(g *group) bool {
	return g.active < s.capacity(g) && s.active < s.cfg.MaxThreads
}

// admit starts t in g; mu is held.
func (s *Scheduler) admit(g *group, t *Task, now time.Time) {
	g.active++
	s.active++
	t.admitted, t.counted, t.stalled, t.waiting = true, true, false, false
	t.since = now
	g.admittedSinceTick = true
	g.stats.Admitted++
	if t.high {
		g.stats.HighAdmitted++
	}
	if s.cfg.Algorithm == Enterprise {
		g.running.push(t)
	}
}

// grant admits a queued task and wakes its goroutine; mu is held.
func (s *Scheduler) grant(g *group, t *Task, now time.Time) {
	if t.high {
		g.high.remove(t)
	} else {
		g.low.remove(t)
	}
	g.stats.QueueWait += now.Sub(t.since)
	g.delay.Observe(now, g.standing(now, t))
	s.admit(g, t, now)
	t.granted = true
	t.ch <- struct{}{}
}

// next returns the queued task to admit next in g, the first of the high
// queue or else of the low one, whose newest goes first (adaptive LIFO)
// while the group is overloaded; mu is held.
func (g *group) next(overloaded bool) *Task {
	// Len first: the queues are mostly empty, which Len tells with one
	// load (Front loads the element too).
	switch {
	case g.high.Len() > 0:
		return g.high.Front()
	case g.low.Len() > 0 && overloaded:
		return g.low.Back()
	case g.low.Len() > 0:
		return g.low.Front()
	}
	return nil
}

// standing is the queue wait that tells whether g's queue stands as t
// leaves it: t's own, unless the newest goes first and older statements
// are left behind (adaptive LIFO), when it is the oldest one's, the wait
// a FIFO queue would have shown; mu is held, t is still queued.
func (g *group) standing(now time.Time, t *Task) time.Duration {
	w := now.Sub(t.since)
	if f := g.low.Front(); f != nil && f != t && !t.high {
		w = max(w, now.Sub(f.since))
	}
	return w
}

// slough gives up the queued statements of sessions holding no backend
// that waited longer than 2×codel_target, from the head of each queue
// (the oldest: each queue is in arrival order), while g is overloaded;
// mu is held. A session holding a backend keeps its place: its
// transaction holds what others wait for.
func (s *Scheduler) slough(g *group, now time.Time) {
	for _, l := range []*taskList{&g.high, &g.low} {
		for t := l.Front(); t != nil; {
			next := t.links.Next()
			wait := now.Sub(t.since)
			if !g.delay.GiveUp(now, wait) {
				break
			}
			if !t.Pinned {
				l.remove(t)
				g.delay.Observe(now, wait)
				g.stats.Shed++
				s.shed.Add(1)
				t.shed = true
				t.ch <- struct{}{}
			}
			t = next
		}
	}
}

// kickUp moves low-priority tasks queued longer than prio_kickup_timer to
// the high-priority queue; mu is held.
func (s *Scheduler) kickUp(g *group, now time.Time) {
	for g.low.Len() > 0 {
		t := g.low.Front()
		if now.Sub(t.since) < s.cfg.PrioKickupTimer {
			return
		}
		g.low.remove(t)
		t.high = true
		g.high.push(t)
		g.stats.KickUps++
	}
}

// dispatch admits queued tasks of g while it has room, each after moving
// low-priority tasks that waited past prio_kickup_timer to the high queue;
// mu is held.
func (s *Scheduler) dispatch(g *group, now time.Time) {
	overloaded := g.delay.Overloaded(now)
	if overloaded {
		s.slough(g, now)
	}
	for s.room(g) {
		if g.low.Len() > 0 {
			s.kickUp(g, now)
		}
		t := g.next(overloaded)
		if t == nil {
			return
		}
		s.grant(g, t, now)
	}
}

// dispatchAll gives every group a chance, starting after g (a release
// freed a max_threads slot any group may use); mu is held.
func (s *Scheduler) dispatchAll(from int, now time.Time) {
	n := len(s.groups)
	for i := 1; i <= n && s.active < s.cfg.MaxThreads; i++ {
		s.dispatch(s.groups[(from+i)%n], now)
	}
}

// uncount stops t counting against its group's cap and max_threads; mu is held.
func (s *Scheduler) uncount(t *Task) {
	if !t.counted {
		return
	}
	t.counted = false
	t.g.active--
	s.active--
	t.g.running.remove(t) // admitted: in it (enterprise) or in no list
}

// Release ends t's admission and admits who may go next.
func (s *Scheduler) Release(t *Task) {
	s.mu.Lock()
	if !t.admitted {
		s.mu.Unlock()
		return
	}
	g := t.g
	wasCounted := t.counted
	s.uncount(t)
	if t.waiting {
		g.waiting--
	}
	if t.bypass {
		g.pinned--
		t.bypass = false
	}
	if t.stalled {
		g.stalled--
	}
	t.admitted, t.waiting, t.stalled, t.g = false, false, false, nil
	if wasCounted {
		now := s.cfg.Now()
		s.dispatch(g, now)
		if s.active < s.cfg.MaxThreads {
			s.dispatchAll(g.id, now)
		}
	}
	s.mu.Unlock()
}

// WaitBegin records that t's admitted statement waits for a backend
// connection (shown as Waiting). It keeps its slot: a statement that
// needs a pool connection gains nothing from letting another such
// statement in, and one let in now would push its group over its cap
// once both have connections. Sessions holding a backend do not wait
// here (they are admitted past the caps), and stall detection still lets
// work past a group whose statements all wait.
func (t *Task) WaitBegin() {
	s := t.s
	if s == nil {
		return // never admitted
	}
	s.mu.Lock()
	if t.admitted && !t.waiting {
		t.waiting = true
		t.g.waiting++
	}
	s.mu.Unlock()
}

// WaitEnd ends a WaitBegin.
func (t *Task) WaitEnd() {
	s := t.s
	if s == nil {
		return
	}
	s.mu.Lock()
	if t.admitted && t.waiting {
		t.waiting = false
		t.g.waiting--
	}
	s.mu.Unlock()
}

// Tick runs stall detection once; the timer calls it every stall_limit.
//
// Generic: a group with queued statements that admitted none since the
// previous tick is stalled and gets one more slot, kept until it has gone
// unused for idle_timeout. Enterprise: statements executing longer than
// stall_limit stop counting against their group. Both: low-priority
// statements queued past prio_kickup_timer move to the high queue.
func (s *Scheduler) Tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	for _, g := range s.groups {
		s.kickUp(g, now)
		queued := g.high.Len() + g.low.Len()
		switch s.cfg.Algorithm {
		case Generic:
			if queued > 0 && !g.admittedSinceTick {
				g.extra++
				g.stats.Stalls++
				g.idleSince = time.Time{}
				if s.active >= s.cfg.MaxThreads {
					// max_threads is reached too: let one statement of a
					// session holding a backend (it may hold the locks the
					// others wait for) past it, or nothing moves.
					if t := firstPinned(g); t != nil {
						s.grant(g, t, now)
					}
				}
			}
			s.giveBack(g, now)
		case Enterprise:
			for t := range g.running.All() {
				if now.Sub(t.since) >= s.cfg.StallLimit {
					s.uncount(t)
					t.stalled = true
					g.stalled++
					g.stats.Stalls++
				}
			}
		}
		s.dispatch(g, now)
		g.admittedSinceTick = false
	}
}

// firstPinned is the first queued task whose session holds a backend.
func firstPinned(g *group) *Task {
	for _, l := range []*taskList{&g.high, &g.low} {
		for t := range l.All() {
			if t.Pinned {
				return t
			}
		}
	}
	return nil
}

// giveBack returns one unit of stall-granted capacity per idle_timeout
// during which the group did not use it; mu is held.
func (s *Scheduler) giveBack(g *group, now time.Time) {
	if g.extra == 0 {
		g.idleSince = time.Time{}
		return
	}
	if g.high.Len()+g.low.Len() > 0 || g.active >= 1+s.cfg.Oversubscribe+g.extra {
		g.idleSince = time.Time{} // the extra capacity is in use
		return
	}
	if g.idleSince.IsZero() {
		g.idleSince = now
		return
	}
	if now.Sub(g.idleSince) >= s.cfg.IdleTimeout {
		g.extra--
		g.idleSince = now
	}
}

// Reconfigure applies a new configuration at once (SET GLOBAL): no
// statement is dropped. A new size moves queued statements to their new
// groups; statements executing finish in the group they started in.
func (s *Scheduler) Reconfigure(cfg Config) error {
	s.update.Lock()
	defer s.update.Unlock()
	return s.reconfigure(cfg)
}

// Update changes the configuration in force with fn and applies it, as
// one step: concurrent Updates never lose each other's changes. When fn
// returns an error nothing changes and Update returns it.
func (s *Scheduler) Update(fn func(*Config) error) error {
	s.update.Lock()
	defer s.update.Unlock()
	cfg := s.Config()
	if err := fn(&cfg); err != nil {
		return err
	}
	return s.reconfigure(cfg)
}

func (s *Scheduler) reconfigure(cfg Config) error {
	if cfg.Now == nil {
		cfg.Now = s.Config().Now
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	old := s.cfg
	s.cfg = cfg
	s.publish(cfg)
	now := cfg.Now()
	if cfg.Size != len(s.groups) {
		s.resize(cfg.Size)
	} else if cfg.codel() != old.codel() {
		for _, g := range s.groups {
			g.delay.SetConfig(cfg.codel())
		}
	}
	for _, g := range s.groups {
		s.dispatch(g, now)
	}
	s.mu.Unlock()
	if cfg.StallLimit != old.StallLimit {
		select {
		case s.reconf <- struct{}{}:
		default:
		}
	}
	return nil
}

// resize replaces the groups; mu is held. Queued tasks move in their
// queue order; the old groups live on in the tasks executing there.
func (s *Scheduler) resize(n int) {
	old := s.groups
	s.groups = newGroups(n, s.cfg.codel())
	s.size.Store(int32(n))
	for _, prio := range []bool{true, false} {
		// Merge by queue time so that order is kept within each new group.
		var all []*Task
		for _, g := range old {
			l := &g.low
			if prio {
				l = &g.high
			}
			for t := l.PopFront(); t != nil; t = l.PopFront() {
				all = append(all, t)
			}
		}
		sortBySince(all)
		for _, t := range all {
			g := s.groups[int(t.ConnID)%n]
			t.g = g
			if prio {
				g.high.push(t)
			} else {
				g.low.push(t)
			}
		}
	}
}

func sortBySince(ts []*Task) {
	// Insertion sort: queues are short and mostly ordered per group.
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].since.Before(ts[j-1].since); j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}
