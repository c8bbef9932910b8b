package sqlscan

// The handlers below each see the tokens of one statement after its first word, with
// s.st.n the index of the token (the first word is 0). They look only at what decides
// a Kind or a Flag and ignore the rest.

// begin classifies a statement by its first token.
func (s *scanner) begin(t token) {
	if t.kind != tokWord {
		s.setKind(KindOther)
		return
	}
	s.st.kw = t.kw
	switch t.kw {
	case kwSelect:
		s.setKind(KindSelect)
	case kwInsert:
		s.setKind(KindInsert)
	case kwUpdate:
		s.setKind(KindUpdate)
	case kwDelete:
		s.setKind(KindDelete)
	case kwReplace:
		s.setKind(KindReplace)
	case kwSet:
		s.setKind(KindSet)
		s.st.sub = setTarget
	case kwShow:
		s.setKind(KindShow)
	case kwUse:
		s.setKind(KindUse)
	case kwBegin:
		s.setKind(KindBegin)
	case kwCommit:
		s.setKind(KindCommit)
	case kwRollback:
		s.setKind(KindRollback)
	case kwKill:
		s.setKind(KindKill)
	case kwLock:
		// Any LOCK statement holds something on the connection: TABLES, INSTANCE.
		s.setKind(KindLock)
		s.flag(FlagLockTables)
	case kwUnlock:
		s.setKind(KindUnlock)
	case kwLoad:
		s.setKind(KindLoad)
	case kwCall:
		s.setKind(KindCall)
	case kwPrepare:
		s.setKind(KindPrepare)
		s.flag(FlagSQLPrepare)
	case kwExecute:
		s.setKind(KindExecute)
		s.flag(FlagSQLPrepare)
	case kwDeallocate:
		s.setKind(KindDeallocate)
		s.flag(FlagSQLPrepare)
	case kwXA:
		s.setKind(KindXA)
		s.flag(FlagXA)
		if s.nstmt == 0 {
			s.info.XA = XAOther // until the next word says more
		}
	case kwHandler:
		s.setKind(KindHandler)
		s.flag(FlagHandler)
	case kwFlush:
		s.setKind(KindFlush)
	case kwCreate:
		s.setKind(KindCreate)
	case kwDrop:
		s.setKind(KindDrop)
	case kwAlter:
		s.setKind(KindAlter)
	case kwWith:
		s.setKind(KindWith)
	case kwDo:
		s.setKind(KindDo)
	case kwValues:
		s.setKind(KindValues)
	case kwTable:
		s.setKind(KindTable)
	case kwExplain:
		s.setKind(KindExplain)
	case kwDescribe, kwDesc:
		s.setKind(KindDescribe)
	case kwSavepoint:
		s.setKind(KindSavepoint)
	case kwRelease:
		s.setKind(KindRelease)
	default:
		// START, GET, BACKUP and the rest: decided by later words, if at all.
		s.setKind(KindOther)
	}
}

// SET states: where the current token stands in the list of assignments.
const (
	setTarget uint8 = iota // after SET or a top-level ',': a target, or a scope word
	setName                // after a target: '.', '=' or ':=' may follow
	setComp                // after "target .": the name of component.name
	setColon               // after the ':' of ":="
	setFirst               // the first token of a value
	setValue               // the rest of a value
)

