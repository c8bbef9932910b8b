// Package sqlscan classifies the SQL text of a COM_QUERY without parsing it, so that
// the proxy can decide per query, cheaply, whether the session must stay on its backend
// connection, whether the statement can be answered locally, and whether it is a KILL.
//
// The scanner lexes the text the way MySQL and MariaDB do (strings, quoted identifiers,
// comments, executable comments) in one linear pass and looks only at a few leading
// keywords of each statement plus a handful of words and calls anywhere. Where the
// lexical view is unsure it reports more state, never less: a needlessly pinned session
// costs throughput, a wrongly released one corrupts a client's session.
//
// How the server splits the text depends on the session: ScanMode takes a Mode with
// the sql_mode flags that change lexing (NO_BACKSLASH_ESCAPES, ANSI_QUOTES), the class
// of the client character set and the server version; Scan is ScanMode for the zero
// Mode. Given the right Mode the following are exact, as measured against MariaDB
// 10.11 with raw COM_QUERY (MySQL's rules are taken from its lexer, not measured):
//   - where strings, quoted identifiers and comments start and end: backslash escapes
//     or NO_BACKSLASH_ESCAPES, doubled quotes, "..." as a string or under ANSI_QUOTES
//     an identifier;
//   - characters of big5, gbk, sjis and cp932 whose second byte is 0x5C, a quote or a
//     backquote, and user and system variable names, which the server reads byte by
//     byte rather than by character;
//   - the no-break space that latin1 and other single-byte character sets take for
//     whitespace;
//   - which executable comments run: five version digits (six on MariaDB), MariaDB's
//     /*M! and its exception for /*!50700-/*!99999, fewer digits meaning no version,
//     one nested comment inside a comment that does not run, and executable comments
//     opening inside a running one (the first "*/" ends them all);
//   - identifiers that start with digits (1a, t.1e5), qualified names;
//   - the statement after SET STATEMENT ... FOR, which is scanned as a statement.
//
// Known approximations, all on the conservative side unless noted:
//   - With Version 0 (unknown) every executable comment runs and all its version
//     digits are skipped, as before Mode existed; a comment written for a newer
//     server than the real one then counts as code, which may hide what follows it
//     (not conservative: the reason to pass a Version).
//   - Newer MySQL releases (seen in 9.x sources) also read six version digits when
//     whitespace follows them, and have $tag$...$tag$ strings; neither is handled,
//     and the latter is lexed as code (not conservative).
//   - Unterminated strings, quoted identifiers and comments run to the end of the
//     text; the server rejects the statement instead.
//   - ';' always separates statements, so the body of CREATE PROCEDURE/TRIGGER/EVENT
//     or BEGIN NOT ATOMIC ... END counts as several statements (Multi) and flags
//     found in the body are reported although creating the routine does not run it.
//   - A name followed by '(' (comments and whitespace allowed in between) is taken as
//     a call unless it is qualified (db.f); CREATE TABLE get_lock (a int) therefore
//     reports FlagGetLock.
//   - An '@' outside "@@" is a user variable, so account names ('u'@'h', DEFINER=
//     `u`@`h`) set FlagUserVar.
//   - A byte the server takes for a stray one-byte token (a byte above 0x7F that is no
//     letter of the character set, a lead byte without its trail) is read as part of
//     an identifier; the server rejects such a statement anyway.
package sqlscan

// Info is what Scan learned about one query.
type Info struct {
	// Kind is the class of the first statement, found after leading whitespace,
	// comments and '('. An empty first statement (";SELECT 1") is KindOther.
	Kind Kind
	// Flags is the OR of what was found in all statements.
	Flags Flags
	// Multi reports that a ';' outside strings and comments is followed by anything
	// but whitespace, comments and more ';'.
	Multi bool
	// Local is non-zero only when the whole query is exactly one of the local forms.
	Local Local
	// LocalExpr is, for a local form, the select expression as typed (a sub-slice of
	// the query), which the server would use as the column name.
	LocalExpr []byte
	// LimitOffset and LimitCount are the LIMIT of LocalShowWarnings and
	// LocalShowErrors (LimitCount is the largest uint64 without a LIMIT).
	LimitOffset, LimitCount uint64
	// KillID is the thread id of a first statement KILL [HARD|SOFT] [CONNECTION|QUERY]
	// <decimal>; zero otherwise (and then FlagKillUnsupported tells why).
	KillID uint64
	// KillQuery reports the QUERY keyword in a first statement KILL: only the running
	// statement is to be killed, not the connection.
	KillQuery bool
	// XA is the kind of a first statement that starts with XA (also when it is the
	// statement of SET STATEMENT ... FOR), XANone otherwise.
	XA XAKind
	// Qualified reports a qualified name in code: two identifiers, quoted or not,
	// around a '.' (db.t, t.col, `db`.f). User variables (@x.y) and system variables
	// (@@a.b) do not count.
	Qualified bool
	// Inner is the class of the statement a first-statement SET STATEMENT ... FOR
	// runs (Kind is KindSet); KindOther otherwise.
	Inner Kind
	// InnerAt is where that statement's text starts, just after the FOR (q[InnerAt:]
	// is the statement, whitespace first); 0 without SET STATEMENT.
	InnerAt int
}

