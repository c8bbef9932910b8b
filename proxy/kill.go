package proxy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"runtime/debug"
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
	lastFree := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if now.Sub(lastFree) >= freeEvery {
				lastFree = now
				srv.freeBuffers()
			}
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

// freeEvery is how often the reaper sees whether packet buffers gave back
// enough memory to hand it to the operating system.
const freeEvery = 5 * time.Second

// freeReturnAt is how much the packet buffers must have shrunk since
// their peak for the memory to be returned at once rather than by the
// runtime's scavenger in its own time.
const freeReturnAt = 8 << 20

// freeBuffers returns memory the packet buffers held to the operating
// system when they gave back much of it (clients that claimed large
// packets left, say): RSS follows what is buffered, not what once was.
func (srv *Server) freeBuffers() {
	peak := srv.budget.TakePeak()
	if peak-srv.budget.Used() >= freeReturnAt {
		debug.FreeOSMemory()
	}
}

// killStatement serves KILL, which names connection ids this proxy gave
// out, in every form the server accepts: KILL [HARD|SOFT] [CONNECTION |
// QUERY] id, of CONNECTION_ID() or of any expression, KILL ... USER, KILL
// QUERY ID, SET STATEMENT ... FOR KILL, and KILL among the statements of a
// multi-statement query (multiKill). p is the COM_QUERY packet.
func (s *Session) killStatement(ctx context.Context, p []byte, info *sqlscan.Info) error {
	if info.Multi {
		return s.multiKill(ctx, p)
	}
	return endIfKilled(s.killOne(ctx, p, info))
}

// endIfKilled is the error that ends the session after a KILL served here:
// errKilled when the KILL ended the session itself (quit), else err.
func endIfKilled(quit bool, err error) error {
	if err == nil && quit {
		return errKilled
	}
	return err
}

// killOne serves one KILL statement, p its COM_QUERY packet, and reports
// whether it ended the session itself.
func (s *Session) killOne(ctx context.Context, p []byte, info *sqlscan.Info) (quit bool, err error) {
	q := p[1:]
	if info.Kind == sqlscan.KindSet && info.Inner == sqlscan.KindKill && info.InnerAt > 0 {
		// SET STATEMENT ... FOR KILL: the variables cannot matter to a
		// KILL tpproxy serves itself.
		inner := append([]byte{p[0]}, q[info.InnerAt:]...)
		in := s.scan(inner[1:])
		return s.killOne(ctx, inner, &in)
	}
	if info.Kind != sqlscan.KindKill {
		// A KILL inside a compound statement that runs now (BEGIN NOT
		// ATOMIC ... END, IF ... END IF) would reach the server with a
		// proxy id, and a body's statements cannot be split.
		return false, s.writeErr(&mysqlwire.Error{Code: erNotSupportedYet, State: "42000",
			Message: "tpproxy cannot serve KILL inside a compound statement: run it as a statement of its own"})
	}
	if info.Flags&sqlscan.FlagKillUnsupported == 0 {
		if info.KillID > 0xffffffff {
			return false, s.writeErr(&mysqlwire.Error{Code: erNoSuchThread, State: "HY000",
				Message: fmt.Sprintf("Unknown thread id: %d", info.KillID)})
		}
		return s.kill(ctx, uint32(info.KillID), info.KillQuery)
	}
	if query, ok := killOwnForm(q); ok {
		return s.kill(ctx, s.id, query)
	}
	if query, user, ok := killUserForm(q); ok {
		return s.killUser(ctx, user, query)
	}
	if killQueryIDForm(q) {
		// A query id is the server's, unique on it: the server finds the
		// query and applies its privilege rules to the account the
		// session runs as. With identity service every session runs as
		// one account, and the server would let anyone interrupt anyone.
		if s.srv.cfg.Identity == IdentityService {
			return false, s.writeErr(&mysqlwire.Error{Code: erNotSupportedYet, State: "42000",
				Message: "tpproxy does not relay KILL QUERY ID with backend.identity service"})
		}
		return false, s.execute(ctx, p, modeResult, info, nil)
	}
	if query, expr, ok := killExprForm(q); ok {
		return s.killExpr(ctx, expr, query)
	}
	return false, s.writeErr(&mysqlwire.Error{Code: erNotSupportedYet, State: "42000",
		Message: "tpproxy cannot serve this form of KILL"})
}

