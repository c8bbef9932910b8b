// Package pool holds tpproxy's backend executors: a fixed set of server
// connections, dialed with the flags the proxy relies on, health-checked,
// replaced with backoff when they fail, retired after their lifetime, and
// handed to acquirers in FIFO order with a bounded wait.
//
// The pool provides the mechanism only. Which session may use which
// connection, and when a connection must be reset, is decided above it in
// package proxy.
package pool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/tpproxy/tpproxy/internal/histogram"
	"github.com/tpproxy/tpproxy/internal/ilist"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// matchScan bounds how many idle connections Acquire inspects looking for
// one whose session state already matches.
const matchScan = 32

// Pool is a set of backend connections kept at a configured size, which
// Reconfigure can change while it runs.
type Pool struct {
	// cfg is the configuration given to New. Its Dynamic fields are the
	// start values only: the values in force live in set.
	cfg  Config
	set  settings
	rand *rand.Rand // guarded by mu

	// reconf serialises Reconfigure calls, so that the old values each one
	// logs are the ones it replaced.
	reconf sync.Mutex

	// mu guards the fields below; set is stored with it held. Nothing
	// blocks on the network while it is held.
	mu      sync.Mutex
	idle    []*Conn // in release order: the most recently used connection is last
	waiters waitQueue
	open    int // connections alive or being dialed
	dialing int
	// lent is the connections held for good beyond the pool's size
	// (Lend): the pool keeps size + lent open.
	lent   int
	closed bool
	// lastDialErr is the error of the most recent failed dial, cleared by a
	// successful one; with open == 0 it makes Acquire fail fast.
	lastDialErr error
	// redialWait is the filler's wait between failed dials: exponential with
	// jitter, so that the replicas of a fleet do not redial a server that
	// comes back all at the same instant.
	redialWait backoff.ExponentialBackOff
	version    string

	tlsUnsupported atomic.Bool
	// serverPrepared is the server's max_prepared_stmt_count, learnt on the
	// first connection (0: not yet); the automatic per-connection cap is
	// derived from it and the size in force.
	serverPrepared atomic.Int64
	// defaults are the session defaults read on the latest dial.
	defaults atomic.Pointer[Defaults]
	// noPseudoID holds the names of the server accounts that may not set
	// pseudo_thread_id.
	noPseudoID sync.Map
	// globals is the latest reading of the server's global variables;
	// globalsMu serialises readings, scopes caches which variables have a
	// session value where the server cannot list them (MySQL).
	globals  atomic.Pointer[Globals]
	greeting atomic.Pointer[ServerGreeting]
	// extCaps are the MariaDB extended capabilities backend connections
	// can be dialed with (bulk operations, extended metadata).
	extCaps   atomic.Uint32
	globalsMu sync.Mutex
	scopes    sync.Map

	fill     chan struct{} // wakes the filler
	retick   chan struct{} // tells maintain the health interval changed
	checkNow chan struct{} // asks maintain to check every idle connection now
	done     chan struct{}
	// bg bounds the background work (dials of the filler, health checks) by
	// the pool's life, so Close does not wait out their timeouts.
	bg     context.Context
	stopBG context.CancelFunc
	wg     sync.WaitGroup

	ctrl control
	// look are the connections of tpproxy's own lookups (the catalog),
	// apart from ctrl: a lookup may wait for a metadata lock, and must
	// delay neither a KILL nor a readiness probe.
	look control

	stats       counters
	acquireWait *histogram.Histogram
	// refused holds the server's latest refusal of an account's login
	// (*refusal), by account name.
	refused sync.Map
	// inUse counts the connections handed out, by account name
	// (*atomic.Int64), for Accounts.
	inUse sync.Map
}

// waiter is an Acquire call waiting for a connection. ch has room for one
// connection so a releaser never blocks handing it over.
type waiter struct {
	ch      chan *Conn
	account string // the account it wants, for Accounts
	// overtaken counts the waiters of another account served before it
	// (nextWaiter).
	overtaken int
	links     ilist.Links[waiter]
}

// waitQueue is a FIFO of waiters with O(1) removal of a waiter that gives up.
type waitQueue struct{ ilist.List[waiter] }

func (q *waitQueue) push(w *waiter) { q.PushBack(w, &w.links) }

func (q *waitQueue) pop() *waiter { return q.PopFront() }

