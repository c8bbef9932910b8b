// Package mysqlclient is a lean MySQL/MariaDB client for tpbench's load
// driver. It does what a benchmark statement needs — send a text query or
// execute a prepared statement and read the whole response, counting rows —
// with buffered I/O, reused buffers and no allocation per statement, so the
// load driver measures the server rather than itself. Rows are discarded:
// it is not a general-purpose driver.
//
// Its login is also the pool's: Login runs the handshake with the
// capabilities a caller asks for and hands the connection over.
//
// A Conn is used by one goroutine at a time; only Interrupt may be called
// from another goroutine. Idle connections hold a 4 KiB read and a 4 KiB
// write buffer; a packet larger than that borrows a buffer from the
// connection's BufferPool for the duration of the response.
package mysqlclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// Buffer sizes. The resident buffers are small so that 10,000 connections
// fit in memory; a response packet bigger than readBufSize is read through
// a buffer borrowed from the pool (largeBufSize) or, beyond that, a
// temporary one, both given back when the response has been read.
const (
	readBufSize  = 4 << 10
	writeBufSize = 4 << 10
	largeBufSize = 64 << 10
	// maxScratch bounds the prepared-statement packet buffer a connection
	// keeps between statements.
	maxScratch = 4 << 10
)

// closeWriteTimeout bounds the COM_QUIT that Close sends: a server that
// does not drain its socket must not hold up Close.
const closeWriteTimeout = time.Second

// Errors kept by a broken connection whose cause no I/O reported.
var (
	errClosed      = fmt.Errorf("%w: %w", ErrBroken, ErrClosed)
	errInterrupted = fmt.Errorf("%w: %w", ErrBroken, ErrInterrupted)
)

// Conn is one client connection.
type Conn struct {
	// raw is the socket; nc is raw or the TLS connection on top of it.
	// Interrupt uses raw, which never changes, so it can run while the
	// handshake swaps nc.
	raw net.Conn
	nc  net.Conn
	r   *mysqlwire.Reader
	w   *mysqlwire.Writer

	// scratch holds the COM_STMT_EXECUTE payload being built; it is kept
	// between statements unless a large one grew it past maxScratch.
	scratch []byte
	// cmd is the one-byte first part of a command written in parts.
	cmd [1]byte

	// broken is set when the protocol state is lost (I/O or protocol
	// error, Interrupt, Close); interrupted when Interrupt was called.
	// They are atomic because Interrupt sets them from another goroutine.
	broken      atomic.Bool
	interrupted atomic.Bool
	// cause is the error that broke the connection, returned again by every
	// later call. Only the goroutine using the connection touches it.
	cause  error
	closed bool
	// secure: TLS or a Unix socket, where caching_sha2_password may send
	// the password itself.
	secure bool
	// cacheMeta: MariaDB metadata caching was negotiated, so a column
	// count is followed by a "metadata follows" byte.
	cacheMeta bool

	connID  uint32
	version string
}

// Connect dials cfg.Addr and logs in. Dialing and the handshake are bounded
// by ctx and cfg.Timeout. A server refusing the login (wrong password,
// unknown database, too many connections) yields an error wrapping its
// *mysqlwire.Error.
func Connect(ctx context.Context, cfg Config) (*Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	// MariaDB's cache metadata saves the server work on every
	// COM_STMT_EXECUTE; libmariadb asks for it, so sysbench gets it too.
	c, _, _, err := dialLogin(ctx, &cfg, Protocol{Caps: baseCaps, ExtCaps: mysqlwire.MariaDBClientCacheMetadata},
		func(c *Conn) error { return c.setParams(cfg.Params) })
	return c, err
}

