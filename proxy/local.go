package proxy

import (
	"strconv"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/sqlscan"
)

// answerLocal answers, from the session's own record, the exact statements
// a backend would answer with its own connection's values: CONNECTION_ID(),
// LAST_INSERT_ID(), ROW_COUNT(), FOUND_ROWS() and the diagnostics forms.
// ok is false when the statement must go to the backend after all (the
// session's pinned connection holds the value).
func (s *Session) answerLocal(info *sqlscan.Info) (ok bool, err error) {
	switch info.Local {
	case sqlscan.LocalConnectionID:
		err = s.writeNumber(info.LocalExpr, 10, true, uint64(s.id))
	case sqlscan.LocalLastInsertID:
		if s.pins&pinLastInsertIDExpr != 0 {
			return false, nil // LAST_INSERT_ID(expr) set it on the pinned connection
		}
		err = s.writeNumber(info.LocalExpr, 21, true, s.lastInsertID)
	case sqlscan.LocalRowCount:
		err = s.writeSigned(info.LocalExpr, s.rowCount)
	case sqlscan.LocalFoundRows:
		if s.pins&pinFoundRows != 0 {
			return false, nil // SQL_CALC_FOUND_ROWS counted on the pinned connection
		}
		err = s.writeNumber(info.LocalExpr, 21, true, s.foundRows)
	default:
		if s.ownsDiagnostics() {
			return false, nil
		}
		return true, s.answerDiagnostics(info)
	}
	// A SELECT the server would have run: ROW_COUNT() becomes -1 and
	// FOUND_ROWS() 1, the one row returned.
	s.rowCount = -1
	s.foundRows = 1
	if s.pins&pinFoundRows != 0 && s.pinned != nil {
		s.setPinned(s.pinned, s.pins&^pinFoundRows)
	}
	return true, err
}

// writeNumber sends a one-row, one-column result set holding an unsigned
// BIGINT.
func (s *Session) writeNumber(name []byte, length uint32, unsigned bool, v uint64) error {
	var buf [24]byte
	flags := mysqlwire.FlagNotNull | mysqlwire.FlagBinary
	if unsigned {
		flags |= mysqlwire.FlagUnsigned
	}
	return s.writeValue(mysqlwire.Column{Name: name, Charset: 63, Length: length, Type: mysqlwire.TypeLongLong, Flags: flags},
		strconv.AppendUint(buf[:0], v, 10))
}

// writeSigned sends a one-row, one-column result set holding a BIGINT.
func (s *Session) writeSigned(name []byte, v int64) error {
	var buf [24]byte
	return s.writeValue(mysqlwire.Column{Name: name, Charset: 63, Length: 21, Type: mysqlwire.TypeLongLong,
		Flags: mysqlwire.FlagNotNull | mysqlwire.FlagBinary}, strconv.AppendInt(buf[:0], v, 10))
}

func (s *Session) writeValue(col mysqlwire.Column, val []byte) error {
	w := s.w
	w.Begin()
	w.AppendLenEncInt(1)
	if err := w.End(); err != nil {
		return err
	}
	if err := w.WriteColumn(col); err != nil {
		return err
	}
	if err := w.WriteEOF(0, s.status()); err != nil {
		return err
	}
	w.Begin()
	w.AppendLenEncString(val)
	if err := w.End(); err != nil {
		return err
	}
	return w.WriteEOF(0, s.status())
}
