package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// A local port is a MySQL-protocol port tpproxy answers itself, with no
// backend behind it: the admin port. It speaks through the same protocol
// connection as client sessions (clientConn: greeting, handshake parsing
// that never panics on malformed input, auth switch, packet framing), with
// one account checked by mysql_native_password, and hands each query to a
// LocalHandler.

// LocalHandler answers the queries of a local port's connection.
type LocalHandler interface {
	// Query answers one COM_QUERY. A *mysqlwire.Error is sent as it is;
	// any other error as ERR 1105.
	Query(ctx context.Context, q string) (*LocalResult, error)
}

// LocalResult is a local port's answer: a text-protocol result set when
// Columns is not nil, else an OK.
type LocalResult struct {
	Columns []mysqlwire.Column
	// Rows are the result set's rows, each the payload of a text-protocol
	// row packet (length-encoded strings, 0xfb for NULL).
	Rows [][]byte
	// AffectedRows goes in the OK.
	AffectedRows uint64
}

// LocalConfig configures ServeLocal.
type LocalConfig struct {
	// ServerVersion is announced in the greeting.
	ServerVersion string
	// User and Password are the one account that may log in.
	User, Password string
	// Handler answers queries.
	Handler LocalHandler
	// Logger receives logins and failures; default slog.Default().
	Logger *slog.Logger
}

// localCaps are what a local port offers: the protocol 4.1 basics, no TLS,
// no compression, no session tracking.
const localCaps = capLongPassword | capFoundRows | capLongFlag | capConnectWithDB |
	capProtocol41 | capIgnoreSpace | capInteractive | capTransactions | capSecureConnection |
	capMultiResults | capPluginAuth | capConnectAttrs | capPluginAuthLenenc

// localMaxPacket bounds a packet a local port's client may send.
const localMaxPacket = 4 << 20

// errLocalQuit ends a local connection normally (COM_QUIT).
var errLocalQuit = errors.New("proxy: client quit")

// ServeLocal serves one connection of a local port until the client quits
// or fails or ctx ends, and closes nc. connID is the id the greeting
// announces. A failed login has been answered with ERR 1045 (and logged);
// a malformed handshake with ERR 1043.
func ServeLocal(ctx context.Context, nc net.Conn, connID uint32, cfg LocalConfig) error {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("remote", nc.RemoteAddr().String())
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	defer stop()
	defer nc.Close()

	var small [smallBufSize]byte
	c := &clientConn{nc: nc, remote: nc.RemoteAddr().String()}
	c.r = mysqlwire.NewReader(nc, small[:], nil)
	// Admin statements are short; a client cannot make the port buffer more.
	c.r.MaxPacket = localMaxPacket
	c.w = mysqlwire.NewWriterSize(nc, 16<<10)
	defer c.w.Release()

	_ = nc.SetDeadline(time.Now().Add(handshakeTimeout))
	user, err := c.localLogin(connID, &cfg, log)
	if err != nil {
		return err
	}
	_ = nc.SetDeadline(time.Time{})
	log = log.With("conn_id", connID, "user", user)
	for {
		c.r.SetSeq(0)
		p, err := c.r.ReadPacket()
		if err != nil {
			return err
		}
		c.w.SetSeq(c.r.Seq())
		err = c.localCommand(ctx, p, &cfg, log)
		if errors.Is(err, errLocalQuit) {
			return nil
		}
		if err == nil {
			err = c.w.Flush()
		}
		if err != nil {
			return err
		}
	}
}