// set finds SET TRANSACTION, SET ROLE, SET STATEMENT and the variables a SET assigns.
// Targets are the first name after SET or after a ',' outside parentheses, past any
// scope word. After SET STATEMENT's list, FOR starts a statement of its own, which is
// scanned as such (its SET targets, locks, KILL, XA and all).
func (s *scanner) set(t token) {
	st := &s.st
	if st.n == 1 {
		switch {
		case t.isWord(kwTransaction):
			s.flag(FlagSetTransaction)
		case t.isWord(kwRole):
			s.flag(FlagRole)
		case t.isWord(kwStatement):
			st.stmtVars = true
			return
		}
	}
	switch {
	case t.isPunct('('):
		st.depth++
	case t.isPunct(')'):
		if st.depth > 0 {
			st.depth--
		}
	}
	switch st.sub {
	case setTarget:
		if t.kind == tokWord && isScope(t.kw) {
			// SET SESSION x, SET GLOBAL x, ...: the scope holds for the rest
			// of the list until another one is named.
			st.global = t.kw != kwSession && t.kw != kwLocal
			st.session = !st.global
			return
		}
		s.target(t)
	case setName:
		switch {
		case t.isPunct('.'):
			st.sub = setComp
		case t.isPunct('='):
			st.sub = setFirst
		case t.isPunct(':'):
			st.sub = setColon
		default:
			st.sub = setValue // SET NAMES utf8, SET PASSWORD FOR ..., ...
			s.value(t)
		}
	case setComp:
		if t.isName() {
			st.pendStart, st.pendEnd = st.pendRaw, t.end // keycache.key_buffer_size
			st.sub = setName
			return
		}
		st.sub = setValue
		s.value(t)
	case setColon:
		if t.isPunct('=') {
			st.sub = setFirst
			return
		}
		st.sub = setValue
		s.value(t)
	case setFirst:
		st.sub = setValue
		if t.isWord(kwDefault) || t.kind == tokNumber && st.pend &&
			string(s.lx.q[t.start:t.end]) == "0" && equalFold(s.lx.q[st.pendStart:st.pendEnd], "timestamp") {
			// SET timestamp = 0 gives it its default too: the clock runs.
			st.pendDefault = true
			return
		}
		s.value(t)
	case setValue:
		s.value(t)
	}
}

// value handles a token of an assigned value: a ',' outside parentheses ends it and
// opens the next assignment, and SET STATEMENT's FOR ends the list.
func (s *scanner) value(t token) {
	st := &s.st
	if st.depth == 0 {
		switch {
		case t.isPunct(','):
			s.flushTarget()
			st.sub = setTarget
			return
		case st.stmtVars && t.isWord(kwFor):
			s.flushTarget()
			s.flag(FlagSetStatement)
			if s.nstmt == 0 && !st.inner {
				s.info.InnerAt = t.end
			}
			s.st = stmt{inner: true}
			return
		}
	}
	st.pendDefault = false
}

// target inspects the name of an assigned variable and, for SetTargetsMode and
// StatementVars, remembers it until its value ends.
func (s *scanner) target(t token) {
	st := &s.st
	st.sub = setName
	st.pend, st.pendDefault = false, false
	switch t.kind {
	case tokWord, tokQuotedIdent, tokSysVar:
	case tokUserVar:
		return // SET @x = ...
	default:
		st.sub = setValue
		return
	}
	if st.stmtVars {
		// Scoped to the statement; only a tracking variable matters, as it
		// changes what the backend reports about that statement.
		if t.track() {
			s.flag(FlagSessionTrackVar)
		}
	} else {
		s.setVar(t)
	}
	first := s.nstmt == 0 && (st.stmtVars && s.onStmtVar != nil || !st.stmtVars && s.onSetVar != nil)
	if !first && (s.onAssign == nil || st.stmtVars) {
		return
	}
	q := s.lx.q
	global, session, sysVar := st.global, st.session, false
	var n0, n1, raw int
	switch t.kind {
	case tokWord:
		if !st.stmtVars && isSpecialSetWord(q[t.start:t.end]) {
			if s.onAssign != nil && !global {
				s.onAssign(SetAssign{Name: q[t.start:t.end:t.end], Special: true, Session: session})
			}
			return
		}
		n0, n1, raw = t.start, t.end, t.start
	case tokQuotedIdent:
		end, content := s.lx.quotedEnd(t.start, q[t.start])
		if content == end {
			return // unterminated
		}
		n0, n1, raw = t.start+1, content, t.start
	case tokSysVar:
		// @@name or @@scope.name: the scope in the token wins.
		v := s.lx.sysVarParts(t.start)
		global = v.scope != kwNone && v.scope != kwSession && v.scope != kwLocal
		session, sysVar = v.scope == kwSession || v.scope == kwLocal, true
		n0, n1, raw = v.name0, v.name1, v.raw0
		if v.parts > 2 || v.parts == 2 && v.scope == kwNone {
			n0, n1 = v.raw0, v.end // @@component.name: as typed
		}
	}
	st.pend, st.pendGlobal, st.pendSession, st.pendSysVar = true, global, session, sysVar
	st.pendStart, st.pendEnd, st.pendRaw = n0, n1, raw
}