// remove takes w out of the queue and reports whether it was there (a
// waiter is in no other list).
func (q *waitQueue) remove(w *waiter) bool { return q.Remove(&w.links) }

// New validates cfg and returns a pool that has not dialed yet; Start dials.
func New(cfg Config) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Pool{
		cfg:  cfg,
		rand: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x7470)),
		redialWait: backoff.ExponentialBackOff{InitialInterval: redialMin, Multiplier: 2, MaxInterval: redialMax,
			RandomizationFactor: redialJitter},
		fill:        make(chan struct{}, 1),
		retick:      make(chan struct{}, 1),
		checkNow:    make(chan struct{}, 1),
		done:        make(chan struct{}),
		acquireWait: histogram.New(nil),
	}
	p.bg, p.stopBG = context.WithCancel(context.Background())
	p.set.store(cfg.Dynamic())
	p.ctrl.init(p, 1)
	p.look.init(p, LookupConns)
	p.look.setup = p.lookupSQL
	return p, nil
}

// Start dials the pool's connections in the background and waits until the
// first dial has succeeded or failed, so ServerVersion is known when the
// backend is up. A failing backend is not an error: the filler keeps trying
// with backoff.
func (p *Pool) Start(ctx context.Context) error {
	first := make(chan struct{})
	p.wg.Add(2)
	go p.filler(first)
	go p.maintain()
	if iv := p.cfg.GlobalsInterval; iv > 0 {
		p.wg.Add(1)
		go p.globalsLoop(iv)
	}
	p.wakeFiller()
	select {
	case <-first:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close closes idle connections, fails waiters, and stops background work.
// Connections in use are closed when released.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	for w := p.waiters.pop(); w != nil; w = p.waiters.pop() {
		close(w.ch)
	}
	p.open -= len(idle)
	p.mu.Unlock()
	close(p.done)
	p.stopBG()
	for _, c := range idle {
		c.close()
	}
	p.ctrl.close()
	p.look.close()
	p.wg.Wait()
}

// Config returns the pool's configuration with defaults filled in and the
// values of the last Reconfigure.
func (p *Pool) Config() Config {
	c := p.cfg
	p.mu.Lock()
	d := p.set.load()
	p.mu.Unlock()
	c.Size, c.AcquireTimeout, c.ConnectTimeout = d.Size, d.AcquireTimeout, d.ConnectTimeout
	c.HealthInterval, c.MaxLifetime = d.HealthInterval, d.MaxLifetime
	return c
}

// ServerVersion is the version string of the backend, "" until a
// connection has been made.
func (p *Pool) ServerVersion() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.version
}

// Acquire returns a connection for the caller's exclusive use until
// Release. It prefers an idle connection whose session state already
// equals want (want may be nil), then the most recently used one; when
// none is idle it waits in FIFO order for at most AcquireTimeout. The
// caller brings the connection to its state with Sync.
func (p *Pool) Acquire(ctx context.Context, want *State) (*Conn, error) {
	return p.AcquireWaiting(ctx, want, nil)
}

// Waiter is told when an acquirer has to wait for a connection, so that a
// scheduler can stop counting the statement as executing meanwhile.
type Waiter interface {
	WaitBegin()
	WaitEnd()
}

