package mysqlwire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Column and parameter types.
const (
	TypeDecimal    = 0x00
	TypeTiny       = 0x01
	TypeShort      = 0x02
	TypeLong       = 0x03
	TypeFloat      = 0x04
	TypeDouble     = 0x05
	TypeNull       = 0x06
	TypeTimestamp  = 0x07
	TypeLongLong   = 0x08
	TypeInt24      = 0x09
	TypeDate       = 0x0a
	TypeTime       = 0x0b
	TypeDatetime   = 0x0c
	TypeYear       = 0x0d
	TypeNewDate    = 0x0e
	TypeVarchar    = 0x0f
	TypeBit        = 0x10
	TypeJSON       = 0xf5
	TypeNewDecimal = 0xf6
	TypeEnum       = 0xf7
	TypeSet        = 0xf8
	TypeTinyBlob   = 0xf9
	TypeMediumBlob = 0xfa
	TypeLongBlob   = 0xfb
	TypeBlob       = 0xfc
	TypeVarString  = 0xfd
	TypeString     = 0xfe
	TypeGeometry   = 0xff
)

// CursorReadOnly is the COM_STMT_EXECUTE flag asking for a read-only cursor.
const CursorReadOnly = 0x01

// ErrNoParamTypes is returned by ParseExecute for a packet that binds no
// parameter types when none were bound before.
var ErrNoParamTypes = errors.New("mysqlwire: COM_STMT_EXECUTE without parameter types")

// executeHead is command byte, statement id, flags and iteration count.
const executeHead = 1 + 4 + 1 + 4

// StmtPrepareOK is the first packet of a successful COM_STMT_PREPARE
// response.
type StmtPrepareOK struct {
	StmtID   uint32
	Columns  uint16
	Params   uint16
	Warnings uint16
}

// ParseStmtPrepareOK decodes the first packet of a COM_STMT_PREPARE
// response (payload starting with 0x00).
func ParseStmtPrepareOK(p []byte) (StmtPrepareOK, error) {
	if len(p) < 12 || p[0] != OKHeader {
		return StmtPrepareOK{}, fmt.Errorf("%w: prepare response of %d bytes", ErrMalformed, len(p))
	}
	return StmtPrepareOK{
		StmtID:   binary.LittleEndian.Uint32(p[1:]),
		Columns:  binary.LittleEndian.Uint16(p[5:]),
		Params:   binary.LittleEndian.Uint16(p[7:]),
		Warnings: binary.LittleEndian.Uint16(p[10:]),
	}, nil
}

// StmtID returns the statement id of a COM_STMT_EXECUTE, _RESET, _CLOSE,
// _FETCH or _SEND_LONG_DATA payload (command byte first).
func StmtID(p []byte) (uint32, bool) {
	if len(p) < 5 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(p[1:]), true
}

// PutStmtID rewrites the statement id of such a payload in place.
func PutStmtID(p []byte, id uint32) { binary.LittleEndian.PutUint32(p[1:], id) }

// Execute is a decoded COM_STMT_EXECUTE. Its slices point into the packet.
type Execute struct {
	StmtID uint32
	Flags  byte // cursor type
	// NewBound is new_params_bound_flag: the packet carries parameter types.
	NewBound bool
	// Types are the 2-byte parameter types (type, 0x80 when unsigned) the
	// packet carries, or nil.
	Types []byte
	// TypesAt is the offset in the packet where types are or would be:
	// just after new_params_bound_flag. Values start at TypesAt+len(Types).
	TypesAt int
}

// ParseExecute decodes and checks a COM_STMT_EXECUTE payload (command byte
// first) for a statement with n parameters. bound are the types bound by
// an earlier execute of the statement (nil if none); long marks, as a
// bitmap, the parameters whose value was sent with COM_STMT_SEND_LONG_DATA
// and is therefore missing from the packet. Every value must fit in the
// packet, as the server requires; bytes after the last value are ignored,
// as the server does.
func ParseExecute(p []byte, n int, bound []byte, long []byte) (Execute, error) {
	if len(p) < executeHead {
		return Execute{}, fmt.Errorf("%w: COM_STMT_EXECUTE of %d bytes", ErrMalformed, len(p))
	}
	e := Execute{StmtID: binary.LittleEndian.Uint32(p[1:]), Flags: p[5]}
	if n == 0 {
		e.TypesAt = len(p)
		return e, nil
	}
	nullLen := (n + 7) / 8
	if len(p) < executeHead+nullLen+1 {
		return e, fmt.Errorf("%w: COM_STMT_EXECUTE without NULL bitmap", ErrMalformed)
	}
	nulls := p[executeHead : executeHead+nullLen]
	e.TypesAt = executeHead + nullLen + 1
	e.NewBound = p[executeHead+nullLen] == 1
	types := bound
	if e.NewBound {
		if len(p) < e.TypesAt+2*n {
			return e, fmt.Errorf("%w: COM_STMT_EXECUTE parameter types truncated", ErrMalformed)
		}
		e.Types = p[e.TypesAt : e.TypesAt+2*n]
		types = e.Types
	} else if len(types) != 2*n {
		return e, ErrNoParamTypes
	}
	v := p[e.TypesAt+len(e.Types):]
	for i := 0; i < n; i++ {
		if nulls[i/8]&(1<<(i%8)) != 0 || (i/8 < len(long) && long[i/8]&(1<<(i%8)) != 0) {
			continue
		}
		size, ok := valueSize(types[2*i], v)
		if !ok {
			// A type the parser does not know: the server judges the rest.
			return e, nil
		}
		if size < 0 || size > len(v) {
			return e, fmt.Errorf("%w: COM_STMT_EXECUTE parameter %d truncated", ErrMalformed, i)
		}
		v = v[size:]
	}
	return e, nil
}

// valueSize is the encoded size of a binary-protocol value of type t at
// the start of v: -1 when even its length cannot be read; ok is false for
// a type the parser does not know.
func valueSize(t byte, v []byte) (size int, ok bool) {
	switch t {
	case TypeNull:
		return 0, true
	case TypeTiny:
		return 1, true
	case TypeShort, TypeYear:
		return 2, true
	case TypeLong, TypeInt24, TypeFloat:
		return 4, true
	case TypeLongLong, TypeDouble:
		return 8, true
	case TypeDate, TypeDatetime, TypeTimestamp, TypeTime, TypeNewDate:
		if len(v) < 1 {
			return -1, true
		}
		return 1 + int(v[0]), true
	case TypeDecimal, TypeNewDecimal, TypeVarchar, TypeBit, TypeJSON, TypeEnum, TypeSet,
		TypeTinyBlob, TypeMediumBlob, TypeLongBlob, TypeBlob, TypeVarString, TypeString, TypeGeometry:
		l, isNull, n := LenEncInt(v)
		if n == 0 || isNull || l > uint64(len(v)) {
			return -1, true
		}
		return n + int(l), true
	}
	return 0, false
}
