package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/netx"
)

// clientConn is the protocol side of a client connection: the socket and
// its packet framing, what the handshake negotiated (capabilities, TLS,
// compression), and the packets tpproxy writes itself (greeting, auth
// exchange, OK, result sets of one value). What a command does is the
// Session's business; clientConn only knows how to say it.
type clientConn struct {
	nc  net.Conn
	tls bool
	// compression is the client protocol's compression (none, zlib, zstd).
	compression mysqlwire.CompressAlgo
	// extMetadata and maxPacket are what w and r are told when the
	// session takes them (takeWire) and what they were told when it gave
	// them back (giveWire).
	extMetadata bool
	maxPacket   int32
	remote      string
	r           *mysqlwire.Reader
	w           *mysqlwire.Writer
	// wire holds r, w and the reader's resident buffer; a parked session
	// gives it back to wires (see park).
	wire *wireParts
	salt [20]byte
	caps uint32 // negotiated capabilities
	// extOffered and extCaps are the MariaDB extended capabilities the
	// greeting offered and the client took.
	extOffered, extCaps uint32

	// idleTimeout is the wait_timeout that closes the session after that
	// long without a command (0: none); deadlineSet is when the read
	// deadline was last moved (unix ns; 0: not since it changed).
	idleTimeout time.Duration
	deadlineSet int64
}

// armIdleTimeout moves the client read deadline to wait_timeout from now,
// at most once a second: the server's own timeout has that resolution.
func (s *clientConn) armIdleTimeout() {
	if s.idleTimeout <= 0 {
		return
	}
	now := time.Now()
	if s.deadlineSet != 0 && now.UnixNano()-s.deadlineSet < int64(time.Second) {
		return
	}
	s.deadlineSet = now.UnixNano()
	_ = s.nc.SetReadDeadline(now.Add(s.idleTimeout))
}

// writeInactivity tells the client, as MySQL 8.0.24 and later do, that
// the session ends for inactivity (MariaDB closes without a word).
func (s *clientConn) writeInactivity() {
	s.w.SetSeq(0)
	_ = s.w.WriteERR(&mysqlwire.Error{Code: erClientInteractionTimeout, State: "HY000",
		Message: "The client was disconnected by the server because of inactivity. See wait_timeout and interactive_timeout for configuring this behavior."})
	_ = s.w.Flush()
}

// accessDenied is the server's ERR 1045 for a failed login of user, whose
// answer was auth.
func (s *clientConn) accessDenied(user string, auth []byte) *mysqlwire.Error {
	using := "YES"
	if isEmptyAuth(auth) {
		using = "NO"
	}
	return &mysqlwire.Error{Code: erAccessDenied, State: "28000",
		Message: fmt.Sprintf("Access denied for user '%s'@'%s' (using password: %s)", user, s.remoteHost(), using)}
}

// greeting is what the initial handshake announces besides the
// connection's own salt and MariaDB capabilities.
type greeting struct {
	version   string
	connID    uint32
	caps      uint32
	collation byte
	plugin    string
}

// compress switches both directions to the negotiated compression, from
// the next packet on (inside TLS when that is on).
func (s *clientConn) compress(algo mysqlwire.CompressAlgo, zstdLevel int) {
	cc := mysqlwire.NewCompressConnBuffered(s.nc, algo, zstdLevel, mysqlwire.CompressServer, s.r.TakeBuffered())
	s.nc = cc
	s.r.Reset(cc)
	s.w.Reset(cc)
	s.compression = algo
}

// writeGreeting sends the initial handshake (protocol version 10).
func (s *clientConn) writeGreeting(g greeting) error {
	caps := g.caps
	w := s.w
	w.SetSeq(0)
	w.Begin()
	w.AppendByte(10)
	w.AppendString(g.version)
	w.AppendByte(0)
	w.AppendUint32(g.connID)
	w.AppendBytes(s.salt[:8])
	w.AppendByte(0)
	w.AppendUint16(uint16(caps))
	w.AppendByte(g.collation)
	w.AppendUint16(mysqlwire.StatusAutocommit)
	w.AppendUint16(uint16(caps >> 16))
	w.AppendByte(21) // length of the scramble including its NUL
	w.AppendBytes(make([]byte, 6))
	w.AppendUint32(s.extOffered)
	w.AppendBytes(s.salt[8:])
	w.AppendByte(0)
	w.AppendString(g.plugin)
	w.AppendByte(0)
	if err := w.End(); err != nil {
		return err
	}
	return w.Flush()
}

// startTLS switches the client connection to TLS after an SSLRequest
// (cfg nil: TLS is not offered).
func (s *clientConn) startTLS(ctx context.Context, cfg *tls.Config, work *authWork) error {
	if cfg == nil {
		return fmt.Errorf("%w: SSL requested but not offered", errBadHandshake)
	}
	// The client may have sent its ClientHello right behind the SSLRequest:
	// whatever the reader already holds belongs to the TLS layer. The
	// handshake's CPU work takes a slot of work (gatedTLSConfig).
	gated := &tlsGated{Conn: &prefixConn{Conn: s.nc, pre: s.r.TakeBuffered()}, work: work,
		ctx: ctx, deadline: time.Now().Add(handshakeTimeout)}
	defer gated.done()
	tc := tls.Server(gated, cfg)
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("tls handshake: %w", err)
	}
	s.nc = tc
	s.tls = true
	s.r.Reset(tc)
	s.w.Reset(tc)
	return nil
}

// writeMoreData sends an AuthMoreData packet.
func (s *clientConn) writeMoreData(data []byte) error {
	s.w.Begin()
	s.w.AppendByte(mysqlwire.AuthMoreDataHeader)
	s.w.AppendBytes(data)
	if err := s.w.End(); err != nil {
		return err
	}
	s.r.SetSeq(s.w.Seq())
	return s.w.Flush()
}

