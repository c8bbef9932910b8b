// Package fakemysql is a small MySQL-protocol server for tests that must
// run without mysqld. It greets as MariaDB (protocol 10,
// mysql_native_password), checks the login when told the account, and
// answers the commands a client pool sends: COM_QUERY (SET, DO and other
// statements are OK; SELECT of what it knows returns a row, of what it does
// not an ERR 1064), COM_PING, COM_RESET_CONNECTION, COM_INIT_DB,
// COM_CHANGE_USER, COM_SET_OPTION, COM_STMT_CLOSE and COM_QUIT. It counts
// commands and queries so that tests can assert what reached the server.
//
// A Server has no listener: Dial (the signature of pool.Config.Dial and of
// net.Dialer.DialContext) hands out one end of a net.Pipe and serves the
// other; Serve serves any net.Conn, such as one accepted on a loopback
// listener.
package fakemysql

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// DefaultVersion is the server version a Server announces by default.
const DefaultVersion = "10.11.99-MariaDB-fake"

// Caps are the capability flags the greeting offers: MariaDB's (no
// CLIENT_MYSQL, no TLS, no compression).
const Caps = mysqlwire.ClientFoundRows | mysqlwire.ClientLongFlag | mysqlwire.ClientConnectWithDB |
	mysqlwire.ClientLocalFiles | mysqlwire.ClientIgnoreSpace | mysqlwire.ClientProtocol41 |
	mysqlwire.ClientInteractive | mysqlwire.ClientTransactions | mysqlwire.ClientSecureConnection |
	mysqlwire.ClientMultiStatements | mysqlwire.ClientMultiResults | mysqlwire.ClientPSMultiResults |
	mysqlwire.ClientPluginAuth | mysqlwire.ClientConnectAttrs | mysqlwire.ClientPluginAuthLenenc |
	mysqlwire.ClientSessionTrack | mysqlwire.ClientDeprecateEOF

// Config configures a Server. The zero value is usable: any login is
// accepted and the defaults answer.
type Config struct {
	// Version is the server version of the greeting. Default
	// DefaultVersion.
	Version string
	// User and Password, when User is set, are the only account the
	// server lets in (mysql_native_password scramble); others get ERR 1045.
	User, Password string
	// ExtCaps are MariaDB extended capabilities the greeting offers
	// (mysqlwire.MariaDBClient*). Default none.
	ExtCaps uint32
	// Query, when set, is asked first about every COM_QUERY; ok false
	// leaves the query to the defaults.
	Query func(query string) (a Answer, ok bool)
	// Vars are global variables added to (or replacing) the defaults,
	// names in lower case.
	Vars map[string]string
}

// Answer is the response to a query: an error, a result set (Columns
// set), or an OK.
type Answer struct {
	Err          *mysqlwire.Error
	Columns      []string
	Rows         [][]any // nil is NULL; other values are formatted with fmt.Sprint
	AffectedRows uint64
}

// OK is an Answer of an OK packet.
func OK() Answer { return Answer{} }

// Error is an Answer of an ERR packet.
func Error(code uint16, state, msg string) Answer {
	return Answer{Err: &mysqlwire.Error{Code: code, State: state, Message: msg}}
}

// Result is an Answer of a result set.
func Result(columns []string, rows ...[]any) Answer {
	return Answer{Columns: columns, Rows: rows}
}

// ErrDown is what Dial returns while the server is down (SetDown).
var ErrDown = &net.OpError{Op: "dial", Net: "pipe", Err: syscall.ECONNREFUSED}

// Server is a fake MySQL server. Its methods are safe for concurrent use.
type Server struct {
	cfg  Config
	vars map[string]string // global variables, read-only after New

	mu       sync.Mutex
	wg       sync.WaitGroup
	conns    map[*conn]struct{}
	nextID   uint32
	down     bool
	closed   bool
	dials    int
	logins   int
	commands map[byte]int
	queries  []string
	errs     []error
}

