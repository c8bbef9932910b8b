package proxy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

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
	if !cs.loaded {
		cs.load(ctx, p)
	}
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
	c, err := p.Acquire(ctx, nil)
	if err != nil {
		return
	}
	defer p.Release(c)
	byID := make(map[uint16]collation, 512)
	def := make(map[string]string, 64)
	err = c.Query(ctx, "SELECT ID, COLLATION_NAME, CHARACTER_SET_NAME, IS_DEFAULT FROM information_schema.COLLATIONS",
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
	cs.byID, cs.def, cs.loaded = byID, def, true
}
