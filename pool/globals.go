package pool

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// Globals is one reading of the server's global system variables: what a
// session started at that time takes its session values from. Gen grows
// with every reading that differs from the one before; a Globals is never
// changed once published.
//
// A connection remembers the Gen it was dialed (or last reset) under; one
// from an older Gen is reset before it serves anyone, so that a new client
// session starts from the server's current globals as a direct one would.
// A session that started under an older Gen keeps its old values: it takes
// the variables that changed since as explicit settings (see Diff), which
// are replayed like any SET SESSION.
type Globals struct {
	Gen  uint64
	vals map[string]string
	// session lists the variables with a session value; nil when the
	// server cannot say (MySQL), which makes Diff ask it per variable.
	session map[string]bool
}

// Value returns a variable's global value (name in lower case).
func (g *Globals) Value(name string) (string, bool) {
	if g == nil {
		return "", false
	}
	v, ok := g.vals[name]
	return v, ok
}

// globalsSQL reads MariaDB's globals with their scope; MySQL has no scope
// column anywhere and is read with SHOW GLOBAL VARIABLES.
const (
	globalsSQLMariaDB = "SELECT LOWER(VARIABLE_NAME), GLOBAL_VALUE, VARIABLE_SCOPE = 'SESSION' FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_SCOPE <> 'SESSION ONLY'"
	globalsSQLMySQL   = "SHOW GLOBAL VARIABLES"
)

// DefaultGlobalsInterval is how often the pool reads the server's globals
// when Config.GlobalsInterval is zero.
const DefaultGlobalsInterval = 2 * time.Second

// noFollow lists session variables a session does not take from the
// globals when they change: the character set ones come from the client's
// handshake, max_allowed_packet and net_buffer_length are read-only for a
// session, the rest are tpproxy's own or need privileges a replay should
// not assume.
func noFollow(name string) bool {
	switch name {
	case "character_set_client", "character_set_connection", "character_set_results",
		"collation_connection", "max_allowed_packet", "net_buffer_length",
		"pseudo_thread_id", "insert_id", "last_insert_id", "identity", "rand_seed1", "rand_seed2",
		"timestamp", "server_id", "sql_log_bin", "gtid_domain_id", "gtid_seq_no", "gtid_next",
		"pseudo_slave_mode", "skip_replication", "warning_count", "error_count":
		return true
	}
	return strings.HasPrefix(name, "session_track_")
}

// Globals returns the latest reading (nil before the first).
func (p *Pool) Globals() *Globals { return p.globals.Load() }

// globalsGen is the Gen of the latest reading (0 before the first).
func (p *Pool) globalsGen() uint64 {
	if g := p.globals.Load(); g != nil {
		return g.Gen
	}
	return 0
}

// RefreshGlobals reads the server's globals over the control connection
// and publishes them when they changed, reporting whether they did. The
// proxy calls it right after a SET GLOBAL of its own clients, before their
// OK leaves, and the pool every GlobalsInterval for changes made elsewhere.
func (p *Pool) RefreshGlobals(ctx context.Context) (bool, error) {
	var changed bool
	err := p.ctrl.do(ctx, func(c *Conn) error {
		var err error
		changed, err = p.refreshGlobalsOn(ctx, c)
		return err
	})
	return changed, err
}

