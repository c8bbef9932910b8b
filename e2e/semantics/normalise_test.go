package semantics

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// kind is what a client got back for one command.
type kind uint8

const (
	kindOK        kind = iota // OK packet
	kindRows                  // a result set
	kindErr                   // an ERR packet
	kindLost                  // the connection closed or broke
	kindTimeout               // no answer within opTimeout
	kindNoConn                // not sent: the connection was gone already
	kindNoStmt                // not sent: no statement prepared under that name
	kindPrepared              // COM_STMT_PREPARE answered OK
	kindSent                  // a command without an answer (COM_QUIT, COM_STMT_CLOSE, abort)
	kindConnected             // a new connection was made
	kindWaited                // a wait step completed
)

// part is one result of a command (a multi-statement query has several).
type part struct {
	kind       kind
	code       uint16
	state, msg string
	affected   uint64
	insertID   uint64
	warnings   uint16
	status     uint16
	fields     []*gomysql.Field
	rows       [][]*string
	params     int
	columns    int
}

// result is everything one command produced.
type result struct{ parts []part }

// failed reports a command that did not succeed.
func (r result) failed() bool {
	for _, p := range r.parts {
		switch p.kind {
		case kindErr, kindLost, kindTimeout, kindNoConn, kindNoStmt:
			return true
		}
	}
	return len(r.parts) == 0
}

// errCode is the first part's server error code, 0 if none.
func (r result) errCode() uint16 {
	for _, p := range r.parts {
		if p.kind == kindErr {
			return p.code
		}
	}
	return 0
}

// cell is row i, column j of the first result set as text ("NULL" for
// NULL, "" when absent).
func (r result) cell(i, j int) string {
	for _, p := range r.parts {
		if p.kind != kindRows {
			continue
		}
		if i >= len(p.rows) || j >= len(p.rows[i]) {
			return ""
		}
		if p.rows[i][j] == nil {
			return "NULL"
		}
		return *p.rows[i][j]
	}
	return ""
}

// rowCount is the number of rows of the first result set, -1 without one.
func (r result) rowCount() int {
	for _, p := range r.parts {
		if p.kind == kindRows {
			return len(p.rows)
		}
	}
	return -1
}

// norm says how to render a result for comparison.
type norm struct {
	// ids maps connection ids, as decimal text, to the placeholder that
	// stands for them ({{id}}, {{sid}}, {{oid}}): ids differ between the
	// direct and the proxy run by nature.
	ids map[string]string
	// meta renders full column definitions, not only names.
	meta bool
}

// maskedColumns hold wall-clock values.
var maskedColumns = map[string]bool{"Duration": true, "Time": true, "Time_ms": true}

// canon renders r for comparison: error code and SQLSTATE but not the
// message, OK fields, the IN_TRANS and AUTOCOMMIT status bits, column
// names (definitions with meta) and rows.
func (r result) canon(n norm) string { return r.render(n, false) }

// display renders r for people: canon plus error messages.
func (r result) display() string { return r.render(norm{}, true) }

func (r result) render(n norm, msgs bool) string {
	if len(r.parts) == 0 {
		return "NOTHING"
	}
	out := make([]string, len(r.parts))
	for i, p := range r.parts {
		out[i] = p.render(n, msgs)
	}
	return strings.Join(out, " | ")
}

func (p part) render(n norm, msgs bool) string {
	var b strings.Builder
	switch p.kind {
	case kindErr:
		fmt.Fprintf(&b, "ERR %d (%s)", p.code, p.state)
		if msgs {
			fmt.Fprintf(&b, " %q", p.msg)
		}
		return b.String()
	case kindLost, kindTimeout:
		b.WriteString(map[kind]string{kindLost: "LOST", kindTimeout: "TIMEOUT"}[p.kind])
		if msgs && p.msg != "" {
			fmt.Fprintf(&b, " (%s)", p.msg)
		}
		return b.String()
	case kindNoConn:
		return "NOCONN"
	case kindNoStmt:
		return "NOSTMT"
	case kindSent:
		return "SENT"
	case kindConnected:
		return "CONNECTED"
	case kindWaited:
		return "WAITED"
	case kindPrepared:
		fmt.Fprintf(&b, "PREPARED params=%d cols=%d warn=%d", p.params, p.columns, p.warnings)
		if len(p.fields) > 0 {
			b.WriteString(" ")
			b.WriteString(renderFields(p.fields, n))
		}
		return b.String()
	case kindOK:
		fmt.Fprintf(&b, "OK affected=%d id=%d warn=%d", p.affected, p.insertID, p.warnings)
	case kindRows:
		b.WriteString(renderFields(p.fields, n))
		masked := make([]bool, len(p.fields))
		for i, f := range p.fields {
			masked[i] = maskedColumns[string(f.Name)]
		}
		for _, row := range p.rows {
			b.WriteString(" (")
			for j, v := range row {
				if j > 0 {
					b.WriteString(", ")
				}
				switch {
				case j < len(masked) && masked[j]:
					b.WriteString("*")
				case v == nil:
					b.WriteString("NULL")
				default:
					if ph, ok := n.ids[*v]; ok {
						b.WriteString(ph)
					} else {
						b.WriteString(strconv.Quote(*v))
					}
				}
			}
			b.WriteString(")")
		}
		if len(p.rows) == 0 {
			b.WriteString(" (no rows)")
		}
		fmt.Fprintf(&b, " warn=%d", p.warnings)
	}
	fmt.Fprintf(&b, " trx=%d ac=%d", bit(p.status, gomysql.SERVER_STATUS_IN_TRANS), bit(p.status, gomysql.SERVER_STATUS_AUTOCOMMIT))
	return b.String()
}

func bit(v, mask uint16) int {
	if v&mask != 0 {
		return 1
	}
	return 0
}

// renderFields lists column names, or full definitions with n.meta.
func renderFields(fs []*gomysql.Field, n norm) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		name := normIDs(string(f.Name), n)
		if !n.meta {
			names[i] = name
			continue
		}
		names[i] = fmt.Sprintf("%s{org=%s table=%s/%s schema=%s type=%d len=%d cs=%d flags=%#x dec=%d}",
			name, normIDs(string(f.OrgName), n), f.Table, f.OrgTable, f.Schema, f.Type, f.ColumnLength, f.Charset, f.Flag, f.Decimal)
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// normIDs replaces connection ids inside a column name, which echoes the
// statement text: SELECT CONNECTION_ID() = 17.
func normIDs(s string, n norm) string {
	for v, ph := range n.ids {
		if strings.Contains(s, v) {
			s = regexp.MustCompile(`\b`+regexp.QuoteMeta(v)+`\b`).ReplaceAllString(s, ph)
		}
	}
	return s
}

// idSensitive reports whether a step's text may produce connection ids
// that must be normalised: only then are values equal to a session's id
// replaced, so that an unrelated number that happens to equal one is not.
var idSensitive = regexp.MustCompile(`(?i)\{\{[a-z]*id\}\}|connection_id|processlist|is_used_lock|pseudo_thread_id|trx_mysql_thread_id`)
