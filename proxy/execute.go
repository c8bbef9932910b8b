package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy/internal/catalog"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// errPacketTooLargeEnd ends a session after the server refused a packet
// over its max_allowed_packet (ER_NET_PACKET_TOO_LARGE), which it answers
// by closing the connection.
var errPacketTooLargeEnd = errors.New("proxy: the server refused a packet over max_allowed_packet and closed the connection")

// errSessionLost ends a session whose pinned backend connection failed:
// its transaction or session state is gone and the client has been told.
var errSessionLost = errors.New("proxy: pinned backend connection lost")

// query serves COM_QUERY.
func (s *Session) query(ctx context.Context, p []byte) error {
	info := s.scan(p[1:])
	if info.Local != sqlscan.LocalNone {
		if ok, err := s.answerLocal(&info); ok {
			return err
		}
	}
	switch {
	case info.Kind == sqlscan.KindKill || info.Flags&sqlscan.FlagKillUnsupported != 0:
		return s.killStatement(ctx, p, &info)
	case info.Flags&sqlscan.FlagLoadLocal != 0 && (!s.srv.cfg.LoadDataLocal || s.caps&capLocalFiles == 0):
		s.errs++
		return s.w.WriteERR(errLoadLocalDisabled)
	}
	return s.execute(ctx, p, modeResult, &info, nil)
}

// execute runs one command on a backend connection and relays the answer:
// admission, a backend in the session's state, forward, relay, and the
// bookkeeping that decides whether the session stays pinned. run is set
// for COM_STMT_EXECUTE, whose statement is info's.
func (s *Session) execute(ctx context.Context, p []byte, mode relayMode, info *sqlscan.Info, run *stmtRun) error {
	q := p[1:]
	if run != nil {
		q = run.cs.e.sql
	}
	if may, sticky := s.mayPin(q, info, run); may && !s.slot.isHeld() {
		if ok, err := s.pinSlot(ctx, sticky); !ok {
			return err
		}
	}
	defer s.settleSlot()
	if ok, err := s.admit(ctx); !ok {
		return err
	}
	defer s.srv.sched.Release(&s.task)
	s.tracked = s.tracked[:0]
	res := result{setsInsertID: info.Flags&sqlscan.FlagLastInsertIDSet != 0 && !info.Multi}
	if run != nil {
		// CURSOR_TYPE_READ_ONLY, _FOR_UPDATE, _SCROLLABLE (not MariaDB's
		// PARAMETER_COUNT_AVAILABLE).
		res.wantCursor = run.ex.Flags&0x07 != 0
	}
	again := run == nil && repeatable(info)
	first := res
	var c *pool.Conn
	var ended bool
	for {
		var err error
		c, err = s.acquire(ctx, q, info, &res, again)
		if c == nil {
			return err
		}
		s.scopeOf(q, info, &res)
		s.beginExec(c, p[0], q, &s.wire.info)
		if run != nil {
			err = s.sendStmt(ctx, c, p, run, &res)
		} else {
			c.StartCommand()
			err = c.Writer().WritePacket(p)
			if err == nil {
				err = c.FlushBehind()
			}
			if err != nil {
				if me := c.RefusalAfterWrite(); me != nil {
					return s.refused(c, me)
				}
			}
			if err == nil {
				rl := relayerOf(s)
				err = rl.relay(c, mode, &res)
			}
		}
		ended = s.endExec(s.nc)
		if res.clientErr != nil {
			c.EndDrain()
		}
		if err == nil {
			// curSince is this goroutine's own write (beginExec).
			s.pool.NoteRoundTrip(s.curSince.Since())
			c.NoteEcho(s.state.Owner)
			break
		}
		if again && !ended && !res.routine && res.sent == 0 && res.clientErr == nil && c != s.pinned && c.DeadOnArrival(err) {
			// The server had closed the connection while it was idle; the
			// statement only reads, so it runs again on another one.
			c.MarkBroken()
			s.pool.Release(c)
			res = first
			continue
		}
		return s.backendFailed(c, &res, err)
	}
	if res.err != nil {
		s.errs++
		if res.err.Code == mysqlwire.ErNetPacketTooLarge {
			// The server closes its connection after this error: so
			// does tpproxy with the client's, as a direct one would be.
			s.dropBroken(c)
			return errPacketTooLargeEnd
		}
	}
	if res.charsetOnly {
		s.learnCollation(ctx, c, &res)
	}
	if run != nil {
		s.afterStmt(c, run, &res)
	}
	// p is intact: the disconnect watcher never moves buffered bytes.
	s.afterStatement(ctx, c, q, &res, info, s.w)
	switch {
	case res.clientErr != nil:
		return res.clientErr
	case ended:
		return errKilled
	case s.release:
		return errReleased
	}
	return nil
}

