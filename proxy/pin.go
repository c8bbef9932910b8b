package proxy

import (
	"math/bits"
	"strings"

	"github.com/tpproxy/tpproxy/internal/sqlscan"
)

// pinReason says why a session keeps its backend connection between
// statements. A session is pinned while any reason holds.
type pinReason uint32

const (
	// Pins that end by themselves, learnt from status flags or statements.
	pinTransaction   pinReason = 1 << iota // SERVER_STATUS_IN_TRANS
	pinAutocommitOff                       // autocommit=0: every statement opens a transaction
	pinLockTables                          // LOCK TABLES / FTWRL until UNLOCK TABLES
	pinCursor                              // a prepared statement's cursor is open

	// Sticky pins: the connection holds state tpproxy cannot replay. They
	// last until COM_RESET_CONNECTION, COM_CHANGE_USER or disconnect, and
	// the connection is reset before anyone else uses it.
	pinUserVariable
	pinTempTable
	pinGetLock
	pinSQLPrepare
	pinStateChange // the server reported a session state change tpproxy could not attribute
	pinLastInsertIDExpr
	pinUnreplayableVar // insert_id, session_track_*, ... set by the client
	pinHandler
	pinSequence
	pinXA

	// One-statement pins: the next statement must see this connection.
	pinFoundRows       // SQL_CALC_FOUND_ROWS: FOUND_ROWS() comes next
	pinNextTransaction // SET TRANSACTION without scope applies to the next transaction

	pinReasonEnd
)

const (
	stickyPins = pinUserVariable | pinTempTable | pinGetLock | pinSQLPrepare | pinStateChange |
		pinLastInsertIDExpr | pinUnreplayableVar | pinHandler | pinSequence | pinXA
	nextStatementPins = pinFoundRows | pinNextTransaction
)

var pinNames = [...]string{
	"transaction", "autocommit_off", "lock_tables", "cursor",
	"user_variable", "temporary_table", "get_lock", "sql_prepare", "state_change",
	"last_insert_id_expr", "unreplayable_variable", "handler", "sequence", "xa",
	"found_rows", "next_transaction",
}

// PinReasons lists every pin reason name, for metrics labels.
func PinReasons() []string { return pinNames[:] }

// String lists the reasons, e.g. "transaction,user_variable".
func (r pinReason) String() string {
	if r == 0 {
		return ""
	}
	if r&(r-1) == 0 {
		// One reason (the usual case: a transaction) costs no allocation.
		return pinNames[bits.TrailingZeros32(uint32(r))]
	}
	var b strings.Builder
	for i := range pinNames {
		if r&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(pinNames[i])
		}
	}
	return b.String()
}

// stickyPinsOf maps what the classifier saw in a statement to the sticky
// pins it implies.
func stickyPinsOf(f sqlscan.Flags) pinReason {
	var r pinReason
	if f&sqlscan.FlagUserVar != 0 {
		r |= pinUserVariable
	}
	if f&sqlscan.FlagTempTable != 0 {
		r |= pinTempTable
	}
	if f&sqlscan.FlagGetLock != 0 {
		r |= pinGetLock
	}
	if f&sqlscan.FlagSQLPrepare != 0 {
		r |= pinSQLPrepare
	}
	if f&sqlscan.FlagLastInsertIDArg != 0 {
		r |= pinLastInsertIDExpr
	}
	if f&(sqlscan.FlagInsertIDVar|sqlscan.FlagSessionTrackVar) != 0 {
		r |= pinUnreplayableVar
	}
	if f&sqlscan.FlagHandler != 0 {
		r |= pinHandler
	}
	if f&sqlscan.FlagSequence != 0 {
		r |= pinSequence
	}
	if f&sqlscan.FlagXA != 0 {
		r |= pinXA
	}
	return r
}