// AcquireWaiting is Acquire that calls w.WaitBegin before waiting for a
// connection and w.WaitEnd after (w may be nil).
//
// Every call is observed in Stats.AcquireWait, whatever its outcome, with
// the time it spent queued for a connection: 0 when it never queued.
func (p *Pool) AcquireWaiting(ctx context.Context, want *State, wt Waiter) (*Conn, error) {
	p.stats.acquires.Add(1)
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			p.acquireWait.Observe(0)
			return nil, ErrClosed
		}
		c := p.takeIdle(want)
		if c == nil {
			break
		}
		p.mu.Unlock()
		// A connection used moments ago is handed out without a look at
		// its socket (a syscall per statement otherwise): the caller
		// checks it with Verify before a statement it could not repeat,
		// and may repeat one that is safe to when the first exchange
		// finds it closed (DeadOnArrival).
		if c.unchecked = time.Since(c.lastUsed) < idleCheckAfter; c.unchecked || c.alive() {
			p.acquireWait.Observe(0)
			return p.handOut(ctx, c, want)
		}
		// The server closed it while it was idle: replace it and try the
		// next one, so the caller never sends a statement into a dead socket.
		p.stats.healthFailures.Add(1)
		p.cfg.Logger.Info("idle backend connection was closed by the server; replacing it", "thread_id", c.threadID)
		c.broken = true
		p.discard(c)
		p.mu.Lock()
	}
	if p.open == 0 && p.dialing == 0 && p.lastDialErr != nil {
		err := p.lastDialErr
		p.mu.Unlock()
		p.acquireWait.Observe(0)
		return nil, fmt.Errorf("%w: %w", ErrBackendUnavailable, err)
	}
	w := &waiter{ch: make(chan *Conn, 1)}
	if want != nil {
		w.account = p.accountName(want.Account)
	}
	p.waiters.push(w)
	p.mu.Unlock()
	p.wakeFiller()

	if wt != nil {
		wt.WaitBegin()
		defer wt.WaitEnd()
	}
	start := time.Now()
	p.stats.waits.Add(1)
	// Read once: the error below reports the timeout this call waited for,
	// even if a Reconfigure changes it meanwhile.
	timeout := p.acquireTimeout()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var c *Conn
	var ok, gaveUp bool
	select {
	case c, ok = <-w.ch:
	case <-timer.C:
		gaveUp = true
	case <-ctx.Done():
		gaveUp = true
	}
	if gaveUp {
		p.mu.Lock()
		queued := p.waiters.remove(w)
		p.mu.Unlock()
		if !queued {
			// Handed over (or failed) while we were giving up: whoever
			// takes a waiter from the queue (put, the filler, Close) sends
			// it a connection or closes its channel right after, so this
			// does not block for long.
			c, ok = <-w.ch
		}
	}
	waited := time.Since(start)
	p.stats.waitNanos.Add(int64(waited))
	p.acquireWait.Observe(waited)
	if ok {
		return p.handOut(ctx, c, want)
	}
	p.mu.Lock()
	closed, dialErr := p.closed, p.lastDialErr
	p.mu.Unlock()
	switch {
	case closed:
		return nil, ErrClosed
	case !gaveUp:
		// The filler gave up on us: the backend is down and no connection is left.
		return nil, fmt.Errorf("%w: %w", ErrBackendUnavailable, dialErr)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	p.stats.timeouts.Add(1)
	if dialErr != nil {
		return nil, fmt.Errorf("%w (%s); last dial error: %w", ErrAcquireTimeout, timeout, dialErr)
	}
	return nil, fmt.Errorf("%w (%s)", ErrAcquireTimeout, timeout)
}

// takeIdle removes the best idle connection for want from the idle list,
// which is kept in release order. mu must be held.
//
// It prefers the connection the session used last, if nobody used it
// since: its server thread is warm, and what the session's last statement
// left there (ROW_COUNT(), FOUND_ROWS()) is still the session's. Otherwise
// it takes the least recently used connection in the session's state, or
// failing that the least recently used one, so that connections other
// sessions used last are reused as late as possible.
func (p *Pool) takeIdle(want *State) *Conn {
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	pick := 0
	if want != nil {
		sum, acct := want.Sum(), want.Account
		found := false
		if want.Owner != 0 {
			for i := n - 1; i >= 0 && i >= n-matchScan; i-- {
				if c := p.idle[i]; c.lastOwner == want.Owner && c.state.sum == sum && p.sameAccount(c.account, acct) {
					pick, found = i, true
					break
				}
			}
		}
		for i := 0; !found && i < n && i < matchScan; i++ {
			if c := p.idle[i]; c.state.sum == sum && p.sameAccount(c.account, acct) {
				pick, found = i, true
			}
		}
		if !found && acct != nil {
			// The least recently used connection of the account, else the
			// least recently used one of any account (switched in fit).
			for i := 0; i < n; i++ {
				if p.sameAccount(p.idle[i].account, acct) {
					pick = i
					break
				}
			}
		}
	}
	c := p.idle[pick]
	if want != nil {
		c.lastOwner = want.Owner
	}
	copy(p.idle[pick:], p.idle[pick+1:])
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	return c
}

// handOut fits c to want and counts it as in use by its account.
func (p *Pool) handOut(ctx context.Context, c *Conn, want *State) (*Conn, error) {
	c, err := p.fit(ctx, c, want)
	if err == nil {
		c.inUseBy = c.acctInUse
		c.inUseBy.Add(1)
		c.handedAt = time.Now()
	}
	return c, err
}

