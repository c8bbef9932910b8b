package clients

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// This file is a deliberately small MySQL client that exposes what the
// real clients hide: the greeting's scramble, which caching_sha2_password
// path the login took, raw packets with chosen sequence ids, and every
// packet of a response. Every read has a deadline, so a proxy that stops
// answering fails the test instead of hanging it.

// Capability flags the raw client uses.
const (
	capLongPassword     uint32 = 0x00000001
	capLongFlag         uint32 = 0x00000004
	capConnectWithDB    uint32 = 0x00000008
	capProtocol41       uint32 = 0x00000200
	capSSL              uint32 = 0x00000800
	capTransactions     uint32 = 0x00002000
	capSecureConnection uint32 = 0x00008000
	capMultiStatements  uint32 = 0x00010000
	capMultiResults     uint32 = 0x00020000
	capPSMultiResults   uint32 = 0x00040000
	capPluginAuth       uint32 = 0x00080000
	capPluginAuthLenenc uint32 = 0x00200000
)

// Server status flags.
const (
	statusInTrans     uint16 = 0x0001
	statusAutocommit  uint16 = 0x0002
	statusMoreResults uint16 = 0x0008
)

// Command bytes.
const (
	comInitDB          = 0x02
	comQuery           = 0x03
	comFieldList       = 0x04
	comStatistics      = 0x09
	comProcessKill     = 0x0c
	comPing            = 0x0e
	comChangeUser      = 0x11
	comSetOption       = 0x1b
	comResetConnection = 0x1f
)

const (
	pluginNative = "mysql_native_password"
	pluginSHA2   = "caching_sha2_password"
)

// rawReadTimeout bounds every read of the raw client.
const rawReadTimeout = 10 * time.Second

// serverError is an ERR packet.
type serverError struct {
	Code    uint16
	State   string
	Message string
}

func (e *serverError) Error() string {
	return fmt.Sprintf("Error %d (%s): %s", e.Code, e.State, e.Message)
}

// asServerError returns the ERR packet inside err, or nil.
func asServerError(err error) *serverError {
	var se *serverError
	if errors.As(err, &se) {
		return se
	}
	return nil
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

// rawOptions configure rawConnect.
type rawOptions struct {
	User, Password, DB string
	// Plugin answers the greeting's scramble; "" means mysql_native_password.
	Plugin string
	// TLS, when set, switches to TLS with an SSLRequest.
	TLS *tls.Config
	// TLSSameWrite sends the SSLRequest and the TLS ClientHello in one
	// write, as a fast client may put them in one TCP segment.
	TLSSameWrite bool
	// NoMultiStatements leaves CLIENT_MULTI_STATEMENTS out.
	NoMultiStatements bool
	// ExtraCaps are added to the capabilities asked for.
	ExtraCaps uint32
	// Collation is the handshake's collation id; 0 means 45
	// (utf8mb4_general_ci).
	Collation byte
	// LocalIP is the address to connect from (another loopback address,
	// say); "" lets the system pick.
	LocalIP string
}

// greeting is the server's initial handshake.
type greeting struct {
	Version string
	ConnID  uint32
	Salt    []byte
	Caps    uint32
	Plugin  string
}

// rawConn is a connection of the raw client.
type rawConn struct {
	nc       net.Conn
	br       *bufio.Reader
	seq      byte
	greeting greeting
	caps     uint32
	// authPath says how the login went: "native", "sha2-fast",
	// "sha2-full-tls" or "sha2-full-rsa" (after a public key request).
	authPath string
	timeout  time.Duration
	// anySeq accepts any sequence id from the peer (and follows it).
	anySeq bool
}

// rawConnect connects and logs in. A refused login returns *serverError
// with the connection closed.
func rawConnect(ctx context.Context, addr string, o rawOptions) (*rawConn, error) {
	var d net.Dialer
	if o.LocalIP != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(o.LocalIP)}
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &rawConn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), timeout: rawReadTimeout}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < c.timeout {
		c.timeout = time.Until(dl)
	}
	if err := c.login(o); err != nil {
		_ = nc.Close()
		return nil, err
	}
	return c, nil
}