// Protocol is what a login asks the server for, beyond what Config implies.
type Protocol struct {
	// Caps are capability flags; the server's offer masks them. Always
	// asked for: protocol 4.1 with plugin authentication, CLIENT_MYSQL
	// (long password) unless extended capabilities are,
	// CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA when the auth response needs
	// it, and what Config implies: CLIENT_CONNECT_WITH_DB, CLIENT_SSL,
	// CLIENT_CONNECT_ATTRS, CLIENT_MULTI_STATEMENTS, CLIENT_FOUND_ROWS.
	Caps uint32
	// ExtCaps are MariaDB extended capabilities (mysqlwire.MariaDBClient*),
	// asked for where the server offers them.
	ExtCaps uint32
}

// Session is a connection that Login logged in and hands over.
type Session struct {
	// Conn is the socket, or the *tls.Conn over it. The login read nothing
	// beyond the server's OK, so the next byte on Conn is the server's
	// answer to the caller's first command.
	Conn net.Conn
	// Greeting is the server's initial handshake.
	Greeting Greeting
	// Sent is what the handshake response asked for (capability flags
	// including CLIENT_SSL, and the extended capabilities): the server
	// speaks the protocol they define.
	Sent Protocol
}

// Login dials cfg.Addr and logs in as Connect does, asking for want, and
// hands the connection over to the caller, which speaks the protocol from
// there on (a proxy's backend connection). cfg.Params are not applied.
// Errors are Connect's.
func Login(ctx context.Context, cfg Config, want Protocol) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c, g, sent, err := dialLogin(ctx, &cfg, want, nil)
	if err != nil {
		return nil, err
	}
	return &Session{Conn: c.nc, Greeting: g, Sent: sent}, nil
}

// dialLogin dials and runs the handshake, then after, if set, within the
// same time bound.
func dialLogin(ctx context.Context, cfg *Config, want Protocol, after func(*Conn) error) (*Conn, Greeting, Protocol, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	dial := cfg.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := dial(ctx, cfg.Net, cfg.Addr)
	if err != nil {
		return nil, Greeting{}, Protocol{}, fmt.Errorf("mysqlclient: connect to %s: %w", cfg.Addr, err)
	}
	c := newConn(nc, cfg)
	// The context alone bounds the handshake (no socket deadline of its
	// own), so a timed-out handshake always reports the context's error.
	stop := context.AfterFunc(ctx, c.Interrupt)
	g, sent, err := c.handshake(ctx, cfg, want)
	if err == nil && after != nil {
		err = after(c)
	}
	if !stop() && err == nil {
		err = fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(ctx))
	}
	if err != nil {
		_ = c.nc.Close()
		var se *mysqlwire.Error
		if ctx.Err() != nil && !errors.As(err, &se) && !errors.Is(err, context.Cause(ctx)) {
			err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
		}
		return nil, g, sent, fmt.Errorf("mysqlclient: connect to %s as %q: %w", cfg.Addr, cfg.User, err)
	}
	return c, g, sent, nil
}

// newConn wraps an open socket; the handshake has not happened yet.
func newConn(nc net.Conn, cfg *Config) *Conn {
	bp := cfg.BufferPool
	if bp == nil {
		bp = mysqlwire.NewBufferPool(largeBufSize)
	}
	r := mysqlwire.NewReader(nc, make([]byte, readBufSize), bp)
	r.MaxPacket = cfg.MaxAllowedPacket
	return &Conn{
		raw:    nc,
		nc:     nc,
		r:      r,
		w:      mysqlwire.NewWriterSize(nc, writeBufSize),
		secure: cfg.Net == "unix",
	}
}

// setParams applies cfg.Params after login.
func (c *Conn) setParams(params map[string]string) error {
	for k, v := range params {
		if _, err := c.ExecString("SET " + k + "=" + v); err != nil {
			return fmt.Errorf("SET %s: %w", k, err)
		}
	}
	return nil
}

