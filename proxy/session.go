package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/scheduler"
)

// Session is one client connection. Its goroutine owns everything except
// the fields under mu, which KILL and the disconnect watcher also touch.
type Session struct {
	// mirror is the server state the session's own connection would hold,
	// and the server and pool it comes from (srv, pool).
	mirror
	// extra marks a session of the extra port: it bypasses admission.
	extra *extraPort
	// clientConn is the protocol connection with the client.
	clientConn
	log *slog.Logger

	// task is the session's handle in the scheduler.
	task scheduler.Task

	// pinsNow mirrors the pin reasons while the session holds a backend
	// (0 otherwise) for Stats, Metrics and Shutdown; the session goroutine
	// updates it after each command, before the answer is flushed.
	pinsNow atomic.Uint32
	errs    uint32 // see cmdIndex; here, where it fills what pinsNow leaves of a word
	// waiter is the session's wait for its client's next command, and
	// its parking.
	waiter
	// ctx is the server's context the session serves under.
	ctx context.Context
	// cmdIndex is the command being served (commandIndex) and errs (above)
	// counts the error answers written, so that the loop can tell the
	// command's outcome.
	cmdIndex int32
	// resumed: the goroutine is new (Server.resume), the wait for a
	// command goes on.
	resumed bool

	// inflight is what KILL, the processlist and the disconnect watcher
	// share with the session goroutine.
	inflight
}

func newSession(srv *Server, nc net.Conn, extra *extraPort) *Session {
	s := &Session{mirror: mirror{srv: srv, pool: srv.pool, rowCount: -1}, extra: extra, clientConn: clientConn{nc: nc, remote: nc.RemoteAddr().String()}}
	if extra != nil {
		s.pool = extra.pool
	}
	s.id = srv.nextID()
	s.connID = s.id
	s.task.ConnID = s.id
	s.takeWire(srv.bufs, srv.budget)
	// Before the client has logged in, it may send the little a login
	// takes; the server's max_allowed_packet comes after.
	s.r.MaxPacket = min(preAuthMaxPacket, int(srv.maxPacketOf(s.pool)))
	return s
}

// preAuthMaxPacket is the largest packet a client may send before it has
// logged in: a handshake response (user, scramble, schema, plugin,
// connection attributes) and the exchanges of the authentication plugins
// fit in a few KiB. A session that has not logged in holds at most this
// much buffer, whatever a packet header claims.
const preAuthMaxPacket = 64 << 10

// logger returns the session's logger, built on first use because most
// sessions never log.
func (s *Session) logger() *slog.Logger {
	if s.log == nil {
		s.log = s.srv.log.With("conn_id", s.id, "user", logName(s.user), "remote", s.remote)
	}
	return s.log
}

// debug logs at debug level, building the session's logger only when
// that level is on: idle sessions keep no logger of their own.
func (s *Session) debug(msg string, args ...any) {
	if s.srv.log.Enabled(context.Background(), slog.LevelDebug) {
		s.logger().Debug(msg, args...)
	}
}

// run logs the client in and serves the session (serve). It reports
// whether the session parked instead of ending (see parkAfter).
func (s *Session) run(ctx context.Context) (parked bool) {
	err := s.handshake(ctx)
	switch {
	case err == nil:
		s.r.MaxPacket = int(s.srv.maxPacketOf(s.pool))
	case errors.Is(err, mysqlwire.ErrPacketTooLarge):
		// The server's answer to a packet over its limit.
		s.w.SetSeq(s.r.Seq() + 1)
		_ = s.writeErr(errPacketTooLarge)
	}
	// Idle sessions hold no large buffers: give back what the handshake
	// used, after sending what it owes (an error, say).
	_ = s.w.Flush()
	s.w.Release()
	s.r.Shrink()
	if err != nil {
		if !errors.Is(err, errAuth) {
			s.srv.metrics.rejected[RejectHandshakeFailed].Add(1)
			s.debug("handshake failed", "err", err)
		}
		s.teardown()
		return false
	}
	s.ctx = ctx
	s.debug("session started")
	s.publish(s.user, &s.mirror)
	if s.canPark() {
		// The handshake's stack is the deepest the session ever needs.
		s.armIdleTimeout()
		s.idle.Store(true)
		s.waitSince.Store(time.Now().UnixNano())
		s.park(&s.clientConn, &s.task)
		return true
	}
	return s.serve()
}

