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
// Known approximations, all on the conservative side unless noted:
//   - Backslash is always an escape inside strings, and "..." is always a string: under
//     NO_BACKSLASH_ESCAPES or ANSI_QUOTES the server may split the text differently.
//     Client character sets where 0x5C can be the second byte of a character (GBK,
//     SJIS, Big5) are not handled either: such a byte is taken for an escape.
//   - Executable comments are code whatever their version number.
//   - ';' always separates statements, so the body of CREATE PROCEDURE/TRIGGER/EVENT
//     or BEGIN NOT ATOMIC ... END counts as several statements (Multi) and flags
//     found in the body are reported although creating the routine does not run it.
//   - A name followed by '(' (comments and whitespace allowed in between) is taken as
//     a call unless it is qualified (db.f); CREATE TABLE get_lock (a int) therefore
//     reports FlagGetLock.
//   - An '@' outside "@@" is a user variable, so account names ('u'@'h', DEFINER=
//     `u`@`h`) set FlagUserVar.
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
}

// Scan classifies q, the COM_QUERY payload after the command byte. It never allocates
// and never panics, whatever bytes it is given, and its cost is linear in len(q).
func Scan(q []byte) Info {
	s := scanner{lx: lexer{q: q}}
	s.info.Local, s.info.LocalExpr, s.info.LimitOffset, s.info.LimitCount = matchLocal(q)
	for {
		t := s.lx.next()
		if t.kind == tokEOF {
			break
		}
		s.token(t)
	}
	s.endStmt()
	return s.info
}

// FirstKeyword returns the first word of q after whitespace, comments and '(' (the
// word that decides Info.Kind), as a sub-slice of q for logging; nil if q does not
// start with a word.
func FirstKeyword(q []byte) []byte {
	lx := lexer{q: q}
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
	// onSetVar, when set, receives the session variables the first
	// statement assigns (see SetTargets).
	onSetVar func(name []byte)
}

// stmt is the state of the statement being scanned.
type stmt struct {
	started bool
	kw      keyword // first word
	n       int     // index of the current token; the first word is 0
	depth   int     // parenthesis depth after the first word
	sub     uint8   // statement-specific state, see the handlers
	// KILL's target.
	killID    uint64
	killQuery bool
	// global: a SET is assigning global (or persisted) variables.
	global bool
}

func (s *scanner) flag(f Flags) { s.info.Flags |= f }

// setKind sets the class of the current statement, which is the query's Kind only
// for the first statement.
func (s *scanner) setKind(k Kind) {
	if s.nstmt == 0 {
		s.info.Kind = k
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
	if s.st.kw == kwKill {
		s.endKill()
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
		case kwInsertID, kwLastInsertID, kwIdentity:
			s.flag(FlagInsertIDVar)
		}
	case tokWord:
		switch t.kw {
		case kwSQLCalcFoundRows:
			s.flag(FlagCalcFoundRows)
		case kwNowait:
			s.flag(FlagStatementTimeout)
		case kwFor:
			if s.prev1.isWord(kwValue) && (s.prev2.isWord(kwNext) || s.prev2.isWord(kwPrevious)) {
				s.flag(FlagSequence)
			}
		}
	case tokPunct:
		if t.b == '(' && (s.prev1.kind == tokWord || s.prev1.kind == tokQuotedIdent) {
			s.call(s.prev1.kw)
		}
	}
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
	}
}
