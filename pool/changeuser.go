package pool

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/pingcap/tidb/pkg/parser/charset"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

const comChangeUser = 0x11

// errNoChangeUser: COM_CHANGE_USER cannot be used on this connection (an
// auth plugin other than mysql_native_password, say); the caller redials.
var errNoChangeUser = errors.New("pool: change user not possible")

// greeting is what the pool keeps of the server's initial handshake.
type greeting struct {
	salt   []byte
	plugin string
	// collation is the server's default collation id (its low byte, as
	// the greeting carries it); caps its capability flags, extCaps
	// MariaDB's extended capabilities (0 from MySQL, which leaves the
	// CLIENT_MYSQL bit set).
	collation uint8
	caps      uint32
	extCaps   uint32
}

// parseGreeting reads the scramble and auth plugin of an initial handshake
// (HandshakeV10) captured with its packet header.
func parseGreeting(p []byte) (greeting, bool) {
	var g greeting
	if len(p) < 5 || p[4] != 10 {
		return g, false
	}
	_, p, err := mysqlwire.NullTerminated(p[5:]) // server version
	if err != nil || len(p) < 4+8+1+2+1+2+2+1+10 {
		return g, false
	}
	salt := append([]byte(nil), p[4:12]...)
	g.collation = p[15]
	g.caps = uint32(p[13]) | uint32(p[14])<<8 | uint32(p[18])<<16 | uint32(p[19])<<24
	if g.caps&1 == 0 {
		g.extCaps = uint32(p[27]) | uint32(p[28])<<8 | uint32(p[29])<<16 | uint32(p[30])<<24
	}
	p = p[4+8+1+2+1+2+2+1+10:]
	rest, p, err := mysqlwire.NullTerminated(p)
	if err != nil {
		return g, false
	}
	g.salt = append(salt, rest...)
	if i := bytes.IndexByte(p, 0); i >= 0 {
		g.plugin = string(p[:i])
	}
	return g, len(g.salt) >= 20
}

// collationID is the handshake id of the pool's collation, 0 if unknown.
func collationID(name string) uint16 {
	c, err := charset.GetCollationByName(name)
	if err != nil {
		return 0
	}
	return uint16(c.ID)
}

// clearSchema takes the connection back to "no default schema", which no
// statement can do, with COM_CHANGE_USER to the account it is logged in as
// and an empty schema: one round trip and a session re-initialisation
// instead of a new connection. The session state is reset as by
// COM_RESET_CONNECTION.
func (c *Conn) clearSchema(ctx context.Context) error { return c.relogin(ctx, c.account) }

// relogin logs c in as a (nil: the pool's own account) with
// COM_CHANGE_USER and no schema, then brings it to the state the pool
// dials connections in. errNoChangeUser: COM_CHANGE_USER cannot be used
// here (the greeting's or the account's auth plugin); a failed exchange
// leaves c broken.
func (c *Conn) relogin(ctx context.Context, a *Account) error {
	g, cfg := c.greeting, &c.p.cfg
	id := collationID(cfg.Collation)
	if g.plugin != gomysql.AUTH_NATIVE_PASSWORD || id == 0 || id > 255 {
		return errNoChangeUser
	}
	done := c.withDeadline(ctx)
	err := c.changeUser(g, id, c.p.credentials(a))
	done()
	if err != nil {
		c.broken = true
		return err
	}
	c.account, c.acctInUse = a, c.p.inUseCount(c.p.accountName(a))
	return c.afterLogin(ctx)
}

// afterLogin brings a connection that COM_CHANGE_USER just logged in again
// to the state the pool dials connections in.
func (c *Conn) afterLogin(ctx context.Context) error {
	cfg := &c.p.cfg
	c.forgetSession()
	// A new login: the account's default roles are active again.
	c.roleChanged = false
	c.state.Role = ""
	c.state.Schema = ""
	c.state.sum = 0
	if _, err := c.Exec(ctx, c.p.initSQL()); err != nil {
		return err
	}
	c.state.Vars = append(c.state.Vars[:0], CharsetVars(CharsetOf(cfg.Collation), cfg.Collation)...)
	c.state.ResultsCollation = cfg.Collation
	if c.state.MultiStatementsOff {
		return c.setMultiStatements(ctx, true)
	}
	return nil
}

// changeUser sends COM_CHANGE_USER for who and answers an auth switch to
// mysql_native_password (remembering its challenge: the server checks the
// next COM_CHANGE_USER against the latest one).
func (c *Conn) changeUser(g greeting, collation uint16, who login) error {
	c.StartCommand()
	w := c.w
	w.Begin()
	w.AppendByte(comChangeUser)
	w.AppendString(who.user)
	w.AppendByte(0)
	scramble := nativeScramble(g.salt[:20], who.stage1)
	w.AppendByte(byte(len(scramble)))
	w.AppendBytes(scramble)
	w.AppendByte(0) // no schema
	w.AppendUint16(collation)
	w.AppendString(gomysql.AUTH_NATIVE_PASSWORD)
	w.AppendByte(0)
	w.AppendByte(0) // no connection attributes
	if err := w.End(); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	for round := 0; ; round++ {
		p, err := c.r.ReadPacket()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBroken, err)
		}
		switch {
		case mysqlwire.IsOK(p):
			return nil
		case mysqlwire.IsERR(p):
			return mysqlwire.ParseERR(p)
		case p[0] == 0xfe && round == 0: // auth switch request
			plugin, salt, err := mysqlwire.NullTerminated(p[1:])
			if err != nil || string(plugin) != gomysql.AUTH_NATIVE_PASSWORD || len(salt) < 20 {
				return fmt.Errorf("%w: unexpected auth switch to %q", errNoChangeUser, plugin)
			}
			c.greeting.salt = append(c.greeting.salt[:0], salt[:20]...)
			w.SetSeq(c.r.Seq())
			w.Begin()
			w.AppendBytes(nativeScramble(salt[:20], who.stage1))
			if err := w.End(); err != nil {
				return err
			}
			if err := c.Flush(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: unexpected packet 0x%02x", errNoChangeUser, p[0])
		}
	}
}

// ServerGreeting is what the backend announced in its initial handshake.
type ServerGreeting struct {
	Collation uint8
	Caps      uint32
	ExtCaps   uint32 // MariaDB's extended capabilities
}

// Greeting returns what the latest backend connection dialed was greeted
// with (ok false before any).
func (p *Pool) Greeting() (ServerGreeting, bool) {
	g := p.greeting.Load()
	if g == nil {
		return ServerGreeting{}, false
	}
	return *g, true
}

// MariaDB extended capabilities a client may be offered.
const (
	ExtBulk     = extBulk     // MARIADB_CLIENT_STMT_BULK_OPERATIONS
	ExtMetadata = extMetadata // MARIADB_CLIENT_EXTENDED_METADATA
)

// ExtCaps returns the MariaDB extended capabilities backend connections
// negotiate (0 on MySQL, or when TLS hides the handshake response).
func (p *Pool) ExtCaps() uint32 { return p.extCaps.Load() }
