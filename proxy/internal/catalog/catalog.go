// Package catalog knows which of the server's schema objects can leave
// session state behind when a statement uses them, so that the proxy can
// keep a session on its backend connection after such a statement.
//
// The server reports most session state changes, but not those made inside
// stored functions (a user variable assigned, GET_LOCK, a temporary table,
// NEXTVAL), nor NEXTVAL run by a column DEFAULT or a trigger, nor a session
// variable a routine or trigger assigns as SET @@name. A statement
// that calls such a function, reads a view built on one, or writes a table
// with such a trigger or default leaves state on its connection that no
// status flag reveals. The catalog reads the definitions of routines,
// triggers, views and sequence defaults per schema from
// information_schema, scans their bodies with the same lexer as client
// statements, and closes over the objects they use; a statement is then
// checked against the names it mentions. An object whose body the backend
// account may not read counts as stateful.
//
// What was read is trusted for TTL; Invalidate drops it at once (after DDL
// the proxy saw). Changes made on the server directly are seen after at
// most TTL.
package catalog

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// Querier runs a query and calls onRow with each text-protocol row
// (length-encoded values). A pool connection is one.
type Querier interface {
	Query(ctx context.Context, sql string, onRow func(row []byte) error) error
}

// Verdict is what a statement may do to its session through the schema
// objects it uses.
type Verdict struct {
	// Flags are the scanner flags of the bodies it runs (user variables,
	// GET_LOCK, temporary tables, sequences, SET TRANSACTION, ...).
	Flags sqlscan.Flags
	// Stateful reports that some object it uses may leave session state:
	// Flags says what, or nothing when a body could not be read.
	Stateful bool
	// Object names the first such object, for logs.
	Object string
}

// stateFlags are the flags that make an object's body leave session state.
const stateFlags = sqlscan.FlagUserVar | sqlscan.FlagTempTable | sqlscan.FlagGetLock |
	sqlscan.FlagSQLPrepare | sqlscan.FlagSequence | sqlscan.FlagHandler | sqlscan.FlagInsertIDVar |
	sqlscan.FlagSessionTrackVar | sqlscan.FlagSetTransaction | sqlscan.FlagRole |
	sqlscan.FlagCalcFoundRows | sqlscan.FlagLockTables | sqlscan.FlagXA | sqlscan.FlagSessionVarSet

// Catalog caches per-schema knowledge. It is safe for concurrent use; a
// statement checked against schemas read recently takes no lock.
type Catalog struct {
	ttl time.Duration
	now func() time.Time

	// gen counts Invalidate calls; what was read in an older one is stale.
	gen     atomic.Uint64
	schemas sync.Map // schema name -> *schema
	// names is the set of schema names (SCHEMATA), to tell db.x from
	// alias.x.
	names atomic.Pointer[snapshot[map[string]bool]]
	// namesMu serialises reading names.
	namesMu sync.Mutex
}

// snapshot is something read from the server, when, and in which
// generation.
type snapshot[T any] struct {
	v   T
	at  time.Time
	gen uint64
}

// schema is what one schema holds that matters.
type schema struct {
	// mu serialises loading.
	mu   sync.Mutex
	snap atomic.Pointer[snapshot[schemaView]]
}

// schemaView is what was read of one schema.
type schemaView struct {
	objs map[string]object
	// autoInc maps a base table's name, as the server stores it, to its
	// AUTO_INCREMENT column.
	autoInc map[string]string
}

// object is a stateful schema object.
type object struct {
	flags sqlscan.Flags
	// writeOnly: only a statement that writes the object runs what leaves
	// the state (a table's trigger or DEFAULT NEXTVAL, a view over such a
	// table).
	writeOnly bool
}

// New returns a catalog that trusts what it read for ttl (negative or
// zero: never, every check reads again).
func New(ttl time.Duration) *Catalog {
	return &Catalog{ttl: ttl, now: time.Now}
}

// Invalidate forgets everything read so far, after a statement that may
// have changed schema objects.
func (c *Catalog) Invalidate() { c.gen.Add(1) }

// writes reports statement kinds that write tables (and so fire triggers
// and column defaults).
func writes(info *sqlscan.Info) bool {
	switch info.Kind {
	case sqlscan.KindInsert, sqlscan.KindUpdate, sqlscan.KindDelete, sqlscan.KindReplace,
		sqlscan.KindLoad, sqlscan.KindCall, sqlscan.KindOther, sqlscan.KindCreate, sqlscan.KindAlter:
		return true
	}
	return info.Multi
}

