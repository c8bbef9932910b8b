package sqlscan

import "strconv"

// Kind is the class of a statement, taken from its leading keywords only. It routes a
// query (answer locally, forward, refuse) before the backend sees it; it is not a parse
// and says nothing about whether the statement is valid.
type Kind uint8

// Statement classes. KindOther covers everything the proxy has no special rule for
// (GRANT, TRUNCATE, ANALYZE, ...) as well as text that starts with no keyword at all.
const (
	KindOther Kind = iota
	KindSelect
	KindInsert
	KindUpdate
	KindDelete
	KindReplace
	KindSet
	KindShow
	KindUse
	// KindBegin is BEGIN [WORK] and START TRANSACTION, but not MariaDB's BEGIN NOT
	// ATOMIC, which opens a compound statement rather than a transaction.
	KindBegin
	KindCommit
	// KindRollback includes ROLLBACK TO [SAVEPOINT] x, which ends no transaction; the
	// proxy learns whether one is still open from the server status flags anyway.
	KindRollback
	KindKill
	// KindLock is LOCK TABLE(S), MySQL's LOCK INSTANCE FOR BACKUP and MariaDB's
	// BACKUP LOCK.
	KindLock
	// KindUnlock is UNLOCK TABLE(S), UNLOCK INSTANCE and MariaDB's BACKUP UNLOCK.
	KindUnlock
	KindLoad
	KindCall
	KindPrepare
	KindExecute
	// KindDeallocate is DEALLOCATE PREPARE and DROP PREPARE.
	KindDeallocate
	KindXA
	KindHandler
	KindFlush
	KindCreate
	KindDrop
	KindAlter
	KindWith
	KindDo
	KindValues
	KindTable
	KindExplain
	// KindDescribe is DESCRIBE and DESC, which MySQL treats as EXPLAIN's synonyms.
	KindDescribe
	KindSavepoint
	KindRelease
)