// rawDial connects without logging in and returns the greeting, for tests
// of the handshake itself.
func rawDial(ctx context.Context, addr string) (*rawConn, []byte, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	c := &rawConn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), timeout: rawReadTimeout}
	p, err := c.readPacket()
	if err != nil {
		_ = nc.Close()
		return nil, nil, err
	}
	return c, p, nil
}

// mustRaw connects and logs in, failing the test on error, and closes the
// connection when the test ends.
func mustRaw(t testing.TB, ctx context.Context, addr string, o rawOptions) *rawConn {
	t.Helper()
	c, err := rawConnect(ctx, addr, o)
	if err != nil {
		t.Fatalf("raw connect to %s as %s: %v", addr, o.User, err)
	}
	t.Cleanup(c.close)
	return c
}

func (c *rawConn) close() { _ = c.nc.Close() }

func parseGreeting(p []byte) (greeting, error) {
	var g greeting
	if len(p) == 0 {
		return g, errors.New("empty greeting")
	}
	if p[0] == 0xff {
		return g, parseERR(p)
	}
	if p[0] != 10 {
		return g, fmt.Errorf("protocol version %d", p[0])
	}
	p = p[1:]
	i := bytes.IndexByte(p, 0)
	if i < 0 || len(p) < i+1+4+8+1+2+1+2+2+1+10 {
		return g, errors.New("short greeting")
	}
	g.Version = string(p[:i])
	p = p[i+1:]
	g.ConnID = binary.LittleEndian.Uint32(p)
	g.Salt = append([]byte(nil), p[4:12]...)
	p = p[13:]
	g.Caps = uint32(binary.LittleEndian.Uint16(p))
	p = p[2+1+2:] // charset, status
	g.Caps |= uint32(binary.LittleEndian.Uint16(p)) << 16
	authLen := int(p[2])
	p = p[3+10:]
	n := max(13, authLen-8)
	if len(p) < n {
		return g, errors.New("short scramble")
	}
	g.Salt = append(g.Salt, p[:n-1]...) // without the terminating NUL
	p = p[n:]
	if i := bytes.IndexByte(p, 0); i >= 0 {
		g.Plugin = string(p[:i])
	} else {
		g.Plugin = string(p)
	}
	return g, nil
}

func (c *rawConn) login(o rawOptions) error {
	p, err := c.readPacket()
	if err != nil {
		return fmt.Errorf("read greeting: %w", err)
	}
	if c.greeting, err = parseGreeting(p); err != nil {
		return err
	}
	want := capLongPassword | capLongFlag | capProtocol41 | capTransactions | capSecureConnection |
		capMultiResults | capPSMultiResults | capPluginAuth | capPluginAuthLenenc | o.ExtraCaps
	if !o.NoMultiStatements {
		want |= capMultiStatements
	}
	if o.DB != "" {
		want |= capConnectWithDB
	}
	if o.TLS != nil {
		want |= capSSL
	}
	c.caps = want & c.greeting.Caps
	if o.TLS != nil {
		if c.greeting.Caps&capSSL == 0 {
			return errors.New("server does not offer TLS")
		}
		under := c.nc
		if o.TLSSameWrite {
			hc := &holdConn{Conn: c.nc}
			c.nc, under = hc, hc
		}
		if err := c.writePacket(c.handshakeHead(o.Collation)); err != nil {
			return err
		}
		tc := tls.Client(under, o.TLS)
		_ = tc.SetDeadline(time.Now().Add(c.timeout))
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		_ = tc.SetDeadline(time.Time{})
		c.nc = tc
		c.br = bufio.NewReaderSize(tc, 64<<10)
	}
	plugin := o.Plugin
	if plugin == "" {
		plugin = pluginNative
	}
	resp := c.handshakeHead(o.Collation)
	resp = append(resp, o.User...)
	resp = append(resp, 0)
	auth := scramble(plugin, o.Password, c.greeting.Salt)
	resp = mysqlwire.AppendLenEncInt(resp, uint64(len(auth)))
	resp = append(resp, auth...)
	if o.DB != "" {
		resp = append(resp, o.DB...)
		resp = append(resp, 0)
	}
	resp = append(resp, plugin...)
	resp = append(resp, 0)
	if err := c.writePacket(resp); err != nil {
		return err
	}
	return c.authLoop(plugin, o.Password, o.TLS != nil)
}