// fit makes sure c can take want's state: a connection dialed with the
// other CLIENT_FOUND_ROWS setting, or with a schema when want has none, is
// replaced by a freshly dialed one in the same slot.
func (p *Pool) fit(ctx context.Context, c *Conn, want *State) (*Conn, error) {
	if g := p.Globals(); g != nil && c.gen < g.Gen && want != nil {
		// Dialed under older globals: a reset gives it the current ones,
		// except the packet limit the server fixed for the connection
		// when it was opened, which takes a new connection.
		if netLimits(g) != c.packetLimit {
			return p.redial(ctx, c, want)
		}
		p.stats.resets.Add(1)
		if err := c.reset(ctx); err != nil {
			p.cfg.Logger.Warn("backend reset failed; replacing connection", "thread_id", c.threadID, "err", err)
			c.broken = true
			return p.redial(ctx, c, want)
		}
	}
	if want == nil {
		return c, nil
	}
	same := c.state.FoundRows == want.FoundRows && c.state.ExtMetadata == want.ExtMetadata
	if same && !p.sameAccount(c.account, want.Account) {
		// Logging in as the session's account clears the schema too.
		return p.switchOrDrop(ctx, c, want.Account)
	}
	if same && (want.Schema != "" || c.state.Schema == "") {
		return c, nil
	}
	if same {
		// Only the schema is in the way.
		err := c.clearSchema(ctx)
		if err == nil {
			p.stats.schemaClears.Add(1)
			return c, nil
		}
		if !errors.Is(err, errNoChangeUser) {
			p.cfg.Logger.Debug("change user failed; redialing", "thread_id", c.threadID, "err", err)
		}
	}
	c, err := p.redial(ctx, c, want)
	if err != nil || p.sameAccount(nil, want.Account) {
		return c, err
	}
	return p.switchOrDrop(ctx, c, want.Account)
}

// switchOrDrop logs c in as a. When the server refuses the account, c is
// logged back in as the pool's own and released, and the refusal returned
// (and returned again without asking for refusalTTL, so a wrong password
// costs the server one failed login per second, not one per statement);
// when anything else fails, c is closed (the filler replaces it).
func (p *Pool) switchOrDrop(ctx context.Context, c *Conn, a *Account) (*Conn, error) {
	name := p.accountName(a)
	if v, ok := p.refused.Load(name); ok {
		if r := v.(*refusal); time.Now().Before(r.until) {
			p.put(c)
			return nil, r.err
		}
		p.refused.Delete(name)
	}
	err := c.switchAccount(ctx, a)
	if err == nil {
		return c, nil
	}
	if errors.Is(err, ErrAccountSwitch) {
		if n := p.stats.refusals.Add(1); n == 1 || n%100 == 0 {
			p.cfg.Logger.Warn("the backend refused a session's account", "user", name, "thread_id", c.threadID, "err", err, "refusals", n)
		}
		p.refused.Store(name, &refusal{until: time.Now().Add(refusalTTL), err: err})
		// After a server's ERR the connection is still logged in (as
		// before, or as nobody): log it back in as the pool's own.
		var me *mysqlwire.Error
		if errors.As(err, &me) && c.switchAccount(ctx, nil) == nil {
			c.broken = false
			p.put(c)
			return nil, err
		}
	}
	c.broken = true
	p.discard(c)
	return nil, err
}

// refusalTTL is how long a server's refusal of an account is answered
// from memory.
const refusalTTL = time.Second

type refusal struct {
	until time.Time
	err   error
}

// redial closes c and dials its replacement in the same slot.
func (p *Pool) redial(ctx context.Context, c *Conn, want *State) (*Conn, error) {
	p.stats.replaced.Add(1)
	c.close()
	nc, err := p.dial(ctx, want.FoundRows, want.ExtMetadata)
	if err != nil {
		p.stats.dialErrors.Add(1)
		p.mu.Lock()
		p.open--
		p.mu.Unlock()
		p.wakeFiller()
		return nil, fmt.Errorf("%w: %w", ErrBackendUnavailable, err)
	}
	p.stats.dials.Add(1)
	return nc, nil
}