// String names the kind for logs and metrics labels.
func (k Kind) String() string {
	switch k {
	case KindOther:
		return "other"
	case KindSelect:
		return "select"
	case KindInsert:
		return "insert"
	case KindUpdate:
		return "update"
	case KindDelete:
		return "delete"
	case KindReplace:
		return "replace"
	case KindSet:
		return "set"
	case KindShow:
		return "show"
	case KindUse:
		return "use"
	case KindBegin:
		return "begin"
	case KindCommit:
		return "commit"
	case KindRollback:
		return "rollback"
	case KindKill:
		return "kill"
	case KindLock:
		return "lock"
	case KindUnlock:
		return "unlock"
	case KindLoad:
		return "load"
	case KindCall:
		return "call"
	case KindPrepare:
		return "prepare"
	case KindExecute:
		return "execute"
	case KindDeallocate:
		return "deallocate"
	case KindXA:
		return "xa"
	case KindHandler:
		return "handler"
	case KindFlush:
		return "flush"
	case KindCreate:
		return "create"
	case KindDrop:
		return "drop"
	case KindAlter:
		return "alter"
	case KindWith:
		return "with"
	case KindDo:
		return "do"
	case KindValues:
		return "values"
	case KindTable:
		return "table"
	case KindExplain:
		return "explain"
	case KindDescribe:
		return "describe"
	case KindSavepoint:
		return "savepoint"
	case KindRelease:
		return "release"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Flags records what a query touches that matters for multiplexing: session state the
// proxy cannot track, locks, diagnostics it must not lose by switching backends.
// Scan ORs them over all statements of a query.
type Flags uint32

// Flag bits. Detection is lexical and errs on the side of setting a flag: a false
// positive costs a pinned session, a false negative corrupts one.
const (
	// FlagUserVar: a user variable (@name, @'x', @"x", @`x`) appears in code. An
	// account name such as 'u'@'h' or u@h sets it too, because '@' alone cannot tell
	// them apart.
	FlagUserVar Flags = 1 << iota
	// FlagTempTable: CREATE [OR REPLACE] TEMPORARY ... or DROP TEMPORARY TABLE.
	FlagTempTable
	// FlagLockTables: LOCK TABLE(S), LOCK INSTANCE, FLUSH ... WITH READ LOCK,
	// FLUSH TABLES ... FOR EXPORT, BACKUP LOCK and BACKUP STAGE: the session now
	// holds locks that live on its backend connection.
	FlagLockTables
	// FlagUnlockTables: UNLOCK TABLE(S) or BACKUP UNLOCK. Each releases only its own
	// kind of lock, so a caller that lets a session mix LOCK TABLES with BACKUP LOCK
	// must not unpin on the first. UNLOCK INSTANCE does not set it: an instance
	// backup lock is rare enough to keep the session pinned until it is reset.
	FlagUnlockTables
	// FlagGetLock: a call of GET_LOCK(.
	FlagGetLock
	// FlagReleaseLock: a call of RELEASE_LOCK( or RELEASE_ALL_LOCKS(.
	FlagReleaseLock
	// FlagCalcFoundRows: SQL_CALC_FOUND_ROWS, whose count a later FOUND_ROWS() reads
	// from the same connection.
	FlagCalcFoundRows
	// FlagSQLPrepare: SQL-level PREPARE, EXECUTE (MariaDB's EXECUTE IMMEDIATE too,
	// since its dynamic text is invisible here), DEALLOCATE/DROP PREPARE.
	FlagSQLPrepare
	// FlagSetTransaction: SET TRANSACTION without a scope, or a SET of
	// @@tx_isolation, @@transaction_isolation, @@tx_read_only or
	// @@transaction_read_only written with @@ and no scope: each applies to the next
	// transaction only and so must run on the connection that will run it.
	FlagSetTransaction
	// FlagLoadLocal: LOAD DATA/XML ... LOCAL INFILE, whose file the client sends.
	FlagLoadLocal
	// FlagLastInsertIDArg: LAST_INSERT_ID(expr), which sets the value a later
	// LAST_INSERT_ID() returns.
	FlagLastInsertIDArg
	// FlagLastInsertIDRead: LAST_INSERT_ID() with no argument, or a read of
	// @@last_insert_id or @@identity (any scope form) other than as a SET target.
	FlagLastInsertIDRead
	// FlagFoundRows: a call of FOUND_ROWS().
	FlagFoundRows
	// FlagRowCount: a call of ROW_COUNT().
	FlagRowCount
	// FlagDiagnostics: SHOW WARNINGS/ERRORS, SHOW COUNT(*) WARNINGS/ERRORS,
	// GET DIAGNOSTICS, @@warning_count, @@error_count: they read what the previous
	// statement left on its connection.
	FlagDiagnostics
	// FlagInsertIDVar: a SET of insert_id (any form: insert_id, SESSION insert_id,
	// @@insert_id, @@session.insert_id), which the next insert consumes.
	FlagInsertIDVar
	// FlagSessionTrackVar: SET of a variable named session_track_*, which would
	// change what the backend reports to the proxy itself.
	FlagSessionTrackVar
	// FlagXA: an XA statement.
	FlagXA
	// FlagHandler: a HANDLER statement; open handlers live on the connection.
	FlagHandler
	// FlagSequence: NEXTVAL(, LASTVAL(, SETVAL(, NEXT VALUE FOR, PREVIOUS VALUE FOR
	// (MariaDB sequences keep per-session state).
	FlagSequence
	// FlagKillUnsupported: a KILL the proxy cannot map to one of its own thread ids
	// (KILL USER, KILL QUERY ID, a target that is not a plain decimal number, or a
	// KILL that is not the first statement of a multi-statement query).
	FlagKillUnsupported
	// FlagSetStatement: MariaDB's SET STATEMENT var=value[, ...] FOR statement,
	// whose assignments last for that one statement only.
	FlagSetStatement
	// FlagStatementTimeout: NOWAIT or WAIT n (SELECT ... FOR UPDATE NOWAIT,
	// LOCK TABLES ... WAIT 5, ALTER TABLE ... NOWAIT), which MariaDB
	// implements by setting lock wait timeouts for the one statement.
	FlagStatementTimeout
	// FlagRole: SET ROLE ... (not SET DEFAULT ROLE), which changes the session's
	// privileges.
	FlagRole
	// FlagLastInsertIDSet: a SET of last_insert_id or identity (any form, @@ included),
	// which sets what LAST_INSERT_ID() returns.
	FlagLastInsertIDSet
	// FlagConnectionID: a call of CONNECTION_ID( or a read of @@pseudo_thread_id, which
	// is what CONNECTION_ID() returns.
	FlagConnectionID
	// FlagRelease: the first statement is COMMIT or ROLLBACK (not ROLLBACK TO) with
	// RELEASE not preceded by NO: the server closes the connection after it.
	FlagRelease
	// FlagNoRelease: the first statement is COMMIT or ROLLBACK with NO RELEASE.
	FlagNoRelease
	// FlagFrom: the word FROM or JOIN in code, in any statement. With Kind it
	// approximates "the statement opens tables" (MariaDB keeps the previous
	// statement's warnings across statements that open none).
	FlagFrom
	// FlagSessionVarSet: a stored program's body assigns a session system variable or
	// sets the character set (see BodySetsSession). ScanMode never sets it: a client's
	// own SET is read back from the server instead (SetAssignments).
	FlagSessionVarSet
)

// StatefulMask holds the flags that mean the statement creates or reads session state
// the proxy does not track or replay, so the session must stay on its backend.
// FlagCalcFoundRows, FlagLockTables and FlagXA also pin, but for reasons with their own
// unpin rule, so the caller handles them separately; FlagLastInsertIDSet sets a value
// the caller can replay, so it is not in the mask either.
const StatefulMask = FlagUserVar | FlagTempTable | FlagGetLock | FlagSQLPrepare |
	FlagLastInsertIDArg | FlagInsertIDVar | FlagHandler | FlagSequence

// Stateful reports whether any flag of StatefulMask is set.
func (f Flags) Stateful() bool { return f&StatefulMask != 0 }

// Has reports whether all bits of g are set in f.
func (f Flags) Has(g Flags) bool { return f&g == g }

func flagName(f Flags) string {
	switch f {
	case FlagUserVar:
		return "UserVar"
	case FlagTempTable:
		return "TempTable"
	case FlagLockTables:
		return "LockTables"
	case FlagUnlockTables:
		return "UnlockTables"
	case FlagGetLock:
		return "GetLock"
	case FlagReleaseLock:
		return "ReleaseLock"
	case FlagCalcFoundRows:
		return "CalcFoundRows"
	case FlagSQLPrepare:
		return "SQLPrepare"
	case FlagSetTransaction:
		return "SetTransaction"
	case FlagLoadLocal:
		return "LoadLocal"
	case FlagLastInsertIDArg:
		return "LastInsertIDArg"
	case FlagLastInsertIDRead:
		return "LastInsertIDRead"
	case FlagFoundRows:
		return "FoundRows"
	case FlagRowCount:
		return "RowCount"
	case FlagDiagnostics:
		return "Diagnostics"
	case FlagInsertIDVar:
		return "InsertIDVar"
	case FlagSessionTrackVar:
		return "SessionTrackVar"
	case FlagXA:
		return "XA"
	case FlagHandler:
		return "Handler"
	case FlagSequence:
		return "Sequence"
	case FlagKillUnsupported:
		return "KillUnsupported"
	case FlagSetStatement:
		return "SetStatement"
	case FlagStatementTimeout:
		return "StatementTimeout"
	case FlagRole:
		return "Role"
	case FlagLastInsertIDSet:
		return "LastInsertIDSet"
	case FlagConnectionID:
		return "ConnectionID"
	case FlagRelease:
		return "Release"
	case FlagNoRelease:
		return "NoRelease"
	case FlagFrom:
		return "From"
	case FlagSessionVarSet:
		return "SessionVarSet"
	}
	return ""
}

// String lists the set flags as "A|B" for logs ("none" when empty). It allocates, so it
// belongs in logging and tests, not in the per-query path.
func (f Flags) String() string {
	if f == 0 {
		return "none"
	}
	var b []byte
	for bit := Flags(1); bit != 0; bit <<= 1 {
		if f&bit == 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, '|')
		}
		if name := flagName(bit); name != "" {
			b = append(b, name...)
		} else {
			b = append(b, "0x"...)
			b = strconv.AppendUint(b, uint64(bit), 16)
		}
	}
	return string(b)
}