// fixedInsertID reports whether the INSERT or REPLACE q gives its table's
// AUTO_INCREMENT column a non-zero literal in every row, so that the
// session's LAST_INSERT_ID() need not be read from the server after it.
func (s *mirror) fixedInsertID(ctx context.Context, qr catalog.Querier, q []byte) (bool, error) {
	ins, ok := sqlscan.ParseInsert(q, s.mode)
	if !ok {
		return false, nil
	}
	col, err := s.srv.catalog.AutoIncrement(ctx, qr, s.catSchema, string(ins.Schema), string(ins.Table))
	if err != nil || col == "" {
		return false, err
	}
	return ins.Fixes(col), nil
}

// repeatable reports whether a query only reads, so that running it again
// on another connection is harmless: a lone SELECT or SHOW with none of the
// scanner's flags (no variables, locks, sequences, diagnostics, found rows
// or insert ids). Stored functions it calls are judged by the catalog
// (result.routine) before a repeat. So is BEGIN / START TRANSACTION on a
// connection of the pool (never on a pinned one, which may hold a
// transaction it would commit): a transaction begun on a connection the
// server closed is gone with it.
func repeatable(info *sqlscan.Info) bool {
	switch info.Kind {
	case sqlscan.KindSelect, sqlscan.KindShow:
		return !info.Multi && info.Flags&^sqlscan.FlagFrom == 0
	case sqlscan.KindBegin:
		return !info.Multi && info.Flags == 0
	}
	return false
}

// errReleased ends a session whose COMMIT or ROLLBACK released it.
var errReleased = errors.New("proxy: session released by COMMIT/ROLLBACK RELEASE")

// scopeOf records which variables a statement changes for its own
// duration only, so that what the server reports for them in its OK is not
// taken for lasting: the assignments of SET STATEMENT ... FOR, and the lock
// wait timeouts MariaDB sets for NOWAIT and WAIT n. The server restores
// them after the statement and reports the restored values with a later
// OK; the connection is asked for that report before another session gets
// it (pool.Conn.NotePendingReports).
func (s *mirror) scopeOf(q []byte, info *sqlscan.Info, res *result) {
	if info.Flags&sqlscan.FlagSetStatement != 0 {
		sqlscan.StatementVars(q, s.mode, func(name []byte) {
			res.scopedVars = append(res.scopedVars, strings.ToLower(string(name)))
		})
	}
	if info.Flags&sqlscan.FlagStatementTimeout != 0 && info.Kind != sqlscan.KindSet && !info.Multi {
		res.lockScoped = true
	}
}

// admit waits for the scheduler to let the session's next statement run;
// ok means it may, and Release must follow. Otherwise the client has been
// told why (queue timeout) and err is only a failure to tell it.
func (s *Session) admit(ctx context.Context) (ok bool, err error) {
	if s.extra != nil {
		return true, nil // the extra port is the way in when the pool is blocked
	}
	s.task.Pinned = s.pinned != nil
	aerr := s.srv.sched.Admit(ctx, &s.task)
	if aerr == nil {
		s.noteQueueWait()
		return true, nil
	}
	return false, s.writeErr(aerr)
}

