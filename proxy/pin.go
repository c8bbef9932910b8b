package proxy

import (
	"math/bits"
	"strings"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
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

// pinEvent is what one statement's answer told about the session: the
// facts its next pins follow from. The session gathers them (some take a
// query on the connection); next turns them into pins without side
// effects.
type pinEvent struct {
	// hasStatus: the answer ended in an OK or EOF whose status is status.
	hasStatus bool
	status    uint16
	// failed: the answer ended in ERR.
	failed bool
	// autocommitOff: the session runs with autocommit=0.
	autocommitOff bool
	// flags is what the classifier saw in the statement; routineFlags in
	// the stored routines, triggers or views it ran (routine).
	flags        sqlscan.Flags
	routine      bool
	routineFlags sqlscan.Flags
	// xa: an XA transaction is active or prepared after the statement.
	xa bool
	// unknownChange: the server changed session state tpproxy could not
	// name or read back (it pins for good).
	unknownChange bool
	// unreplayable: the client set a variable tpproxy cannot replay.
	unreplayable bool
	// settings are the pins the session's settings imply now (profiling,
	// optimizer_trace, sql_auto_is_null).
	settings pinReason
	// chistics: SET TRANSACTION characteristics are pending on the
	// connection.
	chistics bool
	// cursors: a prepared statement's cursor is open.
	cursors bool
	// foundRowsKept: the statement's SQL_CALC_FOUND_ROWS count is recorded
	// by the session; FOUND_ROWS() need not be read on this connection.
	foundRowsKept bool
}

// next is the pins after a statement, from the pins before it (p) and
// what its answer told (ev). Status-driven pins follow the status flags
// (a transaction); statement-driven ones follow the statement (LOCK
// TABLES until UNLOCK TABLES, XA, cursors, pending characteristics);
// one-statement pins (FOUND_ROWS) last for the next statement only;
// sticky pins, once set, stay: only a reset of the session ends them.
func (p pinReason) next(ev *pinEvent) pinReason {
	pins := p &^ nextStatementPins
	switch {
	case ev.hasStatus:
		if ev.status&mysqlwire.StatusInTrans != 0 {
			pins |= pinTransaction
		} else {
			pins &^= pinTransaction
		}
		// autocommit=0 is session state like any other: only the
		// transaction a statement opens pins (IN_TRANS above).
		pins &^= pinAutocommitOff
	case ev.failed && ev.autocommitOff:
		// An ERR carries no status: under autocommit=0 the failed
		// statement may have opened a transaction. Stay until a status
		// says.
		pins |= pinAutocommitOff
	}
	if !ev.failed {
		if ev.flags&sqlscan.FlagLockTables != 0 {
			pins |= pinLockTables
		}
		if ev.flags&sqlscan.FlagUnlockTables != 0 && ev.flags&sqlscan.FlagLockTables == 0 {
			pins &^= pinLockTables
		}
	}
	pins |= stickyPinsOf(ev.flags)
	if ev.routine {
		pins |= pinRoutine | stickyPinsOf(ev.routineFlags)
	}
	pins = setIf(pins, pinXA, ev.xa)
	if ev.unknownChange {
		pins |= pinStateChange
	}
	if ev.unreplayable {
		pins |= pinUnreplayableVar
	}
	// Settings pins follow the settings, except profiling: the server
	// keeps the profiles it recorded until the session is reset.
	pins = pins&^(pinProfiling|pinAutoIsNull) | ev.settings | p&pinProfiling
	pins = setIf(pins, pinNextTransaction, ev.chistics)
	if ev.flags&sqlscan.FlagCalcFoundRows != 0 && !ev.foundRowsKept {
		pins |= pinFoundRows
	}
	return setIf(pins, pinCursor, ev.cursors)
}

// setIf sets or clears r in pins.
func setIf(pins, r pinReason, on bool) pinReason {
	if on {
		return pins | r
	}
	return pins &^ r
}

// sticky reports pins that make the connection need a reset before anyone
// else uses it.
func (p pinReason) sticky() bool { return p&stickyPins != 0 }
