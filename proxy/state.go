package proxy

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// Session state the server keeps per connection and does not report in
// full. Each rule here exists because an adversarial run found a
// multiplexed session observing something a direct one would not (see
// DESIGN.md §4, "Lessons from adversarial runs").

// xaState is where a session's XA transaction is.
type xaState uint8

const (
	xaNone     xaState = iota
	xaActive           // XA START ... XA END: the branch is open on the connection
	xaPrepared         // XA PREPARE: the branch survives only a disconnect of its connection
	xaUnknown          // XA inside a multi-statement query: assume the worst
)

// after is the session's XA state after a statement (which changes it
// only when it succeeded). A prepared branch is recoverable by other sessions only once
// its connection disconnects; COM_RESET_CONNECTION instead leaves the
// connection broken (ERR 1031 on every InnoDB write, MariaDB 10.11) and the
// branch orphaned, so such a connection is closed, never reset (retire).
func (x xaState) after(info *sqlscan.Info, res *result) xaState {
	if info.Flags&sqlscan.FlagXA == 0 || res.err != nil {
		return x
	}
	if info.Multi {
		return xaUnknown
	}
	switch info.XA {
	case sqlscan.XAStart, sqlscan.XAEnd:
		if x != xaPrepared {
			return xaActive
		}
	case sqlscan.XAPrepare:
		return xaPrepared
	case sqlscan.XACommit, sqlscan.XARollback:
		// Committing another session's recovered branch leaves ours as
		// it is; ours can only be ended by these statements on its own
		// connection, which is where a session in XA runs them.
		if x != xaUnknown {
			return xaNone
		}
	}
	return x
}

// refreshDerived recomputes what follows from the session state when it
// changed: how the server lexes its statements, its idle timeout, and the
// settings that make it pin.
func (s *mirror) refreshDerived() {
	sum := s.state.Sum()
	if sum == s.modeSum && s.mode.Version != 0 {
		return
	}
	s.modeSum = sum
	d := s.pool.SessionDefaults()
	m := sqlscan.Mode{}
	m.Version, m.MariaDB = sqlscan.ParseVersion(s.srv.backendVersion())
	mode, ok := s.state.Var("sql_mode")
	if !ok {
		mode = d.SQLMode
	}
	for _, w := range strings.Split(mode, ",") {
		switch strings.ToUpper(strings.TrimSpace(w)) {
		case "NO_BACKSLASH_ESCAPES":
			m.NoBackslashEscapes = true
		case "ANSI_QUOTES", "ANSI":
			m.AnsiQuotes = true
		}
	}
	if cs, ok := s.state.Var("character_set_client"); ok {
		m.Charset = sqlscan.MBCharsetOf(cs)
	}
	s.mode = m

	timeout := d.WaitTimeout
	if v, ok := s.state.Var("wait_timeout"); ok {
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			timeout = int64(n)
		}
	}
	s.waitTimeout = time.Duration(timeout) * time.Second
	s.waitTimeoutNew = true

	s.statePins = 0
	if v, ok := s.state.Var("profiling"); ok && isOn(v) {
		s.statePins |= pinProfiling
	}
	if v, ok := s.state.Var("optimizer_trace"); ok && strings.Contains(strings.ToLower(v), "enabled=on") {
		s.statePins |= pinProfiling
	}
	if v, ok := s.state.Var("sql_auto_is_null"); ok && isOn(v) {
		s.statePins |= pinAutoIsNull
	}
	v, _ := s.state.Var("completion_type")
	s.completionRelease = strings.EqualFold(v, "RELEASE") || v == "2"
}

func isOn(v string) bool { return strings.EqualFold(v, "ON") || v == "1" }

