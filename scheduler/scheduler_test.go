package scheduler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeClock is an injectable clock the tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// harness is a scheduler without its timer (the tests tick by hand), and
// a channel that reports every task that queues.
type harness struct {
	t      *testing.T
	s      *Scheduler
	clock  *fakeClock
	queued chan *Task
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, clock: newClock(), queued: make(chan *Task, 1024)}
	cfg := DefaultConfig()
	cfg.Size = 1
	cfg.QueueTimeout = time.Minute
	cfg.Now = h.clock.Now
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.onQueue = func(t *Task) { h.queued <- t }
	h.s = s
	return h
}

// admit admits a task that must not have to wait.
func (h *harness) admit(id uint32, pinned bool) *Task {
	h.t.Helper()
	task := &Task{ConnID: id, Pinned: pinned}
	if err := h.s.Admit(context.Background(), task); err != nil {
		h.t.Fatal(err)
	}
	if !task.admitted {
		h.t.Fatal("not admitted")
	}
	return task
}

// pending is an Admit running in its own goroutine.
type pending struct {
	task *Task
	done chan error
}

// queue starts an Admit that must queue, and returns once it has.
func (h *harness) queue(id uint32, pinned bool) *pending {
	h.t.Helper()
	p := &pending{task: &Task{ConnID: id, Pinned: pinned}, done: make(chan error, 1)}
	go func() { p.done <- h.s.Admit(context.Background(), p.task) }()
	select {
	case t := <-h.queued:
		if t != p.task {
			h.t.Fatal("another task queued")
		}
	case err := <-p.done:
		h.t.Fatalf("conn %d was not queued: Admit returned %v", id, err)
	}
	return p
}

// admitted reports whether a queued Admit has returned successfully.
func (p *pending) admitted(t *testing.T) bool {
	t.Helper()
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("Admit: %v", err)
		}
		p.done <- nil // keep the answer for later calls
		return true
	default:
		return false
	}
}

// wait waits for a queued Admit that was granted (grants happen under the
// scheduler lock, before this can look).
func (p *pending) wait(t *testing.T) {
	t.Helper()
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("Admit: %v", err)
		}
		p.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("queued statement never admitted")
	}
}

func (h *harness) group(i int) GroupInfo { return h.s.Groups()[i] }

func TestOversubscribeCap(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Oversubscribe = 1 })
	a := h.admit(0, false)
	h.admit(1, false)
	c := h.queue(2, false)
	if g := h.group(0); g.Active != 2 || g.QueuedLow != 1 || g.Capacity != 2 {
		t.Fatalf("group %+v", g)
	}
	h.clock.Advance(250 * time.Millisecond)
	h.s.Release(a)
	c.wait(t)
	if g := h.group(0); g.Active != 2 || g.QueuedLow != 0 || g.Stats.Queued != 1 || g.Stats.Admitted != 3 {
		t.Fatalf("group %+v", g)
	}
	if st := h.s.Stats(); st.QueueWait != 250*time.Millisecond || st.Waited != 1 {
		t.Errorf("queue wait %s over %d queued statements, want 250ms over 1", st.QueueWait, st.Waited)
	}
	if w, high := c.task.QueueWait(); w != 250*time.Millisecond || high {
		t.Errorf("task queue wait %s high %v, want 250ms low", w, high)
	}
	if w, _ := a.QueueWait(); w != 0 {
		t.Errorf("statement admitted at once reports a queue wait of %s", w)
	}
	// Every admission is observed, the ones that did not queue as 0.
	st := h.s.Stats()
	if low, high := st.QueueWaitLow, st.QueueWaitHigh; low.Count != 3 || high.Count != 0 || low.Sum != 250*time.Millisecond {
		t.Fatalf("queue wait histograms low %+v high %+v", low, high)
	}
	if q := st.QueueWaitLow.Quantile(0.99); q <= 100*time.Millisecond || q > 250*time.Millisecond {
		t.Errorf("p99 low queue wait %s, want in the 250ms bucket", q)
	}
}