// New returns a Server; Close stops it.
func New(cfg Config) *Server {
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	s := &Server{cfg: cfg, conns: map[*conn]struct{}{}, commands: map[byte]int{}, nextID: 100}
	s.vars = map[string]string{
		"max_allowed_packet":             "16777216",
		"net_buffer_length":              "16384",
		"max_prepared_stmt_count":        "16382",
		"sql_mode":                       "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION",
		"wait_timeout":                   "28800",
		"interactive_timeout":            "28800",
		"autocommit":                     "ON",
		"time_zone":                      "SYSTEM",
		"character_set_server":           "utf8mb4",
		"collation_server":               "utf8mb4_general_ci",
		"session_track_schema":           "ON",
		"session_track_state_change":     "OFF",
		"session_track_system_variables": "autocommit,character_set_client,character_set_connection,character_set_results,time_zone",
		"version":                        cfg.Version,
	}
	for k, v := range cfg.Vars {
		s.vars[strings.ToLower(k)] = v
	}
	return s
}

// Dial serves a new connection over a net.Pipe and returns the client's
// end. It has the signature of pool.Config.Dial; network and addr are
// ignored. While the server is down it returns ErrDown.
func (s *Server) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	client, server := net.Pipe()
	if !s.serve(server, true) {
		client.Close()
		return nil, ErrDown
	}
	return client, nil
}

// Serve serves nc in a new goroutine until the client quits, the
// connection fails or the server is closed. It reports false (and closes
// nc) when the server is closed already.
func (s *Server) Serve(nc net.Conn) bool { return s.serve(nc, false) }

// serve registers and serves nc; a dialed connection is refused while the
// server is down, checked under the lock SetDown takes so that none slips
// past the CloseConns of SetDown.
func (s *Server) serve(nc net.Conn, dialed bool) bool {
	s.mu.Lock()
	if dialed {
		s.dials++
	}
	if s.closed || dialed && s.down {
		s.mu.Unlock()
		nc.Close()
		return false
	}
	s.nextID++
	c := &conn{s: s, nc: nc, id: s.nextID, user: map[string]string{}, session: map[string]string{}}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				s.fail(fmt.Errorf("fakemysql: panic serving connection %d: %v", c.id, r))
			}
			nc.Close()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
		c.serve()
	}()
	return true
}

// SetDown makes Dial refuse connections (true) or accept them again; down
// also closes the connections open.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
	if down {
		s.CloseConns()
	}
}

// CloseConns closes every open connection from the server's side, as a
// server restart would.
func (s *Server) CloseConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.nc.Close()
	}
}

// Close closes every connection, refuses new ones, and waits until the
// goroutines serving connections have ended.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Open returns the number of connections being served.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Dials returns how many times Dial was called (refused ones included).
func (s *Server) Dials() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dials
}

// Logins returns the number of successful logins (handshakes and
// COM_CHANGE_USER).
func (s *Server) Logins() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logins
}

// Commands returns how many commands with the command byte cmd
// (mysqlwire.Com*) the server received.
func (s *Server) Commands(cmd byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commands[cmd]
}

// Queries returns the text of every COM_QUERY received, in order.
func (s *Server) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.queries...)
}

// CountQueries returns how many queries received start with prefix
// (case-insensitive).
func (s *Server) CountQueries(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.queries {
		if len(q) >= len(prefix) && strings.EqualFold(q[:len(prefix)], prefix) {
			n++
		}
	}
	return n
}

// Err returns the protocol violations the server saw (a malformed
// handshake response, a panic while serving), joined; nil when none.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

func (s *Server) fail(err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
}

func (s *Server) count(cmd byte, query string) {
	s.mu.Lock()
	s.commands[cmd]++
	if cmd == mysqlwire.ComQuery {
		s.queries = append(s.queries, query)
	}
	s.mu.Unlock()
}

// NativeScramble is mysql_native_password's answer to salt for password:
// SHA1(password) XOR SHA1(salt, SHA1(SHA1(password))); empty for an empty
// password.
func NativeScramble(salt []byte, password string) []byte {
	if password == "" {
		return nil
	}
	h1 := sha1.Sum([]byte(password))
	h2 := sha1.Sum(h1[:])
	h := sha1.New()
	h.Write(salt)
	h.Write(h2[:])
	out := h.Sum(nil)
	for i := range out {
		out[i] ^= h1[i]
	}
	return out
}

// newSalt returns 20 random printable bytes (no NUL, which ends the salt).
func newSalt() []byte {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = 33 + b[i]%94
	}
	return b
}