// quiet reports whether the client has sent nothing the session has not
// read (false when the socket cannot be asked).
func (s *clientConn) quiet() bool {
	rc := s.rawConn()
	return rc != nil && quietSocket(rc)
}

// serve serves commands until the client quits or fails, or until the
// session parks (parked).
func (s *Session) serve() (parked bool) {
	ctx := s.ctx
	defer func() {
		if !parked {
			s.teardown()
		}
	}()
	for {
		s.refreshDerived()
		if s.waitTimeoutNew {
			s.waitTimeoutNew = false
			s.idleTimeout, s.deadlineSet = s.waitTimeout, 0
		}
		if s.resumed {
			// Back from parking, still waiting for the same command: the
			// wait_timeout deadline stays.
			s.resumed = false
			if s.srv.retiring.Load() && s.r.Buffered() == 0 && !s.holdsWork() && s.quiet() {
				// Retire woke it: an idle session of a process a new
				// tpproxy took over ends (its client reconnects there).
				s.debug("session closed: a new tpproxy took over")
				return false
			}
		} else {
			s.armIdleTimeout()
		}
		s.idle.Store(true)
		s.waitSince.Store(time.Now().UnixNano())
		s.wait.Store(waitIdle)
		if s.srv.draining.Load() && !s.holdsWork() {
			s.debug("session closed: tpproxy is shutting down")
			return false
		}
		s.r.SetSeq(0)
		p, err := s.r.ReadPacket()
		if s.wait.Swap(waitBusy) == waitParkAt {
			// The reaper asked the session to park.
			parkWoken(&s.clientConn, &s.mu)
			if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
				if s.canPark() && s.srv.retiring.Load() && !s.holdsWork() && s.quiet() {
					s.debug("session closed: idle after a new tpproxy took over")
					return false
				}
				if s.canPark() {
					s.park(&s.clientConn, &s.task)
					return true
				}
				// Part of a packet came: read the rest (its sequence
				// ids go on).
				p, err = s.r.ReadPacket()
			}
		}
		if err != nil && s.srv.draining.Load() && errors.Is(err, os.ErrDeadlineExceeded) && s.holdsWork() {
			// Shutdown woke the session as it became busy: it has a
			// transaction to finish, so it may go on.
			_ = s.nc.SetReadDeadline(time.Time{})
			continue
		}
		if err != nil && s.srv.draining.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
			s.debug("session closed: tpproxy is shutting down")
			return false
		}
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && s.idleTimeout > 0 {
			if !s.mode.MariaDB && s.mode.Version >= 80024 {
				s.writeInactivity()
			}
			s.logEnd(errIdleTimeout)
			return false
		}
		if err != nil {
			switch {
			case errors.Is(err, mysqlwire.ErrPacketTooLarge):
				// The answer follows the header that made the packet too
				// large, whichever of a multi-packet payload's it was.
				s.w.SetSeq(s.r.Seq() + 1)
				_ = s.writeErr(errPacketTooLarge)
				_ = s.w.Flush()
			case errors.Is(err, mysqlwire.ErrSequence):
				s.w.SetSeq(1)
				_ = s.writeErr(errPacketsOutOfOrder)
				_ = s.w.Flush()
			case errors.Is(err, mysqlwire.ErrBudget):
				// Other sessions' packets hold all of max_buffer_memory
				// and gave none of it back in time.
				s.w.SetSeq(s.r.Seq() + 1)
				_ = s.writeErr(errOutOfMemory)
				_ = s.w.Flush()
			}
			s.logEnd(err)
			return false
		}
		s.idle.Store(false)
		start := time.Now()
		s.w.SetSeq(s.r.Seq())
		s.cmdIndex = int32(commandIndex(p))
		errs := s.errs
		quit, err := s.dispatch(ctx, p)
		if pins := s.pinsHeld(); pins != s.pinsNow.Load() {
			s.pinsNow.Store(pins)
		}
		if ferr := s.w.Flush(); err == nil {
			err = ferr
		}
		s.w.Release()
		s.r.Shrink()
		s.srv.countCommand(int(s.cmdIndex), s.errs != errs, start)
		if s.pubPins != s.pins || s.pubPinned != (s.pinned != nil) || s.pubSchema != s.state.Schema || s.pubUser != s.user {
			s.publish(s.user, &s.mirror)
		}
		if quit || err != nil {
			s.logEnd(err)
			return false
		}
	}
}

