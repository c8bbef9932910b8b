package proxy

import (
	"context"
	"sync"
	"time"
)

// HashLookup finds a user's mysql_native_password hash, SHA1(SHA1(password)),
// on the server (Config.AuthLookup): found false for no such usable account
// (unknown, or another authentication plugin), nil hash for an empty
// password; err when the server could not be asked.
type HashLookup func(ctx context.Context, user string) (hash []byte, found bool, err error)

// maxLookedUp bounds the accounts the lookup cache holds.
const maxLookedUp = 10_000

// lookupTimeout bounds one lookup during a login.
const lookupTimeout = 5 * time.Second

// lookupCache keeps what HashLookup answered, for its TTL, so that a login
// costs the server a query at most once per TTL per user, and a password
// changed on the server takes effect after at most the TTL.
type lookupCache struct {
	fn       HashLookup
	ttl      time.Duration
	identity Identity
	mu       sync.Mutex
	m        map[string]lookupEntry
	inflight map[string]*lookupCall
}

type lookupEntry struct {
	acct  *account // nil: no such account
	until time.Time
}

// lookupCall is one lookup in progress; logins of the same user wait for it.
type lookupCall struct {
	done chan struct{}
	acct *account
	err  error
}

func newLookupCache(fn HashLookup, ttl time.Duration, id Identity) *lookupCache {
	if ttl <= 0 {
		ttl = time.Minute
	}
	return &lookupCache{fn: fn, ttl: ttl, identity: id, m: map[string]lookupEntry{}, inflight: map[string]*lookupCall{}}
}

// get returns the account of user, asking the server when the cached
// answer is older than the TTL. A failed lookup is not cached.
func (c *lookupCache) get(ctx context.Context, user string) (*account, error) {
	now := time.Now()
	c.mu.Lock()
	if e, ok := c.m[user]; ok && now.Before(e.until) {
		c.mu.Unlock()
		return e.acct, nil
	}
	if call, ok := c.inflight[user]; ok {
		c.mu.Unlock()
		select {
		case <-call.done:
			return call.acct, call.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	call := &lookupCall{done: make(chan struct{})}
	c.inflight[user] = call
	prev, hadPrev := c.m[user]
	c.mu.Unlock()

	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	hash, found, err := c.fn(lctx, user)
	cancel()
	var acct *account
	if err == nil && found {
		if hadPrev && prev.acct != nil && string(prev.acct.stage2) == string(hash) && prev.acct.empty == (hash == nil) {
			acct = prev.acct // unchanged: keep what logins learnt
		} else {
			acct = newAccount(User{Name: user, NativeHash: hash}, c.identity)
		}
	}
	c.mu.Lock()
	delete(c.inflight, user)
	if err == nil {
		if len(c.m) >= maxLookedUp {
			for u, e := range c.m {
				if !now.Before(e.until) {
					delete(c.m, u)
				}
			}
			if len(c.m) >= maxLookedUp {
				clear(c.m)
			}
		}
		c.m[user] = lookupEntry{acct: acct, until: time.Now().Add(c.ttl)}
	}
	c.mu.Unlock()
	call.acct, call.err = acct, err
	close(call.done)
	return acct, err
}