// localLogin runs the handshake of a local port: greeting, response,
// switch to mysql_native_password when the client chose another plugin,
// then OK or ERR 1045. It returns the user name.
func (s *clientConn) localLogin(connID uint32, cfg *LocalConfig, log *slog.Logger) (string, error) {
	s.salt = newSalt()
	if err := s.writeGreeting(greeting{version: cfg.ServerVersion, connID: connID, caps: localCaps,
		collation: defaultCollationID, plugin: pluginNative}); err != nil {
		return "", err
	}
	s.r.SetSeq(1)
	p, err := s.r.ReadPacket()
	if err != nil {
		return "", err
	}
	resp, err := parseHandshakeResponse(p)
	if err == nil && resp.sslRequest {
		err = fmt.Errorf("%w: SSL requested but not offered", errBadHandshake)
	}
	s.w.SetSeq(s.r.Seq())
	if err != nil {
		_ = s.w.WriteERR(&mysqlwire.Error{Code: erHandshake, State: "08S01", Message: "Bad handshake"})
		_ = s.w.Flush()
		log.Warn("admin: malformed handshake", "err", err)
		return "", err
	}
	s.caps = resp.caps & localCaps
	auth := resp.auth
	if s.caps&capPluginAuth != 0 && resp.plugin != pluginNative {
		if auth, err = s.authSwitch(pluginNative); err != nil {
			return "", err
		}
	}
	acct := dummyAccount
	if resp.user == cfg.User {
		acct = newAccount(User{Name: cfg.User, Plain: cfg.Password}, IdentityService)
	}
	if !acct.checkNative(s.salt[:], auth) {
		_ = s.w.WriteERR(s.accessDenied(resp.user, auth))
		_ = s.w.Flush()
		log.Warn("admin: login failed", "user", logName(resp.user))
		return "", errAuth
	}
	log.Info("admin: login", "user", resp.user)
	if err := s.writeOKPacket(0, 0, mysqlwire.StatusAutocommit, 0, nil, nil); err != nil {
		return "", err
	}
	return resp.user, s.w.Flush()
}

// localCommand answers one command of a local port.
func (s *clientConn) localCommand(ctx context.Context, p []byte, cfg *LocalConfig, log *slog.Logger) error {
	if len(p) == 0 {
		return s.w.WriteERR(errUnknownCommand)
	}
	switch p[0] {
	case comQuit:
		return errLocalQuit
	case comQuery:
		res, err := cfg.Handler.Query(ctx, string(p[1:]))
		if err != nil {
			e := sqlError(err)
			log.Debug("admin: statement failed", "code", e.Code, "msg", e.Message)
			return s.w.WriteERR(e)
		}
		return s.writeLocalResult(res)
	case comPing, comResetConnection, comInitDB:
		// Statements name their tables in full: any schema will do.
		return s.writeOKPacket(0, 0, mysqlwire.StatusAutocommit, 0, nil, nil)
	case comFieldList:
		return s.w.WriteEOF(0, mysqlwire.StatusAutocommit)
	case comSetOption:
		// Multi-statements on or off: answered with an EOF.
		return s.w.WriteEOF(0, mysqlwire.StatusAutocommit)
	case comStmtClose, comStmtSendLongData:
		return nil // no answer
	case comStmtPrepare, comStmtExecute, comStmtReset, comStmtFetch, comStmtBulkExecute:
		return s.w.WriteERR(&mysqlwire.Error{Code: erUnsupportedPS, State: "HY000",
			Message: "This command is not supported in the prepared statement protocol yet"})
	}
	return s.w.WriteERR(errUnknownCommand)
}

// writeLocalResult sends a LocalResult: an OK, or a result set.
func (s *clientConn) writeLocalResult(res *LocalResult) error {
	if res == nil || res.Columns == nil {
		var affected uint64
		if res != nil {
			affected = res.AffectedRows
		}
		return s.writeOKPacket(affected, 0, mysqlwire.StatusAutocommit, 0, nil, nil)
	}
	w := s.w
	w.Begin()
	w.AppendLenEncInt(uint64(len(res.Columns)))
	if err := w.End(); err != nil {
		return err
	}
	for _, c := range res.Columns {
		if err := w.WriteColumn(c); err != nil {
			return err
		}
	}
	if err := w.WriteEOF(0, mysqlwire.StatusAutocommit); err != nil {
		return err
	}
	for _, row := range res.Rows {
		w.Begin()
		w.AppendBytes(row)
		if err := w.End(); err != nil {
			return err
		}
	}
	return w.WriteEOF(0, mysqlwire.StatusAutocommit)
}
