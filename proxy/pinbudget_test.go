package proxy

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/codel"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

func TestPinLimitsKeepAReserve(t *testing.T) {
	for _, tc := range []struct {
		pool, groups, max, per, sticky int
		want                           PinLimits
	}{
		{pool: 4, groups: 2, want: PinLimits{2, 2, 1}},             // automatic: the thread groups' worth is reserved
		{pool: 16, groups: 2, want: PinLimits{14, 14, 7}},          // the peers' pool
		{pool: 1, groups: 2, want: PinLimits{1, 1, 1}},             // nothing can be reserved in a pool of one
		{pool: 2, groups: 4, want: PinLimits{1, 1, 1}},             // at least one connection is left to unpinned work
		{pool: 16, groups: 2, max: 20, want: PinLimits{16, 16, 8}}, // set: up to the pool, past the reserve
		{pool: 4, groups: 2, max: 4, want: PinLimits{4, 4, 2}},     // the operator's choice
		{pool: 16, groups: 2, max: 6, per: 2, want: PinLimits{6, 2, 3}},
		{pool: 16, groups: 2, max: 6, per: 9, want: PinLimits{6, 6, 3}},
		{pool: 16, groups: 2, sticky: 10, want: PinLimits{14, 14, 10}},
		{pool: 16, groups: 2, max: 6, sticky: 10, want: PinLimits{6, 6, 6}},
	} {
		var b pinBudget
		b.max.Store(int64(tc.max))
		b.perAccount.Store(int64(tc.per))
		b.sticky.Store(int64(tc.sticky))
		if got := b.limitsFor(tc.pool, tc.groups); got != tc.want {
			t.Errorf("pool %d, groups %d, max %d, per account %d: %+v, want %+v", tc.pool, tc.groups, tc.max, tc.per, got, tc.want)
		}
	}
}

