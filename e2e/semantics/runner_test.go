package semantics

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/proxy"
)

// obs is one recorded observation: one command of one repetition of a step.
type obs struct {
	step    int // index into scenario.steps
	sweep   bool
	role    byte
	leak    bool
	cmd     string // as expanded for this run
	canon   string
	display string
}

func (o obs) where() string {
	if o.sweep {
		return fmt.Sprintf("end sweep %c: %s", o.role, o.cmd)
	}
	return fmt.Sprintf("step %d %c: %s", o.step+1, o.role, o.cmd)
}

// phase is one run of a scenario.
type phase struct {
	name  string // "direct" or "proxy"
	obs   []obs
	err   error // setup or teardown failed: the run says nothing
	noise *noiseReport
}

// run is the state of one phase while its steps execute.
type run struct {
	sc    *scenario
	name  string
	addr  string
	px    *proxytest.Proxy // nil for the direct run
	root  *conn
	conns map[byte]*conn
	// lastID is the id of the role's most recent connection, for !gone.
	lastID map[byte]uint32
	obs    []obs
}

// runPhase sets up the scenario's database, runs its steps (through a
// fresh proxy with noise when proxied) and tears everything down.
func runPhase(t *testing.T, sc *scenario, proxied bool) (ph phase) {
	ph.name = "direct"
	if proxied {
		ph.name = "proxy"
	}
	root, err := dialRoot(t)
	if err != nil {
		ph.err = fmt.Errorf("root: %w", err)
		return ph
	}
	defer root.quit()
	if err := setupDB(root, sc); err != nil {
		ph.err = err
		return ph
	}
	r := &run{sc: sc, name: ph.name, addr: env.Server(t).Addr, root: root, conns: map[byte]*conn{}, lastID: map[byte]uint32{}}
	var noise *noiseSet
	scope := &scopedTB{TB: t}
	defer scope.done()
	if proxied {
		r.px = startProxy(scope)
		r.addr = r.px.Addr
		noise = startNoise(r.px, sc)
		if err := noise.waitReady(); err != nil {
			noise.stop()
			ph.noise = noise.report()
			ph.err = err
			return ph
		}
	}
	r.steps()
	r.leave()
	r.sweep()
	if noise != nil {
		noise.stop()
		ph.noise = noise.report()
		scope.done() // the proxy and its backend connections
	}
	ph.obs = r.obs
	if err := waitNoSemThreads(root); err != nil {
		ph.err = fmt.Errorf("after the run: %w", err)
	}
	if err := teardownDB(root, sc); err != nil && ph.err == nil {
		ph.err = err
	}
	return ph
}

func setupDB(root *conn, sc *scenario) error {
	db := sc.db()
	qs := []string{"DROP DATABASE IF EXISTS " + db, "DROP DATABASE IF EXISTS " + db + "_b",
		"CREATE DATABASE " + db, "USE " + db}
	qs = append(qs, baseSetup...)
	qs = append(qs, sc.setup...)
	for _, q := range qs {
		q = strings.ReplaceAll(q, "{{db}}", db)
		if r := root.query(q); r.failed() {
			return fmt.Errorf("setup %s: %s", q, r.display())
		}
	}
	return nil
}

func teardownDB(root *conn, sc *scenario) error {
	if r := root.query("XA RECOVER"); !r.failed() {
		for _, p := range r.parts {
			for _, row := range p.rows {
				if len(row) == 4 && row[3] != nil && strings.HasPrefix(*row[3], "sem") {
					root.query("XA ROLLBACK '" + *row[3] + "'")
				}
			}
		}
	}
	for _, q := range sc.teardown {
		root.query(strings.ReplaceAll(q, "{{db}}", sc.db()))
	}
	db := sc.db()
	for _, q := range []string{"DROP DATABASE IF EXISTS " + db, "DROP DATABASE IF EXISTS " + db + "_b"} {
		if r := root.query(q); r.failed() {
			return fmt.Errorf("teardown %s: %s", q, r.display())
		}
	}
	return nil
}