// conn is the server side of one connection.
type conn struct {
	s    *Server
	nc   net.Conn
	r    *mysqlwire.Reader
	w    *mysqlwire.Writer
	id   uint32
	salt []byte
	caps uint32 // negotiated

	schema  string
	liid    uint64
	user    map[string]string // user variables
	session map[string]string // session variables set
}

var errQuit = errors.New("quit")

func (c *conn) serve() {
	c.r = mysqlwire.NewReader(c.nc, make([]byte, 4096), nil)
	c.r.MaxPacket = 1 << 24
	c.w = mysqlwire.NewWriterSize(c.nc, 4096)
	c.salt = newSalt()
	if c.greet() != nil || !c.login() {
		return
	}
	for {
		c.r.SetSeq(0)
		p, err := c.r.ReadPacket()
		if err != nil || len(p) == 0 {
			return
		}
		if err := c.command(p); err != nil {
			return
		}
		if err := c.w.Flush(); err != nil {
			return
		}
	}
}

// begin starts a packet continuing the sequence of the last one read; end
// finishes it.
func (c *conn) begin() {
	c.w.SetSeq(c.r.Seq())
	c.w.Begin()
}

func (c *conn) end() error {
	err := c.w.End()
	c.r.SetSeq(c.w.Seq())
	return err
}

func (c *conn) greet() error {
	c.begin()
	c.w.AppendByte(10)
	c.w.AppendString(c.s.cfg.Version)
	c.w.AppendByte(0)
	c.w.AppendUint32(c.id)
	c.w.AppendBytes(c.salt[:8])
	c.w.AppendByte(0)
	c.w.AppendUint16(uint16(Caps & 0xffff))
	c.w.AppendByte(45) // utf8mb4_general_ci
	c.w.AppendUint16(mysqlwire.StatusAutocommit)
	c.w.AppendUint16(uint16(Caps >> 16))
	c.w.AppendByte(21)
	c.w.AppendBytes(make([]byte, 6))
	c.w.AppendUint32(c.s.cfg.ExtCaps)
	c.w.AppendBytes(c.salt[8:])
	c.w.AppendByte(0)
	c.w.AppendString("mysql_native_password")
	c.w.AppendByte(0)
	if err := c.end(); err != nil {
		return err
	}
	return c.w.Flush()
}

// login reads the handshake response and answers it.
func (c *conn) login() bool {
	p, err := c.r.ReadPacket()
	if err != nil {
		return false
	}
	if len(p) < 32 {
		c.s.fail(fmt.Errorf("fakemysql: handshake response of %d bytes", len(p)))
		return false
	}
	caps := binary.LittleEndian.Uint32(p)
	if caps&mysqlwire.ClientSSL != 0 && len(p) == 32 {
		c.s.fail(errors.New("fakemysql: SSLRequest, but TLS was not offered"))
		return false
	}
	c.caps = caps & Caps
	rest := p[32:]
	user, rest, err := mysqlwire.NullTerminated(rest)
	if err != nil {
		c.s.fail(errors.New("fakemysql: no user in handshake response"))
		return false
	}
	var auth []byte
	switch {
	case caps&mysqlwire.ClientPluginAuthLenenc != 0:
		var n int
		if auth, n, err = mysqlwire.LenEncString(rest); err != nil {
			c.s.fail(errors.New("fakemysql: bad auth response"))
			return false
		}
		rest = rest[n:]
	case caps&mysqlwire.ClientSecureConnection != 0 && len(rest) > 0 && int(rest[0]) < len(rest):
		auth, rest = rest[1:1+int(rest[0])], rest[1+int(rest[0]):]
	default:
		auth, rest, _ = mysqlwire.NullTerminated(rest)
	}
	if caps&mysqlwire.ClientConnectWithDB != 0 {
		if db, r, err := mysqlwire.NullTerminated(rest); err == nil {
			c.schema = string(db)
			rest = r
		}
	}
	_ = rest // plugin name and attributes are not looked at
	if !c.accept(string(user), auth) {
		return false
	}
	return c.w.Flush() == nil
}

