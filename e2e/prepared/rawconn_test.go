package prepared

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// This file is a deliberately small MySQL client for the binary protocol:
// it builds COM_STMT_* packets byte by byte (new_params_bound_flag=0,
// cursors, long data, malformed packets) and shows every packet of a
// response with its status flags. Every read and write has a deadline, so a
// proxy that stops answering fails the test instead of hanging it.

// Capability flags the raw client asks for.
const (
	capLongPassword     uint32 = 0x00000001
	capLongFlag         uint32 = 0x00000004
	capConnectWithDB    uint32 = 0x00000008
	capProtocol41       uint32 = 0x00000200
	capTransactions     uint32 = 0x00002000
	capSecureConnection uint32 = 0x00008000
	capMultiResults     uint32 = 0x00020000
	capPSMultiResults   uint32 = 0x00040000
	capPluginAuth       uint32 = 0x00080000
)

// Server status flags.
const (
	statusMoreResults   uint16 = 0x0008
	statusCursorExists  uint16 = 0x0040
	statusLastRowSent   uint16 = 0x0080
	statusInTransaction uint16 = 0x0001
)

// Command bytes.
const (
	comQuery            = 0x03
	comPing             = 0x0e
	comStmtPrepare      = 0x16
	comStmtExecute      = 0x17
	comStmtSendLongData = 0x18
	comStmtClose        = 0x19
	comStmtReset        = 0x1a
	comStmtFetch        = 0x1c
)

// COM_STMT_EXECUTE flags.
const (
	cursorNone     byte = 0x00
	cursorReadOnly byte = 0x01
)

// Column and parameter types.
const (
	typeTiny      byte = 0x01
	typeShort     byte = 0x02
	typeLong      byte = 0x03
	typeFloat     byte = 0x04
	typeDouble    byte = 0x05
	typeTimestamp byte = 0x07
	typeLongLong  byte = 0x08
	typeInt24     byte = 0x09
	typeDate      byte = 0x0a
	typeTime      byte = 0x0b
	typeDateTime  byte = 0x0c
	typeYear      byte = 0x0d
	typeBlob      byte = 0xfc
	typeVarString byte = 0xfd
	flagUnsigned       = 0x0020
	paramUnsigned byte = 0x80
)

// rawTimeout bounds every read and write of the raw client.
const rawTimeout = 15 * time.Second

// serverError is an ERR packet.
type serverError struct {
	Code    uint16
	State   string
	Message string
}

func (e *serverError) Error() string {
	return fmt.Sprintf("Error %d (%s): %s", e.Code, e.State, e.Message)
}

func parseERR(p []byte) *serverError {
	e := &serverError{}
	if len(p) < 3 {
		e.Message = "(truncated ERR packet)"
		return e
	}
	e.Code = binary.LittleEndian.Uint16(p[1:])
	p = p[3:]
	if len(p) >= 6 && p[0] == '#' {
		e.State = string(p[1:6])
		p = p[6:]
	}
	e.Message = string(p)
	return e
}

// rawConn is a connection of the raw client.
type rawConn struct {
	nc     net.Conn
	br     *bufio.Reader
	seq    byte
	connID uint32 // from the greeting: the proxy's session id through the proxy
	salt   []byte // the greeting's scramble, for COM_CHANGE_USER
}

// rawConnect connects to addr and logs in as the test user with
// mysql_native_password, on the test database. The connection is closed
// when t ends.
func rawConnect(t testing.TB, addr string) *rawConn {
	t.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c := &rawConn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}
	t.Cleanup(func() { _ = c.nc.Close() })
	if err := c.login(proxytest.User, proxytest.Password, proxytest.DB); err != nil {
		t.Fatalf("raw login to %s: %v", addr, err)
	}
	return c
}

