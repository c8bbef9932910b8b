package mysqlclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// loginCaps are asked for by every login (where the server offers them:
// CLIENT_MYSQL, long password, is not offered by MariaDB), and
// CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA too when the auth response needs it.
const loginCaps = mysqlwire.ClientLongPassword | mysqlwire.ClientProtocol41 | mysqlwire.ClientSecureConnection |
	mysqlwire.ClientPluginAuth

// baseCaps are what Connect asks for. CLIENT_DEPRECATE_EOF is not: result
// sets keep their EOF packets, one format fewer to get right.
const baseCaps = loginCaps | mysqlwire.ClientPluginAuthLenenc | mysqlwire.ClientTransactions |
	mysqlwire.ClientMultiResults | mysqlwire.ClientPSMultiResults

// Greeting is the server's initial handshake (HandshakeV10).
type Greeting struct {
	// Version is the server version as sent (MariaDB prefixes "5.5.5-").
	Version string
	// ConnID is the server's connection id (what KILL takes).
	ConnID uint32
	// Caps are the capability flags offered; ExtCaps MariaDB's extended
	// capabilities (0 from MySQL, which sets CLIENT_MYSQL).
	Caps, ExtCaps uint32
	// Collation is the low byte of the server's default collation id.
	Collation uint8
	// Salt is the scramble, 20 bytes from MySQL and MariaDB (a copy);
	// Plugin is the authentication plugin it is for.
	Salt   []byte
	Plugin string
}

// parseGreeting decodes a HandshakeV10 payload.
func parseGreeting(p []byte) (Greeting, error) {
	var g Greeting
	if len(p) == 0 || p[0] != 10 {
		return g, fmt.Errorf("%w: not a protocol 10 greeting", ErrProtocol)
	}
	ver, p, err := mysqlwire.NullTerminated(p[1:])
	if err != nil || len(p) < 4+8+1+2 {
		return g, fmt.Errorf("%w: short greeting", ErrProtocol)
	}
	g.Version = string(ver)
	g.ConnID = binary.LittleEndian.Uint32(p)
	g.Salt = append(make([]byte, 0, 20), p[4:12]...)
	g.Caps = uint32(binary.LittleEndian.Uint16(p[13:]))
	p = p[15:]
	if len(p) < 1+2+2+1+10 {
		// A pre-4.1 greeting ends here; the caller refuses it.
		return g, nil
	}
	g.Collation = p[0]
	g.Caps |= uint32(binary.LittleEndian.Uint16(p[3:])) << 16
	authLen := int(p[5])
	if g.Caps&mysqlwire.ClientLongPassword == 0 {
		// MariaDB: the last 4 reserved bytes are extended capabilities.
		g.ExtCaps = binary.LittleEndian.Uint32(p[12:])
	}
	p = p[16:]
	if g.Caps&mysqlwire.ClientSecureConnection != 0 {
		// The second part of the salt is max(13, authLen-8) bytes, the
		// last of which is a NUL that is not part of the salt.
		n := max(13, authLen-8)
		if len(p) < n {
			return g, fmt.Errorf("%w: short salt in greeting", ErrProtocol)
		}
		g.Salt = append(g.Salt, p[:n-1]...)
		p = p[n:]
	}
	if g.Caps&mysqlwire.ClientPluginAuth != 0 {
		// Some servers leave out the terminating NUL.
		if i := bytes.IndexByte(p, 0); i >= 0 {
			p = p[:i]
		}
		g.Plugin = string(p)
	}
	return g, nil
}

