package sqlscan

// keyword identifies the few words the scanner reacts to; every other word is kwNone.
type keyword uint8

const (
	kwNone keyword = iota

	// Words that start a statement.
	kwAlter
	kwBackup
	kwBegin
	kwCall
	kwCommit
	kwCreate
	kwDeallocate
	kwDelete
	kwDesc
	kwDescribe
	kwDo
	kwDrop
	kwExecute
	kwExplain
	kwFlush
	kwGet
	kwHandler
	kwInsert
	kwKill
	kwLoad
	kwLock
	kwPrepare
	kwRelease
	kwReplace
	kwRollback
	kwSavepoint
	kwSelect
	kwSet
	kwShow
	kwStart
	kwTable
	kwUnlock
	kwUpdate
	kwUse
	kwValues
	kwWith
	kwXA

	// Words that matter after the first one.
	kwConcurrent
	kwConnection
	kwCount
	kwCurrent
	kwData
	kwDiagnostics
	kwErrors
	kwExport
	kwFor
	kwGlobal
	kwHard
	kwID
	kwLocal
	kwLowPriority
	kwNext
	kwNot
	kwNowait
	kwOr
	kwPersist
	kwPersistOnly
	kwPrevious
	kwQuery
	kwRead
	kwSession
	kwSoft
	kwStacked
	kwStage
	kwTables
	kwTemporary
	kwTransaction
	kwUser
	kwValue
	kwWait
	kwWarnings
	kwXML
	kwStatement
	kwRole
	kwDefault
	kwNo
	kwTo
	kwWork
	kwFrom
	kwJoin
	kwEnd
	kwRecover

	// Function names, and SQL_CALC_FOUND_ROWS.
	kwFoundRows
	kwGetLock
	kwLastInsertID
	kwLastval
	kwNextval
	kwReleaseAllLocks
	kwReleaseLock
	kwRowCount
	kwSetval
	kwSQLCalcFoundRows
	kwConnectionID

	// System variable names.
	kwErrorCount
	kwIdentity
	kwPseudoThreadID
	kwInsertID
	kwWarningCount
	kwTxIsolation
	kwTransactionIsolation
	kwTxReadOnly
	kwTransactionReadOnly
)

// maxKeywordLen is the length of the longest keywords, TRANSACTION_ISOLATION and
// TRANSACTION_READ_ONLY.
const maxKeywordLen = 21

