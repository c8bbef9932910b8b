package proxy

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
)

// handshakeTimeout bounds the whole connection phase, as the server's
// connect_timeout does.
const handshakeTimeout = 10 * time.Second

// defaultCollationID is announced in the initial handshake until a
// backend has announced its own: utf8mb4_general_ci, known to MySQL and
// MariaDB alike.
const defaultCollationID = 45

// advertisedCaps are the capabilities the front end offers. Everything
// here is honoured end to end. CLIENT_COMPRESS (zlib) and MySQL 8's
// CLIENT_ZSTD_COMPRESSION_ALGORITHM compress what goes to and comes from
// the client; backend connections stay uncompressed. CLIENT_SESSION_TRACK
// reports the session's
// own changes, filtered to what its session_track_* settings ask for.
// CLIENT_DEPRECATE_EOF and CLIENT_QUERY_ATTRIBUTES are deliberately absent,
// so every client sees the classic result set layout backend connections
// use.
const advertisedCaps = capLongPassword | capFoundRows | capLongFlag | capConnectWithDB |
	capProtocol41 | capIgnoreSpace | capInteractive | capTransactions | capSecureConnection |
	capMultiStatements | capMultiResults | capPSMultiResults | capPluginAuth |
	capConnectAttrs | capPluginAuthLenenc | capSessionTrack | capCompress | capZstd

// errAuth marks a failed login; the client has been sent ERR 1045.
var errAuth = errors.New("proxy: authentication failed")

// newSalt returns a 20-byte scramble of printable bytes without NUL, which
// some clients treat as a terminator.
func newSalt() [20]byte {
	var s [20]byte
	_, _ = rand.Read(s[:])
	for i := range s {
		s[i] = 33 + s[i]%94
	}
	return s
}

// handshake runs the connection phase: greeting, optional TLS, login and
// the initial schema. On failure the client has been told why.
func (s *Session) handshake(ctx context.Context) error {
	_ = s.nc.SetDeadline(time.Now().Add(handshakeTimeout))
	defer func() { _ = s.nc.SetDeadline(time.Time{}) }()

	s.salt = newSalt()
	caps := advertisedCaps
	if s.srv.cfg.LoadDataLocal {
		caps |= capLocalFiles
	}
	if s.srv.cfg.TLS != nil {
		caps |= capSSL
	}
	// A MariaDB backend's extended capabilities that tpproxy relays are
	// offered the MariaDB way: CLIENT_MYSQL (long password) clear, the
	// flags in the last four reserved bytes of the greeting.
	s.extOffered = s.pool.ExtCaps() & (pool.ExtBulk | pool.ExtMetadata)
	if s.extOffered != 0 {
		caps &^= capLongPassword
	}
	coll := byte(defaultCollationID)
	if g, ok := s.pool.Greeting(); ok && g.Collation != 0 {
		// The backend's own default, which clients that take the
		// greeting's character set (PHP's mysqlnd, change_user) then get
		// as they would directly.
		coll = g.Collation
	}
	if err := s.writeGreeting(greeting{version: s.srv.serverVersion(), connID: s.id, caps: caps,
		collation: coll, plugin: s.srv.cfg.AuthPlugin}); err != nil {
		return err
	}
	s.r.SetSeq(1)
	p, err := s.r.ReadPacket()
	if err != nil {
		return err
	}
	resp, err := parseHandshakeResponse(p)
	if err == nil && resp.sslRequest {
		if err := s.startTLS(ctx, s.srv.tls, s.srv.auth); err != nil {
			return err
		}
		if p, err = s.r.ReadPacket(); err != nil {
			return err
		}
		resp, err = parseHandshakeResponse(p)
		if err == nil && resp.sslRequest {
			err = fmt.Errorf("%w: second SSL request", errBadHandshake)
		}
	}
	s.w.SetSeq(s.r.Seq())
	if err != nil {
		_ = s.writeErr(&mysqlwire.Error{Code: erHandshake, State: "08S01", Message: "Bad handshake"})
		return err
	}
	if s.srv.cfg.RequireSecureTransport && !s.tls && s.nc.LocalAddr().Network() != "unix" {
		s.user = resp.user
		s.srv.stats.authFailures.Add(1)
		s.srv.hosts.fail(s.remoteHost())
		s.logger().Info("login refused: require_secure_transport and the client did not use TLS")
		_ = s.writeErr(s.insecureTransport(s.pool.ServerVersion(), s.user, resp.auth))
		return errAuth
	}
	s.caps = resp.caps & caps
	s.extCaps = resp.extCaps & s.extOffered
	s.w.ExtMetadata = s.extCaps&pool.ExtMetadata != 0
	s.user = resp.user
	acct, lerr := s.srv.authenticate(ctx, &s.clientConn, s.id, s.user, resp.plugin, resp.auth)
	if lerr != nil {
		_ = s.writeErr(lerr)
		return errAuth
	}
	s.state.Account = acct
	s.collationID = uint16(resp.collation)
	s.collation = s.srv.chars.lookup(ctx, s.srv.pool, s.collationID)
	s.initState(resp.db, s.caps, s.extCaps)
	if resp.db != "" {
		// The server refuses a login to a schema that does not exist;
		// a backend tells us whether it exists.
		if err := s.checkSchema(ctx, &s.task); err != nil {
			_ = s.writeErr(err)
			return err
		}
	}
	if err := s.writeOKPacket(0, 0, mysqlwire.StatusAutocommit, 0, nil, nil); err != nil {
		return err
	}
	if err := s.w.Flush(); err != nil {
		return err
	}
	if algo := mysqlwire.NegotiatedCompression(s.caps); algo != mysqlwire.CompressNone {
		s.compress(algo, resp.zstdLevel)
	}
	return nil
}