func (c *rawConn) login(user, password, db string) error {
	p, err := c.readPacket()
	if err != nil {
		return fmt.Errorf("read greeting: %w", err)
	}
	if len(p) > 0 && p[0] == 0xff {
		return parseERR(p)
	}
	// Protocol 10 greeting: version NUL, thread id, 8 bytes of salt, filler,
	// capabilities (low), collation, status, capabilities (high), auth data
	// length, 10 reserved bytes, the rest of the salt.
	if len(p) < 1 || p[0] != 10 {
		return fmt.Errorf("unexpected greeting %x", p[:min(len(p), 16)])
	}
	i := bytes.IndexByte(p[1:], 0)
	if i < 0 || len(p) < 1+i+1+4+8+1+2+1+2+2+1+10+12 {
		return errors.New("short greeting")
	}
	rest := p[1+i+1:]
	c.connID = binary.LittleEndian.Uint32(rest)
	salt := append([]byte(nil), rest[4:12]...)
	rest = rest[13:]
	caps := uint32(binary.LittleEndian.Uint16(rest))
	caps |= uint32(binary.LittleEndian.Uint16(rest[5:])) << 16
	rest = rest[8+10:]
	salt = append(salt, rest[:12]...)

	want := capLongPassword | capLongFlag | capProtocol41 | capTransactions | capSecureConnection |
		capMultiResults | capPSMultiResults | capPluginAuth | capConnectWithDB
	resp := binary.LittleEndian.AppendUint32(nil, want&caps)
	resp = binary.LittleEndian.AppendUint32(resp, 1<<30)
	resp = append(resp, 45) // utf8mb4_general_ci
	resp = append(resp, make([]byte, 23)...)
	resp = append(resp, user...)
	resp = append(resp, 0)
	auth := nativeScramble(password, salt)
	resp = append(resp, byte(len(auth)))
	resp = append(resp, auth...)
	resp = append(resp, db...)
	resp = append(resp, 0)
	resp = append(resp, "mysql_native_password"...)
	resp = append(resp, 0)
	if err := c.writePacket(resp); err != nil {
		return err
	}
	c.salt = salt
	return c.authResult(password)
}

// authResult reads the answer to a login or COM_CHANGE_USER, answering
// one auth switch to mysql_native_password.
func (c *rawConn) authResult(password string) error {
	for switched := false; ; switched = true {
		p, err := c.readPacket()
		switch {
		case err != nil:
			return fmt.Errorf("read auth result: %w", err)
		case len(p) == 0:
			return errors.New("empty auth packet")
		case p[0] == 0x00:
			return nil
		case p[0] == 0xff:
			return parseERR(p)
		case p[0] == 0xfe && !switched:
			// Auth switch: answer the new salt with the same plugin.
			j := bytes.IndexByte(p[1:], 0)
			if j < 0 || string(p[1:1+j]) != "mysql_native_password" {
				return fmt.Errorf("auth switch to %q", p[1:])
			}
			if err := c.writePacket(nativeScramble(password, bytes.TrimRight(p[2+j:], "\x00"))); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected auth packet %x", p[:min(len(p), 16)])
		}
	}
}

// changeUser sends COM_CHANGE_USER for user on db and reads the answer.
func (c *rawConn) changeUser(user, password, db string) error {
	p := []byte{0x11}
	p = append(p, user...)
	p = append(p, 0)
	auth := nativeScramble(password, c.salt)
	p = append(p, byte(len(auth)))
	p = append(p, auth...)
	p = append(p, db...)
	p = append(p, 0)
	p = binary.LittleEndian.AppendUint16(p, 45)
	p = append(p, "mysql_native_password"...)
	p = append(p, 0)
	if err := c.command(p); err != nil {
		return err
	}
	return c.authResult(password)
}

// expectClosed reads until the peer closes the connection; data or a
// timeout is an error.
func (c *rawConn) expectClosed() error {
	_ = c.nc.SetReadDeadline(time.Now().Add(rawTimeout))
	b, err := c.br.ReadByte()
	switch {
	case err == nil:
		return fmt.Errorf("connection still open, got byte %#x", b)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("connection neither answered nor closed within %s", rawTimeout)
	}
	return nil
}

// nativeScramble is mysql_native_password's answer to a salt.
func nativeScramble(password string, salt []byte) []byte {
	salt = salt[:min(len(salt), 20)]
	s1 := sha1.Sum([]byte(password))
	s2 := sha1.Sum(s1[:])
	h := sha1.New()
	h.Write(salt)
	h.Write(s2[:])
	x := h.Sum(nil)
	for i := range x {
		x[i] ^= s1[i]
	}
	return x
}

