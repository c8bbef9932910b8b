package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpproxy/tpproxy/internal/codel"
	"github.com/tpproxy/tpproxy/internal/ilist"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// erUserLimitReached is ER_USER_LIMIT_REACHED, the server's answer to an
// account over max_user_connections; tpproxy gives it, naming its own
// limit, to a statement that would pin past the pinned-connection budget.
const erUserLimitReached = 1226

// pinBudget bounds the backend connections pinned sessions hold: all of
// them together (max_pinned_connections), each account's
// (max_pinned_per_account), and those pinned for good by state tpproxy
// cannot replay (max_sticky_pinned: user variables, temporary tables,
// GET_LOCK, ...; such a session keeps its connection while idle, so
// these get a smaller share than transactions, which end). A session takes a slot before a statement
// that may pin it (mayPin) and keeps it while it stays pinned; unpinned
// work keeps the rest of the pool, a reserve of at least the thread
// groups' worth of connections. A statement that finds no slot waits in
// FIFO order (waiters of an account at its own limit do not hold up
// others) for at most backend.acquire_timeout, then gets ERR 1226 naming
// the limit.
//
// A session can also become pinned by what no statement text shows (a
// stored function, a state change the server reports); it then takes its
// slot past the limit (an overdraft, counted), because the state is on
// the connection already.
type pinBudget struct {
	// max, perAccount and sticky are the configured limits (0:
	// automatic).
	max, perAccount, sticky atomic.Int64

	mu sync.Mutex
	// delay judges the queue's waits when admission by queue delay is on
	// (thread_pool.codel_target, the scheduler's settings): while the
	// queue stands, the newest waiter is served first and one that waited
	// past twice the target is given up (ERR 9005).
	delay codel.Detector
	// now is the clock of queue waits; nil: time.Now (tests set theirs).
	now func() time.Time
	// held counts the slots taken, stuck those of them held by sessions
	// pinned for good.
	held, stuck int
	byAccount   map[string]int
	waiters     ilist.List[pinWaiter]

	// lend is told the slots held for good whenever their number
	// changes, under mu (pool.Lend: the pool keeps as many connections
	// open beyond its size); nil: nobody.
	lend func(n int)

	// takes counts the statements that asked for a slot, waits those of
	// them that queued for one, shed those of them given up by admission
	// by queue delay.
	takes, waits, overdrafts, shed atomic.Uint64
	// refusedTotal, refusedAccount and refusedSticky count the statements
	// refused at each limit.
	refusedTotal, refusedAccount, refusedSticky atomic.Uint64
}

// pinWaiter is a statement waiting for a slot; granted is closed when it
// has one.
type pinWaiter struct {
	account string
	sticky  bool
	// shed: granted was closed to give the waiter up, not to grant it;
	// the error says so.
	shed    error
	since   time.Time // queued at (the budget's clock)
	granted chan struct{}
	links   ilist.Links[pinWaiter]
}

// errPinShed is the error of a statement that admission by queue delay
// gave up in the pinned-connection budget's queue.
var errPinShed = errors.New("transaction given up: the queue for pinned connections stands")

// PinLimits are the pinned-connection limits in force.
type PinLimits struct {
	Total, PerAccount, Sticky int
}

// limitsFor computes the limits in force. Automatic (0): every
// connection but a reserve of min(groups, poolSize-1) always left to
// unpinned work, per account the same as in all, and for good half of
// that (at least 1). A configured total is the operator's (up to the
// pool: a value past the reserve gives transactions connections unpinned
// work then waits for, which a workload of many concurrent transactions
// on a small pool may want).
func (b *pinBudget) limitsFor(poolSize, groups int) PinLimits {
	reserve := max(min(groups, poolSize-1), 0)
	total := int(b.max.Load())
	switch {
	case total <= 0:
		total = max(poolSize-reserve, 1)
	case total > poolSize:
		total = max(poolSize, 1)
	}
	per := int(b.perAccount.Load())
	if per <= 0 || per > total {
		per = total
	}
	sticky := int(b.sticky.Load())
	if sticky <= 0 {
		sticky = max(total/2, 1)
	}
	return PinLimits{Total: total, PerAccount: per, Sticky: min(sticky, total)}
}