// accept checks a login and answers OK or ERR 1045; it reports whether the
// login succeeded and the answer went out.
func (c *conn) accept(user string, auth []byte) bool {
	cfg := &c.s.cfg
	if cfg.User != "" && (user != cfg.User || subtle.ConstantTimeCompare(auth, NativeScramble(c.salt, cfg.Password)) != 1) {
		using := "NO"
		if len(auth) > 0 {
			using = "YES"
		}
		_ = c.writeAnswer(Error(1045, "28000", fmt.Sprintf("Access denied for user '%s'@'localhost' (using password: %s)", user, using)))
		_ = c.w.Flush()
		return false
	}
	c.s.mu.Lock()
	c.s.logins++
	c.s.mu.Unlock()
	return c.writeOK(0) == nil
}

func (c *conn) status() uint16 { return mysqlwire.StatusAutocommit }

func (c *conn) writeOK(affected uint64) error {
	c.w.SetSeq(c.r.Seq())
	var err error
	if c.caps&mysqlwire.ClientSessionTrack != 0 {
		err = c.w.WriteOKTracked(affected, 0, c.status(), 0, nil, nil)
	} else {
		err = c.w.WriteOK(affected, 0, c.status(), 0, nil)
	}
	c.r.SetSeq(c.w.Seq())
	return err
}

// writeEnd ends column definitions or rows: an EOF packet, or with
// CLIENT_DEPRECATE_EOF an OK packet with the EOF header at the end.
func (c *conn) writeEnd(last bool) error {
	if c.caps&mysqlwire.ClientDeprecateEOF != 0 {
		if !last {
			return nil
		}
		c.begin()
		c.w.AppendByte(mysqlwire.EOFHeader)
		c.w.AppendLenEncInt(0)
		c.w.AppendLenEncInt(0)
		c.w.AppendUint16(c.status())
		c.w.AppendUint16(0)
		if c.caps&mysqlwire.ClientSessionTrack != 0 {
			c.w.AppendByte(0)
		}
		return c.end()
	}
	c.w.SetSeq(c.r.Seq())
	err := c.w.WriteEOF(0, c.status())
	c.r.SetSeq(c.w.Seq())
	return err
}

func (c *conn) writeAnswer(a Answer) error {
	switch {
	case a.Err != nil:
		c.w.SetSeq(c.r.Seq())
		err := c.w.WriteERR(a.Err)
		c.r.SetSeq(c.w.Seq())
		return err
	case a.Columns == nil:
		return c.writeOK(a.AffectedRows)
	}
	c.begin()
	c.w.AppendLenEncInt(uint64(len(a.Columns)))
	if err := c.end(); err != nil {
		return err
	}
	for _, name := range a.Columns {
		c.w.SetSeq(c.r.Seq())
		err := c.w.WriteColumn(mysqlwire.Column{Name: []byte(name), Charset: 45, Length: 1024, Type: 0xfd})
		c.r.SetSeq(c.w.Seq())
		if err != nil {
			return err
		}
	}
	if err := c.writeEnd(false); err != nil {
		return err
	}
	for _, row := range a.Rows {
		c.begin()
		for i := range a.Columns {
			var v any
			if i < len(row) {
				v = row[i]
			}
			if v == nil {
				c.w.AppendByte(0xfb)
			} else {
				c.w.AppendLenEncString([]byte(fmt.Sprint(v)))
			}
		}
		if err := c.end(); err != nil {
			return err
		}
	}
	return c.writeEnd(true)
}

// command answers one command packet; an error ends the connection.
func (c *conn) command(p []byte) error {
	cmd, arg := p[0], p[1:]
	c.s.count(cmd, string(arg))
	switch cmd {
	case mysqlwire.ComQuit:
		return errQuit
	case mysqlwire.ComQuery:
		return c.writeAnswer(c.query(string(arg)))
	case mysqlwire.ComPing:
		return c.writeOK(0)
	case mysqlwire.ComInitDB:
		c.schema = string(arg)
		return c.writeOK(0)
	case mysqlwire.ComResetConnection:
		c.resetSession()
		return c.writeOK(0)
	case mysqlwire.ComChangeUser:
		return c.changeUser(arg)
	case mysqlwire.ComSetOption:
		return c.writeEnd(true)
	case mysqlwire.ComStmtClose:
		return nil // no response
	case mysqlwire.ComStmtPrepare:
		return c.writeAnswer(Error(1295, "HY000", "This command is not supported in the prepared statement protocol yet"))
	}
	return c.writeAnswer(Error(1047, "08S01", "Unknown command"))
}