// readPhysical reads one physical packet and checks its sequence id.
func (c *rawConn) readPhysical() ([]byte, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(rawTimeout))
	var h [4]byte
	if _, err := io.ReadFull(c.br, h[:]); err != nil {
		return nil, err
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if h[3] != c.seq {
		return nil, fmt.Errorf("packet sequence %d, want %d", h[3], c.seq)
	}
	c.seq++
	p := make([]byte, n)
	if _, err := io.ReadFull(c.br, p); err != nil {
		return nil, err
	}
	return p, nil
}

// readPacket reads one logical packet, joining 16 MiB pieces.
func (c *rawConn) readPacket() ([]byte, error) {
	p, err := c.readPhysical()
	if err != nil || len(p) < 0xffffff {
		return p, err
	}
	for {
		part, err := c.readPhysical()
		if err != nil {
			return nil, err
		}
		p = append(p, part...)
		if len(part) < 0xffffff {
			return p, nil
		}
	}
}

// writePacket sends one logical packet, split into 16 MiB pieces.
func (c *rawConn) writePacket(p []byte) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(rawTimeout))
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	for {
		n := min(len(p), 0xffffff)
		if _, err := bw.Write([]byte{byte(n), byte(n >> 8), byte(n >> 16), c.seq}); err != nil {
			return err
		}
		c.seq++
		if _, err := bw.Write(p[:n]); err != nil {
			return err
		}
		p = p[n:]
		if n < 0xffffff {
			return bw.Flush()
		}
	}
}

// command starts a new command: sequence 0.
func (c *rawConn) command(payload []byte) error {
	c.seq = 0
	return c.writePacket(payload)
}

// column is what the raw client keeps of a column definition.
type column struct {
	Name  string
	Type  byte
	Flags uint16
}

func parseColumn(p []byte) (column, error) {
	var f [6]string
	for i := range f {
		n, _, k := mysqlwire.LenEncInt(p)
		if k == 0 || uint64(len(p)-k) < n {
			return column{}, errors.New("bad column definition")
		}
		f[i] = string(p[k : k+int(n)])
		p = p[k+int(n):]
	}
	if len(p) < 13 {
		return column{}, errors.New("short column definition")
	}
	// Fixed part: length (0x0c), charset(2), length(4), type, flags(2), decimals.
	return column{Name: f[4], Type: p[7], Flags: binary.LittleEndian.Uint16(p[8:])}, nil
}

func isEOF(p []byte) bool { return len(p) > 0 && len(p) < 9 && p[0] == 0xfe }

func eofStatus(p []byte) uint16 {
	if len(p) < 5 {
		return 0
	}
	return binary.LittleEndian.Uint16(p[3:])
}

// okStatus is the status flags of an OK packet.
func okStatus(p []byte) uint16 {
	p = p[1:]
	for range 2 { // affected rows, last insert id
		_, _, n := mysqlwire.LenEncInt(p)
		if n == 0 {
			return 0
		}
		p = p[n:]
	}
	if len(p) < 2 {
		return 0
	}
	return binary.LittleEndian.Uint16(p)
}

// query sends COM_QUERY and returns the text rows of its single result;
// an ERR is returned as *serverError.
func (c *rawConn) query(sql string) ([][]*string, error) {
	if err := c.command(append([]byte{comQuery}, sql...)); err != nil {
		return nil, err
	}
	p, err := c.readPacket()
	switch {
	case err != nil:
		return nil, err
	case len(p) == 0:
		return nil, errors.New("empty response")
	case p[0] == 0xff:
		return nil, parseERR(p)
	case p[0] == 0x00:
		if okStatus(p)&statusMoreResults != 0 {
			return nil, errors.New("unexpected further results")
		}
		return nil, nil
	}
	n, _, k := mysqlwire.LenEncInt(p)
	if k != len(p) {
		return nil, fmt.Errorf("bad column count packet %x", p[:min(len(p), 16)])
	}
	for range n + 1 { // column definitions, EOF
		if _, err := c.readPacket(); err != nil {
			return nil, err
		}
	}
	var rows [][]*string
	for {
		p, err := c.readPacket()
		switch {
		case err != nil:
			return rows, err
		case isEOF(p):
			if eofStatus(p)&statusMoreResults != 0 {
				return rows, errors.New("unexpected further results")
			}
			return rows, nil
		case p[0] == 0xff:
			return rows, parseERR(p)
		}
		var row []*string
		for range n {
			l, null, k := mysqlwire.LenEncInt(p)
			if k == 0 || uint64(len(p)-k) < l {
				return rows, errors.New("bad text row")
			}
			if null {
				row = append(row, nil)
			} else {
				s := string(p[k : k+int(l)])
				row = append(row, &s)
			}
			p = p[k+int(l):]
		}
		rows = append(rows, row)
	}
}

