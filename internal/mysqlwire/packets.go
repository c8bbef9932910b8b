package mysqlwire

import (
	"errors"
	"fmt"
	"strconv"
)

// Packet header bytes of the generic response packets.
const (
	OKHeader          = 0x00
	EOFHeader         = 0xfe
	ERRHeader         = 0xff
	LocalInfileHeader = 0xfb
)

// Status flags carried by OK and EOF packets.
const (
	StatusInTrans             uint16 = 0x0001
	StatusAutocommit          uint16 = 0x0002
	StatusMoreResults         uint16 = 0x0008
	StatusCursorExists        uint16 = 0x0040
	StatusLastRowSent         uint16 = 0x0080
	StatusNoBackslashEscapes  uint16 = 0x0200
	StatusInTransReadonly     uint16 = 0x2000
	StatusSessionStateChanged uint16 = 0x4000
	// StatusANSIQuotes is MariaDB's: sql_mode has ANSI_QUOTES.
	StatusANSIQuotes uint16 = 0x8000
)

// Session state tracking entry types (OK packet, CLIENT_SESSION_TRACK).
const (
	TrackSystemVariables  = 0
	TrackSchema           = 1
	TrackStateChange      = 2
	TrackGTIDs            = 3
	TrackTransactionChar  = 4
	TrackTransactionState = 5
)

// ErrMalformed is returned by the packet parsers for truncated or
// inconsistent packets.
var ErrMalformed = errors.New("mysqlwire: malformed packet")

// Error is a MySQL error as carried by an ERR packet. It is the one error
// type that reaches clients: its code and SQLSTATE are kept as the server
// sent them.
type Error struct {
	Code    uint16
	State   string
	Message string
}

func (e *Error) Error() string {
	return "ERROR " + strconv.Itoa(int(e.Code)) + " (" + e.State + "): " + e.Message
}

// NewError builds an Error with a formatted message.
func NewError(code uint16, state, format string, args ...any) *Error {
	return &Error{Code: code, State: state, Message: fmt.Sprintf(format, args...)}
}

// IsEOF reports whether payload is an EOF packet (and not a row that happens
// to start with 0xfe, which is at least 9 bytes long).
func IsEOF(payload []byte) bool {
	return len(payload) > 0 && len(payload) < 9 && payload[0] == EOFHeader
}

// IsERR reports whether payload is an ERR packet.
func IsERR(payload []byte) bool { return len(payload) > 0 && payload[0] == ERRHeader }

// IsOK reports whether payload is an OK packet.
func IsOK(payload []byte) bool { return len(payload) >= 7 && payload[0] == OKHeader }

// ParseERR decodes an ERR packet (protocol 4.1).
func ParseERR(payload []byte) *Error {
	e := &Error{State: "HY000"}
	if len(payload) < 3 || payload[0] != ERRHeader {
		e.Code = 2027
		e.Message = "malformed error packet"
		return e
	}
	e.Code = uint16(payload[1]) | uint16(payload[2])<<8
	rest := payload[3:]
	if len(rest) >= 6 && rest[0] == '#' {
		e.State = string(rest[1:6])
		rest = rest[6:]
	}
	e.Message = string(rest)
	return e
}

// EOFStatus decodes the warnings and status flags of an EOF packet.
func EOFStatus(payload []byte) (warnings, status uint16) {
	if len(payload) >= 5 {
		warnings = uint16(payload[1]) | uint16(payload[2])<<8
		status = uint16(payload[3]) | uint16(payload[4])<<8
	}
	return warnings, status
}

// OK is a decoded OK packet. Info and SessionState point into the packet.
type OK struct {
	AffectedRows uint64
	InsertID     uint64
	Status       uint16
	Warnings     uint16
	Info         []byte
	SessionState []byte
}

// ParseOK decodes an OK packet. sessionTrack says whether the connection
// negotiated CLIENT_SESSION_TRACK, which adds session state to the tail.
func ParseOK(payload []byte, sessionTrack bool) (OK, error) {
	var ok OK
	if len(payload) < 1 || (payload[0] != OKHeader && payload[0] != EOFHeader) {
		return ok, ErrMalformed
	}
	p := payload[1:]
	var n int
	var isNull bool
	if ok.AffectedRows, isNull, n = LenEncInt(p); n == 0 || isNull {
		return ok, ErrMalformed
	}
	p = p[n:]
	if ok.InsertID, isNull, n = LenEncInt(p); n == 0 || isNull {
		return ok, ErrMalformed
	}
	p = p[n:]
	if len(p) < 4 {
		return ok, ErrMalformed
	}
	ok.Status = uint16(p[0]) | uint16(p[1])<<8
	ok.Warnings = uint16(p[2]) | uint16(p[3])<<8
	p = p[4:]
	if len(p) == 0 {
		return ok, nil
	}
	// Servers send the info as a length-encoded string with or without
	// CLIENT_SESSION_TRACK (the protocol documentation's string<EOF> is
	// not what they do, and clients parse it length-encoded).
	var err error
	if ok.Info, n, err = LenEncString(p); err != nil {
		return ok, err
	}
	p = p[n:]
	if sessionTrack && ok.Status&StatusSessionStateChanged != 0 && len(p) > 0 {
		if ok.SessionState, _, err = LenEncString(p); err != nil {
			return ok, err
		}
	}
	return ok, nil
}