// handshake runs the connection phase: greeting, optional TLS, login. It
// asks for want and what cfg implies, where the server offers them, and
// returns the greeting and what the handshake response asked for.
func (c *Conn) handshake(ctx context.Context, cfg *Config, want Protocol) (Greeting, Protocol, error) {
	p, err := c.readPacket()
	if err != nil {
		return Greeting{}, Protocol{}, err
	}
	if p[0] == mysqlwire.ERRHeader {
		// Refused before login (too many connections, host blocked).
		c.broken.Store(true)
		return Greeting{}, Protocol{}, mysqlwire.ParseERR(p)
	}
	g, err := parseGreeting(p)
	if err != nil {
		return g, Protocol{}, c.fail(err)
	}
	c.connID, c.version = g.ConnID, strings.TrimPrefix(g.Version, "5.5.5-")
	if g.Caps&mysqlwire.ClientProtocol41 == 0 || g.Caps&mysqlwire.ClientSecureConnection == 0 {
		return g, Protocol{}, c.fail(fmt.Errorf("%w: server %s lacks protocol 4.1 authentication", ErrProtocol, c.version))
	}
	caps := want.Caps | loginCaps
	if cfg.DBName != "" {
		caps |= mysqlwire.ClientConnectWithDB
	}
	if cfg.MultiStatements {
		caps |= mysqlwire.ClientMultiStatements
	}
	if cfg.ClientFoundRows {
		caps |= mysqlwire.ClientFoundRows
	}
	if len(cfg.ConnectAttrs) > 0 {
		caps |= mysqlwire.ClientConnectAttrs
	}
	caps &= g.Caps
	ext := want.ExtCaps & g.ExtCaps
	if ext != 0 {
		// MariaDB reads them from a client that clears CLIENT_MYSQL (long
		// password), as its own do.
		caps &^= mysqlwire.ClientLongPassword
	}
	// With cache metadata a column count is followed by a flag.
	c.cacheMeta = ext&mysqlwire.MariaDBClientCacheMetadata != 0
	collation := byte(cfg.CollationID)
	if cfg.CollationID == 0 {
		collation = collationIDs[cfg.Collation]
	}

	useTLS := false
	if cfg.TLS != nil {
		switch {
		case g.Caps&mysqlwire.ClientSSL != 0:
			useTLS = true
		case !cfg.AllowFallbackToPlaintext:
			return g, Protocol{}, c.fail(ErrNoTLS)
		}
	}
	plugin := g.Plugin
	if cfg.initialPlugin != "" {
		plugin = cfg.initialPlugin
	}
	plugin, auth, err := authResponse(plugin, g.Salt, cfg, c.secure || useTLS)
	if err != nil {
		return g, Protocol{}, c.fail(err)
	}
	if len(auth) > 250 {
		// Its length does not fit in one byte of the old format.
		caps |= mysqlwire.ClientPluginAuthLenenc & g.Caps
	}
	if useTLS {
		caps |= mysqlwire.ClientSSL
		if err := c.startTLS(ctx, cfg.TLS, caps, ext, collation); err != nil {
			return g, Protocol{}, err
		}
	}
	sent := Protocol{Caps: caps, ExtCaps: ext}

	size := 64 + len(cfg.User) + len(auth) + len(cfg.DBName) + len(plugin)
	if caps&mysqlwire.ClientConnectAttrs != 0 {
		size += 9
		for k, v := range cfg.ConnectAttrs {
			size += 18 + len(k) + len(v)
		}
	}
	b := handshakeHead(make([]byte, 0, size), caps, ext, collation)
	b = append(b, cfg.User...)
	b = append(b, 0)
	if caps&mysqlwire.ClientPluginAuthLenenc != 0 {
		b = mysqlwire.AppendLenEncInt(b, uint64(len(auth)))
	} else {
		if len(auth) > 255 {
			return g, sent, c.fail(fmt.Errorf("%w: auth response of %d bytes", ErrAuth, len(auth)))
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
	if caps&mysqlwire.ClientConnectAttrs != 0 {
		b = appendAttrs(b, cfg.ConnectAttrs)
	}
	if err := c.writeAuthPacket(b); err != nil {
		return g, sent, err
	}
	return g, sent, c.authLoop(plugin, g.Salt, cfg)
}

// appendAttrs appends connection attributes, in name order: their total
// length, then length-encoded names and values.
func appendAttrs(b []byte, attrs map[string]string) []byte {
	n := 0
	for k, v := range attrs {
		n += lenEncSize(len(k)) + len(k) + lenEncSize(len(v)) + len(v)
	}
	b = mysqlwire.AppendLenEncInt(b, uint64(n))
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		b = mysqlwire.AppendLenEncInt(b, uint64(len(k)))
		b = append(b, k...)
		b = mysqlwire.AppendLenEncInt(b, uint64(len(attrs[k])))
		b = append(b, attrs[k]...)
	}
	return b
}

// lenEncSize is the length of n as a length-encoded integer.
func lenEncSize(n int) int {
	switch {
	case n < 251:
		return 1
	case n < 1<<16:
		return 3
	case n < 1<<24:
		return 4
	}
	return 9
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
// answering one auth switch, caching_sha2_password's extra rounds and
// sha256_password's RSA key.
func (c *Conn) authLoop(plugin string, salt []byte, cfg *Config) error {
	switched, keySent := false, false
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
			if !speaks(plugin) {
				return c.fail(fmt.Errorf("%w: server asks for plugin %q", ErrAuth, plugin))
			}
			// The new salt is NUL-terminated but for client_ed25519's
			// 32 random bytes; copy it out of the read buffer.
			if plugin != pluginEd25519 || len(data) > ed25519ScrambleBytes {
				data = bytes.TrimSuffix(data, []byte{0})
			}
			salt = append([]byte(nil), data...)
			_, auth, err := authResponse(plugin, salt, cfg, c.secure)
			if err != nil {
				return c.fail(err)
			}
			if err := c.writeAuthPacket(auth); err != nil {
				return err
			}
		case mysqlwire.AuthMoreDataHeader:
			if plugin == pluginSHA256 && !c.secure && cfg.Passwd != "" && !keySent {
				// The RSA key asked for: the password goes encrypted.
				keySent = true
				enc, err := encryptPassword(cfg.Passwd, salt, p[1:])
				if err != nil {
					return c.fail(err)
				}
				if err := c.writeAuthPacket(enc); err != nil {
					return err
				}
				continue
			}
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
