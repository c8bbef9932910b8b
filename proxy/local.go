package proxy

import (
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// answerLocal answers, from the session's own record, the exact statements
// a backend would answer with its own connection's values: CONNECTION_ID(),
// LAST_INSERT_ID(), ROW_COUNT(), FOUND_ROWS() and the diagnostics forms.
// ok is false when the statement must go to the backend after all (the
// session's pinned connection holds the value).
func (s *Session) answerLocal(info *sqlscan.Info) (ok bool, err error) {
	rows := uint64(1)
	switch info.Local {
	case sqlscan.LocalConnectionID:
		err = s.writeNumber(info.LocalExpr, colConnectionID, uint64(s.connID), s.status())
	case sqlscan.LocalLastInsertID:
		err = s.writeNumber(info.LocalExpr, colLastInsertID, s.lastInsertID, s.status())
	case sqlscan.LocalRowCount:
		err = s.writeSigned(info.LocalExpr, s.rowCount, s.status())
	case sqlscan.LocalFoundRows:
		if s.pins&pinFoundRows != 0 || s.found.onConn && s.pinned != nil {
			return false, nil // SQL_CALC_FOUND_ROWS counted on the pinned connection
		}
		err = s.writeSigned(info.LocalExpr, int64(s.found.n), s.status())
	default:
		if s.ownsDiagnostics() {
			return false, nil
		}
		cs, maxLen := s.resultCharset()
		_, err = s.diag.answer(&s.clientConn, info, cs, maxLen, s.status())
	}
	// A statement the server would have run: it returned a result set,
	// so ROW_COUNT() becomes -1, and a SELECT sets FOUND_ROWS() to its
	// number of rows (SHOW WARNINGS and SHOW ERRORS leave it).
	s.rowCount = -1
	if info.Local != sqlscan.LocalShowWarnings && info.Local != sqlscan.LocalShowErrors {
		s.found.n, s.found.onConn = rows, false
	}
	if s.pins&pinFoundRows != 0 && s.pinned != nil {
		s.setPinned(s.pinned, s.pins&^pinFoundRows)
	}
	return true, err
}

// Column definitions the server sends for the values tpproxy answers
// itself (MariaDB 10.11 and MySQL 8 agree on them).
var (
	// CONNECTION_ID(): INT UNSIGNED NOT NULL, display width 10.
	colConnectionID = mysqlwire.Column{Charset: 63, Length: 10, Type: mysqlwire.TypeLong,
		Flags: mysqlwire.FlagNotNull | mysqlwire.FlagUnsigned | mysqlwire.FlagBinary}
	// LAST_INSERT_ID(): BIGINT UNSIGNED NOT NULL.
	colLastInsertID = mysqlwire.Column{Charset: 63, Length: 21, Type: mysqlwire.TypeLongLong,
		Flags: mysqlwire.FlagNotNull | mysqlwire.FlagUnsigned | mysqlwire.FlagBinary}
	// ROW_COUNT(), FOUND_ROWS(): BIGINT NOT NULL.
	colSigned = mysqlwire.Column{Charset: 63, Length: 21, Type: mysqlwire.TypeLongLong,
		Flags: mysqlwire.FlagNotNull | mysqlwire.FlagBinary}
	// @@warning_count, @@error_count: BIGINT UNSIGNED, nullable.
	colCount = mysqlwire.Column{Charset: 63, Length: 21, Type: mysqlwire.TypeLongLong,
		Flags: mysqlwire.FlagUnsigned | mysqlwire.FlagBinary}
)