// mustSelectOne checks that the connection still serves statements:
// SELECT 1 over the text protocol answers 1.
func (c *rawConn) mustSelectOne(t testing.TB, after string) {
	t.Helper()
	rows, err := c.query("SELECT 1")
	if err != nil {
		t.Fatalf("after %s: SELECT 1: %v", after, err)
	}
	if len(rows) != 1 || len(rows[0]) != 1 || rows[0][0] == nil || *rows[0][0] != "1" {
		t.Fatalf("after %s: SELECT 1 returned %s", after, showRows(rows))
	}
}

// ping sends COM_PING and expects OK as the very next packet.
func (c *rawConn) ping() error {
	if err := c.command([]byte{comPing}); err != nil {
		return err
	}
	p, err := c.readPacket()
	switch {
	case err != nil:
		return err
	case len(p) > 0 && p[0] == 0xff:
		return parseERR(p)
	case len(p) == 0 || p[0] != 0x00:
		return fmt.Errorf("COM_PING answered with %x", p[:min(len(p), 16)])
	}
	return nil
}

// stmt is a statement the raw client prepared.
type stmt struct {
	ID      uint32
	Params  int
	Columns int
	// ColumnNames are the names of the column definitions the PREPARE
	// answer carried.
	ColumnNames []string
}

// prepare sends COM_STMT_PREPARE and reads the whole answer. A server
// error is returned as *serverError.
func (c *rawConn) prepare(sql string) (stmt, error) {
	if err := c.command(append([]byte{comStmtPrepare}, sql...)); err != nil {
		return stmt{}, err
	}
	p, err := c.readPacket()
	switch {
	case err != nil:
		return stmt{}, err
	case len(p) > 0 && p[0] == 0xff:
		return stmt{}, parseERR(p)
	case len(p) < 12 || p[0] != 0x00:
		return stmt{}, fmt.Errorf("bad COM_STMT_PREPARE OK %x", p[:min(len(p), 16)])
	}
	st := stmt{
		ID:      binary.LittleEndian.Uint32(p[1:]),
		Columns: int(binary.LittleEndian.Uint16(p[5:])),
		Params:  int(binary.LittleEndian.Uint16(p[7:])),
	}
	for i, n := range []int{st.Params, st.Columns} {
		if n == 0 {
			continue
		}
		for range n {
			p, err := c.readPacket()
			if err != nil {
				return st, err
			}
			if i == 1 {
				col, err := parseColumn(p)
				if err != nil {
					return st, err
				}
				st.ColumnNames = append(st.ColumnNames, col.Name)
			}
		}
		p, err := c.readPacket()
		if err != nil {
			return st, err
		}
		if !isEOF(p) {
			return st, fmt.Errorf("no EOF after definitions: %x", p[:min(len(p), 16)])
		}
	}
	return st, nil
}

// mustPrepare prepares sql and checks the number of parameters.
func (c *rawConn) mustPrepare(t testing.TB, sql string, params int) stmt {
	t.Helper()
	st, err := c.prepare(sql)
	if err != nil {
		t.Fatalf("prepare %q: %v", sql, err)
	}
	if st.Params != params {
		t.Fatalf("prepare %q: %d parameters, want %d", sql, st.Params, params)
	}
	return st
}

// param is one bound parameter of COM_STMT_EXECUTE.
type param struct {
	Type     byte
	Unsigned bool
	Null     bool
	Long     bool   // sent with COM_STMT_SEND_LONG_DATA: no value in the packet
	Value    []byte // binary-protocol encoding
}

func intParam(v int64) param {
	return param{Type: typeLongLong, Value: binary.LittleEndian.AppendUint64(nil, uint64(v))}
}

func strParam(s string) param {
	return param{Type: typeVarString, Value: mysqlwire.AppendLenEncInt(nil, uint64(len(s)))}.with([]byte(s))
}