// insecureTransport is what a server of version answers a login of user
// without TLS while require_secure_transport is on: MySQL's ERR 3159,
// MariaDB's 1045.
func (s *clientConn) insecureTransport(version, user string, auth []byte) *mysqlwire.Error {
	if strings.Contains(version, "MariaDB") {
		return s.accessDenied(user, auth)
	}
	return &mysqlwire.Error{Code: erInsecureTransport, State: "HY000",
		Message: "Connections using insecure transport are prohibited while --require_secure_transport=ON."}
}

// prefixConn reads pre before the connection itself.
type prefixConn struct {
	net.Conn
	pre []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.pre) > 0 {
		n := copy(b, p.pre)
		p.pre = p.pre[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// authenticate checks the credentials of user, who logs in on the client
// connection cc of session id, with the plugin it chose, switching it to
// mysql_native_password when it chose one tpproxy does not speak. It
// returns the server account the session runs as, or the error to send
// the client (ERR 1045).
func (srv *Server) authenticate(ctx context.Context, cc *clientConn, id uint32, user, plugin string, auth []byte) (*pool.Account, *mysqlwire.Error) {
	acct, known := srv.users.Load().accounts[user]
	if !known && srv.lookup != nil {
		// Not configured: the server's own account, if it has one.
		a, err := srv.lookup.get(ctx, user)
		if err != nil {
			srv.log.Warn("auth lookup failed; login refused", "conn_id", id, "user", logName(user), "remote", cc.remote, "err", err)
		}
		acct, known = a, a != nil
	}
	if !known {
		acct = dummyAccount
	}
	if cc.caps&capPluginAuth == 0 {
		plugin = pluginNative
	}
	ok := false
	switch plugin {
	case pluginNative:
		ok = acct.checkNative(cc.salt[:], auth)
	case pluginCachingSHA2:
		ok = cc.authSHA2(ctx, acct, auth, &srv.rsa, srv.auth)
	default:
		var err error
		auth, err = cc.authSwitch(pluginNative)
		ok = err == nil && acct.checkNative(cc.salt[:], auth)
	}
	if ok && known && acct.passthrough && acct.backend.Load() == nil {
		// Only the hash is configured and the login did not reveal what
		// the server account needs (cannot happen with the plugins above;
		// kept so that a session never runs as the wrong account).
		srv.stats.authFailures.Add(1)
		return nil, &mysqlwire.Error{Code: erAccessDenied, State: "28000",
			Message: fmt.Sprintf("tpproxy: no credentials for the server account of user '%s': configure its password in clear or as backend_password", user)}
	}
	if ok && known {
		srv.hosts.ok(cc.remoteHost())
		return acct.backend.Load(), nil
	}
	srv.stats.authFailures.Add(1)
	srv.hosts.fail(cc.remoteHost())
	srv.log.Info("login failed", "conn_id", id, "user", logName(user), "remote", cc.remote, "plugin", logName(plugin))
	return nil, cc.accessDenied(user, auth)
}

// logName is a name a client sent, as logged before it logged in: at most
// maxLogName bytes, so that a flood of logins with names of kilobytes does
// not write kilobytes per attempt into the log.
func logName(name string) string {
	if len(name) <= maxLogName {
		return name
	}
	return name[:maxLogName] + fmt.Sprintf("…(%d bytes)", len(name))
}

// maxLogName is well beyond the longest account name MariaDB (80
// characters) or MySQL (32) accepts.
const maxLogName = 128

// authSHA2 runs caching_sha2_password: the fast path when the password's
// hash is cached, else full authentication with the password in clear
// over TLS or RSA-encrypted with keys, whose private-key operations take a
// slot of work.
func (s *clientConn) authSHA2(ctx context.Context, acct *account, auth []byte, keys *rsaKeys, work *authWork) bool {
	if isEmptyAuth(auth) {
		return acct.empty
	}
	if match, _ := acct.checkSHA2Fast(s.salt[:], auth); match {
		return s.writeMoreData([]byte{mysqlwire.SHA2FastAuthOK}) == nil
	}
	if s.writeMoreData([]byte{mysqlwire.SHA2PerformFullAuth}) != nil {
		return false
	}
	p, err := s.r.ReadPacket()
	if err != nil {
		return false
	}
	s.w.SetSeq(s.r.Seq())
	var pw []byte
	switch {
	case s.tls:
		pw = p
		if n := len(pw); n > 0 && pw[n-1] == 0 {
			pw = pw[:n-1]
		}
	default:
		if len(p) == 1 && p[0] == mysqlwire.SHA2RequestPublicKey {
			var pub []byte
			if !work.run(ctx, time.Now().Add(handshakeTimeout), func() { _, pub, err = keys.get() }) {
				return false
			}
			if err != nil || s.writeMoreData(pub) != nil {
				return false
			}
			if p, err = s.r.ReadPacket(); err != nil {
				return false
			}
			s.w.SetSeq(s.r.Seq())
		}
		if !work.run(ctx, time.Now().Add(handshakeTimeout), func() { pw, err = keys.decryptPassword(s.salt[:], p) }) || err != nil {
			return false
		}
	}
	return acct.checkPlain(pw)
}