// scan classifies a query the way the server will lex it. A multi-statement
// query may change sql_mode or the character set halfway, so its flags are
// those of every way it could be lexed.
func (s *mirror) scan(q []byte) sqlscan.Info {
	s.refreshDerived()
	info := sqlscan.ScanMode(q, s.mode)
	if info.Multi {
		for _, alt := range [...]sqlscan.Mode{
			{NoBackslashEscapes: !s.mode.NoBackslashEscapes, AnsiQuotes: s.mode.AnsiQuotes, Charset: s.mode.Charset, Version: s.mode.Version, MariaDB: s.mode.MariaDB},
			{NoBackslashEscapes: s.mode.NoBackslashEscapes, AnsiQuotes: !s.mode.AnsiQuotes, Charset: s.mode.Charset, Version: s.mode.Version, MariaDB: s.mode.MariaDB},
			{NoBackslashEscapes: !s.mode.NoBackslashEscapes, AnsiQuotes: !s.mode.AnsiQuotes, Charset: sqlscan.MBGBK, Version: s.mode.Version, MariaDB: s.mode.MariaDB},
			{Charset: sqlscan.MBSJIS, Version: s.mode.Version, MariaDB: s.mode.MariaDB},
			{Charset: sqlscan.MBBig5, Version: s.mode.Version, MariaDB: s.mode.MariaDB},
		} {
			info.Flags |= sqlscan.ScanMode(q, alt).Flags
		}
	}
	return info
}

// errIdleTimeout ends a session idle for longer than its wait_timeout.
var errIdleTimeout = errTimedOut{}

type errTimedOut struct{}

func (errTimedOut) Error() string { return "proxy: session idle longer than wait_timeout" }

// Insert ids. The session's LAST_INSERT_ID() is the server's value on the
// connection its last statement ran on, which the OK packet does not
// always tell: an INSERT of an explicit value into an AUTO_INCREMENT
// column reports that value but leaves LAST_INSERT_ID() as it was, and so
// does the update branch of ON DUPLICATE KEY UPDATE; LAST_INSERT_ID(expr),
// SET @@last_insert_id and a procedure's inserts report nothing. So after
// an INSERT that reports an id the server is asked: if it now holds the
// reported id, the INSERT generated it; otherwise the session's value did
// not change (what the connection holds is whoever used it before). It is
// not asked after an INSERT that gives the table's AUTO_INCREMENT column
// (which the catalog knows) a non-zero literal in every row, as sysbench's
// do: such an INSERT generates nothing and leaves the value. Any
// other statement that may change it (CALL, LAST_INSERT_ID(expr), a
// multi-statement query, ...) runs on a connection first given the
// session's value, and what the server holds after it is the session's.
// A statement that reads it gets the session's value on whichever
// connection it runs (DO LAST_INSERT_ID(v) first when the connection holds
// another).

// insertIDEffect is how a statement may change LAST_INSERT_ID().
type insertIDEffect uint8

const (
	liidNone   insertIDEffect = iota // it cannot
	liidInsert                       // an INSERT, REPLACE or LOAD: it generates the id its OK reports, or none
	liidAny                          // anything (a procedure, LAST_INSERT_ID(expr), several statements)
)

// insertIDEffectOf classifies a statement.
func insertIDEffectOf(info *sqlscan.Info) insertIDEffect {
	switch {
	case info.Multi || info.Flags&(sqlscan.FlagLastInsertIDArg|sqlscan.FlagLastInsertIDSet) != 0:
		return liidAny
	}
	k := info.Kind
	if info.Flags&sqlscan.FlagSetStatement != 0 {
		k = info.Inner
	}
	switch k {
	case sqlscan.KindInsert, sqlscan.KindReplace, sqlscan.KindLoad:
		return liidInsert
	case sqlscan.KindCall, sqlscan.KindExecute:
		return liidAny
	case sqlscan.KindCreate:
		if info.Flags&sqlscan.FlagFrom != 0 {
			return liidAny // CREATE TABLE ... SELECT fills a table
		}
	}
	return liidNone
}

// insertIDUnknown reports whether the session's LAST_INSERT_ID() after a
// statement must be read from the connection it ran on (readInsertID).
func (s *mirror) insertIDUnknown(res *result, info *sqlscan.Info) bool {
	if res.liidTracked {
		return false // SET LAST_INSERT_ID = n, reported
	}
	effect := insertIDEffectOf(info)
	return !(effect == liidNone || effect == liidInsert && (res.fixedID || res.err == nil && res.insertID == 0))
}

// readInsertID updates the session's LAST_INSERT_ID() after a statement on
// c whose effect on it is unknown (insertIDUnknown).
func (s *mirror) readInsertID(ctx context.Context, c *pool.Conn, res *result, info *sqlscan.Info) error {
	effect := insertIDEffectOf(info)
	before, known := c.LastInsertID()
	v, err := c.ReadLastInsertID(ctx)
	if err != nil {
		c.MarkDirty()
		return err
	}
	switch {
	case effect == liidAny:
		s.lastInsertID = v // the connection started from the session's value
	case res.err == nil && v == res.insertID:
		s.lastInsertID = v // generated
	case res.err != nil && known && v != before:
		s.lastInsertID = v // a multi-row INSERT that failed halfway generated some
	}
	return nil
}