// acquire returns the backend connection for the session's next statement,
// ready for it. When there is none, the client has been told why and c is
// nil; err is then non-nil only if the session must end.
//
// again says the statement is safe to run twice (repeatable): a connection
// the pool handed out unchecked is then used without a look at its socket,
// and one found closed by the server on first use is replaced.
func (s *Session) acquire(ctx context.Context, q []byte, info *sqlscan.Info, res *result, again bool) (c *pool.Conn, err error) {
	wasPinned := s.pinned != nil
	for {
		c, err = s.backendFor(ctx, &s.task, true, again)
		if err == nil {
			if err = s.prepare(ctx, c, q, info, res); err != nil {
				if c == s.pinned && c.Broken() {
					s.loseBackend()
				} else {
					dead := c != s.pinned && c.DeadOnArrival(err)
					s.releaseIfUnpinned(c)
					if dead {
						continue // what prepare sends is tpproxy's own
					}
				}
			}
		}
		break
	}
	if err == nil {
		return c, nil
	}
	if werr := s.writeErr(err); werr != nil {
		return nil, werr
	}
	if wasPinned && s.pinned == nil {
		return nil, errSessionLost
	}
	return nil, nil
}

// prepare gets a connection ready for statements that read what the
// session's previous statements left on their own connection, or whose
// effect the server reports only when asked beforehand.
func (s *mirror) prepare(ctx context.Context, c *pool.Conn, q []byte, info *sqlscan.Info, res *result) error {
	if res != nil {
		// Stored functions, triggers, views and column defaults run code
		// the statement's text does not show (catalogCheck).
		v := s.catalogCheck(ctx, q, info, res)
		if v.Stateful {
			res.routine, res.routineFlags = true, v.Flags
			if v.Flags&sqlscan.FlagSetTransaction != 0 && !c.TracksTransactions() {
				if _, err := c.TrackTransactions(ctx); err != nil {
					return err
				}
			}
		}
	}
	if s.readsInsertID(info) {
		// LAST_INSERT_ID() must return the session's value, not that of
		// whoever used this connection last.
		if err := c.PrimeLastInsertID(ctx, s.lastInsertID, s.rowCount == -1); err != nil {
			return err
		}
	}
	if s.readsEcho(info) {
		// The ROW_COUNT() of the session's previous statement, which a
		// procedure's first statement may read.
		if err := c.PrimeEcho(ctx, s.state.Owner, s.rowCount); err != nil {
			return err
		}
	}
	if info.Flags&sqlscan.FlagConnectionID != 0 {
		// CONNECTION_ID() reads pseudo_thread_id; where the backend
		// account may not set it, it reads the backend thread id (a
		// documented limit).
		if err := c.PrimeConnectionID(ctx, s.connID); err != nil && !errors.Is(err, pool.ErrPseudoThreadID) {
			return err
		}
	}
	if info.Flags&sqlscan.FlagSetTransaction != 0 && !c.TracksTransactions() {
		if _, err := c.TrackTransactions(ctx); err != nil {
			return err
		}
	}
	if info.Flags&sqlscan.FlagFoundRows != 0 && s.pins&pinFoundRows == 0 && !(s.found.onConn && c == s.pinned) {
		// FOUND_ROWS() in a form tpproxy does not answer itself reads
		// this connection's count: make it the session's. A failure
		// leaves the connection's own (a documented limit).
		if err := c.Query(ctx, primeFoundRowsSQL(s.found.n, s.mode.MariaDB), func([]byte) error { return nil }); err != nil {
			var me *mysqlwire.Error
			if !errors.As(err, &me) {
				return err
			}
			s.debug("cannot prime FOUND_ROWS()", "err", err)
		}
	}
	if info.Flags&sqlscan.FlagDiagnostics != 0 {
		if !s.ownsDiagnostics() {
			if err := s.diag.replay(ctx, c, s.state.Owner); err != nil {
				return err
			}
		}
	}
	return nil
}

// refused answers a command the server refused before it read all of it
// (ER_NET_PACKET_TOO_LARGE), closing its connection: the client gets the
// server's error, and the session ends as a direct one would (or because
// its pinned connection is gone).
func (s *Session) refused(c *pool.Conn, me *mysqlwire.Error) error {
	s.errs++
	s.endExec(s.nc)
	lost := s.dropBroken(c)
	if err := s.w.WriteERR(me); err != nil {
		return err
	}
	switch {
	case me.Code == mysqlwire.ErNetPacketTooLarge:
		return errPacketTooLargeEnd
	case lost:
		return errSessionLost
	}
	return nil
}