// pinWaits are how long a statement waits for a slot. One held back by
// its account's limit or the sticky share waits Limit
// (backend.acquire_timeout) before ERR 1226; one that only waits because
// every slot is in use is in an admission queue like the thread pool's
// and waits up to Queue (thread_pool.queue_timeout), so that a burst of
// transactions queues as it would on the server's own thread pool. Codel
// is admission by queue delay (off when its target is 0).
type pinWaits struct {
	Limit, Queue time.Duration
	Codel        codel.Config
}

// take gets a slot for account under lim, waiting as waits says; sticky:
// the statement would pin the session for good. The error is the ERR the
// statement gets.
func (b *pinBudget) take(ctx context.Context, account string, sticky bool, lim func() PinLimits, waits pinWaits) error {
	cc := waits.Codel
	b.takes.Add(1)
	b.mu.Lock()
	if b.delay.Config() != cc {
		b.delay.SetConfig(cc)
	}
	l := lim()
	if b.waiters.Len() == 0 && b.fits(account, sticky, l) {
		b.grantTo(account, sticky)
		if cc.On() {
			b.delay.Observe(b.clock(), 0)
		}
		b.mu.Unlock()
		return nil
	}
	w := &pinWaiter{account: account, sticky: sticky, granted: make(chan struct{}), since: b.clock()}
	b.waiters.PushBack(w, &w.links)
	b.grant(l) // the queue may hold only waiters of accounts at their limit
	b.mu.Unlock()
	select {
	case <-w.granted:
		return w.shed
	default:
	}
	b.waits.Add(1)
	began := time.Now()
	timer := time.NewTimer(waits.Limit)
	defer timer.Stop()
	for {
		select {
		case <-w.granted:
			return w.shed
		case <-timer.C:
		case <-ctx.Done():
		}
		b.mu.Lock()
		l = lim()
		if ctx.Err() == nil && !b.heldBack(account, sticky, l) {
			// Only the total holds it: a queue, which waits up to
			// queue_timeout.
			if rest := waits.Queue - time.Since(began); rest > 0 {
				b.mu.Unlock()
				timer.Reset(rest)
				continue
			}
		}
		break // mu held
	}
	if !b.waiters.Remove(&w.links) {
		b.mu.Unlock()
		return w.shed // granted (nil) or given up while giving up
	}
	atAccount := b.byAccount[account] >= l.PerAccount && l.PerAccount < l.Total
	atSticky := !atAccount && b.heldBack(account, sticky, l)
	b.grant(l) // our place may have held up waiters of other accounts
	b.mu.Unlock()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch {
	case atAccount:
		b.refusedAccount.Add(1)
		return pinLimitError(account, "max_pinned_per_account", l.PerAccount)
	case atSticky:
		b.refusedSticky.Add(1)
		return pinLimitError(account, "max_sticky_pinned", l.Sticky)
	}
	b.refusedTotal.Add(1)
	return pinLimitError(account, "max_pinned_connections", l.Total)
}

// pinLimitError is the ERR of a statement refused at a limit, in the
// server's words for max_user_connections.
func pinLimitError(account, limit string, n int) *mysqlwire.Error {
	return &mysqlwire.Error{Code: erUserLimitReached, State: "42000",
		Message: fmt.Sprintf("User '%s' has exceeded the '%s' resource (current value: %d)", account, limit, n)}
}

// heldBack reports whether a limit other than the total keeps account
// from a slot: its own, or the sticky share for a sticky one. mu must be
// held.
func (b *pinBudget) heldBack(account string, sticky bool, l PinLimits) bool {
	return (b.byAccount[account] >= l.PerAccount && l.PerAccount < l.Total) ||
		(sticky && b.stuck >= l.Sticky && l.Sticky < l.Total)
}