// countCommand counts a command just served (i: its commandIndex) by
// outcome and observes its duration, except for commands that get no
// answer.
func (srv *Server) countCommand(i int, failed bool, start time.Time) {
	bad := 0
	if failed {
		bad = 1
		srv.stats.errors.Add(1)
	}
	srv.metrics.commands[i][bad].Add(1)
	switch i {
	case comQuit, comStmtClose, comStmtSendLongData:
	default:
		srv.metrics.duration.Observe(time.Since(start))
	}
}

// pinsHeld is the session's pin reasons while it holds a backend.
func (s *mirror) pinsHeld() uint32 {
	if s.pinned == nil {
		return 0
	}
	return uint32(s.pins)
}

// drainPins are the pins that Shutdown waits for: work the client would
// lose if the session were closed now.
const drainPins = pinTransaction | pinLockTables | pinXA | pinCursor

// holdsWork reports whether the session has a transaction (or locks, or an
// open cursor) that a graceful shutdown lets it finish.
func (s *mirror) holdsWork() bool { return s.pinned != nil && s.pins&drainPins != 0 }

// logEnd records why a session ended: client hang-ups at debug level.
func (s *Session) logEnd(err error) {
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, errKilled),
		errors.Is(err, errIdleTimeout), errors.Is(err, errReleased), errors.Is(err, errPacketTooLargeEnd):
		s.debug("session ended", "err", err)
	default:
		s.logger().Info("session ended", "err", err)
	}
}

// teardown returns the session's backend connection (reset first when it
// holds the session's state) and closes the client connection.
func (s *Session) teardown() {
	s.dropStmts()
	if s.pinned != nil {
		s.releasePinned()
	}
	s.pinsNow.Store(0)
	_ = s.nc.Close()
	s.w.Release()
	s.r.Drop()
}

// releasePinned gives back the pinned connection of a session that ends
// (or resets) with whatever state it holds: the pool resets it, or closes
// it when a reset would not clear that state — a prepared XA branch (kept
// for recovery only when its connection disconnects) or the statement
// history of profiling, which COM_RESET_CONNECTION keeps.
func (s *mirror) releasePinned() {
	c := s.pinned
	s.pinned = nil
	c.MarkDirty() // whatever pinned it must not reach the next user
	if s.xa != xaNone || s.pins&pinProfiling != 0 {
		c.Retire()
	}
	s.pool.Release(c)
	s.settleSlot()
}

// closeConn closes the client connection from another goroutine; the
// session goroutine notices and tears down.
func (s *Session) closeConn() {
	_ = s.nc.Close()
	s.srv.unpark(s)
}

