package proxy

import (
	"context"
	"errors"
	"slices"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// Server-side prepared statements (DESIGN.md §5).
//
// A client statement id is the session's own. It refers to a cachedStmt
// shared by every session that prepared the same text in the same user,
// schema and settings; each backend connection prepares that statement
// the first time it has to execute it and keeps its own id for it, so the
// server holds one copy per backend connection, not one per client.
// Parameter types and long data are kept per client statement and sent
// with every execute, because the backend statement serves many clients.
// A cursor is the exception: its backend statement is detached for the
// session, which stays pinned until the cursor is closed.

// maxClientStatements is how many statements one session may hold open,
// the server's default max_prepared_stmt_count.
const maxClientStatements = 16382

// Server error codes of the prepared-statement protocol.
const (
	erWrongArguments       = mysqlwire.ErWrongArguments
	erUnknownStmtHandler   = mysqlwire.ErUnknownStmtHandler
	erNoOpenCursor         = mysqlwire.ErStmtHasNoOpenCursor
	erMaxPreparedStmtCount = mysqlwire.ErMaxPreparedStmtCountReached
	erNeedReprepare        = mysqlwire.ErNeedReprepare
)

// clientStmt is a statement a session prepared.
type clientStmt struct {
	e *cachedStmt
	// types are the parameter types bound by the last execute that sent
	// them; clients send them once.
	types []byte
	// long holds COM_STMT_SEND_LONG_DATA chunks per parameter, longMap
	// marks the parameters that have some, until the next execute.
	long    [][]byte
	longMap []byte
	longLen int
	longErr *mysqlwire.Error // a bad SEND_LONG_DATA, reported by the next execute
	// longBudget is the budget long's memory (longCharged bytes: the
	// chunks' capacity) is charged to, max_buffer_memory.
	longBudget  *mysqlwire.Budget
	longCharged int64
	// cursor is the backend statement holding this statement's open
	// cursor on the session's pinned connection.
	cursor     uint32
	cursorOpen bool
}

func (cs *clientStmt) clearLong() {
	cs.dropLong()
	cs.longErr = nil
}

// dropLong drops the long data, giving its memory back to the budget.
func (cs *clientStmt) dropLong() {
	cs.long, cs.longMap, cs.longLen = nil, nil, 0
	cs.longBudget.Give(cs.longCharged)
	cs.longBudget, cs.longCharged = nil, 0
}

// stmtRun is a COM_STMT_EXECUTE on its way to a backend.
type stmtRun struct {
	cs *clientStmt
	ex mysqlwire.Execute
	// bulk: the command is MariaDB's COM_STMT_BULK_EXECUTE, whose
	// "types follow" mark is bit 128 of its flags.
	bulk bool
}

func stmtErr(code uint16, format string, args ...any) *mysqlwire.Error {
	return mysqlwire.NewError(code, "HY000", format, args...)
}

// stmtPrepare serves COM_STMT_PREPARE: from the cache when the same
// statement is known, else on a backend connection, which keeps it.
func (s *Session) stmtPrepare(ctx context.Context, p []byte) error {
	sql := p[1:]
	if s.stmts.full() {
		s.errs++
		return s.w.WriteERR(mysqlwire.NewError(erMaxPreparedStmtCount, "42000",
			"Can't create more than max_prepared_stmt_count statements (current value: %d)", maxClientStatements))
	}
	info := s.scan(sql)
	if info.Kind == sqlscan.KindKill || info.Flags&sqlscan.FlagKillUnsupported != 0 {
		// The server would take the client's connection id for one of
		// its own threads.
		if ok, err := s.prepareKill(ctx, sql); ok {
			return err
		}
		s.errs++
		return s.w.WriteERR(mysqlwire.NewError(erUnsupportedPS, "HY000",
			"This command is not supported in the prepared statement protocol yet (tpproxy: run KILL as a plain query)"))
	}
	key := stmtKey{user: s.user, schema: s.state.Schema, sum: s.state.Sum()}
	if s.pins&(pinTempTable|pinRoutine) != 0 {
		key.private = s.state.Owner
	}
	// A statement without result columns (DML, BEGIN, COMMIT, SET...) is
	// answered from the cache while a backend accepted it recently and no
	// DDL went through tpproxy since: the server would answer it the same.
	// One with result columns is always prepared by the server, as a table
	// may have changed since (even bypassing the proxy) and clients bind
	// results by the columns PREPARE announces.
	// Preparing a statement that names a user variable creates the
	// variable (NULL) on the server connection: it is the session's from
	// then on, so the session keeps that connection, and such a PREPARE is
	// never answered from the cache.
	userVar := info.Flags&sqlscan.FlagUserVar != 0
	gen := s.srv.ddlGen.Load()
	e := s.srv.stmtCache.lookup(sql, &key)
	if e != nil && e.fresh(gen, s.srv.cfg.CatalogTTL) && !userVar {
		if m := e.meta.Load(); m.columns == 0 {
			return s.writePrepareOK(s.stmts.add(e, &s.srv.stats.clientStmts), e.params, m, 0, s.status())
		}
	}
	cached, handed := e != nil, false
	if cached {
		// lookup's reference goes to the client statement, unless the
		// server refuses.
		defer func() {
			if !handed {
				s.srv.stmtCache.release(e)
			}
		}()
	}

	if userVar {
		if ok, err := s.pinSlot(ctx, true); !ok {
			return err
		}
		defer s.settleSlot()
	}
	if ok, err := s.admit(ctx); !ok {
		return err
	}
	defer s.srv.sched.Release(&s.task)
	c, err := s.acquire(ctx, nil, &sqlscan.Info{}, nil, false)
	if c == nil {
		return err
	}
	if !cached {
		e = &cachedStmt{
			id:  s.srv.stmtCache.nextID.Add(1),
			sql: slices.Clone(sql),
			key: key,
			state: pool.State{Schema: s.state.Schema, SchemaRaw: s.state.SchemaRaw, Vars: slices.Clone(s.state.Vars), Role: s.state.Role, ResultsCollation: s.state.ResultsCollation,
				MultiStatementsOff: s.state.MultiStatementsOff, FoundRows: s.state.FoundRows, ExtMetadata: s.state.ExtMetadata},
		}
		e.state.Sum() // computed before sessions share it
		e.info = s.scan(e.sql)
	}
	ok, defs, err := c.Prepare(ctx, e.id, e.sql, true)
	var me *mysqlwire.Error
	switch {
	case errors.As(err, &me):
		// The server refused the statement: its error, as it sent it.
		res := result{err: me}
		s.noteDiagnostics(ctx, c, &res, &sqlscan.Info{}, s.pinned != nil)
		if userVar {
			c.MarkDirty() // the variable may exist already
		}
		s.releaseIfUnpinned(c)
		s.errs++
		return s.w.WriteERR(me)
	case err != nil:
		return s.backendFailed(c, &result{}, err)
	}
	meta := &stmtMeta{columns: ok.Columns, defs: defs}
	e.verify(gen)
	if cached {
		e.update(ok.Columns, defs)
		handed = true
	} else {
		e.params = ok.Params
		e.meta.Store(meta)
		if got := s.srv.stmtCache.insert(e); got != e {
			// Another session prepared the same statement meanwhile.
			c.ForgetPrepared(e.id)
			e = got
		}
	}
	res := result{warnings: ok.Warnings}
	if e.info.Flags&sqlscan.FlagDiagnostics == 0 || e.info.Multi {
		// Preparing SHOW WARNINGS (or another reader of diagnostics)
		// leaves the previous statement's conditions, as on the server.
		s.noteDiagnostics(ctx, c, &res, &sqlscan.Info{}, s.pinned != nil || userVar)
	}
	if userVar {
		s.setPinned(c, s.pins|pinUserVariable)
	} else {
		s.releaseIfUnpinned(c)
	}
	return s.writePrepareOK(s.stmts.add(e, &s.srv.stats.clientStmts), e.params, meta, ok.Warnings, s.status())
}

// stmtExecute serves COM_STMT_EXECUTE.
func (s *Session) stmtExecute(ctx context.Context, p []byte) error {
	cs, serr := s.stmts.lookup(p, "mysqld_stmt_execute")
	if serr != nil {
		s.errs++
		return s.w.WriteERR(serr)
	}
	if cs.longErr != nil {
		serr = cs.longErr
		cs.clearLong()
		s.errs++
		return s.w.WriteERR(serr)
	}
	ex, err := mysqlwire.ParseExecute(p, int(cs.e.params), cs.types, cs.longMap)
	if err != nil {
		cs.clearLong()
		s.errs++
		return s.w.WriteERR(stmtErr(erWrongArguments, "Incorrect arguments to mysqld_stmt_execute"))
	}
	if ex.NewBound {
		cs.types = append(cs.types[:0], ex.Types...)
	}
	if cs.e.kill != nil {
		err := s.executeKill(ctx, cs, p, ex)
		cs.clearLong()
		return err
	}
	if cs.cursorOpen {
		// Executing again closes the statement's cursor, as on the server.
		s.closeCursor(cs)
	}
	run := stmtRun{cs: cs, ex: ex}
	err = s.execute(ctx, p, modeExecute, &cs.e.info, &run)
	cs.clearLong()
	return err
}

// sendStmt runs a COM_STMT_EXECUTE on c: the statement is prepared there
// first if c does not have it, long data is replayed, and the packet is
// forwarded with c's statement id and the parameter types. When the server
// answers that its statement must be prepared again, that is done once,
// unseen by the client. A server error preparing it is the statement's
// result. An error return means c broke.
func (s *Session) sendStmt(ctx context.Context, c *pool.Conn, p []byte, run *stmtRun, res *result) error {
	e, cs := run.cs.e, run.cs
	for retried := false; ; retried = true {
		id, ok := c.Prepared(e.id)
		if !ok {
			var err error
			if id, err = s.prepareOn(ctx, c, e); err != nil {
				var me *mysqlwire.Error
				if !errors.As(err, &me) {
					return err
				}
				res.err = me
				if werr := s.w.WriteERR(me); werr != nil {
					res.clientErr = werr
				}
				return nil
			}
		}
		c.StartCommand()
		bw := c.Writer()
		if cs.longMap != nil {
			var head [7]byte
			head[0] = comStmtSendLongData
			mysqlwire.PutStmtID(head[:], id)
			for i, d := range cs.long {
				if cs.longMap[i/8]&(1<<(i%8)) == 0 {
					continue
				}
				head[5], head[6] = byte(i), byte(i>>8)
				bw.SetSeq(0)
				if err := bw.WritePacketParts(head[:], d, nil); err != nil {
					c.MarkBroken()
					return errors.Join(pool.ErrBroken, err)
				}
			}
			bw.SetSeq(0)
		}
		mysqlwire.PutStmtID(p, id)
		var err error
		if run.ex.NewBound || e.params == 0 {
			err = bw.WritePacket(p)
		} else {
			// Send the remembered types: this backend statement may never
			// have seen them, or seen another client's.
			at := run.ex.TypesAt
			if run.bulk {
				p[5] |= bulkSendTypes
			} else {
				p[at-1] = 1
			}
			err = bw.WritePacketParts(p[:at], cs.types, p[at:])
		}
		if err != nil {
			c.MarkBroken()
			return errors.Join(pool.ErrBroken, err)
		}
		if err := c.FlushBehind(); err != nil {
			return err
		}
		rl := relayerOf(s)
		if err := rl.relay(c, modeExecute, res); err != nil {
			return err
		}
		if !res.reprepare {
			return nil
		}
		c.ForgetPrepared(e.id)
		s.srv.stats.reprepares.Add(1)
		if retried {
			// Twice in a row: give the client the server's answer.
			res.err = stmtErr(erNeedReprepare, "Prepared statement needs to be re-prepared")
			if werr := s.w.WriteERR(res.err); werr != nil {
				res.clientErr = werr
			}
			return nil
		}
		*res = result{}
	}
}

// prepareOn prepares e on c, in the schema and settings e was prepared in
// when c's differ (a session that changed schema after PREPARE still runs
// the statement it prepared), and returns c's statement id.
func (s *mirror) prepareOn(ctx context.Context, c *pool.Conn, e *cachedStmt) (uint32, error) {
	cur := c.State()
	back := false
	if !cur.Equal(&e.state) {
		want := &e.state
		if s.state.Schema == "" && e.state.Schema != "" && c == s.pinned {
			// A connection given a schema cannot be given none back
			// (only a reset does that): the session's own connection
			// prepares without one.
			noSchema := e.state
			noSchema.SetSchema("")
			want = &noSchema
		}
		switch err := c.Sync(ctx, want); {
		case err == nil:
			back = true
		case errors.Is(err, pool.ErrNeedsFreshConn):
			// No schema then, one now: names are qualified or fail either way.
		default:
			return 0, err
		}
	}
	gen := s.srv.ddlGen.Load()
	ok, defs, err := c.Prepare(ctx, e.id, e.sql, true)
	if back && !c.Broken() {
		restore := &s.state
		if s.state.Schema == "" && c.State().Schema != "" {
			// The session has no schema and c has one now: the rest of
			// the session's state goes back, and the pool fits c to its
			// next user (the session's next statement too) before that
			// runs anything.
			restore = s.keepingSchema(c)
		}
		if serr := c.Sync(ctx, restore); serr != nil {
			// The session's state could not be restored on c: the
			// statement must not run there. Let the pool reset c.
			c.MarkDirty()
			return 0, serr
		}
	}
	if err != nil {
		return 0, err
	}
	if ok.Params != e.params {
		// The text is the same, so this cannot change; if it does the
		// statement is not what the client prepared.
		c.ForgetPrepared(e.id)
		return 0, stmtErr(erNeedReprepare, "Prepared statement needs to be re-prepared")
	}
	e.update(ok.Columns, defs)
	e.verify(gen)
	return ok.StmtID, nil
}

// afterStmt records what an execute left: an open cursor keeps its
// backend statement for the session.
func (s *mirror) afterStmt(c *pool.Conn, run *stmtRun, res *result) {
	if !res.cursor {
		return
	}
	if id, ok := c.DetachPrepared(run.cs.e.id); ok {
		s.stmts.openCursor(run.cs, id)
	}
}

// stmtFetch serves COM_STMT_FETCH on an open cursor.
func (s *Session) stmtFetch(ctx context.Context, p []byte) error {
	cs, serr := s.stmts.lookup(p, "mysqld_stmt_fetch")
	if serr == nil && (!cs.cursorOpen || s.pinned == nil) {
		id, _ := mysqlwire.StmtID(p)
		serr = stmtErr(erNoOpenCursor, "The statement (%d) has no open cursor.", id)
	}
	if serr == nil && len(p) < 9 {
		serr = stmtErr(erWrongArguments, "Incorrect arguments to mysqld_stmt_fetch")
	}
	if serr != nil {
		s.errs++
		return s.w.WriteERR(serr)
	}
	c := s.pinned
	mysqlwire.PutStmtID(p, cs.cursor)
	s.beginExec(c, comStmtFetch, cs.e.sql, &s.wire.info)
	c.StartCommand()
	err := c.Writer().WritePacket(p)
	if err == nil {
		err = c.FlushBehind()
	}
	var res result
	if err == nil {
		rl := relayerOf(s)
		err = rl.relayRows(c, &res, false)
	}
	ended := s.endExec(s.nc)
	if err != nil {
		return s.backendFailed(c, &res, err)
	}
	if res.err != nil {
		s.errs++
	}
	if res.hasStatus && res.status&mysqlwire.StatusLastRowSent != 0 {
		s.closeCursor(cs) // the server closed it after the last row
	}
	switch {
	case res.clientErr != nil:
		return res.clientErr
	case ended:
		return errKilled
	}
	return nil
}

// closeCursor closes a statement's cursor: its backend statement is
// closed, and the session lets its connection go when nothing else pins it.
func (s *mirror) closeCursor(cs *clientStmt) {
	if !s.stmts.closeCursor(cs) || s.pinned == nil {
		return
	}
	s.pinned.ClosePrepared(cs.cursor)
	if s.stmts.cursors == 0 {
		s.setPinned(s.pinned, s.pins&^pinCursor)
	}
}

// stmtReset serves COM_STMT_RESET: long data and any cursor are dropped.
func (s *Session) stmtReset(p []byte) error {
	cs, serr := s.stmts.lookup(p, "mysqld_stmt_reset")
	if serr != nil {
		s.errs++
		return s.w.WriteERR(serr)
	}
	cs.clearLong()
	s.closeCursor(cs)
	return s.writeOK()
}

// stmtClose serves COM_STMT_CLOSE, which has no answer.
func (s *mirror) stmtClose(p []byte) {
	id, ok := mysqlwire.StmtID(p)
	cs := s.stmts.get(id)
	if !ok || cs == nil {
		return
	}
	s.closeCursor(cs)
	s.stmts.remove(id)
	s.srv.stmtCache.release(cs.e)
	s.srv.stats.clientStmts.Add(-1)
}

// dropStmts closes every statement of the session (reset, change user,
// disconnect), as the server does.
func (s *mirror) dropStmts() {
	n := s.stmts.clear(func(cs *clientStmt) {
		if cs.cursorOpen && s.pinned != nil {
			s.pinned.ClosePrepared(cs.cursor)
		}
		s.srv.stmtCache.release(cs.e)
	})
	s.srv.stats.clientStmts.Add(int64(-n))
	s.pins &^= pinCursor
}

// bulkSendTypes is STMT_BULK_FLAG_SEND_TYPES_TO_SERVER: parameter types
// follow the flags of a COM_STMT_BULK_EXECUTE.
const bulkSendTypes = 128

// stmtBulkExecute serves MariaDB's COM_STMT_BULK_EXECUTE (one command
// running a prepared statement for many rows of parameters, atomically) by
// relaying it like COM_STMT_EXECUTE: the client's statement id becomes the
// backend's, and the parameter types the client bound before are sent
// along when it leaves them out, since the backend statement may have seen
// another client's. Payload: command, statement id (4), flags (2), types
// (2 per parameter) when flags has 128, then the rows.
func (s *Session) stmtBulkExecute(ctx context.Context, p []byte) error {
	cs, serr := s.stmts.lookup(p, "mysqld_stmt_bulk_execute")
	if serr == nil && cs.e.kill != nil {
		serr = stmtErr(erUnsupportedPS, "This command is not supported in the prepared statement protocol yet")
	}
	if serr == nil && len(p) < 7 {
		serr = stmtErr(erWrongArguments, "Incorrect arguments to mysqld_stmt_bulk_execute")
	}
	if serr != nil {
		s.errs++
		return s.w.WriteERR(serr)
	}
	id, _ := mysqlwire.StmtID(p)
	ex := mysqlwire.Execute{StmtID: id, TypesAt: 7}
	if p[5]&bulkSendTypes != 0 {
		n := 2 * int(cs.e.params)
		if len(p) < 7+n {
			s.errs++
			return s.w.WriteERR(stmtErr(erWrongArguments, "Incorrect arguments to mysqld_stmt_bulk_execute"))
		}
		ex.NewBound, ex.Types = true, p[7:7+n]
		cs.types = append(cs.types[:0], ex.Types...)
	} else if len(cs.types) != 2*int(cs.e.params) {
		s.errs++
		return s.w.WriteERR(stmtErr(erWrongArguments, "Incorrect arguments to mysqld_stmt_bulk_execute"))
	}
	if cs.cursorOpen {
		s.closeCursor(cs)
	}
	run := stmtRun{cs: cs, ex: ex, bulk: true}
	return s.execute(ctx, p, modeExecute, &cs.e.info, &run)
}
