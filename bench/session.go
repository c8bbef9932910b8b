package bench

import (
	"strconv"
	"strings"

	"github.com/tpproxy/tpproxy/internal/mysqlclient"
)

// sqlStmt is a workload statement with ? placeholders, split once so that
// the text protocol can fill in its arguments without formatting.
type sqlStmt struct {
	text  string
	parts []string // text split at each ?; len = placeholders + 1
}

func newStmt(text string) *sqlStmt {
	return &sqlStmt{text: text, parts: strings.Split(text, "?")}
}

// arg is a statement argument: an integer or a string.
type arg struct {
	n   int64
	s   []byte
	str bool
}

func intArg(n int) arg      { return arg{n: int64(n)} }
func bytesArg(b []byte) arg { return arg{s: b, str: true} }

// appendText appends st with args in place of its placeholders, strings
// quoted and escaped as go-sql-driver's interpolation does.
func (st *sqlStmt) appendText(b []byte, args []arg) []byte {
	b = append(b, st.parts[0]...)
	for i, p := range st.parts[1:] {
		if i < len(args) {
			a := args[i]
			if a.str {
				b = appendQuoted(b, a.s)
			} else {
				b = strconv.AppendInt(b, a.n, 10)
			}
		}
		b = append(b, p...)
	}
	return b
}

// appendQuoted appends s as a single-quoted SQL string literal.
func appendQuoted(b, s []byte) []byte {
	b = append(b, '\'')
	for _, c := range s {
		switch c {
		case 0:
			b = append(b, '\\', '0')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\x1a':
			b = append(b, '\\', 'Z')
		case '\'', '"', '\\':
			b = append(b, '\\', c)
		default:
			b = append(b, c)
		}
	}
	return append(b, '\'')
}

// Session is one client connection as a workload sees it: statements go
// out as text with their arguments filled in (sysbench --db-ps-mode=disable)
// or, in prepared mode, as server-side prepared statements prepared once
// on this connection (--db-ps-mode=auto). BEGIN, COMMIT and ROLLBACK are
// always text, as in sysbench.
type Session struct {
	conn     *mysqlclient.Conn
	prepared bool
	stmts    map[*sqlStmt]*mysqlclient.Stmt
	buf      []byte
	args     []mysqlclient.Arg
	// queries counts statements sent, failed ones included.
	queries int
}

func newSession(conn *mysqlclient.Conn, prepared bool) *Session {
	return &Session{conn: conn, prepared: prepared}
}

// text sends a statement without arguments as text.
func (s *Session) text(q string) error {
	s.queries++
	_, err := s.conn.ExecString(q)
	return err
}

// run sends st with args and reads (and discards) its result.
func (s *Session) run(st *sqlStmt, args ...arg) error {
	s.queries++
	if !s.prepared {
		s.buf = st.appendText(s.buf[:0], args)
		_, err := s.conn.Exec(s.buf)
		return err
	}
	ps := s.stmts[st]
	if ps == nil {
		var err error
		if ps, err = s.conn.Prepare(st.text); err != nil {
			return err
		}
		if s.stmts == nil {
			s.stmts = make(map[*sqlStmt]*mysqlclient.Stmt)
		}
		s.stmts[st] = ps
	}
	s.args = s.args[:0]
	for _, a := range args {
		if a.str {
			s.args = append(s.args, mysqlclient.Bytes(a.s))
		} else {
			s.args = append(s.args, mysqlclient.Int(a.n))
		}
	}
	_, err := s.conn.Execute(ps, s.args...)
	return err
}
