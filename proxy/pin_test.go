package proxy

import (
	"math/bits"
	"testing"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// ok is the answer of a plain statement outside a transaction.
func ok() pinEvent { return pinEvent{hasStatus: true} }

// TestPinNext runs pinReason.next over every pin reason: how it starts,
// what keeps it and what ends it.
func TestPinNext(t *testing.T) {
	inTrans := pinEvent{hasStatus: true, status: mysqlwire.StatusInTrans}
	failed := pinEvent{failed: true}
	with := func(ev pinEvent, f func(*pinEvent)) pinEvent { f(&ev); return ev }
	flags := func(f sqlscan.Flags) pinEvent { return with(ok(), func(e *pinEvent) { e.flags = f }) }

	for _, tc := range []struct {
		name   string
		before pinReason
		ev     pinEvent
		want   pinReason
	}{
		{"nothing", 0, ok(), 0},
		{"no status, no error", 0, pinEvent{}, 0},

		// Status-driven.
		{"transaction starts", 0, inTrans, pinTransaction},
		{"transaction goes on", pinTransaction, inTrans, pinTransaction},
		{"transaction ends", pinTransaction, ok(), 0},
		{"an error without status keeps the transaction", pinTransaction, failed, pinTransaction},
		{"autocommit=0 error without status pins", 0, with(failed, func(e *pinEvent) { e.autocommitOff = true }), pinAutocommitOff},
		{"autocommit=0 error pin ends with a status", pinAutocommitOff, ok(), 0},
		{"autocommit=0 error pin becomes the transaction", pinAutocommitOff, inTrans, pinTransaction},
		{"autocommit=0 without error does not pin", 0, with(ok(), func(e *pinEvent) { e.autocommitOff = true }), 0},
		{"autocommit=1 error does not pin", 0, failed, 0},

		// Statement-driven.
		{"LOCK TABLES", 0, flags(sqlscan.FlagLockTables), pinLockTables},
		{"LOCK TABLES that failed", 0, with(failed, func(e *pinEvent) { e.flags = sqlscan.FlagLockTables }), 0},
		{"locks held over other statements", pinLockTables, ok(), pinLockTables},
		{"UNLOCK TABLES", pinLockTables, flags(sqlscan.FlagUnlockTables), 0},
		{"UNLOCK TABLES that failed", pinLockTables, with(failed, func(e *pinEvent) { e.flags = sqlscan.FlagUnlockTables }), pinLockTables},
		{"UNLOCK then LOCK in one multi-statement", pinLockTables, flags(sqlscan.FlagUnlockTables | sqlscan.FlagLockTables), pinLockTables},
		{"XA starts", 0, with(ok(), func(e *pinEvent) { e.xa = true }), pinXA},
		{"XA ends", pinXA, ok(), 0},
		{"cursor opens", 0, with(ok(), func(e *pinEvent) { e.cursors = true }), pinCursor},
		{"last cursor closed", pinCursor, ok(), 0},
		{"characteristics pending", 0, with(ok(), func(e *pinEvent) { e.chistics = true }), pinNextTransaction},
		{"characteristics used", pinNextTransaction, ok(), 0},

		// Settings.
		{"sql_auto_is_null on", 0, with(ok(), func(e *pinEvent) { e.settings = pinAutoIsNull }), pinAutoIsNull},
		{"sql_auto_is_null off", pinAutoIsNull, ok(), 0},
		{"profiling on", 0, with(ok(), func(e *pinEvent) { e.settings = pinProfiling }), pinProfiling},
		{"profiling stays after it is turned off", pinProfiling, ok(), pinProfiling},

		// One statement.
		{"SQL_CALC_FOUND_ROWS", 0, flags(sqlscan.FlagCalcFoundRows), pinFoundRows},
		{"SQL_CALC_FOUND_ROWS counted by the session", 0, with(flags(sqlscan.FlagCalcFoundRows), func(e *pinEvent) { e.foundRowsKept = true }), 0},
		{"FOUND_ROWS pin lasts one statement", pinFoundRows, ok(), 0},
		{"FOUND_ROWS pin ends inside a transaction too", pinFoundRows | pinTransaction, inTrans, pinTransaction},

		// Sticky: from the statement, a routine, or the answer.
		{"user variable", 0, flags(sqlscan.FlagUserVar), pinUserVariable},
		{"temporary table", 0, flags(sqlscan.FlagTempTable), pinTempTable},
		{"GET_LOCK", 0, flags(sqlscan.FlagGetLock), pinGetLock},
		{"PREPARE", 0, flags(sqlscan.FlagSQLPrepare), pinSQLPrepare},
		{"insert_id", 0, flags(sqlscan.FlagInsertIDVar), pinUnreplayableVar},
		{"session_track_*", 0, flags(sqlscan.FlagSessionTrackVar), pinUnreplayableVar},
		{"HANDLER", 0, flags(sqlscan.FlagHandler), pinHandler},
		{"sequence", 0, flags(sqlscan.FlagSequence), pinSequence},
		{"sticky even when the statement failed", 0, with(failed, func(e *pinEvent) { e.flags = sqlscan.FlagUserVar }), pinUserVariable},
		{"stored routine", 0, with(ok(), func(e *pinEvent) { e.routine = true }), pinRoutine},
		{"stored routine's own statements", 0, with(ok(), func(e *pinEvent) { e.routine, e.routineFlags = true, sqlscan.FlagTempTable }), pinRoutine | pinTempTable},
		{"routine flags without a routine", 0, with(ok(), func(e *pinEvent) { e.routineFlags = sqlscan.FlagTempTable }), 0},
		{"unnamed state change", 0, with(ok(), func(e *pinEvent) { e.unknownChange = true }), pinStateChange},
		{"unreplayable variable", 0, with(ok(), func(e *pinEvent) { e.unreplayable = true }), pinUnreplayableVar},
		{"sticky pins stay over a commit", stickyPins | pinTransaction, ok(), stickyPins},
		{"sticky pins stay over an error", stickyPins, failed, stickyPins},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := tc.ev
			if got := tc.before.next(&ev); got != tc.want {
				t.Errorf("%q.next = %q, want %q", tc.before, got, tc.want)
			}
			if ev != tc.ev {
				t.Errorf("next changed its event: %+v", ev)
			}
		})
	}
}