// Release returns a connection. A broken connection is closed and replaced;
// a dirty one is reset first (in the caller's goroutine, so the next user
// never waits for it); an expired one is retired.
func (p *Pool) Release(c *Conn) {
	if c.inUseBy != nil {
		c.inUseBy.Add(-1)
		c.inUseBy = nil
	}
	c.lastUsed = time.Now()
	if !c.handedAt.IsZero() {
		p.stats.heldNanos.Add(int64(c.lastUsed.Sub(c.handedAt)))
		c.handedAt = time.Time{}
	}
	c.unchecked = false
	c.state.Sum() // refresh the fingerprint Acquire matches on
	if !c.broken && !c.retire && c.dirty {
		p.stats.resets.Add(1)
		if err := c.reset(context.Background()); err != nil {
			p.cfg.Logger.Warn("backend reset failed; replacing connection", "thread_id", c.threadID, "err", err)
			c.broken = true
		}
	}
	if !c.broken && !c.retire && c.pendingReports {
		if err := c.flushReports(context.Background()); err != nil {
			p.cfg.Logger.Warn("backend state report failed; replacing connection", "thread_id", c.threadID, "err", err)
			c.broken = true
		}
	}
	if c.broken || c.retire || c.expired(c.lastUsed) {
		p.discard(c)
		return
	}
	p.put(c)
}

// put hands c to the first waiter or makes it idle. While the pool is
// above its size (Reconfigure shrank it) c is closed instead: a waiter is
// served by a later put, and one always comes, since at least size
// connections stay open.
func (p *Pool) put(c *Conn) {
	p.mu.Lock()
	if p.closed || p.open > p.capacity() {
		p.open--
		p.mu.Unlock()
		c.close()
		return
	}
	if w := p.nextWaiter(c); w != nil {
		p.mu.Unlock()
		w.ch <- c
		return
	}
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// Waiting stays first come, first served, with one exception that saves a
// COM_CHANGE_USER per hand-over: a connection released while the first
// waiter wants another account goes to the first of the next
// matchWaiters waiters that wants its account, as long as no waiter it
// passes has been passed maxOvertaken times already.
const (
	matchWaiters = 16
	maxOvertaken = 4
)

// nextWaiter removes and returns the waiter c goes to, nil if none waits.
// mu must be held.
func (p *Pool) nextWaiter(c *Conn) *waiter {
	if p.waiters.Len() == 0 {
		return nil // the common case, told by one load
	}
	head := p.waiters.Front()
	name := c.AccountName()
	if head.account == name || head.overtaken >= maxOvertaken {
		return p.waiters.pop()
	}
	i := 0
	for w := head.links.Next(); w != nil && i < matchWaiters; w, i = w.links.Next(), i+1 {
		if w.account == name {
			for o := head; o != w; o = o.links.Next() {
				o.overtaken++
			}
			p.waiters.remove(w)
			return w
		}
		if w.overtaken >= maxOvertaken {
			break
		}
	}
	return p.waiters.pop()
}

// discard closes c and lets the filler dial a replacement.
func (p *Pool) discard(c *Conn) {
	switch {
	case c.broken:
		p.stats.broken.Add(1)
	case c.retire:
		p.stats.retired.Add(1)
	default:
		p.stats.expired.Add(1)
	}
	c.close()
	p.mu.Lock()
	p.open--
	p.mu.Unlock()
	p.wakeFiller()
}

// capacity is the connections the pool keeps open: its size and those
// lent beyond it. mu must be held.
func (p *Pool) capacity() int { return p.size() + p.lent }

// Lend sets the connections the pool keeps open beyond its size: n
// connections are held for good by sessions that idle with them (pinned by
// state that cannot be replayed elsewhere), so the pool dials as many
// more, and the rest of the work keeps size connections to run on. When n
// falls, connections coming back past the new capacity are closed.
func (p *Pool) Lend(n int) {
	p.mu.Lock()
	grew := n > p.lent
	p.lent = max(n, 0)
	// A loan that ends after its connection came back leaves one idle
	// past the capacity: close the least recently used. One whose dial is
	// still in flight is no idle one's to pay for: put closes it when the
	// dial ends.
	var excess []*Conn
	for p.open-p.dialing > p.capacity() && len(p.idle) > 0 {
		excess = append(excess, p.idle[0])
		p.idle = slices.Delete(p.idle, 0, 1)
		p.open--
	}
	p.mu.Unlock()
	for _, c := range excess {
		c.close()
	}
	if grew {
		p.wakeFiller()
	}
}

func (p *Pool) wakeFiller() {
	select {
	case p.fill <- struct{}{}:
	default:
	}
}

// The filler's waits between failed dials: from redialMin doubling up to
// redialMax, each ±redialJitter of itself.
const (
	redialMin    = 100 * time.Millisecond
	redialMax    = 5 * time.Second
	redialJitter = 0.2
)

// filler keeps the pool at its size, dialing with exponential backoff while
// the backend fails. first is closed after the first dial attempt.
func (p *Pool) filler(first chan struct{}) {
	defer p.wg.Done()
	defer func() {
		// Start may still wait for the first attempt when Close stops us.
		if first != nil {
			close(first)
		}
	}()
	backoff := time.NewTimer(time.Hour)
	backoff.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-p.fill:
		case <-backoff.C:
		}
		for {
			p.mu.Lock()
			if p.closed || p.open >= p.capacity() {
				p.mu.Unlock()
				break
			}
			p.open++
			p.dialing++
			p.mu.Unlock()

			c, err := p.dial(p.bg, false, false)
			p.mu.Lock()
			p.dialing--
			if err != nil && p.closed {
				// Close cancelled the dial: nothing to report or retry.
				p.open--
				p.mu.Unlock()
				return
			}
			if err != nil {
				p.open--
				p.lastDialErr = err
				wait := p.redialWait.NextBackOff()
				// Waiters cannot be served while the backend is down and no
				// connection is left: tell them now rather than at timeout.
				var failed []*waiter
				if p.open == 0 {
					for w := p.waiters.pop(); w != nil; w = p.waiters.pop() {
						failed = append(failed, w)
					}
				}
				p.mu.Unlock()
				for _, w := range failed {
					close(w.ch)
				}
				p.stats.dialErrors.Add(1)
				p.cfg.Logger.Warn("backend dial failed", "addr", p.cfg.Addr, "retry_in", wait, "err", err)
				backoff.Reset(wait)
				if first != nil {
					close(first)
					first = nil
				}
				break
			}
			p.lastDialErr = nil
			p.redialWait.Reset()
			if p.version == "" {
				p.version = c.version
			}
			p.mu.Unlock()
			p.stats.dials.Add(1)
			p.put(c)
			if first != nil {
				close(first)
				first = nil
			}
		}
	}
}

