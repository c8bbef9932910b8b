package proxy

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// Diagnostics (SHOW WARNINGS and friends) describe the previous statement
// on the server connection. A session that gives its backend back after a
// statement with warnings or an error keeps a copy of them, taken with
// SHOW WARNINGS on that backend before release, so that it neither holds
// a backend while its client thinks nor sees what another session left on
// the next one. The exact forms are answered from the copy; other
// diagnostics statements run on a backend whose diagnostics area is first
// cleared of other sessions' conditions.

// diagArea is the session's copy of the diagnostics area: the conditions
// of its last statement and @@warning_count. local: the copy is newer than
// what the pinned connection holds (tpproxy answered an error itself).
type diagArea struct {
	conds        []diagnostic
	warningCount uint16
	local        bool
}

// reset empties the copy.
func (d *diagArea) reset() {
	d.conds = d.conds[:0]
	d.warningCount = 0
	d.local = false
}

// ownError makes an error tpproxy answered itself the only condition.
func (d *diagArea) ownError(e *mysqlwire.Error) {
	d.conds = append(d.conds[:0], diagnostic{level: "Error", code: e.Code, message: e.Message, state: e.State})
	d.warningCount = 1
	d.local = true
}

// diagnostic is one row of SHOW WARNINGS.
type diagnostic struct {
	level   string
	code    uint16
	message string
	state   string // SQLSTATE of an error, when known
}

// replay gives connection c the session's diagnostics (the session
// owner's) before a statement that reads them in a form tpproxy does not
// answer itself (SELECT @@warning_count + 0, GET DIAGNOSTICS, ...). The copy
// is what counts: a single warning or error is raised again with SIGNAL,
// which puts exactly it in the diagnostics area; otherwise the area is
// emptied of whatever another session left there. Several conditions or a
// note cannot be raised alike (SIGNAL makes one condition per statement
// and no notes), so then the statement sees none (a documented limit).
func (a *diagArea) replay(ctx context.Context, c *pool.Conn, owner uint64) error {
	if len(a.conds) == 1 && (a.conds[0].level == "Warning" || a.conds[0].level == "Error") {
		d := a.conds[0]
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
		c.SetDiagOwner(owner)
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
func (s *mirror) ownsDiagnostics() bool {
	return !s.diag.local && s.pinned != nil && s.pinned.DiagOwner() == s.state.Owner
}

// noteDiagnostics updates the session's diagnostics after a statement on c
// that leaves c (released) when keep is false.
func (s *mirror) noteDiagnostics(ctx context.Context, c *pool.Conn, res *result, info *sqlscan.Info, keep bool) {
	if info.Flags&sqlscan.FlagDiagnostics != 0 && !info.Multi {
		return // reading diagnostics leaves them as they are
	}
	if res.warnings == 0 && res.err == nil && tableless(info) {
		// The server keeps the previous statement's conditions across a
		// statement that raises none and opens no table.
		return
	}
	s.diag.reset()
	if res.warnings == 0 && res.err == nil {
		return
	}
	c.SetDiagOwner(s.state.Owner)
	if keep {
		return // the pinned backend holds them
	}
	if err := s.diag.copy(ctx, c, res); err != nil {
		s.debug("could not copy diagnostics", "err", err)
	}
}

// copy reads c's diagnostics area (SHOW WARNINGS) after a statement that
// left res.
func (a *diagArea) copy(ctx context.Context, c *pool.Conn, res *result) error {
	a.warningCount = res.warnings
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
		a.conds = append(a.conds, d)
		return nil
	})
	if n := uint16(len(a.conds)); n > a.warningCount {
		a.warningCount = n
	}
	return err
}

// resultCharset is how the server declares text columns it builds
// itself: in the default collation of character_set_results (the system
// character set, utf8mb3, when it is NULL), with lengths in characters
// times maxLen bytes.
func (s *mirror) resultCharset() (id uint16, maxLen uint32) {
	cs, _ := s.state.Var("character_set_results")
	if cs == "" {
		cs = "utf8mb3"
	}
	return s.srv.chars.charset(context.Background(), s.pool, cs)
}

// errorCount is @@error_count of the session's last statement.
func (a *diagArea) errorCount() uint64 {
	var n uint64
	for _, d := range a.conds {
		if d.level == "Error" {
			n++
		}
	}
	return n
}

// answer answers SHOW WARNINGS, SHOW ERRORS, SHOW COUNT(*) ... and SELECT
// @@warning_count / @@error_count from the copy, on cc; cs and maxLen are
// the text columns' character set (mirror.resultCharset), status the
// session's.
func (a *diagArea) answer(cc *clientConn, info *sqlscan.Info, cs uint16, maxLen uint32, status uint16) (rows uint64, err error) {
	switch info.Local {
	case sqlscan.LocalWarningCount:
		return 1, cc.writeNumber(info.LocalExpr, colCount, uint64(a.warningCount), status)
	case sqlscan.LocalErrorCount:
		return 1, cc.writeNumber(info.LocalExpr, colCount, a.errorCount(), status)
	case sqlscan.LocalCountWarnings:
		return 1, cc.writeNumber([]byte("@@session.warning_count"), colCount, uint64(a.warningCount), status)
	case sqlscan.LocalCountErrors:
		return 1, cc.writeNumber([]byte("@@session.error_count"), colCount, a.errorCount(), status)
	}
	w := cc.w
	w.Begin()
	w.AppendLenEncInt(3)
	if err := w.End(); err != nil {
		return 0, err
	}
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
	if err := w.WriteEOF(0, status); err != nil {
		return 0, err
	}
	var skipped, sent uint64
	var num [8]byte
	for _, d := range a.conds {
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
	return sent, w.WriteEOF(0, status)
}