// fits reports whether account may take a slot (for good if sticky) now.
// mu must be held.
func (b *pinBudget) fits(account string, sticky bool, l PinLimits) bool {
	return b.held < l.Total && b.byAccount[account] < l.PerAccount && (!sticky || b.stuck < l.Sticky)
}

// grantTo gives account a slot. mu must be held.
func (b *pinBudget) grantTo(account string, sticky bool) {
	if b.byAccount == nil {
		b.byAccount = make(map[string]int)
	}
	b.held++
	b.byAccount[account]++
	if sticky {
		b.stuck++
		b.lent()
	}
}

// lent tells lend the slots held for good. mu must be held.
func (b *pinBudget) lent() {
	if b.lend != nil {
		b.lend(b.stuck)
	}
}

// clock reads the budget's clock.
func (b *pinBudget) clock() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}

// grant hands free slots to waiters in FIFO order, passing over those of
// accounts at their own limit and, for good, those past max_sticky_pinned.
// With admission by queue delay on and the queue overloaded, it first
// gives up the waiters that waited past twice the target, then serves the
// newest first. mu must be held.
func (b *pinBudget) grant(l PinLimits) {
	if b.waiters.Len() == 0 {
		return
	}
	on := b.delay.Config().On()
	var now time.Time
	overloaded := false
	if on {
		now = b.clock()
		if overloaded = b.delay.Overloaded(now); overloaded {
			b.slough(now)
		}
	}
	first, step := b.waiters.Front(), (*ilist.Links[pinWaiter]).Next
	if overloaded {
		first, step = b.waiters.Back(), (*ilist.Links[pinWaiter]).Prev
	}
	for w := first; w != nil && b.held < l.Total; {
		next := step(&w.links)
		if b.fits(w.account, w.sticky, l) {
			if on {
				// The wait that tells a standing queue: the oldest
				// waiter's (w's own when it is the oldest), also when the
				// newest goes first.
				b.delay.Observe(now, now.Sub(b.waiters.Front().since))
			}
			b.waiters.Remove(&w.links)
			b.grantTo(w.account, w.sticky)
			close(w.granted)
		}
		w = next
	}
}

// slough gives up the waiters, oldest first, that waited past twice the
// target while the queue is overloaded. mu must be held.
func (b *pinBudget) slough(now time.Time) {
	for w := b.waiters.Front(); w != nil && b.delay.GiveUp(now, now.Sub(w.since)); {
		next := w.links.Next()
		wait := now.Sub(w.since)
		b.waiters.Remove(&w.links)
		b.delay.Observe(now, wait)
		w.shed = fmt.Errorf("%w (%s)", errPinShed, b.delay.Config().Reason(wait))
		b.shed.Add(1)
		close(w.granted)
		w = next
	}
}

// force gives account a slot past the limits: its session is pinned
// already (for good if sticky).
func (b *pinBudget) force(account string, sticky bool) {
	b.mu.Lock()
	b.grantTo(account, sticky)
	b.mu.Unlock()
	b.overdrafts.Add(1)
}

// stick makes account's slot one held for good: its session, pinned by a
// transaction or a statement that was to end, now holds state tpproxy
// cannot replay. Past max_sticky_pinned it is an overdraft.
func (b *pinBudget) stick(l PinLimits) {
	b.mu.Lock()
	over := b.stuck >= l.Sticky
	b.stuck++
	b.lent()
	b.mu.Unlock()
	if over {
		b.overdrafts.Add(1)
	}
}

// give returns account's slot (one held for good if sticky).
func (b *pinBudget) give(account string, sticky bool, l PinLimits) {
	b.mu.Lock()
	b.held--
	if sticky {
		b.stuck--
		b.lent()
	}
	if n := b.byAccount[account] - 1; n > 0 {
		b.byAccount[account] = n
	} else {
		delete(b.byAccount, account)
	}
	b.grant(l)
	b.mu.Unlock()
}

// regrant hands out slots a raised limit freed.
func (b *pinBudget) regrant(l PinLimits) {
	b.mu.Lock()
	b.grant(l)
	b.mu.Unlock()
}