func blobParam(b []byte) param {
	return param{Type: typeBlob, Value: mysqlwire.AppendLenEncInt(nil, uint64(len(b)))}.with(b)
}

func (p param) with(b []byte) param {
	p.Value = append(p.Value, b...)
	return p
}

// executePacket builds COM_STMT_EXECUTE. With bound (new_params_bound_flag
// = 1) the parameter types are included; without, the server uses the
// types of an earlier execute of the statement.
func executePacket(id uint32, flags byte, bound bool, params []param) []byte {
	b := []byte{comStmtExecute}
	b = binary.LittleEndian.AppendUint32(b, id)
	b = append(b, flags)
	b = binary.LittleEndian.AppendUint32(b, 1) // iteration count
	if len(params) == 0 {
		return b
	}
	nulls := make([]byte, (len(params)+7)/8)
	for i, p := range params {
		if p.Null {
			nulls[i/8] |= 1 << (i % 8)
		}
	}
	b = append(b, nulls...)
	if !bound {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		for _, p := range params {
			var f byte
			if p.Unsigned {
				f = paramUnsigned
			}
			b = append(b, p.Type, f)
		}
	}
	for _, p := range params {
		if !p.Null && !p.Long {
			b = append(b, p.Value...)
		}
	}
	return b
}

// stmtPacket is a COM_STMT_RESET / CLOSE / FETCH / SEND_LONG_DATA header.
func stmtPacket(cmd byte, id uint32, rest ...byte) []byte {
	return append(binary.LittleEndian.AppendUint32([]byte{cmd}, id), rest...)
}

func fetchPacket(id, rows uint32) []byte {
	return binary.LittleEndian.AppendUint32(stmtPacket(comStmtFetch, id), rows)
}

func longDataPacket(id uint32, paramIdx uint16, chunk []byte) []byte {
	return append(binary.LittleEndian.AppendUint16(stmtPacket(comStmtSendLongData, id), paramIdx), chunk...)
}

// execResult is the answer to COM_STMT_EXECUTE or COM_STMT_FETCH.
type execResult struct {
	Err     *serverError
	OK      bool
	Columns []column
	// HeaderStatus is the status of the EOF after the column definitions;
	// Status is the status of the final EOF (or the OK).
	HeaderStatus uint16
	Status       uint16
	// Rows are the binary rows decoded to text; NULL is nil.
	Rows [][]*string
}

// execute sends a COM_STMT_EXECUTE packet and reads the answer.
func (c *rawConn) execute(packet []byte) (execResult, error) {
	if err := c.command(packet); err != nil {
		return execResult{}, err
	}
	return c.readExecResponse()
}

// readExecResponse reads the answer to COM_STMT_EXECUTE: OK, ERR, or a
// binary result set. When the column EOF announces an open cursor no rows
// follow.
func (c *rawConn) readExecResponse() (execResult, error) {
	var r execResult
	p, err := c.readPacket()
	switch {
	case err != nil:
		return r, err
	case len(p) == 0:
		return r, errors.New("empty response")
	case p[0] == 0xff:
		r.Err = parseERR(p)
		return r, nil
	case p[0] == 0x00:
		r.OK = true
		r.Status = okStatus(p)
		if r.Status&statusMoreResults != 0 {
			return r, errors.New("unexpected further results")
		}
		return r, nil
	}
	n, _, k := mysqlwire.LenEncInt(p)
	if k != len(p) || n == 0 {
		return r, fmt.Errorf("bad column count packet %x", p[:min(len(p), 16)])
	}
	for range n {
		p, err := c.readPacket()
		if err != nil {
			return r, err
		}
		col, err := parseColumn(p)
		if err != nil {
			return r, err
		}
		r.Columns = append(r.Columns, col)
	}
	if p, err = c.readPacket(); err != nil {
		return r, err
	}
	if !isEOF(p) {
		return r, fmt.Errorf("no EOF after column definitions: %x", p[:min(len(p), 16)])
	}
	r.HeaderStatus = eofStatus(p)
	if r.HeaderStatus&statusCursorExists != 0 {
		return r, nil
	}
	return r, c.readBinaryRows(&r)
}

