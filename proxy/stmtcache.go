package proxy

import (
	"bytes"
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpproxy/tpproxy/internal/ilist"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// defaultStatementCache is how many prepared statements no session uses
// any more the cache keeps for the next session that prepares them.
const defaultStatementCache = 4096

// stmtKey is what, besides the SQL text, makes two prepared statements the
// same: who prepared it, in which schema, under which session settings
// (sql_mode and the character set change how the text is parsed).
type stmtKey struct {
	user   string
	schema string
	sum    uint64
	// private is the owner of a session with temporary tables: its
	// statements may name them, which no other session can see, so they
	// are not shared (0: shared).
	private uint64
}

// cachedStmt is a prepared statement known to the proxy: its text, the
// session state it was prepared in, and the metadata the server answered
// COM_STMT_PREPARE with. Backend connections prepare it lazily and know it
// by id. Everything but meta and the guarded fields is immutable
// once the entry is in the cache.
type cachedStmt struct {
	id     uint64
	sql    []byte
	key    stmtKey
	state  pool.State // schema and settings it was prepared in; Sum computed
	info   sqlscan.Info
	params uint16
	// kill is set for a prepared KILL, which lives in its session only.
	kill *killPS

	// meta is the metadata of the latest COM_STMT_PREPARE response.
	meta atomic.Pointer[stmtMeta]
	// verified is when a backend last accepted the statement, and
	// verifiedGen the DDL generation (Server.ddlGen) then: a PREPARE is
	// answered from the cache only while both are current, so that a
	// table dropped, altered or a privilege revoked through tpproxy is
	// seen at once, and one changed directly on the server within
	// catalog_ttl.
	verified    atomic.Int64 // unix nanoseconds
	verifiedGen atomic.Uint64

	// Guarded by stmtCache.mu.
	refs  int                     // client statements using it
	links ilist.Links[cachedStmt] // in stmtCache.unused while refs is 0
}

// stmtMeta is a statement's metadata as of one COM_STMT_PREPARE response.
// It is replaced, never modified.
type stmtMeta struct {
	columns uint16
	defs    [][]byte // parameter then column definitions (payloads)
}

// update records metadata a backend just answered, if it differs from
// what the cache holds.
func (e *cachedStmt) update(columns uint16, defs [][]byte) {
	if m := e.meta.Load(); m == nil || m.columns != columns || !sameDefs(m.defs, defs) {
		e.meta.Store(&stmtMeta{columns: columns, defs: defs})
	}
}

// verify records that a backend just accepted the statement.
func (e *cachedStmt) verify(gen uint64) {
	e.verifiedGen.Store(gen)
	e.verified.Store(time.Now().UnixNano())
}

// fresh reports whether the last acceptance still stands for gen and ttl.
func (e *cachedStmt) fresh(gen uint64, ttl time.Duration) bool {
	return e.verifiedGen.Load() == gen && time.Since(time.Unix(0, e.verified.Load())) < ttl
}

// stmtCache is the process-wide statement cache. Entries in use by client
// statements stay; unused ones are kept in LRU order up to a limit.
type stmtCache struct {
	nextID atomic.Uint64

	// mu guards the fields below and the guarded fields of entries.
	mu    sync.Mutex
	bySQL map[string][]*cachedStmt
	n     int
	// unused entries, most recently released first.
	unused    ilist.List[cachedStmt]
	maxUnused int
}

func newStmtCache(maxUnused int) *stmtCache {
	return &stmtCache{bySQL: make(map[string][]*cachedStmt), maxUnused: maxUnused}
}

// lookup finds the statement and takes a reference on it.
func (sc *stmtCache) lookup(sql []byte, k *stmtKey) *cachedStmt {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, e := range sc.bySQL[string(sql)] {
		if e.key == *k {
			sc.ref(e)
			return e
		}
	}
	return nil
}

// insert adds e with one reference, unless an equal statement got in
// first: then that one is referenced and returned.
func (sc *stmtCache) insert(e *cachedStmt) *cachedStmt {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	list := sc.bySQL[string(e.sql)]
	for _, o := range list {
		if o.key == e.key {
			sc.ref(o)
			return o
		}
	}
	e.refs = 1
	sc.bySQL[string(e.sql)] = append(list, e)
	sc.n++
	return e
}

// ref takes a reference; mu is held.
func (sc *stmtCache) ref(e *cachedStmt) {
	if e.refs == 0 {
		sc.unused.Remove(&e.links)
	}
	e.refs++
}

// release drops a reference. An unused entry joins the LRU list, whose
// oldest entries leave the cache.
func (sc *stmtCache) release(e *cachedStmt) {
	if e.kill != nil {
		return // a session's own, never in the cache
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if e.refs--; e.refs > 0 {
		return
	}
	sc.unused.PushFront(e, &e.links)
	for sc.unused.Len() > sc.maxUnused {
		sc.remove(sc.unused.PopBack())
	}
}

func (sc *stmtCache) remove(e *cachedStmt) {
	k := string(e.sql)
	list := sc.bySQL[k]
	for i, o := range list {
		if o == e {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(sc.bySQL, k)
	} else {
		sc.bySQL[k] = list
	}
	sc.n--
}

// len is the number of cached statements.
func (sc *stmtCache) len() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.n
}

// sameDefs reports whether two definition lists are equal.
func sameDefs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// CachedStatement is one statement of the statement cache, as the admin
// port lists it.
type CachedStatement struct {
	ID     uint64
	User   string
	Schema string
	SQL    string
	// Params and Columns are the counts of the latest COM_STMT_PREPARE
	// response.
	Params, Columns int
	// Sessions is how many client statements use it now; 0 for one kept
	// for the next session that prepares it.
	Sessions int
	// Shared is false for a session's own (it has temporary tables).
	Shared bool
	// Verified is when a backend last accepted it.
	Verified time.Time
}

// CachedStatements returns a snapshot of the statement cache, by id.
func (srv *Server) CachedStatements() []CachedStatement {
	sc := srv.stmtCache
	sc.mu.Lock()
	out := make([]CachedStatement, 0, sc.n)
	for _, list := range sc.bySQL {
		for _, e := range list {
			cs := CachedStatement{
				ID: e.id, User: e.key.user, Schema: e.key.schema, SQL: string(e.sql),
				Params: int(e.params), Sessions: e.refs, Shared: e.key.private == 0,
				Verified: time.Unix(0, e.verified.Load()),
			}
			if m := e.meta.Load(); m != nil {
				cs.Columns = int(m.columns)
			}
			out = append(out, cs)
		}
	}
	sc.mu.Unlock()
	slices.SortFunc(out, func(a, b CachedStatement) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