// TestPinNextCoversEveryReason checks that every reason can be started by
// some event, so a reason added without a rule fails here.
func TestPinNextCoversEveryReason(t *testing.T) {
	events := []pinEvent{
		{hasStatus: true, status: mysqlwire.StatusInTrans},
		{failed: true, autocommitOff: true},
		{hasStatus: true, xa: true, cursors: true, chistics: true, unknownChange: true, unreplayable: true,
			settings: pinProfiling | pinAutoIsNull, routine: true,
			flags: sqlscan.FlagLockTables | sqlscan.FlagCalcFoundRows | sqlscan.FlagUserVar | sqlscan.FlagTempTable |
				sqlscan.FlagGetLock | sqlscan.FlagSQLPrepare | sqlscan.FlagHandler | sqlscan.FlagSequence},
	}
	var seen pinReason
	for i := range events {
		seen |= pinReason(0).next(&events[i])
	}
	for r := pinReason(1); r < pinReasonEnd; r <<= 1 {
		if seen&r == 0 {
			t.Errorf("no event starts pin %q", r)
		}
	}
	if n := bits.TrailingZeros32(uint32(pinReasonEnd)); n != len(pinNames) {
		t.Errorf("%d pin reasons, %d names", n, len(pinNames))
	}
}

// TestPinStickiness: a sticky pin survives a plain statement; a non-sticky
// one ends unless the statement's answer holds it (LOCK TABLES lasts until
// UNLOCK TABLES, profiling until a reset).
func TestPinStickiness(t *testing.T) {
	for r := pinReason(1); r < pinReasonEnd; r <<= 1 {
		ev := ok()
		got := r.next(&ev)
		switch {
		case r.sticky() && got != r:
			t.Errorf("sticky %q after a plain statement: %q", r, got)
		case !r.sticky() && r != pinProfiling && r != pinLockTables && got != 0:
			t.Errorf("%q after a plain statement: %q, want none", r, got)
		}
		if r.sticky() != (r&stickyPins != 0) {
			t.Errorf("%q: sticky() disagrees with stickyPins", r)
		}
	}
}

func TestPinString(t *testing.T) {
	for _, tc := range []struct {
		r    pinReason
		want string
	}{
		{0, ""},
		{pinTransaction, "transaction"},
		{pinTransaction | pinUserVariable, "transaction,user_variable"},
		{pinRoutine, "stored_routine"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("%d: %q, want %q", tc.r, got, tc.want)
		}
	}
}

// TestXAAfter follows the XA state through every kind of XA statement.
func TestXAAfter(t *testing.T) {
	okRes, errRes := &result{}, &result{err: &mysqlwire.Error{Code: 1399}}
	xa := func(k sqlscan.XAKind) *sqlscan.Info { return &sqlscan.Info{Flags: sqlscan.FlagXA, XA: k} }
	for _, tc := range []struct {
		name   string
		before xaState
		info   *sqlscan.Info
		res    *result
		want   xaState
	}{
		{"not XA", xaActive, &sqlscan.Info{}, okRes, xaActive},
		{"XA START", xaNone, xa(sqlscan.XAStart), okRes, xaActive},
		{"XA START failed", xaNone, xa(sqlscan.XAStart), errRes, xaNone},
		{"XA END", xaActive, xa(sqlscan.XAEnd), okRes, xaActive},
		{"XA PREPARE", xaActive, xa(sqlscan.XAPrepare), okRes, xaPrepared},
		{"XA START after PREPARE keeps the prepared branch", xaPrepared, xa(sqlscan.XAStart), okRes, xaPrepared},
		{"XA COMMIT", xaPrepared, xa(sqlscan.XACommit), okRes, xaNone},
		{"XA ROLLBACK", xaActive, xa(sqlscan.XARollback), okRes, xaNone},
		{"XA COMMIT after a multi-statement XA", xaUnknown, xa(sqlscan.XACommit), okRes, xaUnknown},
		{"XA in a multi-statement query", xaNone, &sqlscan.Info{Flags: sqlscan.FlagXA, Multi: true}, okRes, xaUnknown},
	} {
		if got := tc.before.after(tc.info, tc.res); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
