package pool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlclient"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/netx"
)

// initSQL sets the connection's character set explicitly (the handshake
// collation byte is not trusted: MariaDB maps unknown ids to latin1) and
// asks the server to report every change of schema, session variable and
// other session state in OK packets. It runs after dialing and after every
// COM_RESET_CONNECTION, which restores global values.
func (p *Pool) initSQL() string {
	cs := CharsetOf(p.cfg.Collation)
	return "SET NAMES " + quoteValue(cs) + " COLLATE " + quoteValue(p.cfg.Collation) +
		", SESSION session_track_schema = ON, SESSION session_track_state_change = ON, " +
		"SESSION session_track_system_variables = '*'"
}

// bufSize is the resident read and write buffer of a backend connection:
// one per connection, never released, large enough for a typical response.
const bufSize = 64 << 10

// opTimeout bounds the pool's own round trips (sync, reset, ping).
const opTimeout = 10 * time.Second

// Conn is one backend server connection. It is used by one goroutine at a
// time: the pool while idle, the acquirer until Release.
type Conn struct {
	p  *Pool
	nc net.Conn
	// direct is what r and w use when nc is read and written directly
	// (nil under TLS, which reads and writes nc itself): FlushBehind's.
	direct *netx.DirectConn
	r      *mysqlwire.Reader
	w      *mysqlwire.Writer

	threadID uint32
	version  string
	greeting mysqlclient.Greeting // scramble and plugin, for COM_CHANGE_USER
	account  *Account             // logged in as (nil: the pool's own account)
	// acctInUse is the in-use counter of its account (Pool.inUse), kept
	// here so that handing it out needs no lookup; inUseBy is that counter
	// while the connection is handed out and counted in it.
	acctInUse, inUseBy *atomic.Int64
	track              bool // CLIENT_SESSION_TRACK negotiated: OK packets carry session state
	state              State

	// lastOwner is State.Owner of the session the connection last served.
	lastOwner uint64
	// diagOwner is the session whose statement last left warnings or an
	// error in the server's diagnostics area; 0 when none is known.
	diagOwner uint64

	created  time.Time
	expires  time.Time // zero: never
	lastUsed time.Time
	// handedAt is when handOut gave the connection to its user, for the
	// pool's Held counter.
	handedAt time.Time

	// extCaps are the MariaDB extended capabilities negotiated.
	extCaps uint32
	// gen is the Globals generation the server session started under
	// (dial or reset).
	gen uint64
	// packetLimit holds the global max_allowed_packet and
	// net_buffer_length when it was dialed, which the server keeps for the
	// connection even across COM_RESET_CONNECTION (see netLimits).
	packetLimit string
	// dirty: the connection holds session state tpproxy does not track
	// (user variables, temporary tables, locks...). It is reset before reuse.
	dirty bool
	// broken: the protocol state is unknown; the connection is closed on
	// Release instead of reused.
	broken bool

	// retire: the connection holds something a reset must not touch (a
	// prepared XA branch); it is closed on Release, never reused.
	retire bool

	// liid is what the server's LAST_INSERT_ID() is on this connection, as
	// far as the proxy knows (liidKnown false: unknown). A session whose
	// statement reads it first sets it to its own value when they differ.
	liid      uint64
	liidKnown bool
	// pseudoID is the pseudo_thread_id a session set on this connection
	// so that CONNECTION_ID() reads its id; 0: the server's own thread id.
	pseudoID uint32
	// roleChanged: a statement may have changed the active role without
	// tpproxy learning which (a stored procedure, a multi-statement query).
	// COM_RESET_CONNECTION keeps the active role (MariaDB 10.11), so reset
	// sets the account's default one again when roleChanged or State.Role.
	roleChanged bool
	// defaultRole is the SET ROLE argument that gives the connection the
	// default roles of the account it is logged in as ("NONE": none), as a
	// fresh login activates them.
	defaultRole string
	// txTrack: session_track_transaction_info is CHARACTERISTICS here, so
	// OK packets report pending transaction characteristics.
	txTrack bool
	// pendingReports: the server owes an OK with session state it changed
	// after the last statement's OK (it restores the variables of SET
	// STATEMENT and of NOWAIT/WAIT n after the statement, and reports the
	// restore with the next OK that reports anything). It is asked for
	// before the connection serves another session.
	pendingReports bool

	// The echo of the connection's last statement: its ROW_COUNT(), which
	// the server keeps for the next statement to read. echoOwner is the
	// session whose statement left it (0: tpproxy's own, or unknown); for
	// tpproxy's own, echoKnown says echoRows is it.
	echoOwner uint64
	echoRows  int64
	echoKnown bool

	// stmts are the statements prepared on this connection.
	stmts stmtList
	live  liveness
	// unchecked: handed out without a look at the socket (Verify), and
	// no answer has been read since.
	unchecked bool
}