// steps runs the scenario's script.
func (r *run) steps() {
	if _, err := r.connect('S'); err != nil {
		r.record(0, step{role: 'S', line: "connect"}, "connect", result{parts: []part{{kind: kindLost, msg: err.Error()}}})
		return
	}
	for i, line := range r.sc.steps {
		st, err := parseStep(line)
		if err != nil {
			panic(err) // TestScenarioDefinitions catches these first
		}
		for range st.reps {
			for _, cmd := range st.cmds {
				c := r.expand(cmd, st.role)
				r.record(i, st, c, r.exec(st.role, c))
			}
		}
	}
}

func (r *run) record(i int, st step, cmd string, res result) {
	// Column definitions are compared for the subject's side only: a
	// collation another session left on a backend shows in every
	// client's metadata, and the noise reports that once for all.
	n := norm{meta: r.sc.meta && !st.leak}
	if i < len(r.sc.steps) && idSensitive.MatchString(r.sc.steps[i]) {
		n.ids = map[string]string{}
		for role, c := range r.conns {
			if c == nil || c.id == 0 {
				continue
			}
			ph := "{{" + strings.ToLower(string(role)) + "id}}"
			if role == st.role {
				ph = "{{id}}"
			}
			n.ids[strconv.FormatUint(uint64(c.id), 10)] = ph
		}
	}
	cmdShown := cmd
	for v, ph := range n.ids {
		cmdShown = normIDs(cmdShown, norm{ids: map[string]string{v: ph}})
	}
	r.obs = append(r.obs, obs{step: i, sweep: i >= len(r.sc.steps), role: st.role, leak: st.leak, cmd: cmdShown, canon: res.canon(n), display: res.display()})
}

