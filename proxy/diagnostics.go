package proxy

import (
	"context"
	"errors"
	"strconv"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/sqlscan"
	"github.com/tpproxy/tpproxy/pool"
)

// Diagnostics (SHOW WARNINGS and friends) describe the previous statement
// on the server connection. A session that gives its backend back after a
// statement with warnings or an error keeps a copy of them, taken with
// SHOW WARNINGS on that backend before release, so that it neither holds
// a backend while its client thinks nor sees what another session left on
// the next one. The exact forms are answered from the copy; other
// diagnostics statements run on a backend whose diagnostics area is first
// cleared of other sessions' conditions.

// diagnostic is one row of SHOW WARNINGS.
type diagnostic struct {
	level   string
	code    uint16
	message string
}

// notFixedDec is the "decimals" the server declares for string columns.
const notFixedDec = 39

// clearDiagnosticsSQL empties the diagnostics area. It must touch a table:
// MariaDB keeps the warning list across statements that use none.
const clearDiagnosticsSQL = "DO (SELECT 1 FROM information_schema.ENGINES LIMIT 0)"

// ownsDiagnostics reports whether the session's pinned backend holds the
// session's own latest diagnostics, so diagnostics statements can go there.
func (s *Session) ownsDiagnostics() bool {
	return s.pinned != nil && s.pinned.DiagOwner() == s.state.Owner
}

// noteDiagnostics updates the session's diagnostics after a statement on c
// that leaves c (released) when keep is false.
func (s *Session) noteDiagnostics(ctx context.Context, c *pool.Conn, res *result, info *sqlscan.Info, keep bool) {
	if info.Flags&sqlscan.FlagDiagnostics != 0 && !info.Multi {
		return // reading diagnostics leaves them as they are
	}
	s.diag = s.diag[:0]
	s.warningCount = 0
	if res.warnings == 0 && res.err == nil {
		return
	}
	c.SetDiagOwner(s.state.Owner)
	if keep {
		return // the pinned backend holds them
	}
	s.warningCount = res.warnings
	err := c.Query(ctx, "SHOW WARNINGS", func(row []byte) error {
		f, err := mysqlwire.RowValues(nil, row)
		if err != nil || len(f) != 3 {
			return errors.Join(err, mysqlwire.ErrMalformed)
		}
		code, _ := strconv.ParseUint(string(f[1]), 10, 16)
		s.diag = append(s.diag, diagnostic{level: string(f[0]), code: uint16(code), message: string(f[2])})
		return nil
	})
	if err != nil {
		s.logger().Debug("could not copy diagnostics", "err", err)
	}
	if n := uint16(len(s.diag)); n > s.warningCount {
		s.warningCount = n
	}
}

// resultCharset is the collation id text columns the proxy builds are
// declared in: the client's own.
func (s *Session) resultCharset() uint16 {
	if s.collationID != 0 {
		return s.collationID
	}
	return defaultCollationID
}

// errorCount is @@error_count of the session's last statement.
func (s *Session) errorCount() uint64 {
	var n uint64
	for _, d := range s.diag {
		if d.level == "Error" {
			n++
		}
	}
	return n
}

// answerDiagnostics answers SHOW WARNINGS, SHOW ERRORS, SHOW COUNT(*) ... and
// SELECT @@warning_count / @@error_count from the session's copy.
func (s *Session) answerDiagnostics(info *sqlscan.Info) error {
	switch info.Local {
	case sqlscan.LocalWarningCount:
		return s.writeNumber(info.LocalExpr, 10, true, uint64(s.warningCount))
	case sqlscan.LocalErrorCount:
		return s.writeNumber(info.LocalExpr, 10, true, s.errorCount())
	case sqlscan.LocalCountWarnings:
		return s.writeNumber([]byte("@@session.warning_count"), 10, true, uint64(s.warningCount))
	case sqlscan.LocalCountErrors:
		return s.writeNumber([]byte("@@session.error_count"), 10, true, s.errorCount())
	}
	w := s.w
	w.Begin()
	w.AppendLenEncInt(3)
	if err := w.End(); err != nil {
		return err
	}
	cols := [...]mysqlwire.Column{
		{Name: []byte("Level"), Charset: s.resultCharset(), Length: 7 * 4, Type: mysqlwire.TypeVarString, Flags: mysqlwire.FlagNotNull, Decimals: notFixedDec},
		{Name: []byte("Code"), Charset: 63, Length: 4, Type: mysqlwire.TypeLong, Flags: mysqlwire.FlagNotNull | mysqlwire.FlagUnsigned | mysqlwire.FlagBinary},
		{Name: []byte("Message"), Charset: s.resultCharset(), Length: 512 * 4, Type: mysqlwire.TypeVarString, Flags: mysqlwire.FlagNotNull, Decimals: notFixedDec},
	}
	for _, c := range cols {
		if err := w.WriteColumn(c); err != nil {
			return err
		}
	}
	if err := w.WriteEOF(0, s.status()); err != nil {
		return err
	}
	var skipped, sent uint64
	var num [8]byte
	for _, d := range s.diag {
		if info.Local == sqlscan.LocalShowErrors && d.level != "Error" {
			continue
		}
		if skipped < info.LimitOffset {
			skipped++
			continue
		}
		if sent == info.LimitCount {
			break
		}
		sent++
		w.Begin()
		w.AppendLenEncString([]byte(d.level))
		w.AppendLenEncString(strconv.AppendUint(num[:0], uint64(d.code), 10))
		w.AppendLenEncString([]byte(d.message))
		if err := w.End(); err != nil {
			return err
		}
	}
	return w.WriteEOF(0, s.status())
}
