package mysqlclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// baseCaps are always asked for. CLIENT_DEPRECATE_EOF is not: result sets
// keep their EOF packets, one format fewer to get right.
const baseCaps = mysqlwire.ClientLongPassword | mysqlwire.ClientProtocol41 | mysqlwire.ClientTransactions |
	mysqlwire.ClientSecureConnection | mysqlwire.ClientMultiResults | mysqlwire.ClientPSMultiResults |
	mysqlwire.ClientPluginAuth | mysqlwire.ClientPluginAuthLenenc

// greeting is what the client needs of the server's initial handshake.
type greeting struct {
	version string
	connID  uint32
	caps    uint32
	ext     uint32 // MariaDB extended capabilities; 0 from MySQL
	salt    []byte // owned copy
	plugin  string
}

// parseGreeting decodes a HandshakeV10 payload.
func parseGreeting(p []byte) (greeting, error) {
	var g greeting
	if len(p) == 0 || p[0] != 10 {
		return g, fmt.Errorf("%w: not a protocol 10 greeting", ErrProtocol)
	}
	ver, p, err := mysqlwire.NullTerminated(p[1:])
	if err != nil || len(p) < 4+8+1+2 {
		return g, fmt.Errorf("%w: short greeting", ErrProtocol)
	}
	g.version = strings.TrimPrefix(string(ver), "5.5.5-")
	g.connID = binary.LittleEndian.Uint32(p)
	g.salt = append(make([]byte, 0, 20), p[4:12]...)
	g.caps = uint32(binary.LittleEndian.Uint16(p[13:]))
	p = p[15:]
	if len(p) < 1+2+2+1+10 {
		// A pre-4.1 greeting ends here; the caller refuses it.
		return g, nil
	}
	g.caps |= uint32(binary.LittleEndian.Uint16(p[3:])) << 16
	authLen := int(p[5])
	if g.caps&mysqlwire.ClientLongPassword == 0 {
		// MariaDB: the last 4 reserved bytes are extended capabilities.
		g.ext = binary.LittleEndian.Uint32(p[12:])
	}
	p = p[16:]
	if g.caps&mysqlwire.ClientSecureConnection != 0 {
		// The second part of the salt is max(13, authLen-8) bytes, the
		// last of which is a NUL that is not part of the salt.
		n := max(13, authLen-8)
		if len(p) < n {
			return g, fmt.Errorf("%w: short salt in greeting", ErrProtocol)
		}
		g.salt = append(g.salt, p[:n-1]...)
		p = p[n:]
	}
	if g.caps&mysqlwire.ClientPluginAuth != 0 {
		// Some servers leave out the terminating NUL.
		if i := bytes.IndexByte(p, 0); i >= 0 {
			p = p[:i]
		}
		g.plugin = string(p)
	}
	return g, nil
}

// handshake runs the connection phase: greeting, optional TLS, login.
func (c *Conn) handshake(ctx context.Context, cfg *Config) error {
	p, err := c.readPacket()
	if err != nil {
		return err
	}
	if p[0] == mysqlwire.ERRHeader {
		// Refused before login (too many connections, host blocked).
		c.broken.Store(true)
		return mysqlwire.ParseERR(p)
	}
	g, err := parseGreeting(p)
	if err != nil {
		return c.fail(err)
	}
	c.connID, c.version = g.connID, g.version
	if g.caps&mysqlwire.ClientProtocol41 == 0 || g.caps&mysqlwire.ClientSecureConnection == 0 {
		return c.fail(fmt.Errorf("%w: server %s lacks protocol 4.1 authentication", ErrProtocol, g.version))
	}
	caps := baseCaps
	if cfg.DBName != "" {
		caps |= mysqlwire.ClientConnectWithDB
	}
	if cfg.MultiStatements {
		caps |= mysqlwire.ClientMultiStatements
	}
	if cfg.ClientFoundRows {
		caps |= mysqlwire.ClientFoundRows
	}
	caps &= g.caps
	var ext uint32
	// MariaDB's cache metadata saves the server work on every
	// COM_STMT_EXECUTE; libmariadb asks for it, so sysbench gets it too. It
	// is asked for with CLIENT_MYSQL (long password) clear.
	if g.ext&mysqlwire.MariaDBClientCacheMetadata != 0 {
		ext = mysqlwire.MariaDBClientCacheMetadata
		caps &^= mysqlwire.ClientLongPassword
		c.cacheMeta = true
	}
	collation := collationIDs[cfg.Collation]

	if cfg.TLS != nil {
		switch {
		case g.caps&mysqlwire.ClientSSL != 0:
			if err := c.startTLS(ctx, cfg.TLS, caps|mysqlwire.ClientSSL, ext, collation); err != nil {
				return err
			}
			caps |= mysqlwire.ClientSSL
		case !cfg.AllowFallbackToPlaintext:
			return c.fail(ErrNoTLS)
		}
	}

	plugin := g.plugin
	if cfg.initialPlugin != "" {
		plugin = cfg.initialPlugin
	}
	plugin, auth, err := authResponse(plugin, g.salt, cfg)
	if err != nil {
		return c.fail(err)
	}
	b := handshakeHead(make([]byte, 0, 64+len(cfg.User)+len(auth)+len(cfg.DBName)+len(plugin)), caps, ext, collation)
	b = append(b, cfg.User...)
	b = append(b, 0)
	if caps&mysqlwire.ClientPluginAuthLenenc != 0 {
		b = mysqlwire.AppendLenEncInt(b, uint64(len(auth)))
	} else {
		if len(auth) > 255 {
			return c.fail(fmt.Errorf("%w: auth response of %d bytes", ErrAuth, len(auth)))
		}
		b = append(b, byte(len(auth)))
	}
	b = append(b, auth...)
	if caps&mysqlwire.ClientConnectWithDB != 0 {
		b = append(b, cfg.DBName...)
		b = append(b, 0)
	}
	if caps&mysqlwire.ClientPluginAuth != 0 {
		b = append(b, plugin...)
		b = append(b, 0)
	}
	if err := c.writeAuthPacket(b); err != nil {
		return err
	}
	return c.authLoop(plugin, g.salt, cfg)
}