// multiKill serves a multi-statement query with a KILL among its
// statements, as the server would: statement by statement, each result
// saying more follow but the last, the first error ending it. The
// statements between KILLs go to the server as they are, together; the
// KILLs are served here. A KILL inside a stored program's body being
// defined is part of the definition and is relayed; a statement tpproxy
// cannot serve ends the query with its error, after those before it ran.
func (s *Session) multiKill(ctx context.Context, p []byte) error {
	q := p[1:]
	type part struct {
		start, end int
		kill       bool
	}
	var parts []part
	kills := false
	sqlscan.Split(q, s.mode, func(start, end int) {
		in := s.scan(q[start:end])
		kill := in.Kind == sqlscan.KindKill || in.Kind == sqlscan.KindSet && in.Inner == sqlscan.KindKill ||
			in.Flags&sqlscan.FlagKillUnsupported != 0 && !isDefinition(q[start:end], s.mode)
		parts = append(parts, part{start, end, kill})
		kills = kills || kill
	})
	if !kills || s.state.MultiStatementsOff && len(parts) > 1 {
		info := s.scan(q)
		// KILL only in bodies being defined; or the server refuses a
		// query of several statements whole when the option is off.
		return s.execute(ctx, p, modeResult, &info, nil)
	}
	defer func() { s.chained = false }()
	for i := 0; i < len(parts); {
		j := i + 1
		if !parts[i].kill {
			for j < len(parts) && !parts[j].kill {
				j++
			}
		}
		s.chained = j < len(parts)
		seg := append([]byte{p[0]}, q[parts[i].start:parts[j-1].end]...)
		in := s.scan(seg[1:])
		errs := s.errs
		var err error
		if parts[i].kill {
			err = endIfKilled(s.killOne(ctx, seg, &in))
		} else {
			err = s.execute(ctx, seg, modeResult, &in, nil)
		}
		if err != nil || s.errs != errs {
			return err // an error ends a multi-statement query
		}
		if s.release {
			return nil
		}
		i = j
	}
	return nil
}

// isDefinition reports a statement that defines a stored program (CREATE
// ... PROCEDURE, FUNCTION, TRIGGER, EVENT or PACKAGE): its body runs later,
// so a KILL in it is the definition's text.
func isDefinition(stmt []byte, m sqlscan.Mode) bool {
	n := 0
	def := false
	sqlscan.Mentions(stmt, m, func(_, name []byte) bool {
		n++
		w := strings.ToLower(string(name))
		if n == 1 {
			return w != "create"
		}
		switch w {
		case "procedure", "function", "trigger", "event", "package":
			def = true
			return true
		case "begin", "select", "table", "view", "as":
			return true
		}
		return n > 12
	})
	return def
}

// kill kills a session's statement or the session itself, with the
// server's rules: a session may kill its own account's sessions, and with
// CONNECTION ADMIN or SUPER anyone's (mayKill).
func (s *Session) kill(ctx context.Context, id uint32, query bool) (quit bool, err error) {
	if id == s.id {
		if query {
			// The KILL itself is the statement it interrupts.
			return false, s.writeErr(errQueryInterrupted)
		}
		return true, s.writeErr(errConnectionKilled)
	}
	if err := s.srv.kill(id, query, func(owner, account string) bool { return s.mayKill(ctx, owner, account) }); err != nil {
		return false, s.writeErr(err)
	}
	return false, s.writeOK()
}

