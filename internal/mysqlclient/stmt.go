package mysqlclient

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// Stmt is a statement prepared on one connection (COM_STMT_PREPARE). It
// is only valid on the Conn that prepared it, until CloseStmt.
type Stmt struct {
	// ID is the server's statement id.
	ID uint32
	// Params is the number of ? placeholders; Execute takes as many Args.
	Params int
	// Columns is the number of columns of the statement's result set.
	Columns int

	// types are the parameter types last sent; bound is set once an
	// execute that sent them succeeded. The server keeps a statement's
	// types between executes, so later executes with the same types omit
	// them (new-params-bound 0), as libmariadb does: less for the server
	// to parse on every execute.
	types []byte
	bound bool
}

// ArgKind is the type of an Arg.
type ArgKind uint8

// Argument kinds. The zero Arg is NULL.
const (
	// ArgNull is SQL NULL.
	ArgNull ArgKind = iota
	// ArgInt is a signed 64-bit integer (MYSQL_TYPE_LONGLONG).
	ArgInt
	// ArgString is Arg.Str, sent as MYSQL_TYPE_STRING.
	ArgString
	// ArgBytes is Arg.Bytes, sent as MYSQL_TYPE_STRING.
	ArgBytes
)

// Arg is one statement argument. It is a plain struct rather than an
// interface value so that passing arguments does not box (allocate) them.
type Arg struct {
	// Kind says which of the value fields is sent.
	Kind ArgKind
	// Int is the value of an ArgInt.
	Int int64
	// Bytes is the value of an ArgBytes.
	Bytes []byte
	// Str is the value of an ArgString.
	Str string
}

// Int is an integer argument.
func Int(v int64) Arg { return Arg{Kind: ArgInt, Int: v} }

// String is a string argument.
func String(s string) Arg { return Arg{Kind: ArgString, Str: s} }

// Bytes is a byte-string argument; a nil slice is an empty string, not NULL.
func Bytes(b []byte) Arg { return Arg{Kind: ArgBytes, Bytes: b} }

// Null is a NULL argument.
func Null() Arg { return Arg{} }

// Prepare prepares query with COM_STMT_PREPARE. A server error (syntax,
// unknown table) is returned as *mysqlwire.Error with the connection usable.
func (c *Conn) Prepare(query string) (*Stmt, error) {
	if c.broken.Load() {
		return nil, c.brokenErr()
	}
	if err := c.writeCommandString(mysqlwire.ComStmtPrepare, query); err != nil {
		return nil, err
	}
	p, err := c.readPacket()
	if err != nil {
		return nil, err
	}
	if p[0] == mysqlwire.ERRHeader {
		return nil, c.serverError(p)
	}
	ok, err := mysqlwire.ParseStmtPrepareOK(p)
	if err != nil {
		return nil, c.protocolError("malformed COM_STMT_PREPARE answer", p)
	}
	s := &Stmt{ID: ok.StmtID, Params: int(ok.Params), Columns: int(ok.Columns)}
	for _, n := range [2]int{s.Params, s.Columns} {
		if n > 0 {
			if err := c.skipDefinitions(uint64(n)); err != nil {
				return nil, err
			}
		}
	}
	if err := c.endResponse(); err != nil {
		return nil, err
	}
	return s, nil
}

// Execute runs s with args (COM_STMT_EXECUTE, no cursor) and reads the
// whole response, discarding rows; it returns the number of rows read over
// all result sets. Parameter types are sent with every execution, which
// costs a few bytes and keeps no per-statement state. A server error (such
// as 1243 for a statement not prepared on this connection) is returned as
// *mysqlwire.Error with the connection usable.
func (c *Conn) Execute(s *Stmt, args ...Arg) (rows int, err error) {
	if c.broken.Load() {
		return 0, c.brokenErr()
	}
	if len(args) != s.Params {
		return 0, fmt.Errorf("%w: %d arguments for %d parameters", ErrBadArgs, len(args), s.Params)
	}
	b, err := appendExecute(c.scratch[:0], s, args)
	if err != nil {
		return 0, err
	}
	c.scratch = b
	c.w.SetSeq(0)
	if err := c.w.WritePacket(b); err != nil {
		s.bound = false
		return 0, c.fail(err)
	}
	if err := c.flush(); err != nil {
		s.bound = false
		return 0, err
	}
	rows, err = c.readResult()
	// After any error the types are sent again: a failed execute may not
	// have left them bound on the server.
	s.bound = err == nil
	return rows, err
}

// appendExecute appends a COM_STMT_EXECUTE payload to b.
func appendExecute(b []byte, s *Stmt, args []Arg) ([]byte, error) {
	b = append(b, mysqlwire.ComStmtExecute)
	b = binary.LittleEndian.AppendUint32(b, s.ID)
	b = append(b, 0)          // flags: no cursor
	b = append(b, 1, 0, 0, 0) // iteration count
	if len(args) == 0 {
		return b, nil
	}
	nullAt := len(b)
	for range (len(args) + 7) / 8 {
		b = append(b, 0)
	}
	b = append(b, 1) // new-params-bound: types follow
	typesAt := len(b)
	for _, a := range args {
		switch a.Kind {
		case ArgNull:
			b = append(b, mysqlwire.TypeNull, 0)
		case ArgInt:
			b = append(b, mysqlwire.TypeLongLong, 0)
		case ArgString, ArgBytes:
			b = append(b, mysqlwire.TypeString, 0)
		default:
			return b, fmt.Errorf("%w: argument kind %d", ErrBadArgs, a.Kind)
		}
	}
	if s.bound && bytes.Equal(b[typesAt:], s.types) {
		b[typesAt-1] = 0
		b = b[:typesAt]
	} else {
		s.types = append(s.types[:0], b[typesAt:]...)
		s.bound = false
	}
	for i, a := range args {
		switch a.Kind {
		case ArgNull:
			b[nullAt+i/8] |= 1 << (i % 8)
		case ArgInt:
			b = binary.LittleEndian.AppendUint64(b, uint64(a.Int))
		case ArgString:
			b = mysqlwire.AppendLenEncInt(b, uint64(len(a.Str)))
			b = append(b, a.Str...)
		case ArgBytes:
			b = mysqlwire.AppendLenEncInt(b, uint64(len(a.Bytes)))
			b = append(b, a.Bytes...)
		}
	}
	return b, nil
}

// CloseStmt deallocates s on the server (COM_STMT_CLOSE, which has no
// answer). s must not be executed afterwards.
func (c *Conn) CloseStmt(s *Stmt) error {
	if c.broken.Load() {
		return c.brokenErr()
	}
	c.w.SetSeq(0)
	c.w.Begin()
	c.w.AppendByte(mysqlwire.ComStmtClose)
	c.w.AppendUint32(s.ID)
	_ = c.w.End() // fails only at 16 MiB
	if err := c.w.Flush(); err != nil {
		return c.fail(err)
	}
	return nil
}