// authSwitch asks the client to answer with another plugin and returns its
// answer.
func (s *clientConn) authSwitch(plugin string) ([]byte, error) {
	s.w.Begin()
	s.w.AppendByte(mysqlwire.AuthSwitchHeader)
	s.w.AppendString(plugin)
	s.w.AppendByte(0)
	s.w.AppendBytes(s.salt[:])
	s.w.AppendByte(0)
	if err := s.w.End(); err != nil {
		return nil, err
	}
	if err := s.w.Flush(); err != nil {
		return nil, err
	}
	s.r.SetSeq(s.w.Seq())
	p, err := s.r.ReadPacket()
	if err != nil {
		return nil, err
	}
	s.w.SetSeq(s.r.Seq())
	return p, nil
}

// remoteHost is the client's address as MySQL error messages show it.
func (s *clientConn) remoteHost() string {
	if host, _, err := net.SplitHostPort(s.remote); err == nil {
		return host
	}
	return s.remote
}

// reject answers a connection the proxy will not serve the way the server
// does: an ERR (1040 over the limit, 1053 while shutting down) instead of a
// greeting.
func (s *clientConn) reject(e *mysqlwire.Error) {
	s.w.SetSeq(0)
	_ = s.w.WriteERR(e)
	_ = s.w.Flush()
	s.w.Release()
	_ = s.nc.Close()
}

// writeOKPacket sends an OK in the layout the client negotiated; state is
// session state information for a client with CLIENT_SESSION_TRACK.
func (s *clientConn) writeOKPacket(affected, insertID uint64, status, warnings uint16, info, state []byte) error {
	if s.caps&capSessionTrack == 0 {
		return s.w.WriteOK(affected, insertID, status&^mysqlwire.StatusSessionStateChanged, warnings, info)
	}
	if len(state) == 0 {
		status &^= mysqlwire.StatusSessionStateChanged
	}
	return s.w.WriteOKTracked(affected, insertID, status, warnings, info, state)
}

// writeValue sends a one-row, one-column result set; status is the
// session's server status.
func (s *clientConn) writeValue(col mysqlwire.Column, val []byte, status uint16) error {
	w := s.w
	w.Begin()
	w.AppendLenEncInt(1)
	if err := w.End(); err != nil {
		return err
	}
	if err := w.WriteColumn(col); err != nil {
		return err
	}
	if err := w.WriteEOF(0, status); err != nil {
		return err
	}
	w.Begin()
	w.AppendLenEncString(val)
	if err := w.End(); err != nil {
		return err
	}
	return w.WriteEOF(0, status)
}

// writeNumber sends a one-row, one-column result set holding v in a
// column named name defined like col.
func (s *clientConn) writeNumber(name []byte, col mysqlwire.Column, v uint64, status uint16) error {
	var buf [24]byte
	col.Name = name
	return s.writeValue(col, strconv.AppendUint(buf[:0], v, 10), status)
}

// writeSigned sends a one-row, one-column result set holding a BIGINT.
func (s *clientConn) writeSigned(name []byte, v int64, status uint16) error {
	var buf [24]byte
	col := colSigned
	col.Name = name
	return s.writeValue(col, strconv.AppendInt(buf[:0], v, 10), status)
}

// rawConn is the client socket's (nil on TLS and compressed connections
// and while detached), for a look at what it has to read. Not cached: it
// is asked for only on the way to parking or retiring.
func (s *clientConn) rawConn() syscall.RawConn {
	pk := s.parkable()
	if pk == nil {
		return nil
	}
	rc, err := pk.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// parkable is the client socket's layer that detaches from the Go runtime
// while the session is parked (nil on TLS and compressed connections).
func (s *clientConn) parkable() *netx.Parkable {
	cc, ok := s.nc.(*countingConn)
	if !ok {
		return nil
	}
	pk, _ := cc.Conn.(*netx.Parkable)
	return pk
}

// idleDeadline is when wait_timeout ends the wait for the next command
// (zero: never).
func (s *clientConn) idleDeadline() time.Time {
	if s.idleTimeout > 0 && s.deadlineSet != 0 {
		return time.Unix(0, s.deadlineSet).Add(s.idleTimeout)
	}
	return time.Time{}
}

// canPark reports whether the session's connection lets it park: a plain
// socket, with nothing of the client's buffered.
func (s *clientConn) canPark() bool {
	return !s.r.InPacket() && s.parkableConn()
}

// parkableConn is canPark's look at the connection. The reaper may call it
// once the session waits for a command: nc is set during the handshake.
func (s *clientConn) parkableConn() bool {
	return parkOS && s.parkable() != nil
}

// writePrepareOK answers COM_STMT_PREPARE with the session's statement id
// of a statement with params parameters and metadata m; status is the
// session's, for the EOF packets.
func (s *clientConn) writePrepareOK(id uint32, params uint16, m *stmtMeta, warnings, status uint16) error {
	w := s.w
	defs := m.defs
	w.Begin()
	w.AppendByte(mysqlwire.OKHeader)
	w.AppendUint32(id)
	w.AppendUint16(m.columns)
	w.AppendUint16(params)
	w.AppendByte(0)
	w.AppendUint16(warnings)
	if err := w.End(); err != nil {
		return err
	}
	for _, n := range [2]int{int(params), int(m.columns)} {
		if n == 0 {
			continue
		}
		for _, d := range defs[:n] {
			if err := w.WritePacket(d); err != nil {
				return err
			}
		}
		defs = defs[n:]
		if err := w.WriteEOF(0, status); err != nil {
			return err
		}
	}
	return nil
}
