package proxy

import (
	"strconv"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/sqlscan"
)

// answerLocal answers the exact forms SELECT CONNECTION_ID(),
// SELECT LAST_INSERT_ID() and SELECT ROW_COUNT() from the session's own
// record: a backend would answer with its own connection's values.
func (s *Session) answerLocal(info *sqlscan.Info) error {
	var buf [24]byte
	var val []byte
	col := mysqlwire.Column{Name: info.LocalExpr, Charset: 63, Type: mysqlwire.TypeLongLong,
		Flags: mysqlwire.FlagNotNull | mysqlwire.FlagBinary}
	switch info.Local {
	case sqlscan.LocalConnectionID:
		col.Length, col.Flags = 10, col.Flags|mysqlwire.FlagUnsigned
		val = strconv.AppendUint(buf[:0], uint64(s.id), 10)
	case sqlscan.LocalLastInsertID:
		col.Length, col.Flags = 21, col.Flags|mysqlwire.FlagUnsigned
		val = strconv.AppendUint(buf[:0], s.lastInsertID, 10)
	default:
		col.Length = 21
		val = strconv.AppendInt(buf[:0], s.rowCount, 10)
	}
	s.afterLocal()
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

// afterLocal does for a locally answered SELECT what the server would:
// the previous statement's diagnostics and one-statement state are gone,
// and ROW_COUNT() becomes -1.
func (s *Session) afterLocal() {
	s.rowCount = -1
	if s.pinned != nil && s.pins&nextStatementPins != 0 {
		s.setPinned(s.pinned, s.pins&^nextStatementPins)
	}
}