func (c *conn) resetSession() {
	c.liid = 0
	clear(c.user)
	clear(c.session)
}

// changeUser answers COM_CHANGE_USER: user, auth data, schema, collation,
// plugin, attributes.
func (c *conn) changeUser(arg []byte) error {
	user, rest, err := mysqlwire.NullTerminated(arg)
	if err != nil || len(rest) == 0 || 1+int(rest[0]) > len(rest) {
		return c.writeAnswer(Error(1043, "08S01", "Bad handshake"))
	}
	auth := rest[1 : 1+int(rest[0])]
	rest = rest[1+int(rest[0]):]
	schema, _, err := mysqlwire.NullTerminated(rest)
	if err != nil {
		schema = rest
	}
	c.resetSession()
	c.schema = string(schema)
	if !c.accept(string(user), auth) {
		return errQuit
	}
	return nil
}

// query answers a COM_QUERY: the hook first, then the defaults.
func (c *conn) query(q string) Answer {
	if h := c.s.cfg.Query; h != nil {
		if a, ok := h(q); ok {
			return a
		}
	}
	t := strings.TrimSpace(q)
	verb, rest, _ := strings.Cut(t, " ")
	switch strings.ToUpper(verb) {
	case "SELECT":
		return c.selectQuery(strings.TrimSpace(rest))
	case "SHOW":
		if strings.EqualFold(strings.TrimSpace(rest), "GLOBAL VARIABLES") {
			a := Result([]string{"Variable_name", "Value"})
			for k, v := range c.s.vars {
				a.Rows = append(a.Rows, []any{k, v})
			}
			return a
		}
		return syntaxError(t)
	case "SET":
		c.set(rest)
	case "DO":
		c.lastInsertID(strings.TrimSpace(rest))
	case "USE":
		c.schema = strings.Trim(strings.TrimSpace(rest), "`")
	case "":
		return Error(1065, "42000", "Query was empty")
	}
	return OK()
}

func syntaxError(q string) Answer {
	if len(q) > 40 {
		q = q[:40]
	}
	return Error(1064, "42000", "You have an error in your SQL syntax near '"+q+"' at line 1 (fakemysql does not know it)")
}

// lastInsertID applies LAST_INSERT_ID(n) and reports whether expr was one.
func (c *conn) lastInsertID(expr string) (string, bool) {
	u := strings.ToUpper(expr)
	if !strings.HasPrefix(u, "LAST_INSERT_ID(") || !strings.HasSuffix(u, ")") {
		return "", false
	}
	inner := strings.TrimSpace(expr[len("LAST_INSERT_ID(") : len(expr)-1])
	if inner != "" {
		v, err := strconv.ParseUint(inner, 10, 64)
		if err != nil {
			return "", false
		}
		c.liid = v
	}
	return strconv.FormatUint(c.liid, 10), true
}

// selectQuery answers SELECT of comma-separated expressions it knows:
// numbers, quoted strings, @user and @@[SESSION.|GLOBAL.]system variables,
// DATABASE(), CONNECTION_ID(), LAST_INSERT_ID([n]), CURRENT_ROLE(),
// VERSION(), CONVERT(expr USING cs); and the pool's read of information_schema.SYSTEM_VARIABLES.
func (c *conn) selectQuery(list string) Answer {
	if strings.Contains(strings.ToUpper(list), "FROM INFORMATION_SCHEMA.SYSTEM_VARIABLES") {
		a := Result([]string{"VARIABLE_NAME", "GLOBAL_VALUE", "SCOPE"})
		for k, v := range c.s.vars {
			session := 1
			if globalOnly[k] {
				session = 0
			}
			a.Rows = append(a.Rows, []any{k, v, session})
		}
		return a
	}
	if i := strings.LastIndex(strings.ToUpper(list), " LIMIT "); i > 0 && !strings.ContainsAny(list[i:], "'\"") {
		list = list[:i] // a LIMIT of one row or more: the one row
	}
	var row []any
	var cols []string
	for _, e := range splitList(list) {
		v, ok := c.value(e)
		if !ok {
			return syntaxError(list)
		}
		row = append(row, v)
		cols = append(cols, e)
	}
	if len(cols) == 0 {
		return syntaxError(list)
	}
	return Result(cols, row)
}

