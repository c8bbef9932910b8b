package pool

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tpproxy/tpproxy/internal/ilist"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// autoPreparedShare is the part of the server's max_prepared_stmt_count
// the pool lets its connections use together when MaxPreparedPerConn is
// automatic: the rest stays for clients of the server that bypass the proxy.
const autoPreparedShare = 2

// maxAutoPrepared caps the automatic per-connection limit.
const maxAutoPrepared = 1024

// prepared is one statement prepared on a connection, in the connection's
// LRU list (most recently used at the front).
type prepared struct {
	key   uint64
	id    uint32
	links ilist.Links[prepared]
}

// stmtList is a connection's prepared statements: a map by key and an LRU
// list. The zero value is empty.
type stmtList struct {
	byKey map[uint64]*prepared
	lru   ilist.List[prepared] // most recently used first
	// closing are server statement ids to close before the connection's
	// next command (COM_STMT_CLOSE has no response, so it rides along).
	closing []uint32
	// detached counts statements handed to a caller by DetachPrepared and
	// not yet given back with ClosePrepared.
	detached int
}

// Prepared returns the server's statement id on c for the statement the
// caller knows as key, and marks it recently used.
func (c *Conn) Prepared(key uint64) (id uint32, ok bool) {
	s := c.stmts.byKey[key]
	if s == nil {
		return 0, false
	}
	c.stmts.lru.MoveToFront(&s.links)
	return s.id, true
}

// Prepare prepares sql on c with COM_STMT_PREPARE and records the server's
// statement id under key, closing the least recently used statement when c
// holds its limit. With keepDefs it also returns copies of the parameter
// and column definition payloads, in that order. A server error comes back
// as *mysqlwire.Error with c still usable.
func (c *Conn) Prepare(ctx context.Context, key uint64, sql []byte, keepDefs bool) (mysqlwire.StmtPrepareOK, [][]byte, error) {
	defer c.withDeadline(ctx)()
	c.StartCommand()
	cmd := [1]byte{mysqlwire.ComStmtPrepare}
	if err := c.w.WritePacketParts(cmd[:], sql, nil); err != nil {
		c.broken = true
		return mysqlwire.StmtPrepareOK{}, nil, fmt.Errorf("%w: %w", ErrBroken, err)
	}
	if err := c.Flush(); err != nil {
		return mysqlwire.StmtPrepareOK{}, nil, err
	}
	p, err := c.r.ReadPacket()
	if err != nil {
		c.broken = true
		return mysqlwire.StmtPrepareOK{}, nil, fmt.Errorf("%w: %w", ErrBroken, err)
	}
	if mysqlwire.IsERR(p) {
		e := mysqlwire.ParseERR(p)
		if e.Code == mysqlwire.ErMaxPreparedStmtCountReached && c.stmts.lru.Len() > 0 {
			// The server's max_prepared_stmt_count is reached, maybe by
			// statements only tpproxy's cache holds: close them all and
			// try once more (the list is empty then, so no loop).
			for c.stmts.lru.Len() > 0 {
				c.dropPrepared(c.stmts.lru.Back())
				c.p.stats.evictions.Add(1)
			}
			return c.Prepare(ctx, key, sql, keepDefs)
		}
		return mysqlwire.StmtPrepareOK{}, nil, e
	}
	ok, err := mysqlwire.ParseStmtPrepareOK(p)
	if err != nil {
		c.broken = true
		return ok, nil, fmt.Errorf("%w: %w", ErrBroken, err)
	}
	var defs [][]byte
	for _, n := range [2]uint16{ok.Params, ok.Columns} {
		if n == 0 {
			continue
		}
		for i := 0; i <= int(n); i++ { // definitions, then EOF
			p, err := c.r.ReadPacket()
			if err != nil {
				c.broken = true
				return ok, nil, fmt.Errorf("%w: %w", ErrBroken, err)
			}
			switch {
			case i == int(n) && !mysqlwire.IsEOF(p), i < int(n) && (mysqlwire.IsEOF(p) || mysqlwire.IsERR(p)):
				c.broken = true
				return ok, nil, fmt.Errorf("%w: malformed COM_STMT_PREPARE response", ErrBroken)
			case i < int(n) && keepDefs:
				defs = append(defs, append([]byte(nil), p...))
			}
		}
	}
	c.addPrepared(key, ok.StmtID)
	c.p.stats.prepares.Add(1)
	return ok, defs, nil
}