// dropBroken marks c broken and lets it go: a pinned connection is lost
// with what it held (loseBackend, lost true), another goes back to the
// pool to be replaced.
func (s *mirror) dropBroken(c *pool.Conn) (lost bool) {
	c.MarkBroken()
	if c == s.pinned {
		s.loseBackend()
		return true
	}
	s.pool.Release(c)
	return false
}

// readsEcho reports a statement that may read the ROW_COUNT() the session's
// previous statement left on its connection (pool.Conn.PrimeEcho): one in a
// form tpproxy does not answer, a stored procedure's first statement, an SQL
// EXECUTE or a multi-statement query.
func (s *mirror) readsEcho(info *sqlscan.Info) bool {
	if info.Multi && !s.state.MultiStatementsOff || info.Flags&sqlscan.FlagRowCount != 0 {
		return true
	}
	k := info.Kind
	if info.Flags&sqlscan.FlagSetStatement != 0 {
		k = info.Inner
	}
	return k == sqlscan.KindCall || k == sqlscan.KindExecute
}

// poolLookup runs the catalog's reads on the pool's lookup connection.
type poolLookup struct{ p *pool.Pool }

func (pl poolLookup) Query(ctx context.Context, sql string, onRow func(row []byte) error) error {
	return pl.p.QueryLookup(ctx, sql, onRow)
}

// catalogCheck asks the catalog what the objects a statement names may do
// to the session, and whether an INSERT's every row gives the
// AUTO_INCREMENT column a literal (res.fixedID).
//
// The catalog reads information_schema on the pool's lookup connection,
// never on the session's: that read opens tables, which would empty the
// session's diagnostics area, run under the session's settings
// (sql_select_limit, max_join_size: its error would replace the
// statement's answer) and wait for locks the session itself holds. What
// information_schema shows depends on the account, so the catalog is the
// pool account's for every session. When it cannot answer (a lock held
// longer than the lookup waits, the lookup connection's limit, a server
// error) the answer is the safe one: the statement may leave state, the
// session keeps its connection; never an error for the statement.
//
// Under LOCK TABLES the session is pinned whatever the answer, and tables
// it locked may be what a lookup waits for: the statement is checked after
// UNLOCK TABLES instead (lockedChecks).
func (s *mirror) catalogCheck(ctx context.Context, q []byte, info *sqlscan.Info, res *result) catalog.Verdict {
	if s.pinned != nil && s.pins&pinLockTables != 0 {
		if s.locked == nil {
			s.locked = &lockedChecks{}
		}
		s.locked.add(q, s.mode, s.state.Schema, info)
		return catalog.Verdict{}
	}
	if s.catSchema.Name() != s.state.Schema {
		s.catSchema = s.srv.catalog.Schema(s.state.Schema)
	}
	qr := poolLookup{s.pool}
	v, err := s.srv.catalog.CheckIn(ctx, qr, s.catSchema, q, s.mode, info)
	if err != nil {
		s.debug("catalog lookup failed; the statement counts as stateful", "err", err)
		s.srv.stats.catalogFailures.Add(1)
		return catalog.Verdict{Stateful: true, Object: "(catalog unavailable)"}
	}
	if insertIDEffectOf(info) == liidInsert {
		fixed, err := s.fixedInsertID(ctx, qr, q)
		if err != nil {
			s.debug("catalog lookup failed; LAST_INSERT_ID() is read after the INSERT", "err", err)
		}
		res.fixedID = fixed && err == nil
	}
	return v
}

// backendFailed handles a backend connection that broke mid-statement.
// The client gets an error if it can still make sense of one; a session
// that had state on the connection ends.
func (s *Session) backendFailed(c *pool.Conn, res *result, err error) error {
	s.errs++
	lost := s.dropBroken(c) // a pinned session runs on its pinned connection
	s.logger().Warn("backend connection failed during statement", "thread_id", c.ThreadID(), "err", err)
	if res.sent > 0 || res.clientErr != nil {
		// The client is in the middle of a response: it cannot take an
		// ERR packet now. Closing is the honest answer.
		return err
	}
	if !errors.Is(err, pool.ErrBroken) {
		err = errors.Join(pool.ErrBroken, err)
	}
	if werr := s.writeErr(err); werr != nil {
		return werr
	}
	if lost {
		return errSessionLost
	}
	return nil
}