// handshakeHead is the fixed start of SSLRequest and HandshakeResponse41:
// capabilities, max packet size (0: the server's), collation, 19 zeros
// and MariaDB's extended capabilities (zeros for MySQL).
func handshakeHead(b []byte, caps, ext uint32, collation byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, caps)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = append(b, collation)
	b = append(b, make([]byte, 19)...)
	return binary.LittleEndian.AppendUint32(b, ext)
}

// startTLS sends an SSLRequest and runs the TLS handshake; the login
// continues inside TLS with the next sequence id.
func (c *Conn) startTLS(ctx context.Context, tc *tls.Config, caps, ext uint32, collation byte) error {
	if err := c.writeAuthPacket(handshakeHead(make([]byte, 0, 32), caps, ext, collation)); err != nil {
		return err
	}
	tlsConn := tls.Client(c.raw, tc)
	if err := tlsConn.HandshakeContext(ctx); err != nil {
		return c.fail(fmt.Errorf("TLS handshake: %w", err))
	}
	c.nc = tlsConn
	// Nothing can be buffered: the server waited for the ClientHello.
	c.r.Reset(tlsConn)
	c.w.Reset(tlsConn)
	c.secure = true
	return nil
}

// writeAuthPacket sends one packet of the connection phase, whose sequence
// ids run on from the server's last packet.
func (c *Conn) writeAuthPacket(payload []byte) error {
	c.w.SetSeq(c.r.Seq())
	if err := c.w.WritePacket(payload); err != nil {
		return c.fail(err)
	}
	return c.flush()
}

// authLoop reads the server's answers to the login until OK or ERR,
// answering one auth switch and caching_sha2_password's extra rounds.
func (c *Conn) authLoop(plugin string, salt []byte, cfg *Config) error {
	switched := false
	for {
		p, err := c.readPacket()
		if err != nil {
			return err
		}
		switch p[0] {
		case mysqlwire.OKHeader:
			return c.endResponse()
		case mysqlwire.ERRHeader:
			// The server closes the connection after a refused login.
			c.broken.Store(true)
			return mysqlwire.ParseERR(p)
		case mysqlwire.AuthSwitchHeader:
			if switched {
				return c.protocolError("second auth switch", p)
			}
			switched = true
			name, data, err := mysqlwire.NullTerminated(p[1:])
			if err != nil {
				// A bare 0xfe asks for the pre-4.1 hash.
				return c.fail(fmt.Errorf("%w: server asks for mysql_old_password", ErrAuth))
			}
			plugin = string(name)
			if plugin != pluginNative && plugin != pluginSHA2 && plugin != pluginClearText {
				return c.fail(fmt.Errorf("%w: server asks for plugin %q", ErrAuth, plugin))
			}
			// The new salt is NUL-terminated; copy it out of the read buffer.
			data = bytes.TrimSuffix(data, []byte{0})
			salt = append([]byte(nil), data...)
			_, auth, err := authResponse(plugin, salt, cfg)
			if err != nil {
				return c.fail(err)
			}
			if err := c.writeAuthPacket(auth); err != nil {
				return err
			}
		case mysqlwire.AuthMoreDataHeader:
			if plugin != pluginSHA2 || len(p) != 2 {
				return c.protocolError("unexpected auth data", p)
			}
			switch p[1] {
			case mysqlwire.SHA2FastAuthOK:
				// The OK packet follows.
			case mysqlwire.SHA2PerformFullAuth:
				if err := c.sha2FullAuth(salt, cfg.Passwd); err != nil {
					return err
				}
			default:
				return c.protocolError("unknown caching_sha2_password state", p)
			}
		default:
			return c.protocolError("unexpected packet during login", p)
		}
	}
}

// sha2FullAuth sends the password when the server's cache does not know
// it: in the clear over TLS or a Unix socket, otherwise encrypted with the
// server's RSA key, which is asked for first.
func (c *Conn) sha2FullAuth(salt []byte, password string) error {
	if c.secure {
		return c.writeAuthPacket(append([]byte(password), 0))
	}
	if err := c.writeAuthPacket([]byte{mysqlwire.SHA2RequestPublicKey}); err != nil {
		return err
	}
	k, err := c.readPacket()
	if err != nil {
		return err
	}
	if k[0] != mysqlwire.AuthMoreDataHeader {
		if k[0] == mysqlwire.ERRHeader {
			c.broken.Store(true)
			return mysqlwire.ParseERR(k)
		}
		return c.protocolError("public key request not answered with a key", k)
	}
	enc, err := encryptPassword(password, salt, k[1:])
	if err != nil {
		return c.fail(err)
	}
	return c.writeAuthPacket(enc)
}