// Scan classifies q, the COM_QUERY payload after the command byte. It never allocates
// and never panics, whatever bytes it is given, and its cost is linear in len(q).
// Scan(q) == ScanMode(q, Mode{}).
func Scan(q []byte) Info {
	return ScanMode(q, Mode{})
}

// ScanMode is Scan for a session lexed per m. It never allocates and never panics.
func ScanMode(q []byte, m Mode) Info {
	var s scanner
	s.lx.init(q, m)
	s.info.Local, s.info.LocalExpr, s.info.LimitOffset, s.info.LimitCount = matchLocal(q)
	s.all()
	return s.info
}

// all runs the scanner over every statement of its text.
func (s *scanner) all() {
	for {
		t := s.lx.next()
		if t.kind == tokEOF {
			break
		}
		s.token(t)
	}
	s.endStmt()
}

// FirstKeyword returns the first word of q after whitespace, comments and '(' (the
// word that decides Info.Kind), as a sub-slice of q for logging; nil if q does not
// start with a word.
func FirstKeyword(q []byte) []byte {
	lx := newLexer(q, Mode{})
	for {
		t := lx.next()
		switch {
		case t.isPunct('('):
			continue
		case t.kind == tokWord:
			return q[t.start:t.end]
		}
		return nil
	}
}

// scanner feeds tokens through the checks that apply anywhere and through the small
// state machine of the current statement.
type scanner struct {
	lx    lexer
	info  Info
	nstmt int  // statements ended so far: 0 while in the first
	semi  bool // a ';' was seen
	// prev1 and prev2 are the two tokens before the current one in this statement.
	prev1, prev2 tag
	// lastInsertID: the previous tokens were LAST_INSERT_ID '('; the next token tells
	// whether it has an argument.
	lastInsertID bool
	st           stmt
	// onSetVar, when set, receives the session variables the first statement
	// assigns and whether each is assigned DEFAULT (see SetTargetsMode).
	onSetVar func(name []byte, isDefault bool)
	// onStmtVar, when set, receives the variables of the first statement's
	// SET STATEMENT ... FOR (see StatementVars).
	onStmtVar func(name []byte)
	// onAssign, when set, receives every lasting assignment of every
	// statement (see SetAssignments).
	onAssign func(SetAssign)
}

// stmt is the state of the statement being scanned.
type stmt struct {
	started bool
	// inner: this is the statement of SET STATEMENT ... FOR, which does not decide
	// Info.Kind.
	inner bool
	kw    keyword // first word
	n     int     // index of the current token; the first word is 0
	depth int     // parenthesis depth after the first word
	sub   uint8   // statement-specific state, see the handlers
	// KILL's target.
	killID    uint64
	killQuery bool
	// SET: global is a SET assigning global (or persisted) variables, session one
	// whose scope word is SESSION or LOCAL; stmtVars is SET STATEMENT, whose list
	// before FOR is scoped to the statement.
	global, session, stmtVars bool
	// The SET target whose value is being read, reported when the value ends.
	pend        bool // there is one to report
	pendGlobal  bool // it is global or persisted
	pendSession bool // its scope was written SESSION or LOCAL
	pendSysVar  bool // it was written @@name
	pendDefault bool // its value so far is exactly DEFAULT
	// pendStart:pendEnd is the name to report; pendRaw is where the name starts as
	// typed, for a component.name target.
	pendStart, pendEnd, pendRaw int
}

func (s *scanner) flag(f Flags) { s.info.Flags |= f }

// setKind sets the class of the current statement, which is the query's Kind only
// for the first statement.
func (s *scanner) setKind(k Kind) {
	switch {
	case s.nstmt != 0:
	case !s.st.inner:
		s.info.Kind = k
	default:
		s.info.Inner = k
	}
}

// token routes one token: ';' ends a statement, anything else goes through the
// checks that apply anywhere and through the current statement's state machine.
func (s *scanner) token(t token) {
	if t.isPunct(';') {
		s.endStmt()
		s.semi = true
		return
	}
	if s.semi {
		s.info.Multi = true
	}
	// A qualified name (db.get_lock, t.select) is never a keyword or built-in.
	if s.prev1.isPunct('.') {
		t.kw = kwNone
		if t.isName() && s.prev2.isName() {
			s.info.Qualified = true
		}
	}
	s.anywhere(t)
	s.statement(t)
	s.prev2, s.prev1 = s.prev1, t.tag
}