// maintain pings connections that sat idle for a health interval and
// retires expired ones; on request (Ready found the backend unreachable) it
// checks every idle connection at once instead of waiting for the ticker.
func (p *Pool) maintain() {
	defer p.wg.Done()
	interval := p.healthInterval()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		all := false
		select {
		case <-p.done:
			return
		case <-p.retick:
			if iv := p.healthInterval(); iv != interval {
				interval = iv
				t.Reset(iv)
			}
			continue
		case <-p.checkNow:
			all = true
		case <-t.C:
		}
		p.checkIdle(all, interval)
	}
}

// checkIdle takes the idle connections due for a check (all of them with
// all) out of the idle list, retires the expired ones and pings the rest
// concurrently, so that a dead backend is noticed in one ping's time and
// not one per connection.
func (p *Pool) checkIdle(all bool, interval time.Duration) {
	now := time.Now()
	p.mu.Lock()
	var check []*Conn
	keep := p.idle[:0]
	for _, c := range p.idle {
		if all || now.Sub(c.lastUsed) >= interval || c.expired(now) {
			check = append(check, c)
		} else {
			keep = append(keep, c)
		}
	}
	clear(p.idle[len(keep):])
	p.idle = keep
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range check {
		if c.expired(now) {
			p.discard(c)
			continue
		}
		wg.Go(func() { p.healthCheck(c) })
	}
	wg.Wait()
}

// healthCheck pings an idle connection and returns it to the pool, or
// replaces it when the ping fails.
func (p *Pool) healthCheck(c *Conn) {
	p.stats.healthChecks.Add(1)
	if err := c.ping(p.bg); err != nil {
		c.broken = true
		if p.bg.Err() == nil {
			p.stats.healthFailures.Add(1)
			p.cfg.Logger.Warn("backend health check failed; replacing connection", "thread_id", c.threadID, "err", err)
		}
		p.discard(c)
		return
	}
	c.lastUsed = time.Now()
	p.put(c)
}

// expired reports whether c has outlived its lifetime at now.
func (c *Conn) expired(now time.Time) bool {
	return !c.expires.IsZero() && now.After(c.expires)
}