// PinAccount is one account's share of the pinned-connection budget.
type PinAccount struct {
	Account string
	// Held is the slots the account's sessions hold: the connections its
	// pinned sessions keep, and statements that may pin running now.
	Held int
	// Waiting counts the account's statements waiting for a slot.
	Waiting int
}

// PinStats is the pinned-connection budget now.
type PinStats struct {
	Limits PinLimits
	// Held counts the slots taken, Sticky those of them held for good.
	Held, Sticky int
	Waiting      int
	Accounts     []PinAccount // by account name
	// Waits counts the statements that waited for a slot; RefusedTotal,
	// RefusedAccount and RefusedSticky those refused at
	// max_pinned_connections, max_pinned_per_account and
	// max_sticky_pinned; Overdrafts the sessions that became pinned (or
	// pinned for good) with no slot for it (a stored function's state,
	// say) and took one past the limits; Shed those given up by admission
	// by queue delay (thread_pool.codel_target).
	Waits, RefusedTotal, RefusedAccount, RefusedSticky, Overdrafts, Shed uint64
}

// stats reads the budget.
func (b *pinBudget) stats(l PinLimits) PinStats {
	st := PinStats{Limits: l, Waits: b.waits.Load(), RefusedTotal: b.refusedTotal.Load(),
		RefusedAccount: b.refusedAccount.Load(), RefusedSticky: b.refusedSticky.Load(), Overdrafts: b.overdrafts.Load(), Shed: b.shed.Load()}
	by := map[string]*PinAccount{}
	get := func(a string) *PinAccount {
		if by[a] == nil {
			by[a] = &PinAccount{Account: a}
		}
		return by[a]
	}
	b.mu.Lock()
	st.Held, st.Sticky, st.Waiting = b.held, b.stuck, b.waiters.Len()
	for a, n := range b.byAccount {
		get(a).Held = n
	}
	for w := range b.waiters.All() {
		get(w.account).Waiting++
	}
	b.mu.Unlock()
	for _, a := range by {
		st.Accounts = append(st.Accounts, *a)
	}
	slices.SortFunc(st.Accounts, func(x, y PinAccount) int { return cmp.Compare(x.Account, y.Account) })
	return st
}

// SetPinLimits changes max_pinned_connections, max_pinned_per_account and
// max_sticky_pinned (0: automatic). Sessions pinned past a lowered limit
// keep their connections; new pins wait until the count is under it.
func (srv *Server) SetPinLimits(total, perAccount, sticky int) {
	srv.pins.max.Store(int64(max(total, 0)))
	srv.pins.perAccount.Store(int64(max(perAccount, 0)))
	srv.pins.sticky.Store(int64(max(sticky, 0)))
	srv.pins.regrant(srv.pinLimits())
}

// pinLimits are the pinned-connection limits in force for the pool's size
// and the scheduler's thread groups now.
func (srv *Server) pinLimits() PinLimits {
	return srv.pins.limitsFor(srv.pool.Size(), srv.sched.Size())
}

// PinStats reads the pinned-connection budget.
func (srv *Server) PinStats() PinStats { return srv.pins.stats(srv.pinLimits()) }

// PinQueue counts the statements that asked the pinned-connection budget
// for a slot and those of them that waited for one, without its lock: the
// GOMAXPROCS governor reads them every tick. Transactions that start while
// the budget is full queue here, not in the thread pool or the
// connection pool.
func (srv *Server) PinQueue() (takes, waits uint64) {
	return srv.pins.takes.Load(), srv.pins.waits.Load()
}

// pinSlot gets the session a slot for a statement that may pin it (for
// good if sticky), unless it has one. ok false: there was none in time,
// and the client has been told (err is only a failure to tell it).
// Sessions of the extra port use its own connections, outside the budget.
func (s *Session) pinSlot(ctx context.Context, sticky bool) (ok bool, err error) {
	if s.slot.isHeld() || s.pinned != nil || s.extra != nil {
		return true, nil
	}
	if terr := s.srv.pins.take(ctx, s.user, sticky, s.srv.pinLimits,
		pinWaits{Limit: s.pool.AcquireTimeout(), Queue: s.srv.sched.QueueTimeout(), Codel: s.srv.sched.Codel()}); terr != nil {
		return false, s.writeErr(terr)
	}
	s.holdSlot(sticky)
	return true, nil
}