func TestGenericStallAdmitsOneMoreAndIdleTimeoutGivesItBack(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Oversubscribe = 0; c.IdleTimeout = time.Minute })
	a := h.admit(0, false)
	b := h.queue(1, false)
	h.s.Tick() // a was admitted since the last tick: not stalled
	if b.admitted(t) {
		t.Fatal("admitted without a stall")
	}
	h.s.Tick() // queued work, nothing admitted for a whole tick: stalled
	b.wait(t)
	if g := h.group(0); g.Stats.Stalls != 1 || g.Extra != 1 || g.Capacity != 2 || g.Active != 2 {
		t.Fatalf("after the stall: %+v", g)
	}
	// While the extra slot is used, it stays.
	h.clock.Advance(2 * time.Minute)
	h.s.Tick()
	if g := h.group(0); g.Extra != 1 {
		t.Fatalf("extra capacity given back while in use: %+v", g)
	}
	h.s.Release(a)
	h.s.Release(b.task)
	h.s.Tick() // unused from now
	h.clock.Advance(59 * time.Second)
	h.s.Tick()
	if g := h.group(0); g.Extra != 1 {
		t.Fatalf("given back before idle_timeout: %+v", g)
	}
	h.clock.Advance(time.Second)
	h.s.Tick()
	if g := h.group(0); g.Extra != 0 || g.Capacity != 1 {
		t.Fatalf("not given back after idle_timeout: %+v", g)
	}
}

func TestKickUp(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Oversubscribe = 0
		c.PrioKickupTimer = time.Second
		c.HighPrioMode = PrioNone
	})
	a := h.admit(0, false)
	first := h.queue(1, false)
	h.clock.Advance(500 * time.Millisecond)
	second := h.queue(2, false)
	h.clock.Advance(time.Second)
	h.s.Tick() // first has waited 1.5 s, second 1 s: both move up, in order
	h.clock.Advance(200 * time.Millisecond)
	third := h.queue(3, false)
	if g := h.group(0); g.Stats.KickUps != 2 || g.QueuedHigh != 2 || g.QueuedLow != 1 {
		t.Fatalf("group %+v", g)
	}
	h.s.Release(a)
	first.wait(t)
	h.s.Release(first.task)
	second.wait(t)
	if third.admitted(t) {
		t.Fatal("the low-priority statement went before a kicked-up one")
	}
	h.s.Release(second.task)
	third.wait(t)
}

// TestPinnedSessionsGoStraightIn covers high_prio_mode=transactions: a
// session holding a backend (transaction, locks) is admitted at once and
// does not count against the cap, while its tickets last; then it queues
// like any other.
func TestPinnedSessionsGoStraightIn(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Oversubscribe = 0; c.HighPrioTickets = 2 })
	a := h.admit(0, false)
	low := h.queue(1, false)
	pinned := &Task{ConnID: 2, Pinned: true}
	for i := range 2 {
		if err := h.s.Admit(context.Background(), pinned); err != nil {
			t.Fatal(err)
		}
		if g := h.group(0); g.Pinned != 1 || g.Active != 1 {
			t.Fatalf("pinned statement %d: group %+v", i, g)
		}
		h.s.Release(pinned)
		if low.admitted(t) {
			t.Fatal("a pinned statement's release admitted a queued one: it counted")
		}
	}
	// Tickets spent: the next one queues behind the low-priority statement.
	third := &pending{task: pinned, done: make(chan error, 1)}
	go func() { third.done <- h.s.Admit(context.Background(), pinned) }()
	if q := <-h.queued; q != pinned {
		t.Fatal("another task queued")
	}
	h.s.Release(a)
	low.wait(t)
	if third.admitted(t) {
		t.Fatal("admitted out of turn without tickets")
	}
	h.s.Release(low.task)
	third.wait(t)
}