// Check returns what the statement q, run with default schema def, may do
// through the objects it names. q is a query's text lexed per m, and info
// its scan. Loading definitions runs queries on qr.
func (c *Catalog) Check(ctx context.Context, qr Querier, def string, q []byte, m sqlscan.Mode, info *sqlscan.Info) (Verdict, error) {
	return c.CheckIn(ctx, qr, c.Schema(def), q, m, info)
}

// Schema is a handle on what the catalog knows of one schema, which a
// caller that checks many statements in the same default schema keeps to
// save the lookup. The zero handle (nil) is no default schema.
type Schema struct {
	name string
	sc   *schema
}

// Name is the schema's name.
func (h *Schema) Name() string {
	if h == nil {
		return ""
	}
	return h.name
}

// Schema returns the handle of schema name ("" gives nil).
func (c *Catalog) Schema(name string) *Schema {
	if name == "" {
		return nil
	}
	return &Schema{name: name, sc: c.schemaOf(name)}
}

// CheckIn is Check with the default schema given by its handle.
func (c *Catalog) CheckIn(ctx context.Context, qr Querier, def *Schema, q []byte, m sqlscan.Mode, info *sqlscan.Info) (Verdict, error) {
	var v Verdict
	var defObjs map[string]object
	if def != nil {
		view, err := c.load(ctx, qr, def.name, def.sc)
		if err != nil {
			return v, err
		}
		defObjs = view.objs
	}
	var quals map[string]map[string]object
	if info.Qualified {
		names, err := c.schemaNames(ctx, qr)
		if err != nil {
			return v, err
		}
		var loadErr error
		sqlscan.Mentions(q, m, func(qual, _ []byte) bool {
			if qual == nil {
				return false
			}
			n := string(qual)
			if _, done := quals[n]; done || !names[n] {
				return false
			}
			view, err := c.view(ctx, qr, n)
			if err != nil {
				loadErr = err
				return true
			}
			objs := view.objs
			if quals == nil {
				quals = make(map[string]map[string]object)
			}
			quals[n] = objs
			return false
		})
		if loadErr != nil {
			return v, loadErr
		}
	}
	if len(defObjs) == 0 && !anyObjects(quals) {
		return v, nil
	}
	w := writes(info)
	sqlscan.Mentions(q, m, func(qual, name []byte) bool {
		objs := defObjs
		if qual != nil {
			if o, ok := quals[string(qual)]; ok {
				objs = o
			}
		}
		if len(objs) == 0 {
			return false
		}
		n := strings.ToLower(string(name))
		o, ok := objs[n]
		if !ok || (o.writeOnly && !w) {
			return false
		}
		if !v.Stateful {
			v.Object = n
		}
		v.Stateful = true
		v.Flags |= o.flags
		return false
	})
	return v, nil
}

func anyObjects(m map[string]map[string]object) bool {
	for _, o := range m {
		if len(o) > 0 {
			return true
		}
	}
	return false
}

// fresh reports whether something read at t in generation gen still holds.
func fresh[T any](c *Catalog, sn *snapshot[T]) bool {
	return sn != nil && sn.gen == c.gen.Load() && c.ttl > 0 && c.now().Sub(sn.at) < c.ttl
}

// schemaOf returns the cache entry of schema name.
func (c *Catalog) schemaOf(name string) *schema {
	v, ok := c.schemas.Load(name)
	if !ok {
		v, _ = c.schemas.LoadOrStore(name, &schema{})
	}
	return v.(*schema)
}

// view returns what is known of schema name, reading it again when what
// was read is stale.
func (c *Catalog) view(ctx context.Context, qr Querier, name string) (schemaView, error) {
	if name == "" {
		return schemaView{}, nil
	}
	return c.load(ctx, qr, name, c.schemaOf(name))
}

