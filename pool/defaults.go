package pool

import (
	"context"
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
const defaultsSQL = "SELECT @@SESSION.sql_mode, @@GLOBAL.wait_timeout, @@GLOBAL.interactive_timeout, CURRENT_ROLE()"

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
		d.Role = RoleArg(f[3], d.MariaDB)
		n++
		return nil
	})
	if err != nil || n != 1 {
		p.cfg.Logger.Debug("cannot read session defaults", "err", err)
		return
	}
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

// roleArg is the SET ROLE argument for a State.Role.
func (p *Pool) roleArg(role string) string {
	if role == "" {
		return p.SessionDefaults().Role
	}
	return role
}
