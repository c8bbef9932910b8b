package proxy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
)

// collation is a collation and its character set.
type collation struct {
	name    string
	charset string
}

// charsets maps the collation id a client sends in its handshake to the
// session variables a server would set for it. The backend's own table is
// loaded once, on the first login with a collation other than the one
// backend connections use; a few common ids are known without asking.
type charsets struct {
	base collation

	mu     sync.Mutex // guards the fields below
	loaded bool
	byID   map[uint16]collation
	def    map[string]string // charset -> its default collation
	sets   map[string]charsetInfo
	tried  time.Time // the last failed load; retried after a second
}

// charsetInfo is what the server declares text columns of a character set
// with.
type charsetInfo struct {
	defaultID uint16 // id of its default collation
	maxLen    uint32 // bytes per character at most
}

// wellKnownSets are used until the backend's table is loaded, and when it
// cannot be.
var wellKnownSets = map[string]charsetInfo{
	"utf8mb4": {45, 4}, "utf8mb3": {33, 3}, "utf8": {33, 3}, "latin1": {8, 1},
	"ascii": {11, 1}, "binary": {63, 1},
}

// ensure loads the backend's table if it is not loaded and no attempt
// failed within the last second. mu is held.
func (cs *charsets) ensure(ctx context.Context, p *pool.Pool) {
	if cs.loaded || time.Since(cs.tried) < time.Second {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cs.load(ctx, p)
	if !cs.loaded {
		cs.tried = time.Now()
	}
}

// nameOf returns the name of collation id as the backend knows it.
func (cs *charsets) nameOf(ctx context.Context, p *pool.Pool, id uint16) (string, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.ensure(ctx, p)
	if c, ok := cs.byID[id]; ok {
		return c.name, true
	}
	if c, ok := wellKnown[id]; ok {
		return c.name, true
	}
	return "", false
}

// charset returns the default collation id and the maximum character
// length of a character set, as the backend knows them.
func (cs *charsets) charset(ctx context.Context, p *pool.Pool, name string) (uint16, uint32) {
	name = strings.ToLower(name)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.ensure(ctx, p)
	if i, ok := cs.sets[name]; ok {
		return i.defaultID, i.maxLen
	}
	if i, ok := wellKnownSets[name]; ok {
		return i.defaultID, i.maxLen
	}
	return 45, 4
}

// wellKnown are ids with the same meaning on MySQL and MariaDB.
var wellKnown = map[uint16]collation{
	8:   {"latin1_swedish_ci", "latin1"},
	11:  {"ascii_general_ci", "ascii"},
	33:  {"utf8mb3_general_ci", "utf8mb3"},
	45:  {"utf8mb4_general_ci", "utf8mb4"},
	46:  {"utf8mb4_bin", "utf8mb4"},
	47:  {"latin1_bin", "latin1"},
	63:  {"binary", "binary"},
	83:  {"utf8mb3_bin", "utf8mb3"},
	192: {"utf8mb3_unicode_ci", "utf8mb3"},
	224: {"utf8mb4_unicode_ci", "utf8mb4"},
}

func (cs *charsets) init(base string) {
	cs.base = collation{name: base, charset: pool.CharsetOf(base)}
}

// lookup returns the collation for a handshake id. Unknown ids fall back
// to utf8mb4 (ids from 255 up are MySQL 8's utf8mb4_0900 family, which
// MariaDB lacks and would silently turn into latin1).
func (cs *charsets) lookup(ctx context.Context, p *pool.Pool, id uint16) collation {
	if c, ok := wellKnown[id]; ok && c.name == cs.base.name {
		return c
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.ensure(ctx, p)
	if c, ok := cs.byID[id]; ok {
		return c
	}
	if !cs.loaded {
		if c, ok := wellKnown[id]; ok {
			return c
		}
	}
	if d, ok := cs.def["utf8mb4"]; ok {
		return collation{name: d, charset: "utf8mb4"}
	}
	return cs.base
}

// load reads the backend's collation table. mu is held.
func (cs *charsets) load(ctx context.Context, p *pool.Pool) {
	// On the control connection: the session asking may hold a pool
	// connection itself, and the pool may have no other free.
	byID := make(map[uint16]collation, 512)
	def := make(map[string]string, 64)
	err := p.QueryControl(ctx, "SELECT ID, COLLATION_NAME, CHARACTER_SET_NAME, IS_DEFAULT FROM information_schema.COLLATIONS",
		func(row []byte) error {
			f, err := mysqlwire.RowValues(nil, row)
			if err != nil || len(f) != 4 {
				return fmt.Errorf("collation row: %w", errors.Join(err, mysqlwire.ErrMalformed))
			}
			id, err := strconv.ParseUint(string(f[0]), 10, 16)
			if err != nil {
				return nil // MariaDB lists some collations without an id
			}
			co := collation{name: string(f[1]), charset: string(f[2])}
			byID[uint16(id)] = co
			if string(f[3]) == "Yes" {
				def[co.charset] = co.name
			}
			return nil
		})
	if err != nil {
		return
	}
	byName := make(map[string]uint16, len(byID))
	for id, co := range byID {
		byName[co.name] = id
	}
	sets := make(map[string]charsetInfo, 64)
	err = p.QueryControl(ctx, "SELECT CHARACTER_SET_NAME, DEFAULT_COLLATE_NAME, MAXLEN FROM information_schema.CHARACTER_SETS",
		func(row []byte) error {
			f, err := mysqlwire.RowValues(nil, row)
			if err != nil || len(f) != 3 {
				return fmt.Errorf("character set row: %w", errors.Join(err, mysqlwire.ErrMalformed))
			}
			n, _ := strconv.ParseUint(string(f[2]), 10, 32)
			if id, ok := byName[string(f[1])]; ok && n > 0 {
				sets[string(f[0])] = charsetInfo{defaultID: id, maxLen: uint32(n)}
			}
			return nil
		})
	if err != nil {
		return
	}
	if i, ok := sets["utf8mb3"]; ok {
		sets["utf8"] = i
	}
	cs.byID, cs.def, cs.sets, cs.loaded = byID, def, sets, true
}