// value evaluates one select expression; nil is NULL.
func (c *conn) value(e string) (any, bool) {
	u := strings.ToUpper(e)
	switch {
	case u == "DATABASE()" || u == "SCHEMA()":
		if c.schema == "" {
			return nil, true
		}
		return c.schema, true
	case u == "CONNECTION_ID()":
		return c.id, true
	case u == "CURRENT_ROLE()" || u == "NULL":
		return nil, true
	case strings.HasPrefix(u, "HEX(") && strings.HasSuffix(u, ")"):
		v, ok := c.value(strings.TrimSpace(e[len("HEX(") : len(e)-1]))
		if !ok || v == nil {
			return nil, ok
		}
		return strings.ToUpper(hex.EncodeToString([]byte(fmt.Sprint(v)))), true
	case strings.HasPrefix(u, "CONVERT(") && strings.HasSuffix(u, ")") && strings.Contains(u, " USING "):
		// CONVERT(expr USING charset): the value, whatever the set.
		inner := e[len("CONVERT(") : len(e)-1]
		return c.value(strings.TrimSpace(inner[:strings.LastIndex(strings.ToUpper(inner), " USING ")]))
	case u == "VERSION()":
		return c.s.cfg.Version, true
	case strings.HasPrefix(u, "LAST_INSERT_ID("):
		v, ok := c.lastInsertID(e)
		return v, ok
	case strings.HasPrefix(e, "@@"):
		name := strings.ToLower(e[2:])
		global := false
		switch {
		case strings.HasPrefix(name, "session."):
			name = name[len("session."):]
		case strings.HasPrefix(name, "global."):
			name, global = name[len("global."):], true
		}
		name = strings.Trim(name, "`")
		if v, ok := c.session[name]; ok && !global {
			return v, true
		}
		if v, ok := c.s.vars[name]; ok {
			return v, true
		}
		return nil, false
	case strings.HasPrefix(e, "@"):
		v, ok := c.user[strings.ToLower(e[1:])]
		if !ok {
			return nil, true
		}
		return v, true
	case len(e) >= 2 && (e[0] == '\'' || e[0] == '"') && e[len(e)-1] == e[0]:
		return e[1 : len(e)-1], true
	}
	if _, err := strconv.ParseFloat(e, 64); err == nil {
		return e, true
	}
	return nil, false
}

// set records the assignments of a SET statement: @user variables and
// [SESSION] system variables (SET NAMES and others are accepted and not
// recorded).
func (c *conn) set(list string) {
	for _, a := range splitList(list) {
		name, val, ok := strings.Cut(a, "=")
		if !ok {
			continue
		}
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if len(val) >= 2 && (val[0] == '\'' || val[0] == '"') && val[len(val)-1] == val[0] {
			val = val[1 : len(val)-1]
		}
		lname := strings.ToLower(name)
		switch {
		case strings.HasPrefix(lname, "@@session."):
			c.session[lname[len("@@session."):]] = val
		case strings.HasPrefix(lname, "@@"):
			c.session[lname[2:]] = val
		case strings.HasPrefix(lname, "@"):
			c.user[lname[1:]] = val
		case strings.HasPrefix(lname, "session "):
			c.session[strings.TrimSpace(lname[len("session "):])] = val
		case strings.HasPrefix(lname, "global "), strings.HasPrefix(lname, "names "):
		default:
			c.session[lname] = val
		}
	}
}

// globalOnly are the default variables without a session value.
var globalOnly = map[string]bool{"max_prepared_stmt_count": true, "version": true}

// splitList splits at the commas outside quotes and parentheses.
func splitList(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0:
			if ch == '\\' {
				i++
			} else if ch == quote {
				quote = 0
			}
		case ch == '\'' || ch == '"' || ch == '`':
			quote = ch
		case ch == '(':
			depth++
		case ch == ')':
			depth--
		case ch == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, t)
	}
	return out
}