// flushTarget reports the remembered target once its value has ended.
func (s *scanner) flushTarget() {
	st := &s.st
	if !st.pend {
		return
	}
	st.pend = false
	name := s.lx.q[st.pendStart:st.pendEnd]
	switch {
	case len(name) == 0:
	case st.stmtVars:
		if s.onStmtVar != nil && s.nstmt == 0 {
			s.onStmtVar(name)
		}
	case !st.pendGlobal:
		if s.onSetVar != nil && s.nstmt == 0 {
			s.onSetVar(name, st.pendDefault)
		}
		if s.onAssign != nil {
			s.onAssign(SetAssign{Name: name[:len(name):len(name)], Default: st.pendDefault, Session: st.pendSession, SysVar: st.pendSysVar})
		}
	}
}

// setVar sets the flags that the name of an assigned variable calls for.
func (s *scanner) setVar(t token) {
	switch t.kw {
	case kwInsertID:
		s.flag(FlagInsertIDVar)
	case kwLastInsertID, kwIdentity:
		s.flag(FlagLastInsertIDSet)
	case kwTxIsolation, kwTransactionIsolation, kwTxReadOnly, kwTransactionReadOnly:
		// SET @@tx_isolation = ... (no scope) is for the next transaction only.
		if t.kind == tokSysVar && !t.qualified() {
			s.flag(FlagSetTransaction)
		}
	}
	if t.track() {
		s.flag(FlagSessionTrackVar)
	}
}

// endTransaction finds RELEASE and NO RELEASE in a first statement COMMIT or
// ROLLBACK, but not in ROLLBACK [WORK] TO [SAVEPOINT] x.
func (s *scanner) endTransaction(t token) {
	st := &s.st
	if s.nstmt != 0 || st.sub != 0 || t.kind != tokWord {
		return
	}
	switch {
	case t.kw == kwTo && st.kw == kwRollback && (st.n == 1 || st.n == 2 && s.prev1.isWord(kwWork)):
		st.sub = 1
	case t.kw == kwRelease:
		if s.prev1.isWord(kwNo) {
			s.flag(FlagNoRelease)
		} else {
			s.flag(FlagRelease)
		}
	}
}

// xa finds the kind of a first statement XA from its second word.
func (s *scanner) xa(t token) {
	if s.st.n != 1 || s.nstmt != 0 {
		return
	}
	k := XAOther
	if t.kind == tokWord {
		switch t.kw {
		case kwStart, kwBegin:
			k = XAStart
		case kwEnd:
			k = XAEnd
		case kwPrepare:
			k = XAPrepare
		case kwCommit:
			k = XACommit
		case kwRollback:
			k = XARollback
		case kwRecover:
			k = XARecover
		}
	}
	s.info.XA = k
}

// KILL states, following MariaDB's
// KILL [HARD|SOFT] [CONNECTION|QUERY [ID]] {thread_id | USER user | query_id},
// of which MySQL's KILL [CONNECTION|QUERY] thread_id is a subset.
const (
	killStart    uint8 = iota // after KILL
	killModifier              // after HARD or SOFT
	killConn                  // after CONNECTION
	killQuery                 // after QUERY
	killTarget                // after a decimal thread id, which must end the statement
	killBad                   // the target cannot be mapped to a thread id
)

func (s *scanner) kill(t token) {
	st := &s.st
	switch st.sub {
	case killStart, killModifier:
		switch {
		case st.sub == killStart && (t.isWord(kwHard) || t.isWord(kwSoft)):
			st.sub = killModifier
		case t.isWord(kwConnection):
			st.sub = killConn
		case t.isWord(kwQuery):
			st.sub = killQuery
			st.killQuery = true
		default:
			s.killTarget(t)
		}
	case killConn:
		s.killTarget(t)
	case killQuery:
		if t.isWord(kwID) {
			st.sub = killBad // a query id, not a thread id
			return
		}
		s.killTarget(t)
	case killTarget:
		st.sub = killBad // KILL 5+1, KILL 5 6: an expression the proxy won't evaluate
	}
}

// killTarget accepts a plain decimal thread id that fits in 64 bits.
func (s *scanner) killTarget(t token) {
	st := &s.st
	st.sub = killBad
	if t.kind != tokNumber {
		return // USER x, @var, 'string', (expr), ...
	}
	var id uint64
	for _, c := range s.lx.q[t.start:t.end] {
		if !isDigit(c) {
			return
		}
		d := uint64(c - '0')
		if id > (^uint64(0)-d)/10 {
			return
		}
		id = id*10 + d
	}
	st.killID = id
	st.sub = killTarget
}