// pinSlotHeld is a session's slot of the pinned-connection budget: held,
// taken for account, and sticky when it is one held for good
// (max_sticky_pinned).
type pinSlotHeld struct {
	held, sticky bool
	account      string
}

func (h *pinSlotHeld) isHeld() bool { return h != nil && h.held }

// holdSlot records a slot taken for the session's account.
func (s *mirror) holdSlot(sticky bool) {
	if s.slot == nil {
		s.slot = new(pinSlotHeld)
	}
	*s.slot = pinSlotHeld{held: true, sticky: sticky, account: s.user}
}

// settleSlot makes the session's slot follow its pin: an unpinned session
// gives its slot back, one that became pinned without one (by what no
// statement text shows) takes one past the limits, and one now pinned for
// good holds its slot as such.
func (s *mirror) settleSlot() {
	switch {
	case s.pinned == nil && s.slot.isHeld():
		s.slot.held = false
		s.srv.pins.give(s.slot.account, s.slot.sticky, s.srv.pinLimits())
	case s.pinned != nil && !s.slot.isHeld() && s.pool == s.srv.pool:
		s.holdSlot(s.pins.sticky())
		s.srv.pins.force(s.user, s.slot.sticky)
	case s.slot.isHeld() && !s.slot.sticky && s.pins.sticky():
		s.slot.sticky = true
		s.srv.pins.stick(s.srv.pinLimits())
	}
}

// mayPin reports whether the statement info (run for COM_STMT_EXECUTE) may
// leave an unpinned session pinned, so that it needs a slot first, and
// whether for good (sticky: it would leave state tpproxy cannot replay): a
// transaction, locks, XA, a cursor, a CALL, the sticky kinds of state
// (user variables, temporary tables, GET_LOCK, SQL PREPARE, HANDLER,
// sequences, variables tpproxy cannot replay), the settings that pin, any
// statement under autocommit=0, and any multi-statement query.
func (s *mirror) mayPin(q []byte, info *sqlscan.Info, run *stmtRun) (may, sticky bool) {
	const pinning = sqlscan.FlagLockTables | sqlscan.FlagXA | sqlscan.FlagSetTransaction | sqlscan.FlagCalcFoundRows
	if s.pinned != nil {
		return false, false
	}
	if stickyPinsOf(info.Flags) != 0 || s.statePins.sticky() || info.Kind == sqlscan.KindCall {
		return true, true
	}
	switch {
	case info.Multi, s.statePins != 0, info.Flags&pinning != 0:
		return true, false
	case run != nil && run.ex.Flags&0x07 != 0: // a cursor (see execute)
		return true, false
	}
	switch info.Kind {
	case sqlscan.KindBegin, sqlscan.KindXA:
		return true, false
	case sqlscan.KindSet:
		if may, sticky = s.setMayPin(q); may {
			return may, sticky
		}
	}
	return s.autocommitOff() && info.Kind != sqlscan.KindCommit && info.Kind != sqlscan.KindRollback, false
}

// setMayPin reports whether a SET assigns a setting that pins (profiling,
// optimizer_trace, sql_auto_is_null) or a variable tpproxy cannot replay,
// and whether for good (all but sql_auto_is_null).
func (s *mirror) setMayPin(q []byte) (pins, sticky bool) {
	sqlscan.SetAssignments(q, s.mode, func(a sqlscan.SetAssign) {
		if a.Special || sticky {
			return
		}
		n := strings.ToLower(string(a.Name))
		switch n {
		case "sql_auto_is_null":
			pins = true
		case "profiling", "optimizer_trace":
			pins, sticky = true, true
		case "last_insert_id", "identity":
		default:
			if !isPlainName(n) || varClass([]byte(n)) != varReplayable {
				pins, sticky = true, true
			}
		}
	})
	return pins, sticky
}