// holdConn keeps the first write back and sends it with the second.
type holdConn struct {
	net.Conn
	held []byte
	done bool
}

func (h *holdConn) Write(b []byte) (int, error) {
	if h.done {
		return h.Conn.Write(b)
	}
	if h.held == nil {
		h.held = append([]byte{}, b...)
		return len(b), nil
	}
	h.done = true
	if _, err := h.Conn.Write(append(h.held, b...)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// handshakeHead is the fixed start of SSLRequest and HandshakeResponse41.
func (c *rawConn) handshakeHead(collation byte) []byte {
	if collation == 0 {
		collation = 45 // utf8mb4_general_ci
	}
	b := binary.LittleEndian.AppendUint32(nil, c.caps)
	b = binary.LittleEndian.AppendUint32(b, 1<<30)
	b = append(b, collation)
	return append(b, make([]byte, 23)...)
}

// authLoop answers auth switches and caching_sha2_password's extra rounds
// until OK or ERR.
func (c *rawConn) authLoop(plugin, password string, secure bool) error {
	salt := c.greeting.Salt
	switched := false
	if plugin == pluginNative {
		c.authPath = "native"
	}
	for {
		p, err := c.readPacket()
		if err != nil {
			return fmt.Errorf("read auth result: %w", err)
		}
		switch {
		case len(p) == 0:
			return errors.New("empty auth packet")
		case p[0] == 0x00:
			return nil
		case p[0] == 0xff:
			return parseERR(p)
		case p[0] == 0xfe:
			if switched {
				return errors.New("second auth switch")
			}
			switched = true
			rest := p[1:]
			i := bytes.IndexByte(rest, 0)
			if i < 0 {
				return errors.New("bad auth switch")
			}
			plugin = string(rest[:i])
			salt = bytes.TrimRight(rest[i+1:], "\x00")
			if plugin == pluginNative {
				c.authPath = "native"
			}
			if err := c.writePacket(scramble(plugin, password, salt)); err != nil {
				return err
			}
		case p[0] == 0x01 && plugin == pluginSHA2 && len(p) == 2 && p[1] == 0x03:
			c.authPath = "sha2-fast"
		case p[0] == 0x01 && plugin == pluginSHA2 && len(p) == 2 && p[1] == 0x04:
			if secure {
				c.authPath = "sha2-full-tls"
				if err := c.writePacket(append([]byte(password), 0)); err != nil {
					return err
				}
				continue
			}
			c.authPath = "sha2-full-rsa"
			if err := c.writePacket([]byte{0x02}); err != nil {
				return err
			}
			k, err := c.readPacket()
			if err != nil {
				return fmt.Errorf("read public key: %w", err)
			}
			if len(k) == 0 || k[0] != 0x01 {
				return fmt.Errorf("public key request answered with %x", k[:min(len(k), 16)])
			}
			enc, err := encryptPassword(password, salt, k[1:])
			if err != nil {
				return err
			}
			if err := c.writePacket(enc); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected auth packet %x", p[:min(len(p), 16)])
		}
	}
}

// scramble computes the auth response of a plugin.
func scramble(plugin, password string, salt []byte) []byte {
	if password == "" {
		return nil
	}
	salt = salt[:min(len(salt), 20)]
	switch plugin {
	case pluginSHA2:
		h1 := sha256.Sum256([]byte(password))
		h2 := sha256.Sum256(h1[:])
		h := sha256.New()
		h.Write(h2[:])
		h.Write(salt)
		x := h.Sum(nil)
		for i := range x {
			x[i] ^= h1[i]
		}
		return x
	default:
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
}

// encryptPassword is caching_sha2_password's RSA exchange:
// RSA-OAEP(SHA1) of (password NUL) XOR salt.
func encryptPassword(password string, salt, pemKey []byte) ([]byte, error) {
	block, _ := pem.Decode(pemKey)
	if block == nil {
		return nil, fmt.Errorf("no PEM in public key packet: %q", pemKey[:min(len(pemKey), 40)])
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	rk, ok := pub.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("public key is %T", pub)
	}
	plain := append([]byte(password), 0)
	for i := range plain {
		plain[i] ^= salt[i%len(salt)]
	}
	return rsa.EncryptOAEP(sha1.New(), rand.Reader, rk, plain, nil)
}

// readPhysical reads one physical packet; the sequence id is checked.
func (c *rawConn) readPhysical() ([]byte, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(c.timeout))
	var h [4]byte
	if _, err := io.ReadFull(c.br, h[:]); err != nil {
		return nil, err
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if c.anySeq {
		c.seq = h[3]
	} else if h[3] != c.seq {
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
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.timeout))
	for {
		n := min(len(p), 0xffffff)
		h := []byte{byte(n), byte(n >> 8), byte(n >> 16), c.seq}
		c.seq++
		if _, err := c.nc.Write(append(h, p[:n]...)); err != nil {
			return err
		}
		p = p[n:]
		if n < 0xffffff {
			return nil
		}
	}
}

// writeRawBytes sends bytes as they are, for malformed framing.
func (c *rawConn) writeRawBytes(b []byte) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.timeout))
	_, err := c.nc.Write(b)
	return err
}