// lookup maps a word, in any letter case, to its keyword. It folds into a stack
// buffer so that the string switch compares without allocating.
func lookup(w []byte) keyword {
	if len(w) < 2 || len(w) > maxKeywordLen {
		return kwNone
	}
	var buf [maxKeywordLen]byte
	for i, c := range w {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf[i] = c
	}
	switch string(buf[:len(w)]) {
	case "NOWAIT":
		return kwNowait
	case "WAIT":
		return kwWait
	case "ALTER":
		return kwAlter
	case "BACKUP":
		return kwBackup
	case "BEGIN":
		return kwBegin
	case "CALL":
		return kwCall
	case "COMMIT":
		return kwCommit
	case "CREATE":
		return kwCreate
	case "DEALLOCATE":
		return kwDeallocate
	case "DELETE":
		return kwDelete
	case "DESC":
		return kwDesc
	case "DESCRIBE":
		return kwDescribe
	case "DO":
		return kwDo
	case "DROP":
		return kwDrop
	case "EXECUTE":
		return kwExecute
	case "EXPLAIN":
		return kwExplain
	case "FLUSH":
		return kwFlush
	case "GET":
		return kwGet
	case "HANDLER":
		return kwHandler
	case "INSERT":
		return kwInsert
	case "KILL":
		return kwKill
	case "LOAD":
		return kwLoad
	case "LOCK":
		return kwLock
	case "PREPARE":
		return kwPrepare
	case "RELEASE":
		return kwRelease
	case "REPLACE":
		return kwReplace
	case "ROLLBACK":
		return kwRollback
	case "SAVEPOINT":
		return kwSavepoint
	case "SELECT":
		return kwSelect
	case "SET":
		return kwSet
	case "SHOW":
		return kwShow
	case "START":
		return kwStart
	case "TABLE":
		return kwTable
	case "UNLOCK":
		return kwUnlock
	case "UPDATE":
		return kwUpdate
	case "USE":
		return kwUse
	case "VALUES":
		return kwValues
	case "WITH":
		return kwWith
	case "XA":
		return kwXA

	case "CONCURRENT":
		return kwConcurrent
	case "CONNECTION":
		return kwConnection
	case "COUNT":
		return kwCount
	case "CURRENT":
		return kwCurrent
	case "DATA":
		return kwData
	case "DIAGNOSTICS":
		return kwDiagnostics
	case "ERRORS":
		return kwErrors
	case "EXPORT":
		return kwExport
	case "FOR":
		return kwFor
	case "GLOBAL":
		return kwGlobal
	case "HARD":
		return kwHard
	case "ID":
		return kwID
	case "LOCAL":
		return kwLocal
	case "LOW_PRIORITY":
		return kwLowPriority
	case "NEXT":
		return kwNext
	case "NOT":
		return kwNot
	case "OR":
		return kwOr
	case "PERSIST":
		return kwPersist
	case "PERSIST_ONLY":
		return kwPersistOnly
	case "PREVIOUS":
		return kwPrevious
	case "QUERY":
		return kwQuery
	case "READ":
		return kwRead
	case "SESSION":
		return kwSession
	case "SOFT":
		return kwSoft
	case "STACKED":
		return kwStacked
	case "STAGE":
		return kwStage
	case "TABLES":
		return kwTables
	case "TEMPORARY":
		return kwTemporary
	case "TRANSACTION":
		return kwTransaction
	case "USER":
		return kwUser
	case "VALUE":
		return kwValue
	case "WARNINGS":
		return kwWarnings
	case "XML":
		return kwXML
	case "STATEMENT":
		return kwStatement
	case "ROLE":
		return kwRole
	case "DEFAULT":
		return kwDefault
	case "NO":
		return kwNo
	case "TO":
		return kwTo
	case "WORK":
		return kwWork
	case "FROM":
		return kwFrom
	case "JOIN":
		return kwJoin
	case "END":
		return kwEnd
	case "RECOVER":
		return kwRecover

	case "FOUND_ROWS":
		return kwFoundRows
	case "GET_LOCK":
		return kwGetLock
	case "LAST_INSERT_ID":
		return kwLastInsertID
	case "LASTVAL":
		return kwLastval
	case "NEXTVAL":
		return kwNextval
	case "RELEASE_ALL_LOCKS":
		return kwReleaseAllLocks
	case "RELEASE_LOCK":
		return kwReleaseLock
	case "ROW_COUNT":
		return kwRowCount
	case "SETVAL":
		return kwSetval
	case "SQL_CALC_FOUND_ROWS":
		return kwSQLCalcFoundRows
	case "CONNECTION_ID":
		return kwConnectionID

	case "ERROR_COUNT":
		return kwErrorCount
	case "IDENTITY":
		return kwIdentity
	case "PSEUDO_THREAD_ID":
		return kwPseudoThreadID
	case "INSERT_ID":
		return kwInsertID
	case "WARNING_COUNT":
		return kwWarningCount
	case "TX_ISOLATION":
		return kwTxIsolation
	case "TRANSACTION_ISOLATION":
		return kwTransactionIsolation
	case "TX_READ_ONLY":
		return kwTxReadOnly
	case "TRANSACTION_READ_ONLY":
		return kwTransactionReadOnly
	}
	return kwNone
}

// isScope reports whether kw qualifies a system variable (SET SESSION x, @@global.x).
func isScope(kw keyword) bool {
	switch kw {
	case kwSession, kwGlobal, kwLocal, kwPersist, kwPersistOnly:
		return true
	}
	return false
}

// hasPrefixFold reports whether b starts with the lower-case ASCII prefix p, ignoring
// the case of b.
func hasPrefixFold(b []byte, p string) bool {
	if len(b) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != p[i] {
			return false
		}
	}
	return true
}