// initState sets up the session state after login: schema, character set
// from the login collation, multi-statements and found-rows from the
// client's capabilities (caps, extCaps).
func (s *mirror) initState(db string, caps, extCaps uint32) {
	s.state = pool.State{
		Account:            s.state.Account, // set by authenticate
		Owner:              s.srv.nextOwner.Add(1),
		MultiStatementsOff: caps&capMultiStatements == 0,
		FoundRows:          caps&capFoundRows != 0,
		ExtMetadata:        extCaps&pool.ExtMetadata != 0,
		// The login collation is the results collation too.
		ResultsCollation: s.collation.name,
	}
	s.state.SetCharsetVars(s.collation.charset, s.collation.name)
	// The client named the schema in its login character set.
	s.state.SetSchemaIn(db, s.collation.charset)
	s.globals = s.pool.Globals()
	// CLIENT_IGNORE_SPACE adds IGNORE_SPACE to the session's sql_mode.
	if caps&capIgnoreSpace != 0 {
		mode, ok := s.globals.Value("sql_mode")
		if !ok {
			mode = s.pool.SessionDefaults().SQLMode
		}
		if !slices.ContainsFunc(strings.Split(mode, ","), func(w string) bool { return strings.EqualFold(w, "IGNORE_SPACE") }) {
			if mode == "" {
				mode = "IGNORE_SPACE"
			} else {
				mode = "IGNORE_SPACE," + mode
			}
			s.state.SetVar("sql_mode", mode)
		}
	}
	// The server gives an interactive client interactive_timeout as its
	// wait_timeout.
	if d := s.pool.SessionDefaults(); caps&capInteractive != 0 && d.InteractiveTimeout != d.WaitTimeout && d.InteractiveTimeout > 0 {
		s.state.SetVar("wait_timeout", strconv.FormatInt(d.InteractiveTimeout, 10))
	}
	s.modeSum = 0
}

// checkSchema validates the session's schema on a backend connection
// (waited for as task), as the server does for a login or COM_CHANGE_USER
// naming one.
func (s *mirror) checkSchema(ctx context.Context, task *scheduler.Task) error {
	c, err := s.backendFor(ctx, task, false, false)
	if err != nil {
		return err
	}
	s.releaseIfUnpinned(c)
	return nil
}

// writeErr sends an ERR packet for err. The error becomes the session's
// diagnostics, as the server's own errors do: SHOW ERRORS and
// @@error_count see it.
func (s *Session) writeErr(err error) error {
	s.errs++
	e := sqlError(err)
	s.diag.ownError(e)
	s.rowCount = -1
	return s.w.WriteERR(e)
}

// writeOK sends an OK packet with the session's current status.
func (s *Session) writeOK() error {
	return s.writeOKPacket(0, 0, s.status(), 0, nil, nil)
}

// status is the server status the session is in, for packets the proxy
// writes itself.
func (s *mirror) status() uint16 {
	var st uint16
	if s.pins&pinTransaction != 0 {
		st |= mysqlwire.StatusInTrans
	}
	if !s.autocommitOff() {
		st |= mysqlwire.StatusAutocommit
	}
	if s.chained {
		st |= mysqlwire.StatusMoreResults
	}
	return st
}