// Retire marks the connection as one that must be closed, not reset or
// reused, when it is released: it holds a prepared XA branch, which the
// server keeps for recovery only when its connection disconnects.
func (c *Conn) Retire() { c.retire = true }

// LastInsertID returns the server's LAST_INSERT_ID() on this connection, if
// the proxy knows it.
func (c *Conn) LastInsertID() (uint64, bool) { return c.liid, c.liidKnown }

// SetLastInsertID records the server's LAST_INSERT_ID() on this connection
// after a statement whose effect on it is known (known false: not known).
func (c *Conn) SetLastInsertID(v uint64, known bool) { c.liid, c.liidKnown = v, known }

// PrimeLastInsertID makes the server's LAST_INSERT_ID() on this connection
// v, unless it is known to be v already. It leaves ROW_COUNT() at 0 with a
// DO, which leaves the row number warnings name as it was (a session's
// previous statement that returned no rows left it), or at -1 with a
// SELECT when minusOne (the session's previous statement returned rows,
// and moved that number itself).
func (c *Conn) PrimeLastInsertID(ctx context.Context, v uint64, minusOne bool) error {
	if c.liidKnown && c.liid == v {
		return nil
	}
	arg := "LAST_INSERT_ID(" + strconv.FormatUint(v, 10) + ")"
	var err error
	if minusOne {
		err = c.Query(ctx, "SELECT "+arg, nil)
	} else {
		_, err = c.Exec(ctx, "DO "+arg)
	}
	if err != nil {
		return err
	}
	c.liid, c.liidKnown = v, true
	return nil
}

// rowCountMinusOneSQL leaves ROW_COUNT() at -1, as a statement returning
// rows does, without a SELECT (which would move the row number warnings
// raised outside row processing name) or opening a table (which would
// clear the diagnostics).
const rowCountMinusOneSQL = "SHOW WARNINGS LIMIT 0"

// NoteEcho records that a statement of session owner just ran here: the
// ROW_COUNT() it left for the next statement is that session's.
func (c *Conn) NoteEcho(owner uint64) { c.echoOwner, c.echoKnown = owner, false }

// PrimeEcho gives the connection the ROW_COUNT() (rows) a session's
// previous statement left on its own connection, before a statement of
// session owner that reads it (a CALL, whose procedure's first statement
// may). Nothing is run when the connection holds the session's own. Only -1
// and 0 can be given: a positive count takes a write.
func (c *Conn) PrimeEcho(ctx context.Context, owner uint64, rows int64) error {
	switch {
	case owner != 0 && c.echoOwner == owner, rows > 0, c.echoKnown && c.echoRows == rows:
		return nil
	case rows < 0:
		if err := c.Query(ctx, rowCountMinusOneSQL, nil); err != nil {
			return err
		}
	default:
		if _, err := c.Exec(ctx, "DO 0"); err != nil {
			return err
		}
	}
	return nil
}

// ReadLastInsertID asks the server for LAST_INSERT_ID() on this
// connection and records it.
//
// It asks with SET SESSION last_insert_id = LAST_INSERT_ID(), which changes
// nothing and which the server reports in its OK (session tracking): unlike
// a SELECT it leaves the row number warnings name as the session's
// statement left it (see PrimeEcho). Where the report does not come (a
// connection whose tracking a session turned off) a SELECT asks.
func (c *Conn) ReadLastInsertID(ctx context.Context) (uint64, error) {
	if c.track {
		ok, err := c.Exec(ctx, "SET SESSION last_insert_id = LAST_INSERT_ID()")
		if err != nil {
			c.liidKnown = false
			return 0, err
		}
		if v, found := trackedUint(ok.SessionState, "last_insert_id"); found {
			c.liid, c.liidKnown = v, true
			return v, nil
		}
	}
	var v uint64
	err := c.Query(ctx, "SELECT LAST_INSERT_ID() LIMIT 1", func(row []byte) error {
		f, _, err := mysqlwire.LenEncString(row)
		if err == nil {
			v, err = strconv.ParseUint(string(f), 10, 64)
		}
		return err
	})
	if err != nil {
		c.liidKnown = false
		return 0, err
	}
	c.liid, c.liidKnown = v, true
	return v, nil
}

// trackedUint finds a system variable's value in the session state of an
// OK packet.
func trackedUint(info []byte, name string) (v uint64, found bool) {
	err := mysqlwire.EachStateEntry(info, func(e mysqlwire.StateEntry) bool {
		if e.Type != mysqlwire.TrackSystemVariables {
			return true
		}
		n, val, err := mysqlwire.SystemVariable(e.Data)
		if err != nil || !strings.EqualFold(string(n), name) {
			return true
		}
		v, err = strconv.ParseUint(string(val), 10, 64)
		found = err == nil
		return false
	})
	return v, found && err == nil
}