// endKill records the outcome of a KILL statement. Only the first statement's KILL can
// be answered by the proxy.
func (s *scanner) endKill() {
	st := &s.st
	if s.nstmt != 0 || st.inner {
		// A later statement's KILL, or the statement of SET STATEMENT ... FOR
		// KILL, would reach the backend with a proxy id.
		s.flag(FlagKillUnsupported)
		return
	}
	s.info.KillQuery = st.killQuery
	if st.sub != killTarget {
		s.flag(FlagKillUnsupported)
		return
	}
	s.info.KillID = st.killID
}

// show finds SHOW WARNINGS/ERRORS and SHOW COUNT(*) WARNINGS/ERRORS.
func (s *scanner) show(t token) {
	st := &s.st
	diag := t.isWord(kwWarnings) || t.isWord(kwErrors)
	switch {
	case st.n == 1 && diag:
		s.flag(FlagDiagnostics)
	case st.n == 1 && t.isWord(kwCount):
		st.sub = 1
	case st.n == 5 && st.sub == 1 && diag: // COUNT ( * ) WARNINGS
		s.flag(FlagDiagnostics)
	}
}

// get finds GET [CURRENT|STACKED] DIAGNOSTICS.
func (s *scanner) get(t token) {
	st := &s.st
	switch {
	case st.n == 1 && (t.isWord(kwCurrent) || t.isWord(kwStacked)):
		st.sub = 1
	case t.isWord(kwDiagnostics) && (st.n == 1 || st.n == 2 && st.sub == 1):
		s.flag(FlagDiagnostics)
	}
}

// create finds CREATE [OR REPLACE] TEMPORARY (tables and MariaDB sequences).
func (s *scanner) create(t token) {
	st := &s.st
	switch {
	case st.n == 1 && t.isWord(kwOr):
		st.sub = 1
	case st.n == 2 && st.sub == 1 && t.isWord(kwReplace):
		st.sub = 2
	case t.isWord(kwTemporary) && (st.n == 1 || st.n == 3 && st.sub == 2):
		s.flag(FlagTempTable)
	}
}

// drop finds DROP TEMPORARY TABLE and DROP PREPARE.
func (s *scanner) drop(t token) {
	if s.st.n != 1 {
		return
	}
	switch {
	case t.isWord(kwTemporary):
		s.flag(FlagTempTable)
	case t.isWord(kwPrepare):
		s.setKind(KindDeallocate)
		s.flag(FlagSQLPrepare)
	}
}

// load finds LOAD {DATA|XML} [LOW_PRIORITY|CONCURRENT] LOCAL.
func (s *scanner) load(t token) {
	st := &s.st
	switch {
	case st.n == 1:
		if t.isWord(kwData) || t.isWord(kwXML) {
			st.sub = 1
		}
	case st.sub != 1:
	case t.isWord(kwLocal) && st.n <= 3:
		s.flag(FlagLoadLocal)
		st.sub = 0
	case st.n == 2 && (t.isWord(kwLowPriority) || t.isWord(kwConcurrent)):
	default:
		st.sub = 0
	}
}

// flush finds FLUSH ... WITH READ LOCK and FLUSH TABLES ... FOR EXPORT, which both
// leave locks held until UNLOCK TABLES.
func (s *scanner) flush(t token) {
	if t.isWord(kwLock) && s.prev1.isWord(kwRead) ||
		t.isWord(kwExport) && s.prev1.isWord(kwFor) {
		s.flag(FlagLockTables)
	}
}

// backup handles MariaDB's BACKUP LOCK, BACKUP UNLOCK and BACKUP STAGE. A stage holds
// backup locks until BACKUP STAGE END; taking it for a lock pins the session until it
// is reset, which is the safe side for an administrative statement.
func (s *scanner) backup(t token) {
	if s.st.n != 1 {
		return
	}
	switch {
	case t.isWord(kwLock):
		s.setKind(KindLock)
		s.flag(FlagLockTables)
	case t.isWord(kwUnlock):
		s.setKind(KindUnlock)
		s.flag(FlagUnlockTables)
	case t.isWord(kwStage):
		s.flag(FlagLockTables)
	}
}