// readBinaryRows reads binary rows up to and including the closing EOF (or
// ERR) into r.
func (c *rawConn) readBinaryRows(r *execResult) error {
	for {
		p, err := c.readPacket()
		switch {
		case err != nil:
			return err
		case isEOF(p):
			r.Status = eofStatus(p)
			if r.Status&statusMoreResults != 0 {
				return errors.New("unexpected further results")
			}
			return nil
		case len(p) > 0 && p[0] == 0xff:
			r.Err = parseERR(p)
			return nil
		}
		row, err := decodeBinaryRow(p, r.Columns)
		if err != nil {
			return err
		}
		r.Rows = append(r.Rows, row)
	}
}

// fetch sends COM_STMT_FETCH for rows rows of the statement's open cursor
// (cols are the columns its execute announced) and reads the rows and the
// closing EOF, or an ERR.
func (c *rawConn) fetch(id, rows uint32, cols []column) (execResult, error) {
	r := execResult{Columns: cols}
	if err := c.command(fetchPacket(id, rows)); err != nil {
		return r, err
	}
	return r, c.readBinaryRows(&r)
}

// simpleCommand sends a command answered by OK or ERR (COM_STMT_RESET).
func (c *rawConn) simpleCommand(packet []byte) error {
	if err := c.command(packet); err != nil {
		return err
	}
	p, err := c.readPacket()
	switch {
	case err != nil:
		return err
	case len(p) > 0 && p[0] == 0xff:
		return parseERR(p)
	case len(p) == 0 || p[0] != 0x00:
		return fmt.Errorf("answered with %x", p[:min(len(p), 16)])
	}
	return nil
}

// decodeBinaryRow decodes a binary-protocol row into text the way the text
// protocol would show it (close enough for the values these tests use).
func decodeBinaryRow(p []byte, cols []column) ([]*string, error) {
	if len(p) == 0 || p[0] != 0x00 {
		return nil, fmt.Errorf("binary row starts with %x", p[:min(len(p), 16)])
	}
	nullLen := (len(cols) + 7 + 2) / 8
	if len(p) < 1+nullLen {
		return nil, errors.New("short binary row")
	}
	nulls := p[1 : 1+nullLen]
	p = p[1+nullLen:]
	row := make([]*string, len(cols))
	for i, col := range cols {
		bit := i + 2
		if nulls[bit/8]&(1<<(bit%8)) != 0 {
			continue
		}
		s, n, err := decodeBinaryValue(p, col)
		if err != nil {
			return nil, fmt.Errorf("column %d (%s, type %#x): %w", i, col.Name, col.Type, err)
		}
		row[i] = &s
		p = p[n:]
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%d bytes left over after the binary row", len(p))
	}
	return row, nil
}