// ErrPseudoThreadID is returned by PrimeConnectionID when the backend
// account may not set pseudo_thread_id (it needs SUPER or, on MariaDB,
// BINLOG REPLAY): CONNECTION_ID() then reads the backend thread id.
var ErrPseudoThreadID = errors.New("pool: the backend account may not set pseudo_thread_id")

// PrimeConnectionID makes CONNECTION_ID() on this connection return id
// (through pseudo_thread_id), unless it already does.
func (c *Conn) PrimeConnectionID(ctx context.Context, id uint32) error {
	if c.pseudoID == id {
		return nil
	}
	if _, denied := c.p.noPseudoID.Load(c.AccountName()); denied {
		return ErrPseudoThreadID
	}
	_, err := c.Exec(ctx, "SET SESSION pseudo_thread_id = "+strconv.FormatUint(uint64(id), 10))
	var me *mysqlwire.Error
	if errors.As(err, &me) && (me.Code == mysqlwire.ErSpecificAccessDenied || me.Code == mysqlwire.ErAccessDenied) {
		c.p.noPseudoID.Store(c.AccountName(), true)
		return ErrPseudoThreadID
	}
	if err != nil {
		return err
	}
	c.pseudoID = id
	return nil
}

// TrackTransactions turns on session_track_transaction_info=CHARACTERISTICS
// on this connection, so that the server reports pending characteristics
// (SET TRANSACTION without a scope) in OK packets. It lasts until the
// connection is reset; the connection is marked dirty.
func (c *Conn) TrackTransactions(ctx context.Context) (mysqlwire.OK, error) {
	if c.txTrack {
		return mysqlwire.OK{}, nil
	}
	c.dirty = true
	ok, err := c.Exec(ctx, "SET SESSION session_track_transaction_info = CHARACTERISTICS")
	if err == nil {
		c.txTrack = true
	}
	return ok, err
}

// NotePendingReports records that the server owes a session state report
// (see pendingReports); Release collects it.
func (c *Conn) NotePendingReports() { c.pendingReports = true }

// flushReports makes the server send the session state changes it owes,
// in the OK of a statement that reports a change of its own, so that they
// do not reach the next session that uses the connection. The changes are
// restores of values the connection's State already holds.
func (c *Conn) flushReports(ctx context.Context) error {
	c.pendingReports = false
	_, err := c.Exec(ctx, "SET SESSION session_track_schema = ON")
	return err
}

// ResultsCollationID returns the collation id the server declares text
// result columns in, which is that of character_set_results as it holds
// it (the variable shows only the character set).
func (c *Conn) ResultsCollationID(ctx context.Context) (uint16, error) {
	defer c.withDeadline(ctx)()
	// A SELECT of tpproxy's own: ROW_COUNT() -1 (see Query).
	c.echoOwner, c.echoKnown, c.echoRows = 0, true, -1
	if err := c.command(mysqlwire.ComQuery, "SELECT '' LIMIT 1"); err != nil {
		return 0, err
	}
	p, err := c.r.ReadPacket()
	if err != nil {
		c.broken = true
		return 0, fmt.Errorf("%w: %w", ErrBroken, err)
	}
	if mysqlwire.IsERR(p) {
		return 0, mysqlwire.ParseERR(p)
	}
	if n, _, ln := mysqlwire.LenEncInt(p); ln != len(p) || n != 1 {
		c.broken = true
		return 0, fmt.Errorf("%w: unexpected answer to a collation probe", ErrBroken)
	}
	def, err := c.r.ReadPacket()
	if err != nil {
		c.broken = true
		return 0, fmt.Errorf("%w: %w", ErrBroken, err)
	}
	id, ok := columnCharset(def)
	// The rest: EOF, one row, EOF.
	for i := 0; i < 3; i++ {
		if _, err := c.r.ReadPacket(); err != nil {
			c.broken = true
			return 0, fmt.Errorf("%w: %w", ErrBroken, err)
		}
	}
	if !ok {
		return 0, fmt.Errorf("%w: malformed column definition", ErrBroken)
	}
	return id, nil
}

// columnCharset reads the character set (collation id) of a column
// definition: six length-encoded strings, the fixed-length block's length,
// then the id.
func columnCharset(p []byte) (uint16, bool) {
	for i := 0; i < 6; i++ {
		_, n, err := mysqlwire.LenEncString(p)
		if err != nil {
			return 0, false
		}
		p = p[n:]
	}
	if len(p) < 3 {
		return 0, false
	}
	return uint16(p[1]) | uint16(p[2])<<8, true
}

