package proxy

import (
	"context"
	"slices"
	"strings"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// What a SET did. The server's session tracking reports a SET's changes
// for some forms only: MariaDB 10.11 sends no report (and no
// SERVER_SESSION_STATE_CHANGED) for SET @@name = value, and a
// multi-statement query's OKs each report their own statement's changes,
// not the final values. So a SET's effect is taken from the statement:
// every session variable it assigns (sqlscan.SetAssignments) that the
// server did not report is read back from the connection before anyone
// else can use it; what cannot be read back makes the session pin (the
// connection is reset before reuse). A SET that failed may have applied
// some of its assignments (the server checks them all first, but an
// assignment can still fail when applied): all are read back.

// charsetVars are what SET NAMES and SET CHARACTER SET change.
var charsetVars = [...]string{"character_set_client", "character_set_connection", "character_set_results", "collation_connection"}

// learnSet brings what tpproxy knows of the session and of c to what the
// SET statements of q (a lone SET, or a multi-statement query) left on c.
// It reports whether everything is known; false makes the session pin.
func (s *mirror) learnSet(ctx context.Context, c *pool.Conn, q []byte, res *result, info *sqlscan.Info) bool {
	known := true
	if res.stateChanged && (info.Flags&sqlscan.StatefulMask != 0 || res.routine) {
		// The server changed state tpproxy does not replay (a user
		// variable, a routine's doing): the statement pins anyway.
		known = false
	}
	if res.eofChange && !res.okChange && (res.lockScoped || res.scopedVars != nil) {
		// SET STATEMENT ... FOR SELECT: the restore of its variables
		// comes with a later OK.
		c.NotePendingReports()
	}
	// Reported values are final only for a lone SET that succeeded: in a
	// multi-statement query a later statement may assign a variable again
	// without a report.
	trustReports := !info.Multi && res.err == nil
	var missing []string
	lastDefault := map[string]bool{} // the last assignment of a name is DEFAULT
	charset, sessionTx, role := false, false, false
	sqlscan.SetAssignments(q, s.mode, func(a sqlscan.SetAssign) {
		if a.Special {
			switch strings.ToLower(string(a.Name)) {
			case "names", "character", "charset":
				charset = true
			case "transaction":
				// Without a scope it is for the next transaction
				// (noteChistics); SESSION TRANSACTION lasts.
				sessionTx = sessionTx || a.Session
			case "role":
				role = true
			}
			return
		}
		n := strings.ToLower(string(a.Name))
		lastDefault[n] = a.Default
		switch {
		case n == "last_insert_id" || n == "identity": // see readInsertID
			return
		case a.Default && trustReports: // given back below
			return
		case trustReports && slices.Contains(s.tracked, n), slices.Contains(missing, n):
			return
		case !isPlainName(n) || varClass([]byte(n)) != varReplayable:
			known = false
			return
		}
		missing = append(missing, n)
	})
	if charset && !(trustReports && slices.Contains(s.tracked, "character_set_client")) {
		for _, n := range charsetVars {
			if !slices.Contains(missing, n) {
				missing = append(missing, n)
			}
		}
	}
	if sessionTx {
		for _, n := range s.txVars() {
			if !(trustReports && slices.Contains(s.tracked, n)) && !slices.Contains(missing, n) {
				missing = append(missing, n)
			}
		}
	}
	if i := slices.Index(missing, "timestamp"); i >= 0 {
		// Reading timestamp back gives the clock's value, which replayed
		// would freeze it: a last assignment of DEFAULT (or 0) lets the
		// clock run, anything else froze it at what is read.
		if lastDefault["timestamp"] {
			missing = slices.Delete(missing, i, i+1)
			if res.err != nil {
				known = false // whether the assignment ran is unknown
			} else {
				s.state.DeleteVar("timestamp")
				c.State().DeleteVar("timestamp")
			}
		}
	}
	if trustReports {
		// A name's last assignment of DEFAULT (or timestamp 0) gives it
		// the global value back, whatever the server reported (for
		// timestamp the frozen value, which replayed would freeze NOW()).
		for n, def := range lastDefault {
			if def {
				missing = slices.DeleteFunc(missing, func(m string) bool { return m == n })
				s.state.DeleteVar(n)
				c.State().DeleteVar(n)
			}
		}
	}
	if role && !s.learnRole(ctx, c) {
		known = false
	}
	if len(missing) > 0 && !s.readBack(ctx, c, missing) {
		known = false
	}
	return known
}

// txVars are the server's names for the session's transaction
// characteristics.
func (s *mirror) txVars() []string {
	if s.mode.MariaDB {
		return []string{"tx_isolation", "tx_read_only"}
	}
	return []string{"transaction_isolation", "transaction_read_only"}
}

// readBack reads session variables from c and records them for the
// session and the connection, as if the server had reported them. The
// question opens no table: the statement's diagnostics stay. It reports
// whether every value was read.
func (s *mirror) readBack(ctx context.Context, c *pool.Conn, names []string) bool {
	if s.found.onConn && c == s.pinned {
		// The SELECT below counts a row for FOUND_ROWS(): take the
		// session's count off the connection first.
		if err := s.found.read(ctx, c, s.found.n); err != nil {
			return false
		}
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("@@SESSION.")
		b.WriteString(n)
	}
	// A LIMIT of its own: the session's sql_select_limit (0, say) must not
	// bound what tpproxy reads.
	b.WriteString(" LIMIT 1")
	var values []string
	err := c.Query(ctx, b.String(), func(row []byte) error {
		f, err := mysqlwire.RowValues(nil, row)
		for _, v := range f {
			values = append(values, string(v))
		}
		return err
	})
	if err != nil || len(values) != len(names) {
		s.debug("cannot read back session variables", "vars", names, "err", err)
		return false
	}
	for i, n := range names {
		s.state.SetVar(n, values[i])
		c.State().SetVar(n, values[i])
		s.tracked = append(s.tracked, n)
	}
	return true
}

// checkStatus compares what every OK and EOF says of the session
// (autocommit; NO_BACKSLASH_ESCAPES, and on MariaDB ANSI_QUOTES, of
// sql_mode) with what tpproxy knows, so that a change no report and no
// statement text revealed (a stored procedure's SET @@autocommit, say)
// is learnt before the connection serves anyone else. It reports whether
// what it found is known now.
func (s *mirror) checkStatus(ctx context.Context, c *pool.Conn, res *result) bool {
	if !res.hasStatus {
		return true
	}
	if off := res.status&mysqlwire.StatusAutocommit == 0; off != s.autocommitOff() {
		v := "ON"
		if off {
			v = "OFF"
		}
		s.state.SetVar("autocommit", v)
		c.State().SetVar("autocommit", v)
	}
	if slices.Contains(res.scopedVars, "sql_mode") {
		return true // SET STATEMENT sql_mode = ... FOR: the status is the statement's
	}
	s.refreshDerived()
	nbe := res.status&mysqlwire.StatusNoBackslashEscapes != 0
	ansi := s.mode.MariaDB && res.status&mysqlwire.StatusANSIQuotes != 0
	if nbe == s.mode.NoBackslashEscapes && (!s.mode.MariaDB || ansi == s.mode.AnsiQuotes) {
		return true
	}
	return s.readBack(ctx, c, []string{"sql_mode"})
}