// StateEntry is one entry of the session state information of an OK packet.
type StateEntry struct {
	Type byte
	Data []byte
}

// NextStateEntry splits the first entry off session state information. It
// returns the entry, the rest, and whether an entry was found.
func NextStateEntry(p []byte) (StateEntry, []byte, error) {
	if len(p) == 0 {
		return StateEntry{}, nil, nil
	}
	t := p[0]
	data, n, err := LenEncString(p[1:])
	if err != nil {
		return StateEntry{}, nil, err
	}
	return StateEntry{Type: t, Data: data}, p[1+n:], nil
}

// EachStateEntry calls fn with each entry of session state information,
// in order, until fn returns false. A malformed entry stops it with the
// error.
func EachStateEntry(info []byte, fn func(StateEntry) bool) error {
	for len(info) > 0 {
		e, rest, err := NextStateEntry(info)
		if err != nil {
			return err
		}
		if !fn(e) {
			return nil
		}
		info = rest
	}
	return nil
}

// SystemVariable decodes the data of a TrackSystemVariables entry.
func SystemVariable(data []byte) (name, value []byte, err error) {
	name, n, err := LenEncString(data)
	if err != nil {
		return nil, nil, err
	}
	value, _, err = LenEncString(data[n:])
	return name, value, err
}

// TrackedSchema decodes the data of a TrackSchema entry.
func TrackedSchema(data []byte) ([]byte, error) {
	s, _, err := LenEncString(data)
	return s, err
}

// LenEncInt decodes a length-encoded integer; n is 0 when p is too short.
func LenEncInt(p []byte) (v uint64, isNull bool, n int) {
	if len(p) == 0 {
		return 0, false, 0
	}
	switch p[0] {
	case 0xfb:
		return 0, true, 1
	case 0xfc:
		if len(p) < 3 {
			return 0, false, 0
		}
		return uint64(p[1]) | uint64(p[2])<<8, false, 3
	case 0xfd:
		if len(p) < 4 {
			return 0, false, 0
		}
		return uint64(p[1]) | uint64(p[2])<<8 | uint64(p[3])<<16, false, 4
	case 0xfe:
		if len(p) < 9 {
			return 0, false, 0
		}
		return uint64(p[1]) | uint64(p[2])<<8 | uint64(p[3])<<16 | uint64(p[4])<<24 |
			uint64(p[5])<<32 | uint64(p[6])<<40 | uint64(p[7])<<48 | uint64(p[8])<<56, false, 9
	case 0xff:
		return 0, false, 0
	}
	return uint64(p[0]), false, 1
}

// LenEncString decodes a length-encoded string and returns it with the
// number of bytes consumed.
func LenEncString(p []byte) ([]byte, int, error) {
	v, isNull, n := LenEncInt(p)
	if n == 0 {
		return nil, 0, ErrMalformed
	}
	if isNull {
		return nil, n, nil
	}
	if v > uint64(len(p)-n) {
		return nil, 0, ErrMalformed
	}
	end := n + int(v)
	return p[n:end], end, nil
}

// AppendLenEncInt appends a length-encoded integer to b.
func AppendLenEncInt(b []byte, v uint64) []byte {
	switch {
	case v < 251:
		return append(b, byte(v))
	case v < 1<<16:
		return append(b, 0xfc, byte(v), byte(v>>8))
	case v < 1<<24:
		return append(b, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	}
	return append(b, 0xfe, byte(v), byte(v>>8), byte(v>>16), byte(v>>24),
		byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
}

// NullTerminated splits a NUL-terminated string off p.
func NullTerminated(p []byte) (s []byte, rest []byte, err error) {
	for i, c := range p {
		if c == 0 {
			return p[:i], p[i+1:], nil
		}
	}
	return nil, nil, ErrMalformed
}

// RowValues splits a text-protocol row into its values, appended to dst; a
// NULL is a nil slice. The values point into row.
func RowValues(dst [][]byte, row []byte) ([][]byte, error) {
	for len(row) > 0 {
		v, n, err := LenEncString(row)
		if err != nil {
			return dst, err
		}
		dst, row = append(dst, v), row[n:]
	}
	return dst, nil
}