// MarkRoleChanged records that the active role may differ from
// State().Role, so that a reset restores the account's default roles.
func (c *Conn) MarkRoleChanged() { c.roleChanged = true }

// TracksTransactions reports whether TrackTransactions is in effect.
func (c *Conn) TracksTransactions() bool { return c.txTrack }

// ReportTransactions asks the server to report the pending transaction
// characteristics again (it reports only changes, and not at all after a
// statement that ended with a result set or an error) and returns the OK
// that carries them. Only for a connection that TracksTransactions.
func (c *Conn) ReportTransactions(ctx context.Context) (mysqlwire.OK, error) {
	return c.Exec(ctx, "SET SESSION session_track_transaction_info = CHARACTERISTICS")
}

// ThreadID is the server's connection id of this connection (what KILL takes).
func (c *Conn) ThreadID() uint32 { return c.threadID }

// Reader is the connection's packet reader, for relaying responses.
func (c *Conn) Reader() *mysqlwire.Reader { return c.r }

// Writer is the connection's packet writer, for forwarding commands.
func (c *Conn) Writer() *mysqlwire.Writer { return c.w }

// NetConn is the underlying network connection, for deadlines.
func (c *Conn) NetConn() net.Conn { return c.nc }

// State is the session state the server currently holds for this connection.
// The acquirer updates it as its statements change the session.
func (c *Conn) State() *State { return &c.state }

// DiagOwner returns the owner (State.Owner) of the statement that last left
// warnings or an error on this connection, 0 when there are none.
func (c *Conn) DiagOwner() uint64 { return c.diagOwner }

// SetDiagOwner records who left the diagnostics now on the connection.
func (c *Conn) SetDiagOwner(owner uint64) { c.diagOwner = owner }

// SessionTrack reports whether the server sends session state changes in
// OK packets, which changes their layout.
func (c *Conn) SessionTrack() bool { return c.track }

// MarkDirty records that the connection now holds session state that cannot
// be replayed elsewhere, so it is reset before anyone else uses it.
func (c *Conn) MarkDirty() { c.dirty = true }

// Dirty reports whether MarkDirty was called since the last reset.
func (c *Conn) Dirty() bool { return c.dirty }

// MarkBroken records that the connection must not be reused.
func (c *Conn) MarkBroken() { c.broken = true }

// Broken reports whether the connection was marked broken.
func (c *Conn) Broken() bool { return c.broken }

// StartCommand prepares the connection for a new command: sequence ids
// restart at 0 on both directions. Statements waiting to be closed are
// closed first, in the same write.
func (c *Conn) StartCommand() {
	if len(c.stmts.closing) > 0 {
		c.writeCloses()
	}
	c.w.SetSeq(0)
	c.r.SetSeq(0)
}

// refusalWait bounds how long RefusalAfterWrite waits for the server's ERR.
const refusalWait = 200 * time.Millisecond

// RefusalAfterWrite reads, after the write of a command failed, the ERR the
// server may have sent before it closed the connection: it answers the
// header of a packet over its max_allowed_packet with ER_NET_PACKET_TOO_LARGE
// and closes while the rest is still on its way. nil when none came. The
// connection is broken either way.
func (c *Conn) RefusalAfterWrite() *mysqlwire.Error {
	c.broken = true
	if c.nc == nil {
		return nil
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(refusalWait))
	seq, err := c.r.NextSeq()
	if err != nil {
		return nil
	}
	c.r.SetSeq(seq)
	raw, err := c.r.ReadRaw()
	if err != nil || !mysqlwire.IsERR(raw[mysqlwire.HeaderSize:]) {
		return nil
	}
	return mysqlwire.ParseERR(raw[mysqlwire.HeaderSize:])
}

// Flush sends buffered packets and lines the reader up with the writer's
// sequence: the server answers with the next id.
func (c *Conn) Flush() error {
	c.r.SetSeq(c.w.Seq())
	return c.flush()
}

// FlushBehind is Flush for a command whose answer the caller reads next:
// the bytes leave in the system call that then waits for the answer
// (netx.DirectConn.WriteBehind), one read fewer per command. A failed
// write shows as the read's error.
func (c *Conn) FlushBehind() error {
	c.r.SetSeq(c.w.Seq())
	if c.direct != nil && c.r.Buffered() == 0 && c.w.Buffered() > 0 {
		c.direct.WriteBehind()
	}
	return c.flush()
}

func (c *Conn) flush() error {
	if err := c.w.Flush(); err != nil {
		c.broken = true
		return fmt.Errorf("%w: %w", ErrBroken, err)
	}
	return nil
}