// mayKill reports whether the session may kill a session of tpproxy user
// owner running as server account account. The server lets an account kill
// the connections of its own user name, and any with CONNECTION ADMIN (or
// SUPER): with identity passthrough so does tpproxy, reading the session's
// own privileges (its active role's included) with SHOW GRANTS. With
// identity service every session runs as the one service account, whose
// privileges are nobody's own: a session may kill those of its own tpproxy
// user only (an operator kills any on the admin port).
func (s *Session) mayKill(ctx context.Context, owner, account string) bool {
	switch {
	case owner == s.user:
		return true
	case s.srv.cfg.Identity == IdentityService:
		return false
	case account == s.pool.AccountName(s.state.Account):
		return true
	}
	ok, err := s.killPrivilege(ctx)
	if err != nil {
		s.debug("cannot read the session's privileges", "err", err)
	}
	return ok
}

// killPrivilege reports whether the session's account, with its active
// roles, holds CONNECTION ADMIN (MySQL: CONNECTION_ADMIN), SUPER or ALL
// PRIVILEGES on *.*.
func (s *Session) killPrivilege(ctx context.Context) (bool, error) {
	c, err := s.backendFor(ctx, &s.task, true, false)
	if err != nil {
		return false, err
	}
	defer s.releaseIfUnpinned(c)
	found := false
	err = c.Query(ctx, "SHOW GRANTS", func(row []byte) error {
		f, err := mysqlwire.RowValues(nil, row)
		if err == nil && len(f) == 1 && grantsKill(string(f[0])) {
			found = true
		}
		return err
	})
	return found, err
}

// grantsKill reports whether a SHOW GRANTS line gives a privilege that
// lets its holder kill other accounts' connections.
func grantsKill(line string) bool {
	u := strings.ToUpper(line)
	if !strings.HasPrefix(u, "GRANT ") {
		return false
	}
	privs, rest, ok := strings.Cut(u[len("GRANT "):], " ON ")
	if !ok || !strings.HasPrefix(strings.TrimSpace(rest), "*.*") {
		return false
	}
	for _, p := range strings.Split(privs, ",") {
		switch strings.TrimSpace(p) {
		case "ALL", "ALL PRIVILEGES", "SUPER", "CONNECTION ADMIN", "CONNECTION_ADMIN":
			return true
		}
	}
	return false
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
	if err := srv.kill(id, query, nil); err != nil {
		return fmt.Errorf("%w: %d", ErrNoSuchSession, id)
	}
	return nil
}