// addPrepared records a statement the server prepared on c.
func (c *Conn) addPrepared(key uint64, id uint32) {
	l := &c.stmts
	if l.byKey == nil {
		l.byKey = make(map[uint64]*prepared)
	}
	if old := l.byKey[key]; old != nil {
		// Prepared again (after a re-prepare): the old id is closed.
		c.dropPrepared(old)
	}
	for limit := c.p.preparedLimit(); limit > 0 && len(l.byKey) >= limit && l.lru.Len() > 0; {
		c.dropPrepared(l.lru.Back())
		c.p.stats.evictions.Add(1)
	}
	s := &prepared{key: key, id: id}
	l.byKey[key] = s
	l.lru.PushFront(s, &s.links)
	c.p.stats.preparedOpen.Add(1)
}

// dropPrepared forgets s and closes it on the server before c's next command.
func (c *Conn) dropPrepared(s *prepared) {
	c.stmts.lru.Remove(&s.links)
	delete(c.stmts.byKey, s.key)
	c.stmts.closing = append(c.stmts.closing, s.id)
}

// ForgetPrepared closes the statement key on c (before c's next command),
// for example after the server said it must be prepared again.
func (c *Conn) ForgetPrepared(key uint64) {
	if s := c.stmts.byKey[key]; s != nil {
		c.dropPrepared(s)
	}
}

// DetachPrepared removes the statement key from c's list without closing
// it and returns its server id: the caller owns it from now on (a cursor
// that must not be disturbed by others executing the same statement) and
// closes it with ClosePrepared.
func (c *Conn) DetachPrepared(key uint64) (id uint32, ok bool) {
	s := c.stmts.byKey[key]
	if s == nil {
		return 0, false
	}
	c.stmts.lru.Remove(&s.links)
	delete(c.stmts.byKey, key)
	c.stmts.detached++
	return s.id, true
}

// ClosePrepared closes a detached statement id before c's next command.
func (c *Conn) ClosePrepared(id uint32) {
	if c.stmts.detached == 0 {
		return // the connection was reset since: the server dropped it
	}
	c.stmts.detached--
	c.stmts.closing = append(c.stmts.closing, id)
}

// writeCloses sends the pending COM_STMT_CLOSE packets ahead of the next
// command (each is a command of its own, sequence id 0, with no answer).
func (c *Conn) writeCloses() {
	for _, id := range c.stmts.closing {
		c.w.SetSeq(0)
		c.w.Begin()
		c.w.AppendByte(mysqlwire.ComStmtClose)
		c.w.AppendUint32(id)
		_ = c.w.End() // five bytes always fit
		c.p.stats.preparedOpen.Add(-1)
	}
	c.stmts.closing = c.stmts.closing[:0]
}

// clearPrepared forgets every statement after the server dropped them all
// (COM_RESET_CONNECTION, COM_CHANGE_USER, a closed connection).
func (c *Conn) clearPrepared() {
	n := len(c.stmts.byKey) + len(c.stmts.closing) + c.stmts.detached
	if n == 0 {
		return
	}
	c.p.stats.preparedOpen.Add(-int64(n))
	clear(c.stmts.byKey)
	c.stmts.lru.Clear()
	c.stmts.closing = c.stmts.closing[:0]
	c.stmts.detached = 0
}

// defaultServerPrepared is max_prepared_stmt_count's default on MySQL and
// MariaDB, assumed until the server's value is known.
const defaultServerPrepared = 16382

// preparedLimit is the per-connection cap in force. The automatic one is
// computed from the size in force, so that a Reconfigure that grows the
// pool does not let its connections together exceed their share of the
// server's statements.
func (p *Pool) preparedLimit() int {
	if p.cfg.MaxPreparedPerConn > 0 {
		return p.cfg.MaxPreparedPerConn
	}
	limit := p.serverPrepared.Load()
	if limit == 0 {
		limit = defaultServerPrepared
	}
	n := limit / autoPreparedShare / int64(max(p.size(), 1))
	return int(min(max(n, 1), maxAutoPrepared))
}

// learnPreparedLimit reads the server's max_prepared_stmt_count, once, for
// the automatic per-connection cap.
func (p *Pool) learnPreparedLimit(ctx context.Context, c *Conn) {
	if p.cfg.MaxPreparedPerConn > 0 || p.serverPrepared.Load() > 0 {
		return
	}
	var limit uint64
	err := c.Query(ctx, "SELECT @@max_prepared_stmt_count", func(row []byte) error {
		v, _, err := mysqlwire.LenEncString(row)
		if err == nil {
			limit, err = strconv.ParseUint(string(v), 10, 32)
		}
		return err
	})
	if err != nil {
		p.cfg.Logger.Debug("cannot read max_prepared_stmt_count", "err", err)
		return
	}
	p.serverPrepared.Store(int64(max(limit, 1)))
}

// PreparedLimit is the per-connection cap of prepared statements in force
// (backend.max_prepared_per_connection, or the automatic value: half the
// server's max_prepared_stmt_count shared by the pool's connections at its
// current size, at least 1 and at most 1024).
func (p *Pool) PreparedLimit() int { return p.preparedLimit() }