// endStmt closes the current statement at ';' or at the end of the query.
func (s *scanner) endStmt() {
	if s.lastInsertID {
		s.lastInsertID = false
		s.flag(FlagLastInsertIDArg) // LAST_INSERT_ID( cut off: assume the worst
	}
	switch s.st.kw {
	case kwKill:
		s.endKill()
	case kwSet:
		s.flushTarget()
	}
	s.st = stmt{}
	s.prev1, s.prev2 = tag{}, tag{}
	s.nstmt++
}

// anywhere applies the checks that do not depend on the statement's class.
func (s *scanner) anywhere(t token) {
	if s.lastInsertID {
		s.lastInsertID = false
		if t.isPunct(')') {
			s.flag(FlagLastInsertIDRead)
		} else {
			s.flag(FlagLastInsertIDArg)
		}
	}
	if t.kind == tokNumber && s.prev1.isWord(kwWait) {
		s.flag(FlagStatementTimeout) // ... WAIT n
	}
	switch t.kind {
	case tokUserVar:
		s.flag(FlagUserVar)
	case tokSysVar:
		switch t.kw {
		case kwWarningCount, kwErrorCount:
			s.flag(FlagDiagnostics)
		case kwLastInsertID, kwIdentity:
			if !s.atSetTarget() {
				s.flag(FlagLastInsertIDRead)
			}
		case kwPseudoThreadID:
			if !s.atSetTarget() {
				s.flag(FlagConnectionID) // what CONNECTION_ID() returns
			}
		}
	case tokWord:
		switch t.kw {
		case kwSQLCalcFoundRows:
			s.flag(FlagCalcFoundRows)
		case kwNowait:
			s.flag(FlagStatementTimeout)
		case kwFrom, kwJoin:
			s.flag(FlagFrom)
		case kwFor:
			if s.prev1.isWord(kwValue) && (s.prev2.isWord(kwNext) || s.prev2.isWord(kwPrevious)) {
				s.flag(FlagSequence)
			}
		}
	case tokPunct:
		if t.b == '(' && s.prev1.isName() {
			s.call(s.prev1.kw)
		}
	}
}

// atSetTarget reports whether the current token is where a SET expects the name of
// the variable it assigns.
func (s *scanner) atSetTarget() bool {
	return s.st.started && s.st.kw == kwSet && s.st.sub == setTarget
}

// call handles a call of the function named kw. Quoted names count too: the server
// resolves `GET_LOCK`(...) to the built-in.
func (s *scanner) call(kw keyword) {
	switch kw {
	case kwGetLock:
		s.flag(FlagGetLock)
	case kwReleaseLock, kwReleaseAllLocks:
		s.flag(FlagReleaseLock)
	case kwLastInsertID:
		s.lastInsertID = true
	case kwFoundRows:
		s.flag(FlagFoundRows)
	case kwRowCount:
		s.flag(FlagRowCount)
	case kwNextval, kwLastval, kwSetval:
		s.flag(FlagSequence)
	case kwConnectionID:
		s.flag(FlagConnectionID)
	}
}

// statement advances the current statement's state machine.
func (s *scanner) statement(t token) {
	st := &s.st
	if !st.started {
		if t.isPunct('(') {
			return // "(SELECT ...) UNION ..." is a SELECT
		}
		st.started = true
		s.begin(t)
		return
	}
	st.n++
	switch st.kw {
	case kwSet:
		s.set(t)
	case kwKill:
		s.kill(t)
	case kwShow:
		s.show(t)
	case kwCreate:
		s.create(t)
	case kwLoad:
		s.load(t)
	case kwGet:
		s.get(t)
	case kwFlush:
		s.flush(t)
	case kwDrop:
		s.drop(t)
	case kwStart:
		if st.n == 1 && t.isWord(kwTransaction) {
			s.setKind(KindBegin)
		}
	case kwBegin:
		if st.n == 1 && t.isWord(kwNot) {
			s.setKind(KindOther) // BEGIN NOT ATOMIC: a compound statement
		}
	case kwUnlock:
		if st.n == 1 && (t.isWord(kwTable) || t.isWord(kwTables)) {
			s.flag(FlagUnlockTables)
		}
	case kwBackup:
		s.backup(t)
	case kwCommit, kwRollback:
		s.endTransaction(t)
	case kwXA:
		s.xa(t)
	}
}
