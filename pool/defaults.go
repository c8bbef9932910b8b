package pool

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// Defaults are the session values a new connection of the backend account
// starts with, as read on the latest connection dialed: what a client
// session has until it changes them.
type Defaults struct {
	// SQLMode is @@SESSION.sql_mode of a new session.
	SQLMode string
	// WaitTimeout and InteractiveTimeout are the global wait_timeout and
	// interactive_timeout, in seconds: a client session is closed after
	// being idle this long (interactive clients get the second as their
	// wait_timeout).
	WaitTimeout        int64
	InteractiveTimeout int64
	// Role is the argument of SET ROLE that restores the account's default
	// roles ("NONE" when it has none).
	Role string
	// MariaDB reports a MariaDB server.
	MariaDB bool
}

// defaultsSQL reads Defaults. CURRENT_ROLE() is NULL on MariaDB without a
// role and the string NONE on MySQL.
const defaultsSQL = "SELECT @@SESSION.sql_mode, @@GLOBAL.wait_timeout, @@GLOBAL.interactive_timeout, " + currentRoleHex

// learnDefaults reads the session defaults on a new connection. A failure
// keeps what was known before.
func (p *Pool) learnDefaults(ctx context.Context, c *Conn) {
	d := Defaults{MariaDB: strings.Contains(c.version, "MariaDB")}
	n := 0
	err := c.Query(ctx, defaultsSQL, func(row []byte) error {
		f, err := mysqlwire.RowValues(nil, row)
		if err != nil || len(f) != 4 {
			return err
		}
		d.SQLMode = string(f[0])
		d.WaitTimeout, _ = strconv.ParseInt(string(f[1]), 10, 64)
		d.InteractiveTimeout, _ = strconv.ParseInt(string(f[2]), 10, 64)
		role, err := unhexRole(f[3])
		if err != nil {
			return err
		}
		d.Role = RoleArg(role, d.MariaDB)
		n++
		return nil
	})
	if err != nil || n != 1 {
		p.cfg.Logger.Debug("cannot read session defaults", "err", err)
		return
	}
	c.defaultRole = d.Role
	p.defaults.Store(&d)
}

// SessionDefaults returns the session defaults of the backend account
// (zero until a connection has been made).
func (p *Pool) SessionDefaults() Defaults {
	if d := p.defaults.Load(); d != nil {
		return *d
	}
	return Defaults{Role: "NONE"}
}

// RoleArg turns what CURRENT_ROLE() returns into the argument of a SET
// ROLE that restores it: NULL (MariaDB, no role) and MySQL's NONE become
// NONE, a MariaDB role name is quoted, MySQL's list of quoted roles is
// taken as it is.
func RoleArg(current []byte, mariadb bool) string {
	switch {
	case current == nil, string(current) == "NONE" && !mariadb, len(current) == 0:
		return "NONE"
	case mariadb:
		return quoteIdent(string(current))
	}
	return string(current)
}

// roleArg is the SET ROLE argument for a State.Role on c: "" is the
// default roles of the account c is logged in as.
func (c *Conn) roleArg(role string) string {
	switch {
	case role != "":
		return role
	case c.defaultRole != "":
		return c.defaultRole
	}
	return c.p.SessionDefaults().Role
}

// currentRoleHex is CURRENT_ROLE() in utf8mb4, the character set Sync
// gives role names back in, as hex digits: a string result would come in
// the connection's character_set_results, whatever a CONVERT asked for.
const currentRoleHex = "HEX(CONVERT(CURRENT_ROLE() USING utf8mb4))"

// unhexRole decodes currentRoleHex's value (nil: NULL, no role).
func unhexRole(h []byte) ([]byte, error) {
	if h == nil {
		return nil, nil
	}
	b := make([]byte, hex.DecodedLen(len(h)))
	if _, err := hex.Decode(b, h); err != nil {
		return nil, fmt.Errorf("%w: CURRENT_ROLE() as hex: %w", mysqlwire.ErrMalformed, err)
	}
	return b, nil
}

// ReadRole reads the connection's active roles as the argument of the SET
// ROLE that gives them back (in utf8mb4, the character set Sync replays it
// in).
func (c *Conn) ReadRole(ctx context.Context) (string, error) {
	n := 0
	var cur []byte
	err := c.Query(ctx, "SELECT "+currentRoleHex+" LIMIT 1", func(row []byte) error {
		f, err := mysqlwire.RowValues(nil, row)
		if err == nil && len(f) == 1 {
			cur, err = unhexRole(f[0])
			n++
		}
		return err
	})
	if err != nil {
		return "", err
	}
	if n != 1 {
		return "", fmt.Errorf("%w: CURRENT_ROLE() gave %d rows", ErrBroken, n)
	}
	return RoleArg(cur, c.p.SessionDefaults().MariaDB || strings.Contains(c.version, "MariaDB")), nil
}

// learnDefaultRole reads the roles a login of c's account activates: what
// restores the account's defaults on c (its reset, a session of that
// account without a role of its own).
func (c *Conn) learnDefaultRole(ctx context.Context) error {
	role, err := c.ReadRole(ctx)
	if err != nil {
		return err
	}
	c.defaultRole = role
	return nil
}