// kill kills session id's running statement or the session. may, when
// set, decides whether the asker may kill a session of tpproxy user owner
// running as server account account; nil is an operator (the admin port).
// The error is the server's answer: ERR 1094 for an unknown id, 1095 for a
// session the asker may not kill.
func (srv *Server) kill(id uint32, query bool, may func(owner, account string) bool) *mysqlwire.Error {
	t := srv.session(id)
	if t == nil {
		return &mysqlwire.Error{Code: erNoSuchThread, State: "HY000", Message: fmt.Sprintf("Unknown thread id: %d", id)}
	}
	if may != nil {
		owner, account := t.owner()
		if !may(owner, account) {
			return &mysqlwire.Error{Code: erKillDenied, State: "HY000", Message: fmt.Sprintf("You are not owner of thread %d", id)}
		}
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

// owner is the tpproxy user a session belongs to and the server account it
// runs as, as last published.
func (s *Session) owner() (user, account string) {
	s.mu.Lock()
	user, a := s.pubUser, s.pubAccount
	s.mu.Unlock()
	return user, s.pool.AccountName(a)
}

// killUserRe matches KILL [HARD|SOFT] [CONNECTION|QUERY] USER user.
var killUserRe = regexp.MustCompile(`(?is)^\s*kill\s+(?:(?:hard|soft)\s+)?(connection\s+|query\s+)?user\s+(.+?)[\s;]*$`)

// killUserForm splits KILL ... USER user into its QUERY keyword and the
// user name: 'u'@'h', u@h, `u`, u or CURRENT_USER[()] (empty: the
// session's own).
func killUserForm(q []byte) (query bool, user string, ok bool) {
	m := killUserRe.FindSubmatch(q)
	if m == nil {
		return false, "", false
	}
	spec := strings.TrimSpace(string(m[2]))
	if u := strings.ToUpper(spec); u == "CURRENT_USER" || u == "CURRENT_USER()" {
		spec = ""
	}
	name := spec
	if len(spec) > 0 && (spec[0] == '\'' || spec[0] == '"' || spec[0] == '`') {
		if end := strings.IndexByte(spec[1:], spec[0]); end >= 0 {
			name = spec[1 : 1+end]
		}
	} else if at := strings.IndexByte(spec, '@'); at >= 0 {
		name = spec[:at]
	}
	return len(m[1]) > 0 && (m[1][0] == 'q' || m[1][0] == 'Q'), name, true
}

// killUser serves KILL [QUERY] USER as the server does: every session of
// that server account (with identity service: of that tpproxy user) the
// session may kill is killed, the others are left alone without an error,
// and the OK counts the sessions killed, the session itself included (KILL
// USER ends it after the OK; KILL QUERY USER does not interrupt the KILL).
// Hosts are not told apart: tpproxy's sessions of an account all come
// through it.
func (s *Session) killUser(ctx context.Context, user string, query bool) (quit bool, err error) {
	own := s.pool.AccountName(s.state.Account)
	if s.srv.cfg.Identity == IdentityService {
		own = s.user
	}
	if user == "" {
		user = own
	}
	s.srv.mu.Lock()
	var targets []*Session
	for _, t := range s.srv.sessions {
		targets = append(targets, t)
	}
	s.srv.mu.Unlock()
	var n uint64
	self := false
	privileged := -1 // unknown
	for _, t := range targets {
		owner, account := t.owner()
		match := account == user
		if s.srv.cfg.Identity == IdentityService {
			match = owner == user
		}
		if !match {
			continue
		}
		if t == s {
			self = true
			n++
			continue
		}
		if privileged < 0 {
			privileged = 0
			if s.mayKill(ctx, owner, account) {
				privileged = 1
			}
		}
		if privileged == 0 {
			continue
		}
		if s.srv.kill(t.id, query, nil) == nil {
			n++
		}
	}
	if err := s.writeOKPacket(n, 0, s.status(), 0, nil, nil); err != nil {
		return false, err
	}
	return self && !query, nil
}

// killQueryIDRe matches KILL [HARD|SOFT] QUERY ID n.
var killQueryIDRe = regexp.MustCompile(`(?is)^\s*kill\s+(?:(?:hard|soft)\s+)?query\s+id\s+`)

// killQueryIDForm reports KILL QUERY ID, whose target is a server query id.
func killQueryIDForm(q []byte) bool { return killQueryIDRe.Match(q) }

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
func (s *Session) killExpr(ctx context.Context, expr []byte, query bool) (quit bool, err error) {
	c, err := s.backendFor(ctx, &s.task, true, false)
	if err != nil {
		return false, s.writeErr(err)
	}
	if err := c.PrimeConnectionID(ctx, s.connID); err != nil && !errors.Is(err, pool.ErrPseudoThreadID) {
		s.releaseIfUnpinned(c)
		return false, s.writeErr(err)
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
		return false, s.writeErr(err)
	}
	id, perr := strconv.ParseFloat(strings.TrimSpace(string(v)), 64)
	if null || perr != nil || id < 0 || id > 0xffffffff {
		return false, s.writeErr(&mysqlwire.Error{Code: erNoSuchThread, State: "HY000",
			Message: fmt.Sprintf("Unknown thread id: %d", max(int64(id), 0))})
	}
	return s.kill(ctx, uint32(math.Round(id)), query)
}
