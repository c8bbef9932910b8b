package pool

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// control is a set of the pool's extra server connections for tpproxy's
// own round trips, apart from the sessions' connections: one for KILL
// QUERY of a statement running on a pool connection and for readiness
// pings (ctrl), LookupConns for the catalog's reads (look). They are
// dialed on first use.
type control struct {
	p *Pool
	// slot holds the connections (nil until dialed) nobody uses; a user
	// takes one out for its round trip and gives it back. Waiting for one
	// then ends with the waiter's context, which a mutex cannot offer: a
	// Kill must not sit out a readiness probe against a dead backend.
	slot chan *Conn
	// mu guards closed and the give-back, so that a connection given back
	// after close is closed rather than parked in the slot.
	mu     sync.Mutex
	closed bool
	// setup, when set, returns the statement a freshly dialed connection
	// runs before its first use.
	setup func() string
}

func (k *control) init(p *Pool, n int) {
	k.p = p
	k.slot = make(chan *Conn, n)
	for range n {
		k.slot <- nil
	}
}

// LookupConns is how many lookup connections the catalog may use at once:
// reads of different schemas run side by side (a busy server with many
// schemas reloads each every catalog_ttl), and one waiting for a metadata
// lock does not hold up the others.
const LookupConns = 4

// Kill sends KILL QUERY (or KILL CONNECTION when query is false) for a
// server thread over the control connection. The caller guarantees the
// thread still belongs to the statement it means to stop.
func (p *Pool) Kill(ctx context.Context, threadID uint32, query bool) error {
	p.stats.kills.Add(1)
	stmt := "KILL CONNECTION " + strconv.FormatUint(uint64(threadID), 10)
	if query {
		stmt = "KILL QUERY " + strconv.FormatUint(uint64(threadID), 10)
	}
	return p.ctrl.do(ctx, func(c *Conn) error {
		_, err := c.Exec(ctx, stmt)
		return err
	})
}

// QueryControl runs a small query on the control connection and calls
// onRow with each text-protocol row.
func (p *Pool) QueryControl(ctx context.Context, sql string, onRow func(row []byte) error) error {
	return p.ctrl.do(ctx, func(c *Conn) error { return c.Query(ctx, sql, onRow) })
}

// LookupTimeout bounds a lookup (QueryLookup), waiting for the lookup
// connection included.
const LookupTimeout = 2 * time.Second

// lockWaitLimit is the lookup connection's lock_wait_timeout (seconds):
// information_schema opens the tables it describes, and a metadata lock
// held on one (ALTER TABLE, LOCK TABLES ... WRITE, REPAIR) must not make
// it wait long.
const lockWaitLimit = 1

// lookupSQL is what the lookup connection runs after dialing: short lock
// waits and, on MariaDB, a statement time limit.
func (p *Pool) lookupSQL() string {
	sql := "SET SESSION lock_wait_timeout = " + strconv.Itoa(lockWaitLimit)
	if strings.Contains(p.ServerVersion(), "MariaDB") {
		sql += ", SESSION max_statement_time = " + strconv.Itoa(int(LookupTimeout/time.Second))
	}
	return sql
}

// QueryLookup runs one of tpproxy's own lookups (the catalog's reads of
// information_schema) on a lookup connection (one of LookupConns), a
// connection of the pool's own account with the server's default
// settings, apart from the sessions' connections: a lookup never runs under a session's settings
// (sql_select_limit, max_join_size) or locks, never clears a session's
// diagnostics, and never delays KILL. It gives up after LookupTimeout,
// waiting for a connection included.
func (p *Pool) QueryLookup(ctx context.Context, sql string, onRow func(row []byte) error) error {
	ctx, cancel := context.WithTimeout(ctx, LookupTimeout)
	defer cancel()
	return p.look.do(ctx, func(c *Conn) error { return c.Query(ctx, sql, onRow) })
}

// Ready reports whether the backend is reachable and the pool healthy, for
// a readiness probe: it sends COM_PING over the control connection
// (dialing it if needed, all bounded by ctx and ConnectTimeout) and checks
// that the pool holds at least one established connection. Errors wrap
// ErrBackendUnavailable and say what failed; after Close it returns
// ErrClosed.
//
// A failed ping makes the pool health-check all its idle connections at
// once instead of at the next HealthInterval, so that connections the
// backend dropped are replaced (with the filler's backoff) rather than
// handed to clients. Ready is safe for concurrent use; concurrent calls
// and Kill take turns on the control connection.
func (p *Pool) Ready(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, p.connectTimeout())
	defer cancel()
	err := p.ctrl.do(pctx, func(c *Conn) error { return c.ping(pctx) })
	switch {
	case errors.Is(err, ErrClosed):
		return ErrClosed
	case err != nil:
		// The caller giving up says nothing about the backend.
		if ctx.Err() == nil {
			p.checkIdleNow()
		}
		return fmt.Errorf("%w: ping %s: %w", ErrBackendUnavailable, p.cfg.Addr, err)
	}
	p.mu.Lock()
	closed, established, dialErr := p.closed, p.open-p.dialing, p.lastDialErr
	p.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case established > 0:
		return nil
	case dialErr != nil:
		return fmt.Errorf("%w: no open connection (last dial error: %w)", ErrBackendUnavailable, dialErr)
	}
	return fmt.Errorf("%w: no open connection", ErrBackendUnavailable)
}

// checkIdleNow asks maintain to health-check every idle connection.
func (p *Pool) checkIdleNow() {
	select {
	case p.checkNow <- struct{}{}:
	default: // a check is already pending
	}
}

// do runs fn on the control connection, dialing it first if needed. When
// fn fails and leaves the connection broken (it went stale: the server
// restarted or dropped it), the connection is dialed again and fn retried
// once.
func (k *control) do(ctx context.Context, fn func(*Conn) error) error {
	var c *Conn
	select {
	case c = <-k.slot:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { k.give(c) }()
	k.mu.Lock()
	closed := k.closed
	k.mu.Unlock()
	if closed {
		return ErrClosed
	}
	for attempt := 0; ; attempt++ {
		if c == nil {
			nc, err := k.p.dial(ctx, false, false)
			if err != nil {
				return err
			}
			if k.setup != nil {
				if _, err := nc.Exec(ctx, k.setup()); err != nil {
					nc.close()
					return err
				}
			}
			c = nc
		}
		err := fn(c)
		if err == nil || !c.broken {
			return err
		}
		c.close()
		c = nil
		if attempt == 1 {
			return err
		}
	}
}

// give puts the connection back in the slot, or closes it when the pool
// was closed meanwhile.
func (k *control) give(c *Conn) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed && c != nil {
		c.close()
		c = nil
	}
	k.slot <- c // never blocks: only the taker gives back
}

// close closes the connections in the slot now and marks those in use to
// be closed when their users give them back; later uses fail with
// ErrClosed.
func (k *control) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	for n := len(k.slot); n > 0; n-- {
		if c := <-k.slot; c != nil {
			c.close()
		}
		k.slot <- nil
	}
}
