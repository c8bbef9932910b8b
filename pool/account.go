package pool

import (
	"cmp"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// Account is a server account a backend connection is logged in as for a
// session (identity passthrough). A nil *Account is the pool's own
// account, Config.User: every connection is dialed as that one, and taken
// to a session's account with COM_CHANGE_USER when the session first
// needs it there.
//
// Connections of every account share the pool's size: a session whose
// account has no idle connection takes the least recently used idle
// connection of another account and switches it (one round trip, which
// also resets the server session), so an account that is busy now gets
// the connections a quiet one does not use; waiting is first come, first
// served across accounts but for the bounded preference of nextWaiter.
type Account struct {
	// User is the server account's user name.
	User string
	// Stage1 is SHA1(password), what mysql_native_password answers a
	// server's challenge with; nil for an empty password. The proxy knows
	// it from a plain password in its configuration, or learns it from a
	// client's mysql_native_password login (the answer XOR
	// SHA1(salt + SHA1(Stage1)) gives it back) when it has only the hash.
	Stage1 []byte
}

// NativeStage1 is SHA1(password), nil for an empty password.
func NativeStage1(password string) []byte {
	if password == "" {
		return nil
	}
	h := sha1.Sum([]byte(password))
	return h[:]
}

// nativeScramble answers a mysql_native_password challenge from stage1:
// SHA1(password) XOR SHA1(salt + SHA1(SHA1(password))). An empty password
// answers with nothing.
func nativeScramble(salt, stage1 []byte) []byte {
	if len(stage1) == 0 {
		return nil
	}
	stage2 := sha1.Sum(stage1)
	h := sha1.New()
	h.Write(salt)
	h.Write(stage2[:])
	out := h.Sum(nil)
	for i := range out {
		out[i] ^= stage1[i]
	}
	return out
}

// sameAccount reports whether a connection logged in as have serves want:
// the same server user name, the pool's own account (nil) being
// Config.User.
func (p *Pool) sameAccount(have, want *Account) bool {
	if have == want {
		return true
	}
	return p.accountName(have) == p.accountName(want)
}

// AccountName is the server user name of account a (nil: the pool's own).
func (p *Pool) AccountName(a *Account) string { return p.accountName(a) }

func (p *Pool) accountName(a *Account) string {
	if a == nil {
		return p.cfg.User
	}
	return a.User
}

// IsOwn reports whether a is the pool's own account (Config.User).
func (p *Pool) IsOwn(a *Account) bool { return p.sameAccount(nil, a) }

// AccountName is the server user name a connection is logged in as.
func (c *Conn) AccountName() string { return c.p.accountName(c.account) }

// ErrAccountSwitch wraps a server's refusal of COM_CHANGE_USER to a
// session's account (the *mysqlwire.Error is kept: wrong password, no such
// account, an authentication plugin the proxy cannot answer).
var ErrAccountSwitch = errors.New("pool: the server refused the session's account")

// switchAccount logs c in as a (nil: the pool's own account) with
// COM_CHANGE_USER, without a default schema. As with COM_RESET_CONNECTION,
// the server session starts over: variables, temporary tables, prepared
// statements and roles are the new account's defaults.
func (c *Conn) switchAccount(ctx context.Context, a *Account) error {
	err := c.relogin(ctx, a)
	var me *mysqlwire.Error
	switch {
	case err == nil:
		c.p.stats.accountSwitches.Add(1)
	case errors.As(err, &me):
		return fmt.Errorf("%w: %w", ErrAccountSwitch, me)
	case errors.Is(err, errNoChangeUser):
		// The greeting or the account asks for another plugin (MySQL 8's
		// caching_sha2_password, say).
		return fmt.Errorf("%w %q: %w; tpproxy logs server accounts in with mysql_native_password (ALTER USER ... IDENTIFIED WITH mysql_native_password, or backend.identity service)",
			ErrAccountSwitch, c.p.accountName(a), err)
	}
	return err
}

// credentials returns the user name and stage-1 hash to log a in with.
func (p *Pool) credentials(a *Account) login {
	if a == nil {
		return login{user: p.cfg.User, stage1: NativeStage1(p.cfg.Password)}
	}
	return login{user: a.User, stage1: a.Stage1}
}

// login is who COM_CHANGE_USER logs in as.
type login struct {
	user   string
	stage1 []byte
}

// AccountStats is one account's share of the pool (SHOW POOLS).
type AccountStats struct {
	// User is the server account (Config.User is the one connections
	// are dialed as).
	User    string
	Open    int // connections logged in as it: idle + in use
	Idle    int
	InUse   int
	Waiting int // Acquire calls for it waiting for a connection
}

// inUseCount is the number of connections of an account handed out now.
func (p *Pool) inUseCount(user string) *atomic.Int64 {
	if v, ok := p.inUse.Load(user); ok {
		return v.(*atomic.Int64)
	}
	v, _ := p.inUse.LoadOrStore(user, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// Accounts lists the accounts that hold or wait for connections now, by
// user name.
func (p *Pool) Accounts() []AccountStats {
	by := map[string]*AccountStats{}
	get := func(u string) *AccountStats {
		a := by[u]
		if a == nil {
			a = &AccountStats{User: u}
			by[u] = a
		}
		return a
	}
	p.inUse.Range(func(k, v any) bool {
		if n := v.(*atomic.Int64).Load(); n > 0 {
			get(k.(string)).InUse = int(n)
		}
		return true
	})
	p.mu.Lock()
	for _, c := range p.idle {
		get(c.AccountName()).Idle++
	}
	for w := range p.waiters.All() {
		get(w.account).Waiting++
	}
	p.mu.Unlock()
	out := make([]AccountStats, 0, len(by))
	for _, a := range by {
		a.Open = a.Idle + a.InUse
		out = append(out, *a)
	}
	slices.SortFunc(out, func(x, y AccountStats) int { return cmp.Compare(x.User, y.User) })
	return out
}