func TestHighPrioTicketsAndModes(t *testing.T) {
	for _, tc := range []struct {
		mode    HighPrioMode
		tickets uint32
		want    []bool // successive pinned statements, then one unpinned, then pinned again
	}{
		{PrioTransactions, 2, []bool{true, true, false, false, true}},
		{PrioTransactions, 0, []bool{false, false, false, false, false}},
		{PrioStatements, 0, []bool{true, true, true, true, true}},
		{PrioNone, 5, []bool{false, false, false, false, false}},
	} {
		h := newHarness(t, func(c *Config) { c.HighPrioMode = tc.mode; c.HighPrioTickets = tc.tickets })
		task := &Task{ConnID: 1}
		h.s.mu.Lock()
		task.Pinned = false
		h.s.priority(task) // a session starts unpinned: tickets set
		var got []bool
		for i, pinned := range []bool{true, true, true, false, true} {
			_ = i
			task.Pinned = pinned
			got = append(got, h.s.priority(task))
		}
		h.s.mu.Unlock()
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("mode %s tickets %d: priorities %v, want %v", tc.mode, tc.tickets, got, tc.want)
				break
			}
		}
	}
}

func TestMaxThreadsAcrossGroups(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Size = 4; c.Oversubscribe = 10; c.MaxThreads = 2 })
	a := h.admit(0, false)
	h.admit(1, false)
	c := h.queue(2, false) // its group has room; max_threads has not
	if st := h.s.Stats(); st.Active != 2 || st.Queued != 1 {
		t.Fatalf("stats %+v", st)
	}
	h.s.Release(a) // frees a slot in another group
	c.wait(t)
	if st := h.s.Stats(); st.Active != 2 || st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestStallLetsPinnedPastMaxThreads covers the deadlock rule: when
// max_threads is taken by statements blocked on the server, a statement of
// a session holding a backend (which may hold the locks they wait for)
// still gets in after a stall, even when it has no tickets left.
func TestStallLetsPinnedPastMaxThreads(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Size = 2; c.MaxThreads = 1; c.HighPrioTickets = 0 })
	h.admit(0, false)
	low := h.queue(2, false)
	pinned := h.queue(1, true)
	h.s.Tick()
	h.s.Tick()
	pinned.wait(t)
	if low.admitted(t) {
		t.Fatal("a statement of a session without a backend passed max_threads")
	}
}

// TestWaitingForBackendKeepsSlot covers statements waiting for a pool
// connection: they show as waiting and keep their slot, so the group
// never ends up over its cap when the connections come.
func TestWaitingForBackendKeepsSlot(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Oversubscribe = 0 })
	a := h.admit(0, false)
	b := h.queue(1, false)
	a.WaitBegin()
	if g := h.group(0); g.Active != 1 || g.Waiting != 1 || g.QueuedLow != 1 {
		t.Fatalf("group %+v", g)
	}
	if b.admitted(t) {
		t.Fatal("a statement waiting for a backend gave up its slot")
	}
	a.WaitEnd()
	if g := h.group(0); g.Active != 1 || g.Waiting != 0 {
		t.Fatalf("group %+v", g)
	}
	h.s.Release(a)
	b.wait(t)
}

func TestEnterpriseLongStatementStopsCounting(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Algorithm = Enterprise
		c.QueryThreadsPerGroup = 1
		c.StallLimit = 500 * time.Millisecond
	})
	a := h.admit(0, false)
	b := h.queue(1, false)
	h.clock.Advance(400 * time.Millisecond)
	h.s.Tick()
	if b.admitted(t) {
		t.Fatal("admitted before the running statement passed stall_limit")
	}
	h.clock.Advance(100 * time.Millisecond)
	h.s.Tick()
	b.wait(t)
	if g := h.group(0); g.Stalled != 1 || g.Active != 1 || g.Stats.Stalls != 1 {
		t.Fatalf("group %+v", g)
	}
	c := h.queue(2, false)
	h.s.Release(a) // the stalled statement ends: it frees no counted slot
	if c.admitted(t) {
		t.Fatal("a stalled statement's end admitted another")
	}
	h.s.Release(b.task)
	c.wait(t)
	if g := h.group(0); g.Stalled != 0 || g.Active != 1 {
		t.Fatalf("group %+v", g)
	}
}

