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
	pinAutocommitOff                       // autocommit=0 and a statement failed: whether it opened a transaction is not known yet
	pinLockTables                          // LOCK TABLES / FTWRL until UNLOCK TABLES
	pinCursor                              // a prepared statement's cursor is open
	// pinNextTransaction: SET TRANSACTION without a scope set
	// characteristics for the next transaction; the server holds them on
	// this connection until a statement starts (or would start) one.
	pinNextTransaction
	pinXA         // an XA transaction is active or prepared
	pinAutoIsNull // sql_auto_is_null=1: the next IS NULL reads the insert id of this connection's last INSERT
	pinFoundRows  // SQL_CALC_FOUND_ROWS: FOUND_ROWS() comes next (one statement)

	// Sticky pins: the connection holds state tpproxy cannot replay. They
	// last until COM_RESET_CONNECTION, COM_CHANGE_USER or disconnect, and
	// the connection is reset before anyone else uses it.
	pinUserVariable
	pinTempTable
	pinGetLock
	pinSQLPrepare
	pinStateChange     // the server reported a session state change tpproxy could not attribute
	pinUnreplayableVar // insert_id, pseudo_thread_id, session_track_*, ... set by the client
	pinHandler
	pinSequence
	pinProfiling // profiling or optimizer_trace: the server records this connection's statements
	pinRoutine   // a stored routine, trigger or view that may leave session state ran

	pinReasonEnd
)

const (
	stickyPins = pinUserVariable | pinTempTable | pinGetLock | pinSQLPrepare | pinStateChange |
		pinUnreplayableVar | pinHandler | pinSequence | pinProfiling | pinRoutine
	nextStatementPins = pinFoundRows
)

var pinNames = [...]string{
	"transaction", "autocommit_off", "lock_tables", "cursor",
	"next_transaction", "xa", "sql_auto_is_null", "found_rows",
	"user_variable", "temporary_table", "get_lock", "sql_prepare", "state_change",
	"unreplayable_variable", "handler", "sequence", "profiling", "stored_routine",
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
	if f&(sqlscan.FlagInsertIDVar|sqlscan.FlagSessionTrackVar) != 0 {
		r |= pinUnreplayableVar
	}
	if f&sqlscan.FlagHandler != 0 {
		r |= pinHandler
	}
	if f&sqlscan.FlagSequence != 0 {
		r |= pinSequence
	}
	return r
}