// learnResultsCollation reads the collation result columns are declared
// in after character_set_results changed: SET NAMES cs COLLATE x gives x,
// which @@character_set_results does not show. An error says why that
// could not be learnt; the connection then holds state tpproxy cannot
// replay.
func (s *mirror) learnResultsCollation(ctx context.Context, c *pool.Conn) error {
	if v, _ := s.state.Var("character_set_results"); v == "" {
		s.state.SetResultsCollation("") // NULL: columns keep their own
		c.State().SetResultsCollation("")
		return nil
	}
	id, err := c.ResultsCollationID(ctx)
	if err != nil {
		c.MarkDirty()
		return fmt.Errorf("read the results collation: %w", err)
	}
	name, ok := s.srv.chars.nameOf(ctx, s.pool, id)
	if !ok {
		c.MarkDirty()
		return fmt.Errorf("unknown results collation %d", id)
	}
	s.state.SetResultsCollation(name)
	c.State().SetResultsCollation(name)
	return nil
}

// learnCollation asks the connection for collation_connection after a
// statement changed the connection character set without reporting the
// collation (SET NAMES x does that), so replays set both.
func (s *mirror) learnCollation(ctx context.Context, c *pool.Conn, res *result) {
	var coll string
	err := c.Query(ctx, "SELECT @@collation_connection LIMIT 1", func(row []byte) error {
		v, _, err := mysqlwire.LenEncString(row)
		coll = string(v)
		return err
	})
	if err != nil || coll == "" {
		c.MarkDirty()
		res.collationUnknown = true
		return
	}
	s.state.SetVar("collation_connection", coll)
	c.State().SetVar("collation_connection", coll)
}