// leave disconnects the scenario's clients and waits until they are gone.
// The wait is short: a backend the proxy has not given back by then shows
// in the sweep (which then waits for it, or gets no backend in time).
func (r *run) leave() {
	for _, c := range r.conns {
		c.quit()
	}
	deadline := time.Now().Add(time.Second)
	for role := range r.conns {
		for time.Now().Before(deadline) && r.present(r.lastID[role]) {
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// present reports whether a connection id is still known: to the proxy
// through it, to the server directly.
func (r *run) present(id uint32) bool {
	if r.px != nil {
		for _, in := range r.px.Server.Sessions() {
			if in.ID == id {
				return true
			}
		}
		return false
	}
	res := r.root.query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = " + strconv.FormatUint(uint64(id), 10))
	return res.failed() || res.cell(0, 0) != "0"
}

// The end sweep: once the scenario's clients have left, three fresh
// sessions each open a transaction, so that between them they hold every
// backend connection of the proxy's pool at once, and each checks that
// its connection carries nothing of anybody: no role, user variable,
// named lock, temporary table, prepared statement, pending transaction
// characteristic, profile or trace, no changed setting. Unlike noise and
// observers, which find state left on one backend by luck, the sweep
// looks at all of them. Directly it is three fresh connections.
var sweepCmds = []string{
	"BEGIN",
	"SET STATEMENT innodb_lock_wait_timeout = 1, lock_wait_timeout = 1 FOR INSERT INTO sw VALUES (1)",
	"SELECT CURRENT_ROLE() AS role, (SELECT GROUP_CONCAT(VARIABLE_NAME ORDER BY VARIABLE_NAME) FROM information_schema.USER_VARIABLES) AS uv, " +
		"RELEASE_LOCK('sem_lock') AS l1, RELEASE_LOCK('sem_lock2') AS l2, RELEASE_LOCK('sem_lock_f') AS l3, " +
		"(SELECT COUNT(*) FROM information_schema.PROFILING) AS prof, (SELECT COUNT(*) FROM information_schema.OPTIMIZER_TRACE) AS trace, " +
		"@@profiling, @@optimizer_trace, @@sql_mode = @@global.sql_mode AS mode, @@time_zone, @@character_set_client, @@collation_connection, " +
		"@@sort_buffer_size, @@sql_select_limit, @@max_statement_time, @@group_concat_max_len, @@div_precision_increment, @@sql_auto_is_null, " +
		"@@completion_type, @@wait_timeout, @@lock_wait_timeout, @@innodb_lock_wait_timeout, @@tx_read_only, @@tx_isolation, @@autocommit, " +
		"@@timestamp > 1600000000 AS ts, @@foreign_key_checks, @@unique_checks, @@sql_safe_updates, @@default_storage_engine, @@lc_time_names, " +
		"@@max_join_size, @@sql_notes, @@max_error_count, @@big_tables, @@sql_buffer_result, @@max_sort_length, @@tmp_table_size, " +
		"@@join_buffer_size, @@sql_big_selects, @@sql_if_exists, @@check_constraint_checks, @@innodb_strict_mode, @@long_query_time, " +
		"@@sql_log_off, @@character_set_results, @@character_set_connection, @@optimizer_switch = @@global.optimizer_switch AS opt, " +
		"@@profiling_history_size, @@insert_id, @@sql_warnings, @@old_mode, @@in_transaction, DATABASE()",
	"SELECT COUNT(*) FROM sem_tmp",
	"SELECT LASTVAL(sem_seq)",
	"EXECUTE sem_stmt",
	"ROLLBACK",
}

var sweepRoles = []byte{'A', 'B', 'C'}

func (r *run) sweep() {
	type out struct {
		cmds []string
		res  []result
	}
	outs := make([]out, len(sweepRoles))
	begun := make(chan struct{}, len(sweepRoles))
	all := make(chan struct{})
	done := make(chan struct{}, len(sweepRoles))
	for i := range sweepRoles {
		go func() {
			defer func() { done <- struct{}{} }()
			c, err := dial(dialOpts{addr: r.addr, user: semUser, pass: semPass, db: r.sc.db()})
			if err != nil {
				outs[i] = out{cmds: []string{"connect"}, res: []result{{parts: []part{{kind: kindLost, msg: err.Error()}}}}}
				begun <- struct{}{}
				return
			}
			defer c.quit()
			for j, q := range sweepCmds {
				outs[i].cmds = append(outs[i].cmds, q)
				outs[i].res = append(outs[i].res, c.query(q))
				if j == 0 {
					// Hold this backend until all three hold one.
					begun <- struct{}{}
					<-all
				}
			}
		}()
	}
	for range sweepRoles {
		<-begun
	}
	close(all)
	for range sweepRoles {
		<-done
	}
	for i, role := range sweepRoles {
		for j, q := range outs[i].cmds {
			r.record(len(r.sc.steps), step{role: role, leak: true}, q, outs[i].res[j])
		}
	}
}

// expand fills in placeholders for a command run by role.
func (r *run) expand(cmd string, role byte) string {
	if !strings.Contains(cmd, "{{") {
		return cmd
	}
	id := func(b byte) string {
		if c := r.conns[b]; c != nil {
			return strconv.FormatUint(uint64(c.id), 10)
		}
		return strconv.FormatUint(uint64(r.lastID[b]), 10)
	}
	return strings.NewReplacer("{{id}}", id(role), "{{sid}}", id('S'), "{{oid}}", id('O'),
		"{{wid}}", id('W'), "{{db}}", r.sc.db()).Replace(cmd)
}

// connect opens a new connection for role, replacing an old one.
func (r *run) connect(role byte) (*conn, error) {
	if old := r.conns[role]; old != nil && !old.dead {
		old.quit()
	}
	c, err := dial(dialOpts{addr: r.addr, user: semUser, pass: semPass, db: r.sc.db(), multi: role == 'S' && r.sc.multi})
	if err != nil {
		delete(r.conns, role)
		return nil, err
	}
	r.conns[role] = c
	r.lastID[role] = c.id
	return c, nil
}

// client returns role's connection, connecting lazily.
func (r *run) client(role byte) (*conn, result, bool) {
	if role == 'R' {
		return r.root, result{}, true
	}
	if c := r.conns[role]; c != nil {
		return c, result{}, true
	}
	if _, seen := r.lastID[role]; seen {
		return nil, noConn(), false // it disconnected; only !connect reconnects
	}
	c, err := r.connect(role)
	if err != nil {
		return nil, result{parts: []part{{kind: kindLost, msg: "connect: " + err.Error()}}}, false
	}
	return c, result{}, true
}

// exec runs one expanded command for role.
func (r *run) exec(role byte, cmd string) result {
	if !strings.HasPrefix(cmd, "!") {
		c, res, ok := r.client(role)
		if !ok {
			return res
		}
		return c.query(cmd)
	}
	f := strings.Fields(cmd)
	switch f[0] {
	case "!sleep":
		d, _ := time.ParseDuration(f[1])
		time.Sleep(d)
		return result{parts: []part{{kind: kindWaited}}}
	case "!connect":
		if _, err := r.connect(role); err != nil {
			return result{parts: []part{{kind: kindLost, msg: "connect: " + err.Error()}}}
		}
		return result{parts: []part{{kind: kindConnected}}}
	case "!gone":
		return r.waitGone(role)
	}
	c, res, ok := r.client(role)
	if !ok {
		return res
	}
	switch f[0] {
	case "!reset":
		return c.reset()
	case "!changeuser":
		db := r.sc.db()
		if len(f) == 2 {
			db = f[1]
		}
		return c.changeUser(db)
	case "!quit":
		return c.quit()
	case "!abort":
		return c.abort()
	case "!prepare":
		sql := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(cmd, "!prepare"), " "+f[1]))
		return c.prepare(f[1], strings.TrimSpace(sql))
	case "!exec":
		args, _ := parseArgs(strings.Join(f[2:], " "))
		return c.execute(f[1], args)
	case "!close":
		return c.closeStmt(f[1])
	}
	panic("unreachable: " + cmd)
}

// waitGone waits until the role's last connection is gone: from the
// server's process list directly, from the proxy's sessions through it.
func (r *run) waitGone(role byte) result {
	id, ok := r.lastID[role]
	if !ok {
		return result{parts: []part{{kind: kindNoConn}}}
	}
	if c := r.conns[role]; c != nil && c.dead {
		delete(r.conns, role)
	}
	deadline := time.Now().Add(goneTimeout)
	for {
		if !r.present(id) {
			return result{parts: []part{{kind: kindWaited}}}
		}
		if time.Now().After(deadline) {
			return result{parts: []part{{kind: kindTimeout, msg: "the connection did not go away"}}}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// startProxy starts a proxy for semUser with a pool of three, stopped
// when scope ends. Sessions may pin all three (for good too): the suite
// compares results with direct sessions, which no pinned-connection
// budget refuses; the budget has tests of its own (e2e/clients).
func startProxy(scope testing.TB) *proxytest.Proxy {
	return env.StartProxy(scope, func(o *proxytest.Options) {
		o.Pool.Size = 3
		o.Proxy.MaxPinned, o.Proxy.MaxStickyPinned = 3, 3
		o.Pool.User, o.Pool.Password = semUser, semPass
		o.Proxy.Users = []proxy.User{{Name: semUser, Plain: semPass}}
		if os.Getenv("SEMANTICS_PROXY_LOG") == "" {
			o.Log = io.Discard
		}
	})
}

// scopedTB gives StartProxy a cleanup scope shorter than the test: the
// proxy of a scenario's run stops when that run ends.
type scopedTB struct {
	testing.TB
	cleanups []func()
	ran      bool
}

func (s *scopedTB) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }

func (s *scopedTB) done() {
	if s.ran {
		return
	}
	s.ran = true
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}