// dial opens and prepares one backend connection.
func (p *Pool) dial(ctx context.Context, foundRows, extMeta bool) (*Conn, error) {
	cfg := &p.cfg
	ctx, cancel := context.WithTimeout(ctx, p.connectTimeout())
	defer cancel()
	deadline, _ := ctx.Deadline()

	collation := collationID(cfg.Collation)
	if collation == 0 {
		return nil, fmt.Errorf("pool: collation %q unknown", cfg.Collation)
	}
	dial := cfg.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	network := "tcp"
	if strings.Contains(cfg.Addr, "/") {
		network = "unix"
	}
	mc := mysqlclient.Config{
		Net: network, Addr: cfg.Addr, User: cfg.User, Passwd: cfg.Password,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			_ = nc.SetDeadline(deadline)
			if tc, ok := nc.(*net.TCPConn); ok {
				_ = tc.SetNoDelay(true)
			}
			return nc, nil
		},
		Timeout:         p.connectTimeout(),
		CollationID:     collation,
		MultiStatements: true,
		ClientFoundRows: foundRows,
		ConnectAttrs:    connectAttrs,
	}
	useTLS := cfg.TLSMode == TLSRequired || (cfg.TLSMode == TLSPreferred && !p.tlsUnsupported.Load())
	if useTLS {
		mc.TLS = cfg.TLS
		mc.AllowFallbackToPlaintext = cfg.TLSMode == TLSPreferred
	}
	// Results are relayed to clients that may not speak
	// CLIENT_DEPRECATE_EOF, CLIENT_QUERY_ATTRIBUTES or CLIENT_COMPRESS:
	// they are not asked for.
	want := mysqlclient.Protocol{
		Caps: mysqlwire.ClientLongFlag | mysqlwire.ClientTransactions | mysqlwire.ClientMultiResults |
			mysqlwire.ClientPSMultiResults | mysqlwire.ClientSessionTrack,
		ExtCaps: extBulk,
	}
	if cfg.LocalInfile {
		want.Caps |= mysqlwire.ClientLocalFiles
	}
	if extMeta {
		want.ExtCaps |= extMetadata
	}
	s, err := mysqlclient.Login(ctx, mc, want)
	if err != nil {
		return nil, wrapDialError(err)
	}
	g := s.Greeting
	if useTLS && g.Caps&mysqlwire.ClientSSL == 0 {
		// Preferred, and the server does not offer TLS: the login went on
		// in the clear; later dials do not ask.
		p.tlsUnsupported.Store(true)
	}
	nc := s.Conn
	now := time.Now()
	// The relay's reads and writes go straight to the socket (not through
	// TLS, which reads and writes nc itself).
	rw := netx.Direct(nc)
	c := &Conn{
		p:        p,
		nc:       nc,
		r:        mysqlwire.NewReader(rw, make([]byte, bufSize), nil),
		w:        mysqlwire.NewWriterSize(rw, bufSize),
		threadID: g.ConnID,
		version:  g.Version,
		greeting: g,
		track:    s.Sent.Caps&mysqlwire.ClientSessionTrack != 0,
		extCaps:  s.Sent.ExtCaps,
		created:  now,
		lastUsed: now,
		// A new session's LAST_INSERT_ID() is 0.
		liidKnown: true,
	}
	c.direct, _ = rw.(*netx.DirectConn)
	c.state.FoundRows = foundRows
	c.state.ExtMetadata = c.extCaps&extMetadata != 0
	c.acctInUse = p.inUseCount(p.cfg.User)
	p.extCaps.Store(g.ExtCaps & (extBulk | extMetadata))
	p.greeting.Store(&ServerGreeting{Collation: g.Collation, Caps: g.Caps, ExtCaps: g.ExtCaps})
	c.live.init(nc)
	if lt := p.maxLifetime(); lt > 0 {
		// dial runs in the filler, in acquirers (fit) and for the control
		// connection at once; the generator is not safe for that.
		p.mu.Lock()
		jitter := time.Duration(p.rand.Int64N(int64(lt/10) + 1))
		p.mu.Unlock()
		c.expires = now.Add(lt - jitter)
	}
	if _, err := c.Exec(ctx, p.initSQL()); err != nil {
		c.close()
		return nil, fmt.Errorf("initialise session: %w", err)
	}
	c.state.Vars = CharsetVars(CharsetOf(cfg.Collation), cfg.Collation)
	c.state.ResultsCollation = cfg.Collation
	p.learnPreparedLimit(ctx, c)
	p.learnDefaults(ctx, c)
	if p.globals.Load() == nil {
		if _, err := p.refreshGlobalsOn(ctx, c); err != nil {
			p.cfg.Logger.Debug("cannot read the backend's globals", "err", err)
		}
	}
	c.gen = p.globalsGen()
	c.packetLimit = netLimits(p.Globals())
	_ = nc.SetDeadline(time.Time{})
	return c, nil
}