func TestEnterpriseIgnoresOversubscribe(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Algorithm = Enterprise; c.QueryThreadsPerGroup = 2; c.Oversubscribe = 0 })
	h.admit(0, false)
	h.admit(1, false)
	h.queue(2, false)
	if g := h.group(0); g.Capacity != 2 {
		t.Fatalf("group %+v", g)
	}
}

func TestQueueTimeout(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Oversubscribe = 0; c.QueueTimeout = 20 * time.Millisecond })
	h.admit(0, false)
	err := h.s.Admit(context.Background(), &Task{ConnID: 1})
	if !errors.Is(err, ErrQueueTimeout) {
		t.Fatalf("err = %v", err)
	}
	<-h.queued
	if g := h.group(0); g.QueuedLow != 0 || g.Stats.Timeouts != 1 {
		t.Fatalf("group %+v", g)
	}
}

func TestContextCancelLeavesQueue(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Oversubscribe = 0 })
	a := h.admit(0, false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.s.Admit(ctx, &Task{ConnID: 1}) }()
	<-h.queued
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	h.s.Release(a)
	if st := h.s.Stats(); st.Active != 0 || st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestResizeMovesQueuedStatements covers SET GLOBAL thread_pool_size with
// statements queued: they move to their new groups and run; statements
// executing finish where they started.
func TestResizeMovesQueuedStatements(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Oversubscribe = 0 })
	a := h.admit(0, false)
	b := h.queue(1, false)
	c := h.queue(3, false)
	cfg := h.s.Config()
	cfg.Size = 2
	if err := h.s.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
	b.wait(t) // group 1 of 2 is empty
	if c.admitted(t) {
		t.Fatal("conn 3 (group 1, behind conn 1) admitted past the cap")
	}
	h.s.Release(b.task)
	c.wait(t)
	h.s.Release(a)
	h.s.Release(c.task)
	if st := h.s.Stats(); st.Groups != 2 || st.Active != 0 || st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestResizeUnderLoad changes size and algorithm while many sessions
// admit and release: every statement is admitted and the counts return
// to zero (run with -race).
func TestResizeUnderLoad(t *testing.T) {
	s, err := New(Config{Size: 3, Oversubscribe: 1, QueueTimeout: time.Minute, HighPrioTickets: 3})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task := &Task{ConnID: uint32(i)}
			for n := 0; n < 200; n++ {
				task.Pinned = n%3 == 0
				if err := s.Admit(context.Background(), task); err != nil {
					t.Error(err)
					return
				}
				if n%5 == 0 {
					task.WaitBegin()
					task.WaitEnd()
				}
				s.Release(task)
			}
		}()
	}
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			cfg := s.Config()
			cfg.Size = 1 + i%5
			cfg.Algorithm = Algorithm(i % 2)
			if err := s.Reconfigure(cfg); err != nil {
				t.Error(err)
				return
			}
			s.Tick()
		}
	}()
	wg.Wait()
	close(stop)
	if st := s.Stats(); st.Active != 0 || st.Queued != 0 || st.Waiting != 0 || st.Pinned != 0 || st.Admitted != 64*200 {
		t.Fatalf("stats after the load %+v", st)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{
		{Size: -1}, {Size: MaxSize + 1}, {Oversubscribe: -1}, {MaxThreads: -5},
		{StallLimit: time.Microsecond}, {IdleTimeout: -time.Second}, {Algorithm: 7}, {HighPrioMode: 9},
	} {
		if err := c.Validate(); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: err = %v", c, err)
		}
	}
	if _, err := ParseAlgorithm("enterprise"); err != nil {
		t.Error(err)
	}
	if _, err := ParseHighPrioMode("sometimes"); !errors.Is(err, ErrBadConfig) {
		t.Error(err)
	}
}

