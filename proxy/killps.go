package proxy

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// killPS is a prepared KILL: it never reaches a backend as KILL (the
// server would take the client's id for one of its own threads). Its
// target expression is prepared as a SELECT to learn the parameters, and
// each execute runs KILL with the parameters' values in their places.
type killPS struct {
	query bool
	expr  []byte
	marks []int // offsets of the '?' placeholders in expr
}

// prepareKill answers COM_STMT_PREPARE of KILL [CONNECTION|QUERY] expr.
// ok is false when sql is not that form.
func (s *Session) prepareKill(ctx context.Context, sql []byte) (ok bool, err error) {
	query, expr, ok := killExprForm(sql)
	if !ok {
		return false, nil
	}
	c, err := s.backendFor(ctx, &s.task, true, false)
	if err != nil {
		return true, s.writeErr(err)
	}
	// A statement of tpproxy's own on this connection, closed at once.
	key := uint64(math.MaxUint64 - uint64(s.id))
	prep, defs, err := c.Prepare(ctx, key, append([]byte("SELECT "), expr...), true)
	c.ForgetPrepared(key)
	s.releaseIfUnpinned(c)
	if err != nil {
		return true, s.writeErr(err)
	}
	k := &killPS{query: query, expr: append([]byte(nil), expr...), marks: placeholders(expr)}
	if len(k.marks) != int(prep.Params) {
		return true, s.writeErr(stmtErr(erUnsupportedPS, "This command is not supported in the prepared statement protocol yet"))
	}
	e := &cachedStmt{sql: append([]byte(nil), sql...), params: prep.Params, kill: k}
	meta := &stmtMeta{defs: defs[:prep.Params]}
	e.meta.Store(meta)
	return true, s.writePrepareOK(s.stmts.add(e, &s.srv.stats.clientStmts), e.params, meta, 0, s.status())
}

// executeKill serves COM_STMT_EXECUTE of a prepared KILL.
func (s *Session) executeKill(ctx context.Context, cs *clientStmt, p []byte, ex mysqlwire.Execute) error {
	k := cs.e.kill
	n := len(k.marks)
	types := cs.types
	nulls := p[10 : 10+(n+7)/8]
	v := p[ex.TypesAt+len(ex.Types):]
	out := make([]byte, 0, len(k.expr)+16*n)
	last := 0
	for i, at := range k.marks {
		out = append(out, k.expr[last:at]...)
		last = at + 1
		var lit []byte
		var err error
		switch {
		case nulls[i/8]&(1<<(i%8)) != 0:
			lit = []byte("NULL")
		case cs.longMap != nil && i/8 < len(cs.longMap) && cs.longMap[i/8]&(1<<(i%8)) != 0:
			lit = []byte(hexLiteral(string(cs.long[i])))
		default:
			lit, v, err = literalOf(types[2*i], types[2*i+1]&0x80 != 0, v)
		}
		if err != nil {
			return s.writeErr(stmtErr(erWrongArguments, "Incorrect arguments to mysqld_stmt_execute"))
		}
		out = append(out, lit...)
	}
	out = append(out, k.expr[last:]...)
	return endIfKilled(s.killExpr(ctx, out, k.query))
}

// literalOf renders one binary-protocol parameter value as SQL text.
func literalOf(typ byte, unsigned bool, v []byte) (lit, rest []byte, err error) {
	need := func(n int) error {
		if len(v) < n {
			return mysqlwire.ErrMalformed
		}
		return nil
	}
	switch typ {
	case mysqlwire.TypeTiny:
		if err := need(1); err != nil {
			return nil, nil, err
		}
		if unsigned {
			return strconv.AppendUint(nil, uint64(v[0]), 10), v[1:], nil
		}
		return strconv.AppendInt(nil, int64(int8(v[0])), 10), v[1:], nil
	case mysqlwire.TypeShort, mysqlwire.TypeYear:
		if err := need(2); err != nil {
			return nil, nil, err
		}
		u := binary.LittleEndian.Uint16(v)
		if unsigned {
			return strconv.AppendUint(nil, uint64(u), 10), v[2:], nil
		}
		return strconv.AppendInt(nil, int64(int16(u)), 10), v[2:], nil
	case mysqlwire.TypeLong, mysqlwire.TypeInt24:
		if err := need(4); err != nil {
			return nil, nil, err
		}
		u := binary.LittleEndian.Uint32(v)
		if unsigned {
			return strconv.AppendUint(nil, uint64(u), 10), v[4:], nil
		}
		return strconv.AppendInt(nil, int64(int32(u)), 10), v[4:], nil
	case mysqlwire.TypeLongLong:
		if err := need(8); err != nil {
			return nil, nil, err
		}
		u := binary.LittleEndian.Uint64(v)
		if unsigned {
			return strconv.AppendUint(nil, u, 10), v[8:], nil
		}
		return strconv.AppendInt(nil, int64(u), 10), v[8:], nil
	case mysqlwire.TypeFloat:
		if err := need(4); err != nil {
			return nil, nil, err
		}
		f := math.Float32frombits(binary.LittleEndian.Uint32(v))
		return strconv.AppendFloat(nil, float64(f), 'g', -1, 32), v[4:], nil
	case mysqlwire.TypeDouble:
		if err := need(8); err != nil {
			return nil, nil, err
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(v))
		return strconv.AppendFloat(nil, f, 'g', -1, 64), v[8:], nil
	}
	// Strings, decimals, blobs and the rest travel length-encoded.
	b, n, err := mysqlwire.LenEncString(v)
	if err != nil {
		return nil, nil, err
	}
	return []byte(hexLiteral(string(b))), v[n:], nil
}

// placeholders returns the offsets of the '?' placeholders in an
// expression, skipping quoted strings, quoted identifiers and comments.
func placeholders(q []byte) []int {
	var at []int
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == '?':
			at = append(at, i)
		case c == '\'' || c == '"' || c == '`':
			for i++; i < len(q) && q[i] != c; i++ {
				if q[i] == '\\' && c != '`' {
					i++
				}
			}
		case c == '#' || c == '-' && i+2 < len(q) && q[i+1] == '-' && (q[i+2] == ' ' || q[i+2] == '\t'):
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			for i += 2; i+1 < len(q) && !(q[i] == '*' && q[i+1] == '/'); i++ {
			}
			i++
		}
	}
	return at
}