// TestPinBudgetWaitsThenNamesTheLimit: past a limit a statement waits for
// a slot in FIFO order, is granted one as soon as one is given back, and
// otherwise gets ERR 1226 naming the limit that held it.
func TestPinBudgetWaitsThenNamesTheLimit(t *testing.T) {
	ctx := context.Background()
	var b pinBudget
	lim := func() PinLimits { return PinLimits{Total: 3, PerAccount: 2, Sticky: 3} }
	for _, a := range []string{"a", "a", "b"} {
		if err := b.take(ctx, a, false, lim, pinWaits{Limit: time.Second, Queue: time.Second}); err != nil {
			t.Fatalf("take %s: %v", a, err)
		}
	}
	// a is at its own limit, and everyone at the total.
	var me *mysqlwire.Error
	if err := b.take(ctx, "a", false, lim, pinWaits{Limit: 20 * time.Millisecond, Queue: 20 * time.Millisecond}); !errors.As(err, &me) || me.Code != 1226 ||
		me.Message != "User 'a' has exceeded the 'max_pinned_per_account' resource (current value: 2)" {
		t.Fatalf("a over its limit: %v", err)
	}
	if err := b.take(ctx, "c", false, lim, pinWaits{Limit: 20 * time.Millisecond, Queue: 20 * time.Millisecond}); !errors.As(err, &me) ||
		me.Message != "User 'c' has exceeded the 'max_pinned_connections' resource (current value: 3)" {
		t.Fatalf("c over the total: %v", err)
	}
	// A waiter of a (still at its limit) does not hold up one of c when
	// b gives its slot back.
	aDone, cDone := make(chan error, 1), make(chan error, 1)
	go func() {
		aDone <- b.take(ctx, "a", false, lim, pinWaits{Limit: 5 * time.Second, Queue: 5 * time.Second})
	}()
	waitWaiting(t, &b, 1)
	go func() {
		cDone <- b.take(ctx, "c", false, lim, pinWaits{Limit: 5 * time.Second, Queue: 5 * time.Second})
	}()
	waitWaiting(t, &b, 2)
	b.give("b", false, lim())
	if err := <-cDone; err != nil {
		t.Fatalf("c after b left: %v", err)
	}
	select {
	case err := <-aDone:
		t.Fatalf("a got a slot past its limit: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	b.give("a", false, lim())
	if err := <-aDone; err != nil {
		t.Fatalf("a after one of its own left: %v", err)
	}
	st := b.stats(lim())
	if st.Held != 3 || st.Waiting != 0 || st.RefusedAccount != 1 || st.RefusedTotal != 1 || st.Waits != 4 {
		t.Fatalf("stats %+v", st)
	}
	// An overdraft counts; a raised limit hands out the slots it frees.
	b.force("d", false)
	dDone := make(chan error, 1)
	go func() {
		dDone <- b.take(ctx, "e", false, lim, pinWaits{Limit: 5 * time.Second, Queue: 5 * time.Second})
	}()
	waitWaiting(t, &b, 1)
	b.regrant(PinLimits{Total: 5, PerAccount: 2, Sticky: 5})
	if err := <-dDone; err != nil {
		t.Fatal(err)
	}
	if st := b.stats(lim()); st.Held != 5 || st.Overdrafts != 1 || len(st.Accounts) != 4 {
		t.Fatalf("stats %+v", st)
	}
}

func waitWaiting(t *testing.T, b *pinBudget, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b.mu.Lock()
		got := b.waiters.Len()
		b.mu.Unlock()
		if got == n {
			return
		}
	}
	t.Fatalf("never %d waiters", n)
}

// TestPinBudgetKeepsStickyPinsToTheirShare: sessions pinned for good (a
// user variable, say) hold at most max_sticky_pinned slots, while
// transactions may take the rest; a slot that becomes sticky past the
// share is an overdraft, and giving one back lets a sticky waiter in.
func TestPinBudgetKeepsStickyPinsToTheirShare(t *testing.T) {
	ctx := context.Background()
	var b pinBudget
	lim := func() PinLimits { return PinLimits{Total: 3, PerAccount: 3, Sticky: 1} }
	if err := b.take(ctx, "a", true, lim, pinWaits{Limit: time.Second, Queue: time.Second}); err != nil {
		t.Fatal(err)
	}
	var me *mysqlwire.Error
	if err := b.take(ctx, "a", true, lim, pinWaits{Limit: 20 * time.Millisecond, Queue: 20 * time.Millisecond}); !errors.As(err, &me) || me.Code != 1226 ||
		me.Message != "User 'a' has exceeded the 'max_sticky_pinned' resource (current value: 1)" {
		t.Fatalf("a second sticky pin: %v", err)
	}
	// Transactions still get the other two slots.
	for range 2 {
		if err := b.take(ctx, "b", false, lim, pinWaits{Limit: time.Second, Queue: time.Second}); err != nil {
			t.Fatalf("a transaction beside the sticky pin: %v", err)
		}
	}
	// One of them sets a user variable: past the share, an overdraft.
	b.stick(lim())
	if st := b.stats(lim()); st.Held != 3 || st.Sticky != 2 || st.Overdrafts != 1 || st.RefusedSticky != 1 {
		t.Fatalf("stats %+v", st)
	}
	done := make(chan error, 1)
	go func() { done <- b.take(ctx, "c", true, lim, pinWaits{Limit: 5 * time.Second, Queue: 5 * time.Second}) }()
	waitWaiting(t, &b, 1)
	b.give("b", false, lim()) // a transaction's slot: the sticky share is still full
	select {
	case err := <-done:
		t.Fatalf("a sticky pin past the share: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	b.give("b", true, lim())
	b.give("a", true, lim())
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := b.stats(lim()); st.Held != 1 || st.Sticky != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestPinBudgetShedsAStandingQueue: with admission by queue delay on, a
// queue for pinned slots whose shortest wait stayed above the target for
// a whole interval gives up the waiters past twice the target (ERR 9005)
// and serves the newest first; without it, nothing is given up (the
// other tests run with it off).
func TestPinBudgetShedsAStandingQueue(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	b := pinBudget{now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }}
	cc := codel.Config{Target: 10 * time.Millisecond, Interval: 100 * time.Millisecond}
	lim := func() PinLimits { return PinLimits{Total: 1, PerAccount: 1, Sticky: 1} }
	take := func(account string) chan error {
		done := make(chan error, 1)
		go func() {
			done <- b.take(ctx, account, false, lim, pinWaits{Limit: time.Minute, Queue: time.Minute, Codel: cc})
		}()
		return done
	}
	if err := b.take(ctx, "a", false, lim, pinWaits{Limit: time.Second, Queue: time.Second, Codel: cc}); err != nil {
		t.Fatal(err)
	}
	w1 := take("w1")
	waitWaiting(t, &b, 1)
	advance(150 * time.Millisecond)
	b.give("a", false, lim()) // the interval before saw a take that did not wait: FIFO
	if err := <-w1; err != nil {
		t.Fatal(err)
	}
	w2 := take("w2")
	waitWaiting(t, &b, 1)
	advance(100 * time.Millisecond)
	// The interval that ended saw only w1's 150ms: overloaded, and the
	// next look at the queue (w3's arrival) gives w2 (100ms, past 2×10ms)
	// up.
	w3 := take("w3")
	err := <-w2
	if !errors.Is(err, errPinShed) || sqlError(err).Code != CodeOverloaded {
		t.Fatalf("w2: %v, want the shed error (ERR %d)", err, CodeOverloaded)
	}
	waitWaiting(t, &b, 1)
	advance(5 * time.Millisecond)
	w4 := take("w4")
	waitWaiting(t, &b, 2)
	advance(10 * time.Millisecond)
	b.give("w1", false, lim()) // still overloaded: w3 (15ms) is kept, w4, the newest, goes first
	if err := <-w4; err != nil {
		t.Fatalf("w4: %v", err)
	}
	select {
	case err := <-w3:
		t.Fatalf("w3 got an answer (%v) while w4 holds the only slot", err)
	default:
	}
	if st := b.stats(lim()); st.Shed != 1 || st.Waiting != 1 || st.Held != 1 {
		t.Fatalf("stats %+v", st)
	}
	b.give("w4", false, lim())
	if err := <-w3; err != nil {
		t.Fatalf("w3: %v", err)
	}
}

// TestPinBudgetQueuesAsLongAsTheThreadPool: a statement that waits only
// because every pinned slot is in use waits up to the queue's timeout
// (thread_pool.queue_timeout), past backend.acquire_timeout, and gets
// the slot when one is given back; one held back by its account's limit
// is refused after acquire_timeout.
func TestPinBudgetQueuesAsLongAsTheThreadPool(t *testing.T) {
	ctx := context.Background()
	var b pinBudget
	lim := func() PinLimits { return PinLimits{Total: 2, PerAccount: 1, Sticky: 2} }
	waits := pinWaits{Limit: 20 * time.Millisecond, Queue: 10 * time.Second}
	if err := b.take(ctx, "a", false, lim, waits); err != nil {
		t.Fatal(err)
	}
	if err := b.take(ctx, "b", false, lim, waits); err != nil {
		t.Fatal(err)
	}
	var me *mysqlwire.Error
	began := time.Now()
	if err := b.take(ctx, "a", false, lim, waits); !errors.As(err, &me) || me.Code != 1226 || time.Since(began) > 5*time.Second {
		t.Fatalf("a past its own limit: %v after %s, want ERR 1226 after acquire_timeout", err, time.Since(began))
	}
	done := make(chan error, 1)
	go func() { done <- b.take(ctx, "c", false, lim, waits) }()
	waitWaiting(t, &b, 1)
	time.Sleep(100 * time.Millisecond) // five acquire_timeouts
	select {
	case err := <-done:
		t.Fatalf("c, held only by the total, gave up after acquire_timeout: %v", err)
	default:
	}
	b.give("b", false, lim())
	if err := <-done; err != nil {
		t.Fatalf("c: %v", err)
	}
	short := pinWaits{Limit: 20 * time.Millisecond, Queue: 50 * time.Millisecond}
	began = time.Now()
	if err := b.take(ctx, "d", false, lim, short); !errors.As(err, &me) || me.Code != 1226 || time.Since(began) < 50*time.Millisecond {
		t.Fatalf("d: %v after %s, want ERR 1226 after the queue's 50ms", err, time.Since(began))
	}
}