// readsInsertID reports whether a statement reads the session's
// LAST_INSERT_ID() on the server: LAST_INSERT_ID(), @@last_insert_id,
// @@identity, or IS NULL on an AUTO_INCREMENT column with sql_auto_is_null.
// A statement that may set it in a way its OK does not report needs the
// session's value on the connection too, so that "unchanged" stays the
// session's.
func (s *mirror) readsInsertID(info *sqlscan.Info) bool {
	return info.Flags&sqlscan.FlagLastInsertIDRead != 0 || s.statePins&pinAutoIsNull != 0 ||
		insertIDEffectOf(info) == liidAny
}

// Transaction characteristics. SET TRANSACTION without a scope (and, on
// MariaDB and MySQL 8, SET @@tx_isolation and friends) changes the next
// transaction only. The server reports that in no OK packet unless
// session_track_transaction_info is on, and it must be on before the SET,
// so it is turned on for the connection first. The session stays pinned
// while the server reports characteristics pending; when it could have used
// them up silently (a statement ending in a result set or an error), the
// report is asked for again before the session lets the connection go.

// Values of result.chistics.
const (
	chisticsUnreported int8 = iota
	chisticsPending
	chisticsNone
)

// noteChistics updates the pending characteristics after a statement and
// reports whether some are pending. When a statement may have used them up
// unreported, it asks the connection, if unpinned says nothing else keeps
// the session on it.
func (s *mirror) noteChistics(ctx context.Context, c *pool.Conn, res *result, unpinned func() bool) bool {
	switch res.chistics {
	case chisticsPending:
		s.chistics, s.chisticsUnsure = true, false
	case chisticsNone:
		s.chistics, s.chisticsUnsure = false, false
	default:
		if s.chistics && (res.err != nil || res.resultSet) {
			s.chisticsUnsure = true
		}
	}
	if s.chistics && s.chisticsUnsure && c.TracksTransactions() && unpinned() {
		ok, err := c.ReportTransactions(ctx)
		if err == nil {
			switch chisticsIn(ok.SessionState) {
			case chisticsPending:
				s.chistics, s.chisticsUnsure = true, false
			case chisticsNone:
				s.chistics, s.chisticsUnsure = false, false
			}
		}
	}
	return s.chistics
}

// chisticsIn finds the transaction characteristics entry in session state
// data.
func chisticsIn(info []byte) int8 {
	got := chisticsUnreported
	err := mysqlwire.EachStateEntry(info, func(e mysqlwire.StateEntry) bool {
		if e.Type == mysqlwire.TrackTransactionChar {
			got = chisticsOf(e.Data)
		}
		return true
	})
	if err != nil {
		return chisticsUnreported
	}
	return got
}

// chisticsOf reads a transaction characteristics entry: the SQL that would
// recreate them, empty when there are none.
func chisticsOf(data []byte) int8 {
	v, _, err := mysqlwire.LenEncString(data)
	if err != nil || len(v) == 0 {
		return chisticsNone
	}
	return chisticsPending
}

// learnRole records the session's active roles after SET ROLE, as the
// argument of the SET ROLE that restores them elsewhere (in utf8mb4, which
// Sync replays it in).
func (s *mirror) learnRole(ctx context.Context, c *pool.Conn) bool {
	arg, err := c.ReadRole(ctx)
	if err != nil {
		return false
	}
	s.state.SetRole(arg)
	c.State().SetRole(arg)
	return true
}

// releases reports whether a COMMIT or ROLLBACK that succeeded closes the
// session: RELEASE, or completion_type=RELEASE without NO RELEASE.
func (s *mirror) releases(info *sqlscan.Info, q []byte) bool {
	if info.Multi || (info.Kind != sqlscan.KindCommit && info.Kind != sqlscan.KindRollback) {
		return false
	}
	if info.Flags&sqlscan.FlagRelease != 0 {
		return true
	}
	if !s.completionRelease || info.Flags&sqlscan.FlagNoRelease != 0 {
		return false
	}
	return !isRollbackTo(q, s.mode)
}

