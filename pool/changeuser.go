package pool

import (
	"context"
	"errors"
	"fmt"

	"github.com/pingcap/tidb/pkg/parser/charset"

	"github.com/tpproxy/tpproxy/internal/mysqlclient"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// errNoChangeUser: COM_CHANGE_USER cannot be used on this connection (an
// auth plugin other than mysql_native_password, say); the caller redials.
var errNoChangeUser = errors.New("pool: change user not possible")

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
	if g.Plugin != mysqlwire.AuthNativePassword || len(g.Salt) < 20 || id == 0 || id > 255 {
		return errNoChangeUser
	}
	// MariaDB keeps the active role across COM_CHANGE_USER when the new
	// account has no default role (10.11; a fresh login has none then):
	// it is given up first, so that the new login ends with exactly the
	// roles a fresh one would have.
	same := c.p.sameAccount(c.account, a)
	if !(same && c.state.Role == "" && !c.roleChanged) && !(c.defaultRole == "NONE" && c.state.Role == "" && !c.roleChanged) {
		if _, err := c.Exec(ctx, "SET ROLE NONE"); err != nil {
			var me *mysqlwire.Error
			if !errors.As(err, &me) {
				return err
			}
			// No roles on this server: nothing to give up.
		}
	}
	done := c.withDeadline(ctx)
	err := c.changeUser(g, id, c.p.credentials(a))
	done()
	if err != nil {
		c.broken = true
		return err
	}
	c.account, c.acctInUse = a, c.p.inUseCount(c.p.accountName(a))
	if err := c.afterLogin(ctx); err != nil {
		return err
	}
	if !same {
		// What that account's login activated is its default.
		return c.learnDefaultRole(ctx)
	}
	return nil
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
func (c *Conn) changeUser(g mysqlclient.Greeting, collation uint16, who login) error {
	c.StartCommand()
	w := c.w
	w.Begin()
	w.AppendByte(mysqlwire.ComChangeUser)
	w.AppendString(who.user)
	w.AppendByte(0)
	scramble := nativeScramble(g.Salt[:20], who.stage1)
	w.AppendByte(byte(len(scramble)))
	w.AppendBytes(scramble)
	w.AppendByte(0) // no schema
	w.AppendUint16(collation)
	w.AppendString(mysqlwire.AuthNativePassword)
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
		case p[0] == mysqlwire.AuthSwitchHeader && round == 0:
			plugin, salt, err := mysqlwire.NullTerminated(p[1:])
			if err != nil || string(plugin) != mysqlwire.AuthNativePassword || len(salt) < 20 {
				return fmt.Errorf("%w: unexpected auth switch to %q", errNoChangeUser, plugin)
			}
			c.greeting.Salt = append(c.greeting.Salt[:0], salt[:20]...)
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

// ExtCaps returns the MariaDB extended capabilities the backend offers of
// those the pool can relay (0 on MySQL).
func (p *Pool) ExtCaps() uint32 { return p.extCaps.Load() }