// connectAttrs are the connection attributes of backend connections, as
// go-mysql sent them for tpproxy.
var connectAttrs = map[string]string{
	"_client_name":     "tpproxy",
	"program_name":     "tpproxy",
	"_os":              runtime.GOOS,
	"_platform":        runtime.GOARCH,
	"_runtime_version": runtime.Version(),
}

// MariaDB's extended capabilities the pool can relay.
const (
	extBulk     = mysqlwire.MariaDBClientStmtBulkOperations
	extMetadata = mysqlwire.MariaDBClientExtendedMetadata
)

// wrapDialError keeps a server error (wrong password, too many connections)
// recognisable as a *mysqlwire.Error; other errors (network, TLS) are
// returned as they are.
func wrapDialError(err error) error {
	var me *mysqlwire.Error
	if errors.As(err, &me) {
		return fmt.Errorf("backend refused login: %w", me)
	}
	return err
}

func (c *Conn) close() {
	c.clearPrepared()
	if !c.broken {
		// Say goodbye: the server ends the session as a normal
		// disconnect instead of counting an aborted connection
		// (Aborted_clients) and logging a warning for it.
		_ = c.nc.SetWriteDeadline(time.Now().Add(quitTimeout))
		_ = c.command(mysqlwire.ComQuit, "")
	}
	_ = c.nc.Close()
}

// BoundDrain bounds how long the rest of a response may take to arrive:
// its client is gone, the statement has been killed, and a server that
// goes on sending (or blocks) must not hold the connection. A read past
// the bound fails and the connection is closed, which ends the server's
// statement too. EndDrain lifts the bound once the response has ended.
func (c *Conn) BoundDrain(d time.Duration) { _ = c.nc.SetReadDeadline(time.Now().Add(d)) }

// EndDrain lifts BoundDrain's bound.
func (c *Conn) EndDrain() { _ = c.nc.SetReadDeadline(time.Time{}) }

// quitTimeout bounds the COM_QUIT sent before closing a healthy connection.
const quitTimeout = 100 * time.Millisecond

