package proxy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// watchAfter is how long a statement runs before the proxy starts watching
// its client for a disconnect. Short statements never pay for a watcher.
const watchAfter = time.Second

// killTimeout bounds a KILL sent on the pool's control connection.
const killTimeout = 5 * time.Second

// reaper starts disconnect watchers for long statements.
func (srv *Server) reaper(ctx context.Context) {
	t := time.NewTicker(watchAfter / 2)
	defer t.Stop()
	var batch []*Session
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			srv.mu.Lock()
			batch = batch[:0]
			for _, s := range srv.sessions {
				batch = append(batch, s)
			}
			srv.mu.Unlock()
			for _, s := range batch {
				s.maybeWatch(now, &s.clientConn, s.pool, s.srv.log, s.id)
				s.maybePark(now, &s.clientConn, &s.mu)
			}
			clear(batch)
			batch = srv.wakeExpired(now, batch)
		}
	}
}

// killStatement serves KILL [CONNECTION|QUERY] <id> where id is a
// connection id this proxy gave out.
func (s *Session) killStatement(ctx context.Context, q []byte, info *sqlscan.Info) error {
	if info.Flags&sqlscan.FlagKillUnsupported != 0 && !info.Multi {
		if query, ok := killOwnForm(q); ok {
			quit, err := s.kill(ctx, s.id, query)
			if err == nil && quit {
				err = errKilled
			}
			return err
		}
	}
	if info.Flags&sqlscan.FlagKillUnsupported != 0 && !info.Multi {
		if query, expr, ok := killExprForm(q); ok {
			return s.killExpr(ctx, expr, query)
		}
	}
	if info.Flags&sqlscan.FlagKillUnsupported != 0 || info.Multi {
		return s.writeErr(&mysqlwire.Error{Code: erNotSupportedYet, State: "42000",
			Message: "tpproxy supports KILL [CONNECTION | QUERY] <connection id> as a single statement only"})
	}
	if info.KillID > 0xffffffff {
		return s.writeErr(&mysqlwire.Error{Code: erNoSuchThread, State: "HY000",
			Message: fmt.Sprintf("Unknown thread id: %d", info.KillID)})
	}
	quit, err := s.kill(ctx, uint32(info.KillID), info.KillQuery)
	if err == nil && quit {
		err = errKilled
	}
	return err
}

// kill kills a session's statement or the session itself. Users may kill
// their own sessions, as on the server without the PROCESS privilege.
func (s *Session) kill(ctx context.Context, id uint32, query bool) (quit bool, err error) {
	if id == s.id {
		if query {
			// The KILL itself is the statement it interrupts.
			return false, s.writeErr(errQueryInterrupted)
		}
		return true, s.writeErr(errConnectionKilled)
	}
	if err := s.srv.kill(id, query, s.user); err != nil {
		return false, s.writeErr(err)
	}
	return false, s.writeOK()
}

// killOwn matches KILL [HARD|SOFT] [CONNECTION|QUERY] CONNECTION_ID(), the
// one expression target whose value tpproxy knows: the session's own id.
var killOwn = regexp.MustCompile(`(?is)^\s*kill\s+(?:(?:hard|soft)\s+)?(connection\s+|query\s+)?connection_id\s*\(\s*\)\s*;?\s*$`)

// killOwnForm reports whether q is a KILL of CONNECTION_ID(), and whether
// it is KILL QUERY.
func killOwnForm(q []byte) (query, ok bool) {
	m := killOwn.FindSubmatch(q)
	if m == nil {
		return false, false
	}
	return len(m[1]) > 0 && (m[1][0] == 'q' || m[1][0] == 'Q'), true
}

// ErrNoSuchSession is returned by Kill for an id no session has.
var ErrNoSuchSession = errors.New("proxy: no such session")

// Kill kills session id's running statement (query) or the session
// itself, on behalf of an operator (the admin port): no owner check.
func (srv *Server) Kill(id uint32, query bool) error {
	if err := srv.kill(id, query, ""); err != nil {
		return fmt.Errorf("%w: %d", ErrNoSuchSession, id)
	}
	return nil
}

// kill kills session id's running statement or the session, for user
// (who must own it; "": an operator). The error is the server's answer:
// ERR 1094 for an unknown id, 1095 for another user's session.
func (srv *Server) kill(id uint32, query bool, user string) *mysqlwire.Error {
	t := srv.session(id)
	if t == nil {
		return &mysqlwire.Error{Code: erNoSuchThread, State: "HY000", Message: fmt.Sprintf("Unknown thread id: %d", id)}
	}
	if user != "" && t.user != user {
		return &mysqlwire.Error{Code: erKillDenied, State: "HY000", Message: fmt.Sprintf("You are not owner of thread %d", id)}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !query {
		// Close the client side first: the interrupted statement's error
		// must not reach a client whose connection was killed.
		t.killed = true
		t.closeConn()
	}
	if t.cur != nil {
		t.killLocked(t.pool, t.srv.log, t.id)
	}
	return nil
}

// killExprRe matches KILL [HARD|SOFT] [CONNECTION|QUERY] expr, except the
// forms whose target is not a connection id (KILL USER, KILL QUERY ID).
var killExprRe = regexp.MustCompile(`(?is)^\s*kill\s+(?:(?:hard|soft)\s+)?(connection\s+|query\s+)?(.+?)[\s;]*$`)

// killExprForm splits a KILL whose target is an expression.
func killExprForm(q []byte) (query bool, expr []byte, ok bool) {
	m := killExprRe.FindSubmatch(q)
	if m == nil {
		return false, nil, false
	}
	expr = m[2]
	if w := sqlscan.FirstKeyword(expr); strings.EqualFold(string(w), "user") ||
		len(m[1]) > 0 && (m[1][0] == 'q' || m[1][0] == 'Q') && strings.EqualFold(string(w), "id") {
		return false, nil, false
	}
	return len(m[1]) > 0 && (m[1][0] == 'q' || m[1][0] == 'Q'), expr, true
}

// killExpr serves KILL with an expression as its target: the expression
// is evaluated on a backend connection in the session's state (so that
// CONNECTION_ID() in it is the session's id) and the value taken as one of
// tpproxy's connection ids. An expression the server cannot evaluate gets
// the server's error.
func (s *Session) killExpr(ctx context.Context, expr []byte, query bool) error {
	c, err := s.backendFor(ctx, &s.task, true, false)
	if err != nil {
		return s.writeErr(err)
	}
	if err := c.PrimeConnectionID(ctx, s.connID); err != nil && !errors.Is(err, pool.ErrPseudoThreadID) {
		s.releaseIfUnpinned(c)
		return s.writeErr(err)
	}
	var v []byte
	var null bool
	err = c.Query(ctx, "SELECT "+string(expr), func(row []byte) error {
		b, n, err := mysqlwire.LenEncString(row)
		if n == 1 && len(row) > 0 && row[0] == 0xfb {
			null = true
		}
		v = append(v[:0], b...)
		return err
	})
	s.releaseIfUnpinned(c)
	if err != nil {
		return s.writeErr(err)
	}
	id, perr := strconv.ParseFloat(strings.TrimSpace(string(v)), 64)
	if null || perr != nil || id < 0 || id > 0xffffffff {
		return s.writeErr(&mysqlwire.Error{Code: erNoSuchThread, State: "HY000",
			Message: fmt.Sprintf("Unknown thread id: %d", max(int64(id), 0))})
	}
	quit, err := s.kill(ctx, uint32(math.Round(id)), query)
	if err == nil && quit {
		err = errKilled
	}
	return err
}