// command starts a new command: sequence 0.
func (c *rawConn) command(payload []byte) error {
	c.seq = 0
	return c.writePacket(payload)
}

// rawResult is one result of a response.
type rawResult struct {
	Err      *serverError
	Affected uint64
	InsertID uint64
	Status   uint16
	Warnings uint16
	Info     string
	IsEOF    bool // the response was a lone EOF packet (COM_SET_OPTION)
	// Columns and Rows are set for a result set; a NULL value is nil.
	Columns []rawColumn
	Rows    [][]*string
}

// rawColumn is a column definition.
type rawColumn struct {
	Schema, Table, OrgTable, Name, OrgName string
	Charset                                uint16
	Length                                 uint32
	Type                                   byte
	Flags                                  uint16
	Decimals                               byte
}

func parseColumn(p []byte) (rawColumn, error) {
	var col rawColumn
	var f [6]string
	for i := range f {
		n, _, k := mysqlwire.LenEncInt(p)
		if k == 0 || uint64(len(p)-k) < n {
			return col, errors.New("bad column definition")
		}
		f[i] = string(p[k : k+int(n)])
		p = p[k+int(n):]
	}
	if len(p) < 13 {
		return col, errors.New("short column definition")
	}
	col.Schema, col.Table, col.OrgTable, col.Name, col.OrgName = f[1], f[2], f[3], f[4], f[5]
	p = p[1:] // length of fixed fields
	col.Charset = binary.LittleEndian.Uint16(p)
	col.Length = binary.LittleEndian.Uint32(p[2:])
	col.Type = p[6]
	col.Flags = binary.LittleEndian.Uint16(p[7:])
	col.Decimals = p[9]
	return col, nil
}

func isEOF(p []byte) bool { return len(p) > 0 && len(p) < 9 && p[0] == 0xfe }

func parseOK(p []byte) rawResult {
	var r rawResult
	p = p[1:]
	var n int
	r.Affected, _, n = mysqlwire.LenEncInt(p)
	p = p[n:]
	r.InsertID, _, n = mysqlwire.LenEncInt(p)
	p = p[n:]
	if len(p) >= 4 {
		r.Status = binary.LittleEndian.Uint16(p)
		r.Warnings = binary.LittleEndian.Uint16(p[2:])
		r.Info = string(p[4:])
	}
	return r
}

// readResults reads a complete response to a command: every result while
// SERVER_MORE_RESULTS_EXISTS. A server error is the last result's Err.
func (c *rawConn) readResults() ([]rawResult, error) {
	var out []rawResult
	for {
		r, err := c.readResult()
		if err != nil {
			return out, err
		}
		out = append(out, r)
		if r.Err != nil || r.Status&statusMoreResults == 0 {
			return out, nil
		}
	}
}