// TestUpdateIsAtomic: concurrent read-modify-write updates of different
// settings all survive.
func TestUpdateIsAtomic(t *testing.T) {
	s, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := s.Update(func(c *Config) error { c.Oversubscribe++; return nil }); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if err := s.Update(func(c *Config) error { c.MaxThreads++; return nil }); err != nil {
				t.Error(err)
			}
		}()
		_ = i
	}
	wg.Wait()
	d := DefaultConfig()
	if c := s.Config(); c.Oversubscribe != d.Oversubscribe+50 || c.MaxThreads != d.MaxThreads+50 {
		t.Fatalf("oversubscribe %d, max_threads %d: updates lost", c.Oversubscribe, c.MaxThreads)
	}
}

// TestCodelShedsAndServesNewestFirst: with codel_target set, a group whose
// shortest queue wait stayed above the target for a whole interval is
// overloaded; it gives up the unpinned statements that waited past twice
// the target (ErrShed), keeps a pinned session's, serves the newest first,
// and goes back to FIFO once an interval saw a statement go straight in.
func TestCodelShedsAndServesNewestFirst(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Oversubscribe = 0
		c.CodelTarget = 10 * time.Millisecond
		c.CodelInterval = 100 * time.Millisecond
		c.HighPrioTickets = 0 // a pinned session's statements queue (low) too
		c.PrioKickupTimer = time.Hour
	})
	a := h.admit(0, false)
	q1 := h.queue(1, false)
	h.clock.Advance(150 * time.Millisecond)
	// The interval before saw a wait of 0 (a went straight in): FIFO.
	h.s.Release(a)
	q1.wait(t)
	q2 := h.queue(2, false)
	p := h.queue(9, true)
	h.clock.Advance(100 * time.Millisecond)
	q3 := h.queue(3, false)
	h.clock.Advance(5 * time.Millisecond)
	q4 := h.queue(4, false)
	h.clock.Advance(10 * time.Millisecond)
	// The interval that just ended saw only q1's 150ms: overloaded. q2
	// (115ms, past 2×10ms) is given up, p is pinned and kept, q3 (15ms) is
	// kept, and q4, the newest, goes first.
	h.s.Release(q1.task)
	if err := <-q2.done; !errors.Is(err, ErrShed) {
		t.Fatalf("q2: %v, want ErrShed", err)
	}
	q4.wait(t)
	if q3.admitted(t) || p.admitted(t) {
		t.Fatal("an older statement went before the newest while overloaded")
	}
	if g := h.group(0); g.Stats.Shed != 1 || g.QueuedLow != 2 {
		t.Fatalf("group %+v", g)
	}
	if st := h.s.Stats(); st.Shed != 1 {
		t.Fatalf("stats shed %d", st.Shed)
	}
	// Still overloaded: newest first again (q3), and p, though older than
	// 2×target, is not given up.
	h.s.Release(q4.task)
	q3.wait(t)
	h.s.Release(q3.task)
	p.wait(t)
	h.s.Release(p.task)
	// A statement that goes straight in, then a whole interval: drained,
	// so FIFO again.
	b := h.admit(5, false)
	q6 := h.queue(6, false)
	h.clock.Advance(time.Millisecond)
	q7 := h.queue(7, false)
	h.clock.Advance(150 * time.Millisecond)
	h.s.Release(b)
	q6.wait(t)
	if q7.admitted(t) {
		t.Fatal("not FIFO after the queue drained")
	}
	h.s.Release(q6.task)
	q7.wait(t)
	h.s.Release(q7.task)
	if st := h.s.Stats(); st.Shed != 1 || st.Active != 0 || st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestCodelOffIsFIFO: without codel_target, waits far above any target
// shed nothing and the queue stays FIFO.
func TestCodelOffIsFIFO(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Oversubscribe = 0 })
	a := h.admit(0, false)
	for range 3 {
		q1 := h.queue(1, false)
		h.clock.Advance(time.Second)
		q2 := h.queue(2, false)
		h.clock.Advance(time.Second)
		h.s.Release(a)
		q1.wait(t)
		if q2.admitted(t) {
			t.Fatal("not FIFO")
		}
		h.s.Release(q1.task)
		q2.wait(t)
		a = q2.task
	}
	if st := h.s.Stats(); st.Shed != 0 {
		t.Fatalf("shed %d with codel off", st.Shed)
	}
}