// Local says which statement the proxy may answer itself without a backend.
type Local uint8

// Local forms. Each matches only the exact statement named, so that the answer the
// proxy gives cannot differ from the server's in anything but the value.
const (
	LocalNone Local = iota
	// LocalConnectionID: SELECT CONNECTION_ID().
	LocalConnectionID
	// LocalLastInsertID: SELECT LAST_INSERT_ID().
	LocalLastInsertID
	// LocalRowCount: SELECT ROW_COUNT().
	LocalRowCount
	// LocalFoundRows: SELECT FOUND_ROWS().
	LocalFoundRows
	// LocalWarningCount: SELECT @@warning_count (also @@session. and @@local.).
	LocalWarningCount
	// LocalErrorCount: SELECT @@error_count (also @@session. and @@local.).
	LocalErrorCount
	// LocalShowWarnings: SHOW WARNINGS [LIMIT [offset,] count].
	LocalShowWarnings
	// LocalShowErrors: SHOW ERRORS [LIMIT [offset,] count].
	LocalShowErrors
	// LocalCountWarnings: SHOW COUNT(*) WARNINGS.
	LocalCountWarnings
	// LocalCountErrors: SHOW COUNT(*) ERRORS.
	LocalCountErrors
)

// String names the local form for logs.
func (l Local) String() string {
	switch l {
	case LocalNone:
		return "none"
	case LocalConnectionID:
		return "connection_id"
	case LocalLastInsertID:
		return "last_insert_id"
	case LocalRowCount:
		return "row_count"
	case LocalFoundRows:
		return "found_rows"
	case LocalWarningCount:
		return "warning_count"
	case LocalErrorCount:
		return "error_count"
	case LocalShowWarnings:
		return "show_warnings"
	case LocalShowErrors:
		return "show_errors"
	case LocalCountWarnings:
		return "count_warnings"
	case LocalCountErrors:
		return "count_errors"
	}
	return "local(" + strconv.Itoa(int(l)) + ")"
}

// XAKind is the kind of an XA statement.
type XAKind uint8

// XA statement kinds, from the word after XA.
const (
	XANone     XAKind = iota // not an XA statement
	XAStart                  // XA START or XA BEGIN
	XAEnd                    // XA END
	XAPrepare                // XA PREPARE
	XACommit                 // XA COMMIT
	XARollback               // XA ROLLBACK
	XARecover                // XA RECOVER
	XAOther                  // XA followed by anything else
)

// String names the XA kind for logs.
func (k XAKind) String() string {
	switch k {
	case XANone:
		return "none"
	case XAStart:
		return "start"
	case XAEnd:
		return "end"
	case XAPrepare:
		return "prepare"
	case XACommit:
		return "commit"
	case XARollback:
		return "rollback"
	case XARecover:
		return "recover"
	case XAOther:
		return "other"
	}
	return "xa(" + strconv.Itoa(int(k)) + ")"
}