// isRollbackTo reports ROLLBACK [WORK] TO [SAVEPOINT] x, which ends no
// transaction.
func isRollbackTo(q []byte, m sqlscan.Mode) bool {
	n, to := 0, false
	sqlscan.Mentions(q, m, func(_, name []byte) bool {
		n++
		switch {
		case n == 1:
			return false
		case strings.EqualFold(string(name), "work") && n == 2:
			return false
		}
		to = strings.EqualFold(string(name), "to")
		return true
	})
	return to
}

// tableless reports a statement MariaDB and MySQL run without opening a
// table, which leaves the previous statement's warnings in place.
func tableless(info *sqlscan.Info) bool {
	if info.Flags&sqlscan.FlagFrom != 0 || info.Multi {
		return false
	}
	switch info.Kind {
	case sqlscan.KindSelect, sqlscan.KindDo, sqlscan.KindSet, sqlscan.KindValues,
		sqlscan.KindBegin, sqlscan.KindCommit, sqlscan.KindRollback, sqlscan.KindSavepoint,
		sqlscan.KindRelease, sqlscan.KindUse:
		return true
	}
	return false
}

// noteDDL moves the DDL generation after a statement that may have changed
// schema objects or privileges, which invalidates what tpproxy cached of
// the server's answers (prepared statement metadata, the catalog).
func (s *mirror) noteDDL(q []byte, info *sqlscan.Info) {
	if !mayChangeObjects(info.Kind) {
		if !info.Multi {
			return
		}
		// A multi-statement query: any of its statements.
		ddl := false
		sqlscan.Split(q, s.mode, func(start, end int) {
			if !ddl {
				in := sqlscan.ScanMode(q[start:end], s.mode)
				ddl = mayChangeObjects(in.Kind)
			}
		})
		if !ddl {
			return
		}
	}
	s.srv.ddlGen.Add(1)
	s.srv.catalog.Invalidate()
}

// mayChangeObjects reports the statement kinds that may change schema
// objects or privileges: DDL, a CALL (whose procedure may run DDL), and
// whatever tpproxy does not classify (GRANT, RENAME, TRUNCATE, ...).
func mayChangeObjects(k sqlscan.Kind) bool {
	switch k {
	case sqlscan.KindCreate, sqlscan.KindDrop, sqlscan.KindAlter, sqlscan.KindOther, sqlscan.KindCall:
		return true
	}
	return false
}

// followGlobals keeps the session's values when the server's globals
// changed since it started: every variable whose global value changed and
// that the session did not set itself is taken as an explicit setting at
// the value the session has, so that the connection it runs on next (one
// reset to the new globals) is brought back to it.
func (s *mirror) followGlobals(ctx context.Context) {
	g := s.pool.Globals()
	if g == s.globals || g == nil {
		return
	}
	if s.globals != nil {
		s.pool.Diff(ctx, s.globals, g, func(name, value string) {
			if _, ok := s.state.Var(name); !ok {
				s.state.SetVar(name, value)
			}
		})
	}
	s.globals = g
}

// changesGlobals reports whether a SET may have assigned a global (or
// persisted) variable; a false positive costs one reading of the globals.
func changesGlobals(q []byte) bool {
	return containsFold(q, "GLOBAL") || containsFold(q, "PERSIST")
}

// containsFold is a case-insensitive bytes.Contains for an upper-case ASCII word.
func containsFold(q []byte, word string) bool {
	n := len(word)
	for i := 0; i+n <= len(q); i++ {
		j := 0
		for j < n && q[i+j]&^0x20 == word[j] {
			j++
		}
		if j == n {
			return true
		}
	}
	return false
}

// autocommitOff reports whether the session runs with autocommit=0.
func (s *mirror) autocommitOff() bool {
	v, ok := s.state.Var("autocommit")
	if !ok {
		v, ok = s.globals.Value("autocommit")
	}
	return ok && (v == "OFF" || v == "0")
}

// foundRowsCount is what FOUND_ROWS() returns for the session: n, unless
// onConn says the exact count is on the pinned connection (a LIMIT query of
// a pinned session; n is a fallback); exact: n is that count too.
type foundRowsCount struct {
	n      uint64
	onConn bool
	exact  bool
}

