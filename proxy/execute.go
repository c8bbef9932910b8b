package proxy

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/sqlscan"
	"github.com/tpproxy/tpproxy/pool"
)

// errSessionLost ends a session whose pinned backend connection failed:
// its transaction or session state is gone and the client has been told.
var errSessionLost = errors.New("proxy: pinned backend connection lost")

// query serves COM_QUERY.
func (s *Session) query(ctx context.Context, p []byte) error {
	info := sqlscan.Scan(p[1:])
	if info.Local != sqlscan.LocalNone {
		if ok, err := s.answerLocal(&info); ok {
			return err
		}
	}
	switch {
	case info.Kind == sqlscan.KindKill || info.Flags&sqlscan.FlagKillUnsupported != 0:
		return s.killStatement(ctx, &info)
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
	if ok, err := s.admit(ctx); !ok {
		return err
	}
	defer s.srv.sched.Release(&s.task)
	c, err := s.acquire(ctx, info)
	if c == nil {
		return err
	}

	res := result{scoped: info.Flags&(sqlscan.FlagSetStatement|sqlscan.FlagStatementTimeout) != 0}
	s.tracked = s.tracked[:0]
	q := p[1:]
	if run != nil {
		q = run.cs.e.sql
	}
	s.beginExec(c, p[0], q)
	if run != nil {
		err = s.sendStmt(ctx, c, p, run, &res)
	} else {
		c.StartCommand()
		err = c.Writer().WritePacket(p)
		if err == nil {
			err = c.Flush()
		}
		if err == nil {
			err = s.relay(c, mode, &res)
		}
	}
	ended := s.endExec()
	if err != nil {
		return s.backendFailed(c, &res, err)
	}
	if res.err != nil {
		s.errs++
	}
	if res.charsetOnly {
		s.learnCollation(ctx, c)
	}
	if run != nil {
		s.afterStmt(c, run, &res)
	}
	// p is intact: the disconnect watcher never moves buffered bytes.
	s.afterStatement(ctx, c, q, &res, info)
	switch {
	case res.clientErr != nil:
		return res.clientErr
	case ended:
		return errKilled
	}
	return nil
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
func (s *Session) acquire(ctx context.Context, info *sqlscan.Info) (c *pool.Conn, err error) {
	wasPinned := s.pinned != nil
	c, err = s.backend(ctx)
	if err == nil {
		if err = s.prepare(ctx, c, info); err != nil {
			if c == s.pinned && c.Broken() {
				s.loseBackend()
			} else {
				s.releaseIfUnpinned(c)
			}
		}
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
// session's previous statement left behind on its own connection.
func (s *Session) prepare(ctx context.Context, c *pool.Conn, info *sqlscan.Info) error {
	if info.Flags&sqlscan.FlagLastInsertIDRead != 0 && s.pinned == nil {
		// LAST_INSERT_ID() must return the session's value, not that of
		// whoever used this connection last.
		if _, err := c.Exec(ctx, "DO LAST_INSERT_ID("+strconv.FormatUint(s.lastInsertID, 10)+")"); err != nil {
			return err
		}
	}
	if info.Flags&sqlscan.FlagDiagnostics != 0 {
		if o := c.DiagOwner(); o != 0 && o != s.state.Owner {
			// Another session's warnings are on this connection.
			if _, err := c.Exec(ctx, clearDiagnosticsSQL); err != nil {
				return err
			}
			c.SetDiagOwner(0)
		}
	}
	return nil
}

// backendFailed handles a backend connection that broke mid-statement.
// The client gets an error if it can still make sense of one; a session
// that had state on the connection ends.
func (s *Session) backendFailed(c *pool.Conn, res *result, err error) error {
	s.errs++
	c.MarkBroken()
	lost := s.pinned != nil
	if lost {
		s.loseBackend()
	} else {
		s.pool.Release(c)
	}
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

// learnCollation asks the connection for collation_connection after a
// statement changed the connection character set without reporting the
// collation (SET NAMES x does that), so replays set both.
func (s *Session) learnCollation(ctx context.Context, c *pool.Conn) {
	var coll string
	err := c.Query(ctx, "SELECT @@collation_connection", func(row []byte) error {
		v, _, err := mysqlwire.LenEncString(row)
		coll = string(v)
		return err
	})
	if err != nil || coll == "" {
		c.MarkDirty()
		s.pins |= pinStateChange
		return
	}
	s.state.SetVar("collation_connection", coll)
	c.State().SetVar("collation_connection", coll)
}

// afterStatement updates the session from a relayed response: pins from
// status flags and statement class, state the server changed without
// saying what, diagnostics, last insert id, row counts.
func (s *Session) afterStatement(ctx context.Context, c *pool.Conn, q []byte, res *result, info *sqlscan.Info) {
	pins := s.pins &^ nextStatementPins
	if res.hasStatus {
		if res.status&mysqlwire.StatusInTrans != 0 {
			pins |= pinTransaction
		} else {
			pins &^= pinTransaction
		}
		if res.status&mysqlwire.StatusAutocommit == 0 {
			pins |= pinAutocommitOff
		} else {
			pins &^= pinAutocommitOff
		}
	}
	if res.err == nil {
		if info.Flags&sqlscan.FlagLockTables != 0 {
			pins |= pinLockTables
		}
		if info.Flags&sqlscan.FlagUnlockTables != 0 && info.Flags&sqlscan.FlagLockTables == 0 {
			pins &^= pinLockTables
		}
	}
	pins |= stickyPinsOf(info.Flags)
	if res.stateChanged && !s.explainStateChange(ctx, c, q, res, info) {
		pins |= pinStateChange
	}
	if res.unreplayable {
		pins |= pinUnreplayableVar
	}
	if info.Flags&sqlscan.FlagCalcFoundRows != 0 {
		pins |= pinFoundRows
	}
	if info.Flags&sqlscan.FlagSetTransaction != 0 {
		pins |= pinNextTransaction
	}
	if s.cursors > 0 {
		pins |= pinCursor
	} else {
		pins &^= pinCursor
	}

	switch {
	case res.err != nil, res.resultSet:
		s.rowCount = -1
	default:
		s.rowCount = int64(res.affected)
	}
	if res.resultSet && res.err == nil {
		s.foundRows = res.rows
	}
	if res.insertID != 0 {
		s.lastInsertID = res.insertID
	}
	s.noteDiagnostics(ctx, c, res, info, pins != 0)
	s.setPinned(c, pins)
}

// explainStateChange decides whether a session state change the server
// flagged is fully known: SET STATEMENT ... FOR and NOWAIT / WAIT n change
// nothing beyond their statement; a SET or USE whose every change was reported is known; a SET
// of variables the server did not report (MariaDB leaves out plugin
// variables such as innodb_lock_wait_timeout) is made known by reading
// them back. Anything else makes the session pin.
func (s *Session) explainStateChange(ctx context.Context, c *pool.Conn, q []byte, res *result, info *sqlscan.Info) bool {
	switch {
	case info.Multi || info.Flags&sqlscan.StatefulMask != 0 || res.err != nil:
		return false
	case res.scoped:
		return true
	case info.Kind == sqlscan.KindUse:
		return res.tracked
	case info.Kind != sqlscan.KindSet:
		return false
	}
	var missing []string
	ok := true
	sqlscan.SetTargets(q, func(name []byte) {
		n := strings.ToLower(string(name))
		if slices.Contains(s.tracked, n) || slices.Contains(missing, n) {
			return
		}
		if !isPlainName(n) || varClass([]byte(n)) != varReplayable {
			ok = false
			return
		}
		missing = append(missing, n)
	})
	if !ok {
		return false
	}
	if len(missing) == 0 {
		return true
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, n := range missing {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("@@SESSION.")
		b.WriteString(n)
	}
	var values []string
	err := c.Query(ctx, b.String(), func(row []byte) error {
		f, err := mysqlwire.RowValues(nil, row)
		for _, v := range f {
			values = append(values, string(v))
		}
		return err
	})
	if err != nil || len(values) != len(missing) {
		return false
	}
	for i, n := range missing {
		s.state.SetVar(n, values[i])
		c.State().SetVar(n, values[i])
	}
	return true
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
