package proxy

import (
	"context"
	"errors"
	"strconv"
	"strings"

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
	state   string // SQLSTATE of an error, when known
}

// replayDiagnostics gives connection c the session's diagnostics before a
// statement that reads them in a form tpproxy does not answer itself
// (SELECT @@warning_count + 0, GET DIAGNOSTICS, ...), unless it is the
// session's pinned connection and holds them already. The session's copy
// is what counts: a single warning or error is raised again with SIGNAL,
// which puts exactly it in the diagnostics area; otherwise the area is
// emptied of whatever another session left there. Several conditions or a
// note cannot be raised alike (SIGNAL makes one condition per statement
// and no notes), so then the statement sees none (a documented limit).
func (s *Session) replayDiagnostics(ctx context.Context, c *pool.Conn) error {
	if s.ownsDiagnostics() {
		return nil
	}
	if len(s.diag) == 1 && (s.diag[0].level == "Warning" || s.diag[0].level == "Error") {
		d := s.diag[0]
		state := "01000"
		if d.level == "Error" {
			state = d.state
			if len(state) != 5 || strings.HasPrefix(state, "00") || strings.HasPrefix(state, "01") {
				state = "HY000"
			}
		}
		_, err := c.Exec(ctx, "SIGNAL SQLSTATE '"+state+"' SET MYSQL_ERRNO = "+strconv.Itoa(int(d.code))+
			", MESSAGE_TEXT = "+hexLiteral(d.message))
		var me *mysqlwire.Error
		if err != nil && !(errors.As(err, &me) && d.level == "Error") {
			return err
		}
		c.SetDiagOwner(s.state.Owner)
		return nil
	}
	if _, err := c.Exec(ctx, clearDiagnosticsSQL); err != nil {
		return err
	}
	c.SetDiagOwner(0)
	return nil
}

// hexLiteral renders s as X'...', which reads the same in every sql_mode.
func hexLiteral(s string) string {
	if s == "" {
		return "''"
	}
	const hexdigits = "0123456789abcdef"
	b := make([]byte, 0, 3+2*len(s))
	b = append(b, "X'"...)
	for i := 0; i < len(s); i++ {
		b = append(b, hexdigits[s[i]>>4], hexdigits[s[i]&15])
	}
	return string(append(b, '\''))
}

// notFixedDec is the "decimals" the server declares for string columns.
const notFixedDec = 39

// clearDiagnosticsSQL empties the diagnostics area. It must touch a table:
// MariaDB keeps the warning list across statements that use none.
const clearDiagnosticsSQL = "DO (SELECT 1 FROM information_schema.ENGINES LIMIT 0)"

// ownsDiagnostics reports whether the session's pinned backend holds the
// session's own latest diagnostics, so diagnostics statements can go there.
func (s *Session) ownsDiagnostics() bool {
	return !s.diagLocal && s.pinned != nil && s.pinned.DiagOwner() == s.state.Owner
}

// noteDiagnostics updates the session's diagnostics after a statement on c
// that leaves c (released) when keep is false.
func (s *Session) noteDiagnostics(ctx context.Context, c *pool.Conn, res *result, info *sqlscan.Info, keep bool) {
	if info.Flags&sqlscan.FlagDiagnostics != 0 && !info.Multi {
		return // reading diagnostics leaves them as they are
	}
	if res.warnings == 0 && res.err == nil && tableless(info) {
		// The server keeps the previous statement's conditions across a
		// statement that raises none and opens no table.
		return
	}
	s.diag = s.diag[:0]
	s.warningCount = 0
	s.diagLocal = false
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
		d := diagnostic{level: string(f[0]), code: uint16(code), message: string(f[2])}
		if res.err != nil && d.code == res.err.Code {
			d.state = res.err.State
		}
		s.diag = append(s.diag, d)
		return nil
	})
	if err != nil {
		s.debug("could not copy diagnostics", "err", err)
	}
	if n := uint16(len(s.diag)); n > s.warningCount {
		s.warningCount = n
	}
}

// resultCharset is how the server declares text columns it builds
// itself: in the default collation of character_set_results (the system
// character set, utf8mb3, when it is NULL), with lengths in characters
// times maxLen bytes.
func (s *Session) resultCharset() (id uint16, maxLen uint32) {
	cs, _ := s.state.Var("character_set_results")
	if cs == "" {
		cs = "utf8mb3"
	}
	return s.srv.chars.charset(context.Background(), s.pool, cs)
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
func (s *Session) answerDiagnostics(info *sqlscan.Info) (rows uint64, err error) {
	switch info.Local {
	case sqlscan.LocalWarningCount:
		return 1, s.writeNumber(info.LocalExpr, colCount, uint64(s.warningCount), s.status())
	case sqlscan.LocalErrorCount:
		return 1, s.writeNumber(info.LocalExpr, colCount, s.errorCount(), s.status())
	case sqlscan.LocalCountWarnings:
		return 1, s.writeNumber([]byte("@@session.warning_count"), colCount, uint64(s.warningCount), s.status())
	case sqlscan.LocalCountErrors:
		return 1, s.writeNumber([]byte("@@session.error_count"), colCount, s.errorCount(), s.status())
	}
	w := s.w
	w.Begin()
	w.AppendLenEncInt(3)
	if err := w.End(); err != nil {
		return 0, err
	}
	cs, maxLen := s.resultCharset()
	cols := [...]mysqlwire.Column{
		{Name: []byte("Level"), Charset: cs, Length: 7 * maxLen, Type: mysqlwire.TypeVarString, Flags: mysqlwire.FlagNotNull, Decimals: notFixedDec},
		{Name: []byte("Code"), Charset: 63, Length: 4, Type: mysqlwire.TypeLong, Flags: mysqlwire.FlagNotNull | mysqlwire.FlagUnsigned | mysqlwire.FlagBinary},
		{Name: []byte("Message"), Charset: cs, Length: 512 * maxLen, Type: mysqlwire.TypeVarString, Flags: mysqlwire.FlagNotNull, Decimals: notFixedDec},
	}
	for _, c := range cols {
		if err := w.WriteColumn(c); err != nil {
			return 0, err
		}
	}
	if err := w.WriteEOF(0, s.status()); err != nil {
		return 0, err
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
			return sent, err
		}
	}
	return sent, w.WriteEOF(0, s.status())
}