// afterStatement updates the session from a relayed response: pins from
// status flags, statement class and settings, state the server changed
// without saying what, transaction characteristics, XA, diagnostics, last
// insert id, row counts; then keeps the connection or gives it back. w is
// the client's writer, flushed before a question the answer need not wait
// for.
func (s *mirror) afterStatement(ctx context.Context, c *pool.Conn, q []byte, res *result, info *sqlscan.Info, w *mysqlwire.Writer) {
	ev := pinEvent{
		hasStatus:     res.hasStatus,
		status:        res.status,
		failed:        res.err != nil,
		autocommitOff: !res.hasStatus && res.err != nil && s.autocommitOff(),
		flags:         info.Flags,
		routine:       res.routine,
		routineFlags:  res.routineFlags,
		unknownChange: res.collationUnknown,
		unreplayable:  res.unreplayable,
	}
	if s.locked != nil && res.err == nil && info.Flags&sqlscan.FlagUnlockTables != 0 && info.Flags&sqlscan.FlagLockTables == 0 {
		// UNLOCK TABLES: what the statements under the lock ran is judged
		// now (catalogCheck).
		v := s.locked.judge(ctx, s.srv.catalog, poolLookup{s.pool})
		s.locked = nil
		if v.Stateful {
			ev.routine, ev.routineFlags = true, ev.routineFlags|v.Flags
			s.debug("statements run under LOCK TABLES used a stateful object", "object", v.Object)
		}
	}
	if (info.Flags|res.routineFlags)&sqlscan.FlagRole != 0 && (info.Multi || res.routine) {
		c.MarkRoleChanged()
	}
	s.noteDDL(q, info)
	s.xa = s.xa.after(info, res)
	ev.xa = s.xa != xaNone
	// A SET's effect is learnt from the statement, whatever the server
	// reported (learnSet); other state changes from the server's reports.
	known := true
	if info.Kind == sqlscan.KindSet || info.Multi {
		known = s.learnSet(ctx, c, q, res, info)
	}
	if res.stateChanged && (info.Kind != sqlscan.KindSet || info.Multi) && !s.explainStateChange(ctx, c, q, res, info) {
		known = false
	}
	if !s.checkStatus(ctx, c, res) {
		known = false
	}
	if !known {
		// Whatever changed may have been the active role (SET ROLE in a
		// prepared statement): the reset must restore it.
		ev.unknownChange = true
		c.MarkRoleChanged()
		s.debug("session pinned for a state change tpproxy could not name",
			"kind", info.Kind.String(), "first_word", string(sqlscan.FirstKeyword(q)), "eof", res.eofChange, "ok", res.okChange)
	}
	if res.err == nil && (info.Kind == sqlscan.KindSet || info.Multi) && changesGlobals(q) {
		// Before the OK leaves: a session the client opens next must
		// start from the new globals. The session itself keeps its values.
		s.followGlobals(ctx)
		if _, err := s.pool.RefreshGlobals(ctx); err != nil {
			s.debug("cannot read the backend's globals", "err", err)
		}
		s.followGlobals(ctx)
	}
	if slices.Contains(s.tracked, "character_set_results") {
		if err := s.learnResultsCollation(ctx, c); err != nil {
			ev.unknownChange = true
			s.debug("session pinned: the collation of character_set_results could not be learnt", "err", err)
		}
	}
	s.refreshDerived()
	ev.settings = s.statePins
	if res.lockScoped || res.scopedVars != nil {
		c.NotePendingReports()
	}
	ev.cursors = s.stmts.cursors > 0
	// Pending characteristics the server may have used up unreported are
	// asked for only when nothing else keeps the connection.
	ev.chistics = s.noteChistics(ctx, c, res, func() bool {
		return s.pins.next(&ev)&^(pinNextTransaction|pinFoundRows) == 0
	})

	switch {
	case res.err != nil, res.resultSet:
		s.rowCount = -1
	default:
		s.rowCount = int64(res.affected)
	}
	if res.err == nil {
		// SQL_CALC_FOUND_ROWS's count recorded: nothing to pin for.
		kept, err := s.found.note(ctx, c, q, res, info, s.pins.next(&ev)&^pinFoundRows != 0)
		if err != nil {
			s.debug("cannot read FOUND_ROWS()", "err", err)
		}
		ev.foundRowsKept = kept
	}
	pins := s.pins.next(&ev)
	if pins == 0 && s.found.onConn {
		// The count lives on the connection the session now leaves.
		if s.found.exact {
			s.found.onConn = false
		} else {
			if err := s.found.read(ctx, c, res.rows); err != nil {
				s.debug("cannot read FOUND_ROWS()", "err", err)
			}
		}
	}
	if res.err == nil && s.releases(info, q) {
		// The server closes the connection after its OK.
		s.release = true
		c.Retire()
		s.noteDiagnostics(ctx, c, res, info, true)
		s.setPinned(c, 0)
		return
	}
	s.noteDiagnostics(ctx, c, res, info, pins != 0)
	if s.insertIDUnknown(res, info) {
		_ = w.Flush() // the client has its answer before the server is asked
		if err := s.readInsertID(ctx, c, res, info); err != nil {
			s.debug("could not read LAST_INSERT_ID()", "err", err)
		}
	}
	s.setPinned(c, pins)
}

// explainStateChange decides whether a session state change the server
// flagged after a statement other than a lone SET (which learnSet reads)
// is fully known: a USE whose change was reported is known. A result set
// flagged after NOWAIT only announces the restore of the statement's own
// timeouts, one flagged on a connection that reports transaction
// characteristics may announce those. Anything else makes the session pin.
func (s *mirror) explainStateChange(ctx context.Context, c *pool.Conn, q []byte, res *result, info *sqlscan.Info) bool {
	plain := !info.Multi && info.Flags&sqlscan.StatefulMask == 0 && res.err == nil && !res.routine
	switch {
	case !plain:
		return false
	case info.Kind == sqlscan.KindUse:
		return res.tracked
	case res.eofChange && !res.okChange && (res.lockScoped || res.scopedVars != nil):
		c.NotePendingReports()
		return true
	case res.eofChange && !res.okChange && c.TracksTransactions():
		s.chisticsUnsure = true
		return true
	}
	return false
}

// isPlainName reports a variable name safe to splice into SQL.
func isPlainName(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