// withDeadline bounds the pool's own round trips by ctx and opTimeout.
func (c *Conn) withDeadline(ctx context.Context) func() {
	d := time.Now().Add(opTimeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	_ = c.nc.SetDeadline(d)
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	return func() {
		stop()
		_ = c.nc.SetDeadline(time.Time{})
	}
}

// command sends a one-packet command with an optional argument.
func (c *Conn) command(cmd byte, arg string) error {
	c.StartCommand()
	c.w.Begin()
	c.w.AppendByte(cmd)
	c.w.AppendString(arg)
	if err := c.w.End(); err != nil {
		return err
	}
	if cmd == mysqlwire.ComQuit {
		return c.Flush() // nothing is read after it
	}
	return c.FlushBehind()
}

// readResult reads a complete response to a command the pool sent. It
// returns the final OK (or EOF status), skipping result sets; a server
// error comes back as *mysqlwire.Error with the connection still usable.
func (c *Conn) readResult(onRow func(row []byte) error) (mysqlwire.OK, error) {
	var firstErr error
	for {
		p, err := c.r.ReadPacket()
		if err != nil {
			c.broken = true
			return mysqlwire.OK{}, fmt.Errorf("%w: %w", ErrBroken, err)
		}
		c.unchecked = false
		switch {
		case mysqlwire.IsERR(p):
			return mysqlwire.OK{}, mysqlwire.ParseERR(p)
		case p[0] == mysqlwire.OKHeader:
			ok, err := mysqlwire.ParseOK(p, c.track)
			if err != nil {
				c.broken = true
				return ok, fmt.Errorf("%w: %w", ErrBroken, err)
			}
			if ok.Status&mysqlwire.StatusMoreResults != 0 {
				continue
			}
			return ok, firstErr
		case mysqlwire.IsEOF(p): // COM_SET_OPTION answers with EOF
			w, s := mysqlwire.EOFStatus(p)
			return mysqlwire.OK{Status: s, Warnings: w}, nil
		case p[0] == mysqlwire.LocalInfileHeader:
			c.broken = true
			return mysqlwire.OK{}, fmt.Errorf("%w: unexpected LOCAL INFILE request", ErrBroken)
		}
		// A result set: column count, definitions, EOF, rows, EOF.
		n, _, _ := mysqlwire.LenEncInt(p)
		for i := uint64(0); i <= n; i++ {
			if _, err := c.r.ReadPacket(); err != nil {
				c.broken = true
				return mysqlwire.OK{}, fmt.Errorf("%w: %w", ErrBroken, err)
			}
		}
		for {
			row, err := c.r.ReadPacket()
			if err != nil {
				c.broken = true
				return mysqlwire.OK{}, fmt.Errorf("%w: %w", ErrBroken, err)
			}
			if mysqlwire.IsERR(row) {
				return mysqlwire.OK{}, mysqlwire.ParseERR(row)
			}
			if mysqlwire.IsEOF(row) {
				w, s := mysqlwire.EOFStatus(row)
				if s&mysqlwire.StatusMoreResults == 0 {
					return mysqlwire.OK{Status: s, Warnings: w}, firstErr
				}
				break
			}
			if onRow != nil && firstErr == nil {
				firstErr = onRow(row)
			}
		}
	}
}

// Exec runs a statement that returns no rows worth keeping (SET, DO) and
// returns its final OK.
func (c *Conn) Exec(ctx context.Context, sql string) (mysqlwire.OK, error) {
	defer c.withDeadline(ctx)()
	// A statement of tpproxy's own: the echo is no session's. A DO or SET
	// leaves ROW_COUNT() 0.
	c.echoOwner, c.echoKnown, c.echoRows = 0, true, 0
	if err := c.command(mysqlwire.ComQuery, sql); err != nil {
		c.echoKnown = false
		return mysqlwire.OK{}, err
	}
	ok, err := c.readResult(nil)
	if err != nil {
		c.echoKnown = false
	}
	return ok, err
}

// Query runs a statement and calls onRow with each text-protocol row
// (length-encoded values). It is meant for small administrative queries.
func (c *Conn) Query(ctx context.Context, sql string, onRow func(row []byte) error) error {
	defer c.withDeadline(ctx)()
	// A SELECT or SHOW of tpproxy's own: ROW_COUNT() -1.
	c.echoOwner, c.echoKnown, c.echoRows = 0, true, -1
	if err := c.command(mysqlwire.ComQuery, sql); err != nil {
		c.echoKnown = false
		return err
	}
	_, err := c.readResult(onRow)
	if err != nil {
		c.echoKnown = false
	}
	return err
}

// ping checks the connection with COM_PING.
func (c *Conn) ping(ctx context.Context) error {
	defer c.withDeadline(ctx)()
	if err := c.command(mysqlwire.ComPing, ""); err != nil {
		return err
	}
	_, err := c.readResult(nil)
	return err
}

// reset clears all session state on the server with COM_RESET_CONNECTION
// and turns session tracking back on.
func (c *Conn) reset(ctx context.Context) error {
	gen := c.p.globalsGen()
	done := c.withDeadline(ctx)
	err := c.command(mysqlwire.ComResetConnection, "")
	if err == nil {
		_, err = c.readResult(nil)
	}
	done()
	if err != nil {
		return err
	}
	c.forgetSession()
	c.gen = gen
	if _, err = c.Exec(ctx, c.p.initSQL()); err != nil {
		return err
	}
	if c.state.Role != "" || c.roleChanged {
		// The reset kept the session's roles; give back the account's.
		if _, err = c.Exec(ctx, "SET ROLE "+c.roleArg("")); err != nil {
			return err
		}
	}
	c.roleChanged = false
	c.state.Role = ""
	c.state.Vars = append(c.state.Vars[:0], CharsetVars(CharsetOf(c.p.cfg.Collation), c.p.cfg.Collation)...)
	c.state.ResultsCollation = c.p.cfg.Collation
	c.state.sum = 0
	return nil
}

// Reset clears the server session of a connection its acquirer keeps
// (COM_RESET_CONNECTION, then tracking and the pool's character set).
func (c *Conn) Reset(ctx context.Context) error {
	c.p.stats.resets.Add(1)
	err := c.reset(ctx)
	if err != nil {
		c.broken = true
	}
	return err
}

// forgetSession clears what the connection knew of the session state a
// COM_RESET_CONNECTION or COM_CHANGE_USER just cleared on the server.
func (c *Conn) forgetSession() {
	c.dirty = false
	c.pendingReports = false
	c.diagOwner = 0
	c.liid, c.liidKnown = 0, true
	c.echoOwner, c.echoKnown = 0, false
	c.pseudoID = 0
	c.txTrack = false
	c.clearPrepared()
}

// ErrNeedsFreshConn is returned by Sync when the wanted state cannot be
// reached on this connection (a session without a default schema on a
// connection that has one): the caller gets a different connection.
var ErrNeedsFreshConn = errors.New("pool: state needs a fresh connection")

// Sync brings the server session of c to want: schema, session variables
// and the multi-statement option. A server error (say, the schema was
// dropped) is returned as *mysqlwire.Error and leaves c usable.
func (c *Conn) Sync(ctx context.Context, want *State) error {
	if !c.p.sameAccount(c.account, want.Account) {
		// Acquire switches accounts; a pinned connection is the session's.
		return ErrNeedsFreshConn
	}
	if c.state.Equal(want) {
		return nil
	}
	if want.FoundRows != c.state.FoundRows || want.ExtMetadata != c.state.ExtMetadata || (want.Schema == "" && c.state.Schema != "") {
		return ErrNeedsFreshConn
	}
	// Names the server reported (the schema, utf8) and read back (the
	// role, converted to utf8mb4) go to it while the connection reads
	// utf8mb4, whatever character set the previous session left; a name
	// a client sent goes in the client's character set, once the
	// session's variables are in place.
	schema := want.Schema != c.state.Schema || want.SchemaRaw != c.state.SchemaRaw
	if schema && !want.SchemaRaw {
		if err := c.clientUTF8(ctx); err != nil {
			return err
		}
		if err := c.initDB(ctx, want.Schema); err != nil {
			return err
		}
	}
	if want.Role != c.state.Role {
		if err := c.clientUTF8(ctx); err != nil {
			return err
		}
		if _, err := c.Exec(ctx, "SET ROLE "+c.roleArg(want.Role)); err != nil {
			c.dirty = true
			return err
		}
		c.state.SetRole(want.Role)
	}
	if stmt := setStatement(&c.state, want); stmt != "" {
		if _, err := c.Exec(ctx, stmt); err != nil {
			// Some assignments may have been applied: start over elsewhere.
			c.dirty = true
			return err
		}
		c.state.Vars = append(c.state.Vars[:0], want.Vars...)
		c.state.ResultsCollation = want.ResultsCollation
		c.state.sum = 0
	}
	if schema && want.SchemaRaw {
		// The server's name replaces it (the session takes it:
		// SchemaNamed).
		if err := c.initDB(ctx, want.Schema); err != nil {
			return err
		}
	}
	if want.MultiStatementsOff != c.state.MultiStatementsOff {
		if err := c.setMultiStatements(ctx, !want.MultiStatementsOff); err != nil {
			return err
		}
	}
	return nil
}

// initDB sends COM_INIT_DB and records the schema as the server reports
// it (session tracking), or as sent when it reports none (the connection's
// character set then is the one it was sent in).
func (c *Conn) initDB(ctx context.Context, schema string) error {
	defer c.withDeadline(ctx)()
	// A command of tpproxy's own whose effect on ROW_COUNT() is not
	// recorded: a statement that reads it gets it given (PrimeEcho).
	c.echoOwner, c.echoKnown = 0, false
	if err := c.command(mysqlwire.ComInitDB, schema); err != nil {
		return err
	}
	ok, err := c.readResult(nil)
	if err != nil {
		return err
	}
	if name, found := trackedSchema(ok.SessionState); found {
		c.state.SetSchema(name)
		return nil
	}
	cs, _ := c.state.Var("character_set_client")
	c.state.SetSchemaIn(schema, cs)
	return nil
}

// SchemaNamed is the server's name for the schema want names in a
// client's character set, once a Sync gave c that schema: the session
// records it so, and its connections agree with it from then on. ok is
// false when there is nothing to take.
func (c *Conn) SchemaNamed(want *State) (string, bool) {
	if !want.SchemaRaw || c.state.SchemaRaw || c.state.Schema == "" {
		return "", false
	}
	return c.state.Schema, true
}

// trackedSchema finds the schema entry in an OK's session state.
func trackedSchema(info []byte) (name string, found bool) {
	err := mysqlwire.EachStateEntry(info, func(e mysqlwire.StateEntry) bool {
		if e.Type != mysqlwire.TrackSchema {
			return true
		}
		n, err := mysqlwire.TrackedSchema(e.Data)
		name, found = string(n), err == nil
		return !found
	})
	return name, found && err == nil
}

// clientUTF8 makes the connection read statements in utf8mb4, for names
// recorded in it (the state records the change; a Sync's variables put
// the session's character set back).
func (c *Conn) clientUTF8(ctx context.Context) error {
	if cs, _ := c.state.Var("character_set_client"); isUTF8Charset(cs) {
		return nil
	}
	if _, err := c.Exec(ctx, "SET SESSION character_set_client = utf8mb4"); err != nil {
		c.dirty = true
		return err
	}
	c.state.SetVar("character_set_client", "utf8mb4")
	return nil
}

func (c *Conn) setMultiStatements(ctx context.Context, on bool) error {
	defer c.withDeadline(ctx)()
	c.echoOwner, c.echoKnown = 0, false // as initDB
	c.StartCommand()
	c.w.Begin()
	c.w.AppendByte(mysqlwire.ComSetOption)
	if on {
		c.w.AppendUint16(0)
	} else {
		c.w.AppendUint16(1)
	}
	if err := c.w.End(); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	if _, err := c.readResult(nil); err != nil {
		return err
	}
	c.state.SetMultiStatements(on)
	return nil
}