func (c *rawConn) readResult() (rawResult, error) {
	p, err := c.readPacket()
	if err != nil {
		return rawResult{}, err
	}
	switch {
	case len(p) == 0:
		return rawResult{}, errors.New("empty response packet")
	case p[0] == 0x00:
		return parseOK(p), nil
	case p[0] == 0xff:
		return rawResult{Err: parseERR(p)}, nil
	case isEOF(p):
		r := rawResult{IsEOF: true}
		if len(p) >= 5 {
			r.Warnings = binary.LittleEndian.Uint16(p[1:])
			r.Status = binary.LittleEndian.Uint16(p[3:])
		}
		return r, nil
	case p[0] == 0xfb:
		return rawResult{}, fmt.Errorf("LOCAL INFILE request for %q", p[1:])
	}
	n, _, k := mysqlwire.LenEncInt(p)
	if k != len(p) {
		return rawResult{}, fmt.Errorf("bad column count packet %x", p[:min(len(p), 16)])
	}
	var r rawResult
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
	for {
		p, err := c.readPacket()
		if err != nil {
			return r, err
		}
		switch {
		case isEOF(p):
			r.Warnings = binary.LittleEndian.Uint16(p[1:])
			r.Status = binary.LittleEndian.Uint16(p[3:])
			return r, nil
		case len(p) > 0 && p[0] == 0xff:
			r.Err = parseERR(p)
			return r, nil
		}
		row := make([]*string, 0, n)
		for range n {
			l, null, k := mysqlwire.LenEncInt(p)
			if k == 0 || uint64(len(p)-k) < l {
				return r, errors.New("bad row")
			}
			if null {
				row = append(row, nil)
			} else {
				s := string(p[k : k+int(l)])
				row = append(row, &s)
			}
			p = p[k+int(l):]
		}
		r.Rows = append(r.Rows, row)
	}
}

// query sends COM_QUERY and reads the whole response.
func (c *rawConn) query(sql string) ([]rawResult, error) {
	if err := c.command(append([]byte{comQuery}, sql...)); err != nil {
		return nil, err
	}
	return c.readResults()
}

// mustQuery runs sql and returns its last result, failing on any error.
func (c *rawConn) mustQuery(t testing.TB, sql string) rawResult {
	t.Helper()
	rs, err := c.query(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	last := rs[len(rs)-1]
	if last.Err != nil {
		t.Fatalf("%s: %v", sql, last.Err)
	}
	return last
}

// scalar runs sql and returns the first column of its only row ("NULL"
// for NULL).
func (c *rawConn) scalar(t testing.TB, sql string) string {
	t.Helper()
	r := c.mustQuery(t, sql)
	if len(r.Rows) != 1 || len(r.Rows[0]) == 0 {
		t.Fatalf("%s: want one row, got %d", sql, len(r.Rows))
	}
	if r.Rows[0][0] == nil {
		return "NULL"
	}
	return *r.Rows[0][0]
}

// ping sends COM_PING and expects OK.
func (c *rawConn) ping() error {
	if err := c.command([]byte{comPing}); err != nil {
		return err
	}
	r, err := c.readResult()
	switch {
	case err != nil:
		return err
	case r.Err != nil:
		return r.Err
	case r.IsEOF || r.Columns != nil:
		return errors.New("COM_PING answered with something other than OK")
	}
	return nil
}

// expectClosed reads until the peer closes, failing on data or timeout.
func (c *rawConn) expectClosed(t testing.TB, what string) {
	t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(c.timeout))
	b, err := c.br.ReadByte()
	switch {
	case err == nil:
		t.Fatalf("%s: connection still open, got byte %#x", what, b)
	case isTimeout(err):
		t.Fatalf("%s: connection neither answered nor closed within %s", what, c.timeout)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// changeUser sends COM_CHANGE_USER with a mysql_native_password scramble
// over the greeting's salt, then answers auth rounds like a login.
func (c *rawConn) changeUser(user, password, db string) error {
	p := []byte{comChangeUser}
	p = append(p, user...)
	p = append(p, 0)
	auth := scramble(pluginNative, password, c.greeting.Salt)
	p = append(p, byte(len(auth)))
	p = append(p, auth...)
	p = append(p, db...)
	p = append(p, 0)
	p = binary.LittleEndian.AppendUint16(p, 45)
	if c.caps&capPluginAuth != 0 {
		p = append(p, pluginNative...)
		p = append(p, 0)
	}
	if err := c.command(p); err != nil {
		return err
	}
	return c.authLoop(pluginNative, password, false)
}

// rowsText renders a result's rows for comparisons and messages.
func rowsText(r rawResult) string {
	var b strings.Builder
	for _, row := range r.Rows {
		for i, v := range row {
			if i > 0 {
				b.WriteByte('\t')
			}
			if v == nil {
				b.WriteString("NULL")
			} else {
				b.WriteString(*v)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