func decodeBinaryValue(p []byte, col column) (string, int, error) {
	unsigned := col.Flags&flagUnsigned != 0
	fixed := func(n int) ([]byte, error) {
		if len(p) < n {
			return nil, errors.New("truncated value")
		}
		return p[:n], nil
	}
	switch col.Type {
	case typeTiny:
		b, err := fixed(1)
		if err != nil {
			return "", 0, err
		}
		if unsigned {
			return strconv.FormatUint(uint64(b[0]), 10), 1, nil
		}
		return strconv.FormatInt(int64(int8(b[0])), 10), 1, nil
	case typeShort, typeYear:
		b, err := fixed(2)
		if err != nil {
			return "", 0, err
		}
		v := binary.LittleEndian.Uint16(b)
		if unsigned || col.Type == typeYear {
			return strconv.FormatUint(uint64(v), 10), 2, nil
		}
		return strconv.FormatInt(int64(int16(v)), 10), 2, nil
	case typeLong, typeInt24:
		b, err := fixed(4)
		if err != nil {
			return "", 0, err
		}
		v := binary.LittleEndian.Uint32(b)
		if unsigned {
			return strconv.FormatUint(uint64(v), 10), 4, nil
		}
		return strconv.FormatInt(int64(int32(v)), 10), 4, nil
	case typeLongLong:
		b, err := fixed(8)
		if err != nil {
			return "", 0, err
		}
		v := binary.LittleEndian.Uint64(b)
		if unsigned {
			return strconv.FormatUint(v, 10), 8, nil
		}
		return strconv.FormatInt(int64(v), 10), 8, nil
	case typeFloat:
		b, err := fixed(4)
		if err != nil {
			return "", 0, err
		}
		return strconv.FormatFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 'g', -1, 32), 4, nil
	case typeDouble:
		b, err := fixed(8)
		if err != nil {
			return "", 0, err
		}
		return strconv.FormatFloat(math.Float64frombits(binary.LittleEndian.Uint64(b)), 'g', -1, 64), 8, nil
	case typeDate, typeDateTime, typeTimestamp:
		if len(p) < 1 || len(p) < 1+int(p[0]) {
			return "", 0, errors.New("truncated date")
		}
		n, b := int(p[0]), p[1:1+int(p[0])]
		var y, mo, d, h, mi, s, us int
		if n >= 4 {
			y, mo, d = int(binary.LittleEndian.Uint16(b)), int(b[2]), int(b[3])
		}
		if n >= 7 {
			h, mi, s = int(b[4]), int(b[5]), int(b[6])
		}
		if n >= 11 {
			us = int(binary.LittleEndian.Uint32(b[7:]))
		}
		out := fmt.Sprintf("%04d-%02d-%02d", y, mo, d)
		if col.Type != typeDate {
			out += fmt.Sprintf(" %02d:%02d:%02d", h, mi, s)
			if n >= 11 {
				out += fmt.Sprintf(".%06d", us)
			}
		}
		return out, 1 + n, nil
	case typeTime:
		if len(p) < 1 || len(p) < 1+int(p[0]) {
			return "", 0, errors.New("truncated time")
		}
		n, b := int(p[0]), p[1:1+int(p[0])]
		out := "00:00:00"
		if n >= 8 {
			sign := ""
			if b[0] == 1 {
				sign = "-"
			}
			hours := int(binary.LittleEndian.Uint32(b[1:]))*24 + int(b[5])
			out = fmt.Sprintf("%s%02d:%02d:%02d", sign, hours, b[6], b[7])
			if n >= 12 {
				out += fmt.Sprintf(".%06d", binary.LittleEndian.Uint32(b[8:]))
			}
		}
		return out, 1 + n, nil
	}
	// Everything else is a length-encoded string: (NEW)DECIMAL, strings,
	// blobs, ENUM, SET, BIT, JSON, GEOMETRY.
	l, _, k := mysqlwire.LenEncInt(p)
	if k == 0 || uint64(len(p)-k) < l {
		return "", 0, errors.New("truncated string value")
	}
	return string(p[k : k+int(l)]), k + int(l), nil
}

// showRows renders rows for failure messages.
func showRows(rows [][]*string) string {
	var b bytes.Buffer
	for _, row := range rows {
		b.WriteByte('(')
		for i, v := range row {
			if i > 0 {
				b.WriteString(", ")
			}
			if v == nil {
				b.WriteString("NULL")
			} else {
				s := *v
				if len(s) > 40 {
					s = s[:40] + fmt.Sprintf("...(%d bytes)", len(*v))
				}
				b.WriteString(strconv.Quote(s))
			}
		}
		b.WriteByte(')')
	}
	if len(rows) == 0 {
		return "no rows"
	}
	return b.String()
}

// wantRow fails the test unless res is one row with the given text values.
func wantRow(t testing.TB, what string, res execResult, want ...string) {
	t.Helper()
	if err := checkRow(res, want...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// checkRow is wantRow for workers: it returns what is wrong.
func checkRow(res execResult, want ...string) error {
	if res.Err != nil {
		return res.Err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != len(want) {
		return fmt.Errorf("got %s, want one row %q", showRows(res.Rows), want)
	}
	for i, w := range want {
		if v := res.Rows[0][i]; v == nil || *v != w {
			return fmt.Errorf("got %s, want %q", showRows(res.Rows), want)
		}
	}
	return nil
}

// wantErrCode fails the test unless res (or err) is a server error with
// code (0 accepts any code).
func wantErrCode(t testing.TB, what string, res execResult, err error, code uint16) *serverError {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if res.Err == nil {
		t.Fatalf("%s: answered %s (ok=%v), want an error %d", what, showRows(res.Rows), res.OK, code)
	}
	if code != 0 && res.Err.Code != code {
		t.Fatalf("%s: %v, want error %d", what, res.Err, code)
	}
	return res.Err
}