// AutoIncrement returns the AUTO_INCREMENT column of table in schema
// (qualifier; empty: def's), "" when it has none, is not a base table or
// is not known. table is looked up as written, then in lower case (what
// lower_case_table_names=1 stores); never the other way, so that T1 and
// t1 on a case-sensitive server stay apart.
func (c *Catalog) AutoIncrement(ctx context.Context, qr Querier, def *Schema, schema, table string) (string, error) {
	var view schemaView
	var err error
	switch {
	case schema != "":
		view, err = c.view(ctx, qr, schema)
	case def != nil:
		view, err = c.load(ctx, qr, def.name, def.sc)
	default:
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if col, ok := view.autoInc[table]; ok {
		return col, nil
	}
	return view.autoInc[strings.ToLower(table)], nil
}

// load returns what sc holds, reading it again when stale.
func (c *Catalog) load(ctx context.Context, qr Querier, name string, sc *schema) (schemaView, error) {
	if sn := sc.snap.Load(); fresh(c, sn) {
		return sn.v, nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sn := sc.snap.Load(); fresh(c, sn) {
		return sn.v, nil // read while we waited
	}
	gen := c.gen.Load()
	view, err := c.read(ctx, qr, name, 0)
	if err != nil {
		return schemaView{}, err
	}
	sc.snap.Store(&snapshot[schemaView]{v: view, at: c.now(), gen: gen})
	return view, nil
}

// schemaNames returns the set of schema names.
func (c *Catalog) schemaNames(ctx context.Context, qr Querier) (map[string]bool, error) {
	if sn := c.names.Load(); fresh(c, sn) {
		return sn.v, nil
	}
	c.namesMu.Lock()
	defer c.namesMu.Unlock()
	if sn := c.names.Load(); fresh(c, sn) {
		return sn.v, nil
	}
	gen := c.gen.Load()
	names := make(map[string]bool)
	err := qr.Query(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA", func(row []byte) error {
		f, err := mysqlwire.RowValues(nil, row)
		if err != nil || len(f) != 1 {
			return errors.Join(err, mysqlwire.ErrMalformed)
		}
		names[string(f[0])] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.names.Store(&snapshot[map[string]bool]{v: names, at: c.now(), gen: gen})
	return names, nil
}

// definition is one body read from information_schema.
type definition struct {
	kind    byte   // 'R' routine, 'T' trigger (name is its table), 'V' view, 'D' a column default (name is its table)
	name    string // lower case
	body    []byte // nil: not readable
	sqlMode string
	params  []string // a routine's parameter names
}

// loadSQL reads, in one round trip, every definition of a schema that runs
// code: routine bodies, triggers (by table), views, and column defaults
// that use a sequence; and base tables' AUTO_INCREMENT columns ('A': the
// views among them, which the 'V' rows name, are dropped in read). A JOIN
// of COLUMNS with TABLES to keep base tables made MariaDB 10.11 fill
// information_schema tables again row by row: 86 temporary tables (19 on
// disk) and 6.6 ms of server time per load on sysbench's schema, against 6
// and 2.4 ms without it; at one load per catalog_ttl (1 s) under 500
// read/write transactions a second that was 0.19 temporary tables per
// transaction.
const loadSQL = "SELECT 'R', ROUTINE_NAME, ROUTINE_DEFINITION, SQL_MODE FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = {S}" +
	" UNION ALL SELECT 'T', EVENT_OBJECT_TABLE, ACTION_STATEMENT, SQL_MODE FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = {S}" +
	" UNION ALL SELECT 'V', TABLE_NAME, VIEW_DEFINITION, '' FROM information_schema.VIEWS WHERE TABLE_SCHEMA = {S}" +
	" UNION ALL SELECT 'D', TABLE_NAME, COLUMN_DEFAULT, '' FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {S}" +
	" AND (COLUMN_DEFAULT LIKE '%nextval%' OR COLUMN_DEFAULT LIKE '%setval%' OR COLUMN_DEFAULT LIKE '%lastval%' OR COLUMN_DEFAULT LIKE '%next value for%')" +
	" UNION ALL SELECT 'A', TABLE_NAME, COLUMN_NAME, '' FROM information_schema.COLUMNS" +
	" WHERE TABLE_SCHEMA = {S} AND EXTRA LIKE '%auto_increment%'" +
	" UNION ALL SELECT 'P', SPECIFIC_NAME, PARAMETER_NAME, '' FROM information_schema.PARAMETERS" +
	" WHERE SPECIFIC_SCHEMA = {S} AND PARAMETER_NAME IS NOT NULL"

// maxDepth bounds how far definitions in one schema are followed into
// others; deeper references count as stateful.
const maxDepth = 2

// read reads and analyses one schema's definitions.
func (c *Catalog) read(ctx context.Context, qr Querier, name string, depth int) (schemaView, error) {
	sql := strings.ReplaceAll(loadSQL, "{S}", quoteString(name))
	var defs []definition
	var autoInc map[string]string
	var params map[string][]string
	var views []string
	err := qr.Query(ctx, sql, func(row []byte) error {
		f, err := mysqlwire.RowValues(nil, row)
		if err != nil || len(f) != 4 || len(f[0]) != 1 {
			return errors.Join(err, mysqlwire.ErrMalformed)
		}
		switch f[0][0] {
		case 'A':
			if autoInc == nil {
				autoInc = make(map[string]string)
			}
			autoInc[string(f[1])] = string(f[2])
			return nil
		case 'P':
			// A function and a procedure of the same name share the
			// list: one's parameter may hide a system variable SET in the
			// other's body (an unlikely pair of names).
			if params == nil {
				params = make(map[string][]string)
			}
			n := strings.ToLower(string(f[1]))
			params[n] = append(params[n], string(f[2]))
			return nil
		}
		if f[0][0] == 'V' {
			views = append(views, string(f[1]))
		}
		d := definition{kind: f[0][0], name: strings.ToLower(string(f[1])), sqlMode: string(f[3])}
		if f[2] != nil {
			d.body = append([]byte{}, f[2]...)
		}
		defs = append(defs, d)
		return nil
	})
	if err != nil {
		return schemaView{}, err
	}
	for i := range defs {
		if defs[i].kind == 'R' {
			defs[i].params = params[defs[i].name]
		}
	}
	for _, v := range views {
		delete(autoInc, v) // a view shows its table's column: no table of its own
	}
	objs, err := c.analyse(ctx, qr, name, defs, depth)
	if err != nil {
		return schemaView{}, err
	}
	return schemaView{objs: objs, autoInc: autoInc}, nil
}

// analyse computes which objects of a schema are stateful: those whose own
// body is, and (to a fixpoint) those whose body names a stateful object.
func (c *Catalog) analyse(ctx context.Context, qr Querier, name string, defs []definition, depth int) (map[string]object, error) {
	type node struct {
		def      *definition
		flags    sqlscan.Flags
		unknown  bool
		local    []string // unqualified names (and names qualified with this schema)
		foreign  [][2]string
		stateful bool
	}
	var names map[string]bool // schema names, read when a body qualifies a name
	nodes := make([]node, len(defs))
	for i := range defs {
		d := &defs[i]
		n := &nodes[i]
		n.def = d
		if d.body == nil {
			n.unknown = true
			continue
		}
		m := modeOf(d.sqlMode)
		n.flags = bodyFlags(d.body, m)
		if (d.kind == 'R' || d.kind == 'T') && sqlscan.BodySetsSession(d.body, m, d.params) {
			n.flags |= sqlscan.FlagSessionVarSet
		}
		var err error
		sqlscan.Mentions(d.body, m, func(qual, nm []byte) bool {
			lower := strings.ToLower(string(nm))
			if qual == nil || string(qual) == name {
				n.local = append(n.local, lower)
				return false
			}
			if names == nil {
				if names, err = c.schemaNames(ctx, qr); err != nil {
					return true
				}
			}
			// NEW.col, alias.col and table.col qualify with no schema.
			if names[string(qual)] {
				n.foreign = append(n.foreign, [2]string{string(qual), lower})
			}
			return false
		})
		if err != nil {
			return nil, err
		}
	}
	// Objects by name: a table can have several triggers and defaults.
	result := make(map[string]object)
	mark := func(n *node, flags sqlscan.Flags) {
		o, had := result[n.def.name]
		writeOnly := n.def.kind == 'T' || n.def.kind == 'D'
		if had {
			o.writeOnly = o.writeOnly && writeOnly
		} else {
			o.writeOnly = writeOnly
		}
		o.flags |= flags
		result[n.def.name] = o
	}
	for i := range nodes {
		n := &nodes[i]
		if n.unknown || n.flags != 0 {
			n.stateful = true
			mark(n, n.flags)
		}
	}
	// References into other schemas: stateful there means stateful here.
	var foreignCache map[string]map[string]object
	for i := range nodes {
		n := &nodes[i]
		if n.stateful || len(n.foreign) == 0 {
			continue
		}
		for _, ref := range n.foreign {
			if depth >= maxDepth {
				n.stateful = true
				mark(n, 0)
				break
			}
			objs, ok := foreignCache[ref[0]]
			if !ok {
				view, err := c.read(ctx, qr, ref[0], depth+1)
				if err != nil {
					return nil, err
				}
				objs = view.objs
				if foreignCache == nil {
					foreignCache = make(map[string]map[string]object)
				}
				foreignCache[ref[0]] = objs
			}
			if o, ok := objs[ref[1]]; ok {
				n.stateful = true
				mark(n, o.flags)
				break
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for i := range nodes {
			n := &nodes[i]
			if n.stateful {
				continue
			}
			for _, ref := range n.local {
				o, ok := result[ref]
				if !ok {
					continue
				}
				// A view that only reads a table whose triggers leave
				// state is itself stateful for writes only.
				if n.def.kind == 'V' && o.writeOnly {
					flags := o.flags
					ov, had := result[n.def.name]
					if !had {
						result[n.def.name] = object{flags: flags, writeOnly: true}
						changed = true
					} else if ov.flags|flags != ov.flags {
						ov.flags |= flags
						result[n.def.name] = ov
						changed = true
					}
					continue
				}
				n.stateful = true
				mark(n, o.flags)
				changed = true
				break
			}
		}
	}
	return result, nil
}

// bodyFlags is what a routine, trigger, view or default body may leave
// behind. The scanner finds calls, variables and sequences anywhere, but
// statements by their first word, and inside a compound body statements
// also start after BEGIN, THEN, ELSE, DO, LOOP, a label...; so the words
// that start stateful statements count wherever they appear.
func bodyFlags(body []byte, m sqlscan.Mode) sqlscan.Flags {
	f := sqlscan.ScanMode(body, m).Flags & stateFlags
	var prev string
	sqlscan.Mentions(body, m, func(qual, name []byte) bool {
		w := strings.ToLower(string(name))
		if qual == nil {
			switch w {
			case "temporary":
				f |= sqlscan.FlagTempTable
			case "prepare", "execute", "deallocate":
				f |= sqlscan.FlagSQLPrepare
			case "xa":
				f |= sqlscan.FlagXA
			case "transaction":
				if prev == "set" {
					f |= sqlscan.FlagSetTransaction
				}
			case "role":
				if prev == "set" {
					f |= sqlscan.FlagRole
				}
			case "insert_id":
				if prev == "set" {
					f |= sqlscan.FlagInsertIDVar
				}
			}
		}
		prev = w
		return false
	})
	// SET @@tx_isolation = ... (no scope) applies to the next transaction.
	lower := bytes.ToLower(body)
	if bytes.Contains(lower, []byte("@@tx_")) || bytes.Contains(lower, []byte("@@transaction_")) {
		f |= sqlscan.FlagSetTransaction
	}
	return f
}

// modeOf is the lexing mode of a body stored with sql_mode mode.
func modeOf(mode string) sqlscan.Mode {
	var m sqlscan.Mode
	for _, w := range strings.Split(mode, ",") {
		switch strings.ToUpper(strings.TrimSpace(w)) {
		case "NO_BACKSLASH_ESCAPES":
			m.NoBackslashEscapes = true
		case "ANSI_QUOTES", "ANSI":
			m.AnsiQuotes = true
		}
	}
	return m
}

// quoteString renders s as a string literal that reads the same whatever
// sql_mode the connection has: quotes doubled, and a name with a backslash
// (whose meaning depends on NO_BACKSLASH_ESCAPES) as a hexadecimal
// literal. A plain literal matters: information_schema looks a schema up
// directly only when compared with one, and scans every schema otherwise.
func quoteString(s string) string {
	if !strings.ContainsRune(s, '\\') {
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	const hexdigits = "0123456789abcdef"
	b := make([]byte, 0, 3+2*len(s))
	b = append(b, "X'"...)
	for i := 0; i < len(s); i++ {
		b = append(b, hexdigits[s[i]>>4], hexdigits[s[i]&15])
	}
	b = append(b, '\'')
	return string(b)
}