// refreshGlobalsOn reads the globals on c; refreshes are serialised.
func (p *Pool) refreshGlobalsOn(ctx context.Context, c *Conn) (bool, error) {
	p.globalsMu.Lock()
	defer p.globalsMu.Unlock()
	mariadb := strings.Contains(c.version, "MariaDB")
	vals := make(map[string]string, 700)
	var session map[string]bool
	sql := globalsSQLMySQL
	if mariadb {
		sql = globalsSQLMariaDB
		session = make(map[string]bool, 300)
	}
	var f [][]byte
	err := c.Query(ctx, sql, func(row []byte) error {
		var err error
		if f, err = mysqlwire.RowValues(f[:0], row); err != nil || len(f) < 2 {
			return err
		}
		name := strings.ToLower(string(f[0]))
		vals[name] = string(f[1])
		if session != nil && len(f) > 2 && string(f[2]) == "1" {
			session[name] = true
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	old := p.globals.Load()
	if old != nil && maps.Equal(old.vals, vals) {
		return false, nil
	}
	g := &Globals{vals: vals, session: session, Gen: 1}
	if old != nil {
		// Only a change a new session would see makes connections
		// opened before out of date; global-only values (gtid
		// positions and the like) change all the time.
		g.Gen = old.Gen
		var names []string
		for n, v := range vals {
			if ov, ok := old.vals[n]; (!ok || ov != v) && (n == "max_allowed_packet" || n == "net_buffer_length" || !noFollow(n) && p.scopedOn(ctx, c, g, n)) {
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			g.Gen++
			slices.Sort(names)
			if len(names) > 12 {
				names = append(names[:12], "...")
			}
			p.cfg.Logger.Info("backend globals changed: new sessions start from them", "variables", strings.Join(names, ","), "generation", g.Gen)
		}
	}
	p.globals.Store(g)
	p.adoptGlobals(g)
	return old == nil || g.Gen != old.Gen, nil
}

// adoptGlobals updates what the pool derives from the globals.
func (p *Pool) adoptGlobals(g *Globals) {
	if v, ok := g.Value("max_prepared_stmt_count"); ok && p.cfg.MaxPreparedPerConn == 0 {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			p.serverPrepared.Store(max(n, 1))
		}
	}
	if d := p.defaults.Load(); d != nil {
		nd := *d
		if v, ok := g.Value("sql_mode"); ok {
			nd.SQLMode = v
		}
		if v, ok := g.Value("wait_timeout"); ok {
			nd.WaitTimeout, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := g.Value("interactive_timeout"); ok {
			nd.InteractiveTimeout, _ = strconv.ParseInt(v, 10, 64)
		}
		p.defaults.Store(&nd)
	}
}

// Diff calls keep(name, value) for every session variable whose global
// value differs between old and cur, with its value under old: a session
// that started under old and has not set the variable itself still has
// that value, and keeps it by taking it as an explicit setting.
func (p *Pool) Diff(ctx context.Context, old, cur *Globals, keep func(name, value string)) {
	if old == nil || cur == nil || old == cur {
		return
	}
	for n, ov := range old.vals {
		if v, ok := cur.vals[n]; ok && v == ov || noFollow(n) || !p.sessionScoped(ctx, cur, n) {
			continue
		}
		keep(n, ov)
	}
}

// sessionScoped reports whether a variable has a session value, from the
// reading when it says, else by asking the server once per name.
func (p *Pool) sessionScoped(ctx context.Context, g *Globals, name string) bool {
	if scoped, ok := p.knownScope(g, name); ok {
		return scoped
	}
	scoped := false
	_ = p.ctrl.do(ctx, func(c *Conn) error {
		scoped = p.scopedOn(ctx, c, g, name)
		return nil
	})
	return scoped
}

// knownScope is what the reading or an earlier question says of a
// variable's scope.
func (p *Pool) knownScope(g *Globals, name string) (scoped, ok bool) {
	if g.session != nil {
		return g.session[name], true
	}
	if v, ok := p.scopes.Load(name); ok {
		return v.(bool), true
	}
	return false, false
}

// scopedOn is sessionScoped asking on c.
func (p *Pool) scopedOn(ctx context.Context, c *Conn, g *Globals, name string) bool {
	if scoped, ok := p.knownScope(g, name); ok {
		return scoped
	}
	err := c.Query(ctx, "SELECT @@SESSION."+quoteIdent(name), func([]byte) error { return nil })
	var me *mysqlwire.Error
	scoped := err == nil
	if errors.As(err, &me) {
		err = nil // a global-only variable (ER_INCORRECT_GLOBAL_LOCAL_VAR)
	}
	if err == nil {
		p.scopes.Store(name, scoped)
	}
	return scoped
}

// globalsLoop reads the globals every interval until the pool closes.
func (p *Pool) globalsLoop(interval time.Duration) {
	defer p.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(p.bg, p.connectTimeout())
		if _, err := p.RefreshGlobals(ctx); err != nil && p.bg.Err() == nil {
			p.cfg.Logger.Debug("cannot read the backend's globals", "err", err)
		}
		cancel()
	}
}

// netLimits is what a connection keeps from the globals it was opened
// under for as long as it lives: max_allowed_packet and net_buffer_length
// survive COM_RESET_CONNECTION, so a change of either takes a new
// connection.
func netLimits(g *Globals) string {
	a, _ := g.Value("max_allowed_packet")
	b, _ := g.Value("net_buffer_length")
	return a + "/" + b
}