// note records what FOUND_ROWS() returns after a statement: the rows of
// its result set, unless a LIMIT makes the server count otherwise (LIMIT
// 2,1 counts 3, a UNION with LIMIT counts every row of the union), or an
// INSERT/REPLACE/CREATE ... SELECT counted the rows it selected; the
// connection is then asked, before anyone else can use it. The question
// opens no table, so the statement's warnings stay. A session that keeps
// its connection (keep) is not asked: the count stays there, and is read
// when the session leaves it.
//
// It reports whether the count is known exactly (so SQL_CALC_FOUND_ROWS
// need not pin), and why asking the connection failed.
func (f *foundRowsCount) note(ctx context.Context, c *pool.Conn, q []byte, res *result, info *sqlscan.Info, keep bool) (bool, error) {
	selects := !res.resultSet && !info.Multi && info.Flags&sqlscan.FlagFrom != 0 && containsFold(q, "SELECT") &&
		(info.Kind == sqlscan.KindInsert || info.Kind == sqlscan.KindReplace || info.Kind == sqlscan.KindCreate)
	if keep && (res.resultSet || selects || info.Flags&sqlscan.FlagSQLPrepare != 0) {
		// EXECUTE runs a text tpproxy does not see: whatever it counted
		// is on the connection too. A lone result set without LIMIT
		// counted the rows relayed (exact): the connection need not be
		// asked when the session leaves it.
		f.n, f.onConn = res.rows, true
		f.exact = res.resultSet && !selects && info.Flags&sqlscan.FlagSQLPrepare == 0 && !info.Multi &&
			!res.routine && info.Kind != sqlscan.KindCall && !containsFold(q, "LIMIT")
		return false, nil
	}
	if !res.resultSet && !selects {
		return false, nil
	}
	if !selects && (info.Multi || !containsFold(q, "LIMIT")) {
		f.n, f.onConn = res.rows, false
		return false, nil
	}
	err := f.read(ctx, c, res.rows)
	return err == nil, err
}

// read asks c for FOUND_ROWS() (fallback if that fails).
func (f *foundRowsCount) read(ctx context.Context, c *pool.Conn, fallback uint64) error {
	f.onConn = false
	var v uint64
	err := c.Query(ctx, "SELECT FOUND_ROWS() LIMIT 1", func(row []byte) error {
		b, _, err := mysqlwire.LenEncString(row)
		if err == nil {
			v, err = strconv.ParseUint(string(b), 10, 64)
		}
		return err
	})
	if err != nil {
		f.n = fallback
		return err
	}
	f.n = v
	return nil
}

// primeFoundRowsSQL is the statement that makes FOUND_ROWS() on a
// connection return n: a SQL_CALC_FOUND_ROWS count over that many rows of
// MariaDB's sequence engine (or, elsewhere, a recursive CTE) returning none
// of them.
func primeFoundRowsSQL(n uint64, mariadb bool) string {
	switch {
	case n == 0:
		return "SELECT SQL_CALC_FOUND_ROWS 1 FROM DUAL WHERE FALSE LIMIT 0"
	case mariadb:
		return "SELECT SQL_CALC_FOUND_ROWS 1 FROM seq_1_to_" + strconv.FormatUint(n, 10) + " LIMIT 0"
	}
	return "WITH RECURSIVE tpproxy_n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM tpproxy_n WHERE i < " +
		strconv.FormatUint(n, 10) + ") SELECT SQL_CALC_FOUND_ROWS i FROM tpproxy_n LIMIT 0"
}

// clientTracks reports whether the client's session has a boolean
// session_track_* setting on (its own value, else the global default).
func (s *mirror) clientTracks(name string) bool {
	v, ok := s.state.Var(name)
	if !ok {
		v, ok = s.globals.Value(name)
	}
	return ok && isOn(v)
}

// clientTracksVar reports whether the client's session_track_system_variables
// lists a variable ("*": all of them). The server's default list is used
// until the globals are known.
func (s *mirror) clientTracksVar(name string) bool {
	list, ok := s.state.Var("session_track_system_variables")
	if !ok {
		if list, ok = s.globals.Value("session_track_system_variables"); !ok {
			list = "autocommit,character_set_client,character_set_connection,character_set_results,time_zone"
		}
	}
	for list != "" {
		var item string
		item, list, _ = strings.Cut(list, ",")
		item = strings.TrimSpace(item)
		if item == "*" || strings.EqualFold(item, name) {
			return true
		}
	}
	return false
}