// Close sends COM_QUIT (unless the connection is broken) and closes the
// socket. Later calls return nil; every other method then fails with an
// error wrapping ErrBroken and ErrClosed.
func (c *Conn) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if !c.broken.Load() {
		// Best effort: the server logs an aborted connection without it.
		_ = c.raw.SetWriteDeadline(time.Now().Add(closeWriteTimeout))
		c.w.SetSeq(0)
		c.w.Begin()
		c.w.AppendByte(mysqlwire.ComQuit)
		if c.w.End() == nil {
			_ = c.w.Flush()
		}
	}
	if c.cause == nil {
		c.cause = errClosed
	}
	c.broken.Store(true)
	return c.nc.Close()
}

// Interrupt makes the I/O the connection is blocked in, and any later I/O,
// fail at once; the connection is then broken. It is the one method that
// may be called from another goroutine, while a statement runs: a cancelled
// benchmark step must not wait for its slowest statement.
func (c *Conn) Interrupt() {
	c.interrupted.Store(true)
	c.broken.Store(true)
	// A deadline in the past wakes a blocked Read or Write with a timeout
	// error; it applies to a TLS connection's socket as well.
	_ = c.raw.SetDeadline(time.Unix(1, 0))
}

// Broken reports whether the connection is unusable and must be discarded.
// A server error (ERR packet) does not break it.
func (c *Conn) Broken() bool { return c.broken.Load() }

// ConnectionID is the server's id of this connection (what KILL takes).
func (c *Conn) ConnectionID() uint32 { return c.connID }

// ServerVersion is the version from the server's greeting, without the
// "5.5.5-" prefix MariaDB adds for old clients.
func (c *Conn) ServerVersion() string { return c.version }

// brokenErr is the error of a call on a broken connection.
func (c *Conn) brokenErr() error {
	if c.cause == nil {
		// Broken by Interrupt while idle: no I/O has failed yet.
		c.cause = errInterrupted
	}
	return c.cause
}

// fail marks the connection broken by err and returns the error to report.
func (c *Conn) fail(err error) error {
	if c.cause != nil {
		return c.cause
	}
	if c.interrupted.Load() {
		err = fmt.Errorf("%w: %w: %w", ErrBroken, ErrInterrupted, err)
	} else {
		err = fmt.Errorf("%w: %w", ErrBroken, err)
	}
	c.cause = err
	c.broken.Store(true)
	return err
}

// protocolError breaks the connection over a packet the protocol does not
// allow where it came.
func (c *Conn) protocolError(what string, p []byte) error {
	return c.fail(fmt.Errorf("%w: %s (packet of %d bytes starting % x)", ErrProtocol, what, len(p), p[:min(len(p), 8)]))
}

// flush sends the command written so far; the server's answer carries the
// next sequence id.
func (c *Conn) flush() error {
	c.r.SetSeq(c.w.Seq())
	if err := c.w.Flush(); err != nil {
		return c.fail(err)
	}
	return nil
}

// readPacket reads one logical packet, which is never empty.
func (c *Conn) readPacket() ([]byte, error) {
	p, err := c.r.ReadPacket()
	if err != nil {
		return nil, c.fail(err)
	}
	if len(p) == 0 {
		return nil, c.protocolError("empty packet", p)
	}
	return p, nil
}

// endResponse is called when a response has been read completely. Anything
// still buffered was sent without being asked for: the two sides no longer
// agree where they are. Buffers borrowed for large packets go back.
func (c *Conn) endResponse() error {
	if n := c.r.Buffered(); n != 0 {
		return c.fail(fmt.Errorf("%w: %d bytes after the end of a response", ErrProtocol, n))
	}
	c.r.Shrink()
	if cap(c.scratch) > maxScratch {
		c.scratch = nil
	}
	return nil
}

// serverError returns the server's ERR packet p, which ends a response and
// leaves the connection usable.
func (c *Conn) serverError(p []byte) error {
	if len(p) < 3 {
		return c.protocolError("truncated ERR packet", p)
	}
	e := mysqlwire.ParseERR(p)
	if err := c.endResponse(); err != nil {
		return err
	}
	return e
}