// backendFor returns the connection for the session's next statement: its
// pinned one, or one from the pool brought to the session's state, waited
// for as task. lenient lets a session whose default schema was
// dropped go on without one (false: the schema was just asked for, and
// its absence is the answer). repeatable says the caller repeats its
// statement on another connection when this one turns out to have been
// closed by the server (pool.Conn.DeadOnArrival); otherwise a connection
// the pool handed out unchecked is checked first.
func (s *mirror) backendFor(ctx context.Context, task *scheduler.Task, lenient, repeatable bool) (*pool.Conn, error) {
	c := s.pinned
	if c == nil {
		s.followGlobals(ctx)
		for {
			var err error
			if c, err = s.pool.AcquireWaiting(ctx, &s.state, task); err != nil {
				return nil, err
			}
			if repeatable || c.Verify() {
				break
			}
			s.pool.Release(c) // broken: closed and replaced
		}
	}
	err := c.Sync(ctx, &s.state)
	if err != nil && errors.Is(err, pool.ErrNeedsFreshConn) && c == s.pinned && s.state.Schema == "" {
		// The session has no default schema and its connection has one
		// (a re-prepare gave it the schema a statement was prepared in).
		err = c.Sync(ctx, s.keepingSchema(c))
	}
	if err == nil {
		if name, ok := c.SchemaNamed(&s.state); ok {
			// The server's name for the schema the client named.
			s.state.SetSchema(name)
		}
	}
	if err != nil {
		if c != s.pinned {
			dead := c.DeadOnArrival(err)
			if errors.Is(err, pool.ErrNeedsFreshConn) {
				// The pool's fit should have prevented it; a reset
				// makes the connection fit, and the next one is asked.
				c.MarkDirty()
				dead = true
			}
			s.pool.Release(c)
			if dead {
				// What Sync sends is tpproxy's own: safe to send again.
				return s.backendFor(ctx, task, lenient, repeatable)
			}
		} else if c.Broken() {
			s.loseBackend()
		}
		var me *mysqlwire.Error
		if errors.As(err, &me) && me.Code == erBadDB && lenient && s.state.Schema != "" && s.pinned == nil {
			// Someone dropped the session's default schema. Its own
			// server connection would keep the name; no other can be
			// given it, so the session goes on without one (a
			// documented limit) instead of failing every statement.
			s.debug("default schema no longer exists; continuing without one", "schema", s.state.Schema)
			s.state.SetSchema("")
			return s.backendFor(ctx, task, lenient, repeatable)
		}
		return nil, err
	}
	return c, nil
}

// keepingSchema is the session's state with c's default schema, for a
// session without one on a connection with one, which no Sync takes away
// (only a reset does): c keeps it, and the rest is the session's.
func (s *mirror) keepingSchema(c *pool.Conn) *pool.State {
	keep := s.state
	keep.SetSchema(c.State().Schema)
	return &keep
}

// clientCharset is the character set the session's client sends
// statements in.
func (s *mirror) clientCharset() string {
	cs, _ := s.state.Var("character_set_client")
	return cs
}

// releaseIfUnpinned returns c to the pool unless the session keeps it.
func (s *mirror) releaseIfUnpinned(c *pool.Conn) {
	if c != s.pinned {
		s.pool.Release(c)
	}
}

// loseBackend drops a pinned connection that failed. The state it held
// (transaction, locks, variables) is gone, so the client must not go on as
// if it were not: the session ends after reporting the error.
func (s *mirror) loseBackend() {
	if s.pinned == nil {
		return
	}
	s.pinned.MarkBroken()
	s.pool.Release(s.pinned)
	s.pinned = nil
	s.pins = 0
	s.stmts.forgetCursors()
	s.settleSlot()
}

// setPinned records the session's pins after a statement on c, keeping c
// or giving it back.
func (s *mirror) setPinned(c *pool.Conn, pins pinReason) {
	if pins.sticky() {
		c.MarkDirty()
	}
	if added := pins &^ s.pins; added != 0 {
		s.srv.metrics.countPins(added)
	}
	s.pins = pins
	switch {
	case pins != 0 && s.pinned == nil:
		s.pinned = c
		s.srv.stats.pins.Add(1)
	case pins == 0 && s.pinned != nil:
		s.pinned = nil
		s.pool.Release(c)
	case pins == 0:
		s.pool.Release(c)
	}
	s.settleSlot()
}

// unpinForReset gives back a pinned connection after a reset of the
// session (COM_RESET_CONNECTION, COM_CHANGE_USER); the pool resets it.
func (s *mirror) unpinForReset() {
	s.dropStmts()
	if s.pinned != nil {
		s.releasePinned()
	}
	s.pins = 0
	s.locked = nil
	s.xa = xaNone
	s.chistics, s.chisticsUnsure = false, false
	s.connID = s.id
	s.lastInsertID = 0
	s.rowCount = -1
	s.found.n, s.found.onConn = 0, false
	s.diag.reset()
}
