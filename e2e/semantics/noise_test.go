package semantics

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// Noise: sessions through the proxy that share its three backend
// connections with the scenario's clients for its whole proxy run. Each
// has replayable settings of its own and checks, round after round, that
// everything it can observe is its own. What it sees otherwise is a LEAK
// of the scenario running.
const (
	noiseSessions = 40
	// noisePause is the most a noise session rests between rounds: enough
	// load that a subject's consecutive statements usually land on
	// different backend connections, without starving the machine.
	noisePause = 4 * time.Millisecond
	// noiseMarker tags noise statements: a scenario client that sees it
	// (in SHOW PROFILES, the optimizer trace, a process list) saw another
	// session's statement.
	noiseMarker = "semnoise"
)

func noiseDB(k int) string { return fmt.Sprintf("semn_%02d", k) }

// semVars are the user variables scenarios may set: noise checks that it
// never has any of them.
var semVars = []string{"@sem_v", "@sem_w", "@sem_x", "@sem_y", "@sem_c", "@sem_n", "@sem_out", "@sem_r"}

// semLocks are the named locks scenarios may take.
var semLocks = []string{"sem_lock", "sem_lock2", "sem_lock_f"}

// noiseProbe reads the replayable settings and other session state; its
// answer must always be the one a direct connection with the same
// settings gives.
const noiseProbe = "SELECT @@sql_mode, @@time_zone, @@character_set_client, @@character_set_results, " +
	"@@character_set_connection, @@collation_connection, DATABASE(), @@autocommit, @@tx_isolation, @@tx_read_only, " +
	"@@lock_wait_timeout, @@innodb_lock_wait_timeout, @@sort_buffer_size, @@max_statement_time, @@sql_select_limit, " +
	"@@max_join_size, @@group_concat_max_len, @@div_precision_increment, @@default_storage_engine, " +
	"@@foreign_key_checks, @@unique_checks, @@sql_safe_updates, @@big_tables, @@sql_auto_is_null, " +
	"@@completion_type, @@wait_timeout, @@profiling, @@optimizer_trace, @@in_transaction, @@sql_notes, " +
	"@@lc_time_names, @@max_error_count, @@optimizer_switch = @@global.optimizer_switch, @@sql_if_exists, " +
	"@@sql_buffer_result, @@max_sort_length, CURRENT_ROLE(), @@timestamp > 1600000000, NOW() > '2020-01-01', " +
	"'" + noiseMarker + "' AS m"

// noiseConfig is one noise session's settings and what its probe answers.
type noiseConfig struct {
	k         int
	db        string
	sets      []string
	wantProbe []string // the probe's cells
	wantMeta  string   // the collation ids of the probe's columns
}

// noiseIDBase is where the noise tables' AUTO_INCREMENT starts: far from
// any id a scenario table reaches, so that an insert id tells whose it is.
const noiseIDBase = 5000000

// isNoiseID reports whether an insert id belongs to a noise table (or is
// 0, no insert at all): seeing one is a noise session's own problem or a
// crossing between noise sessions, not the scenario's.
func isNoiseID(v string) bool {
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && (n == 0 || n >= noiseIDBase && n < 2*noiseIDBase)
}

var (
	noiseModes = []string{"ANSI_QUOTES", "STRICT_TRANS_TABLES,NO_ZERO_DATE", "", "NO_BACKSLASH_ESCAPES,PIPES_AS_CONCAT",
		"TRADITIONAL", "ONLY_FULL_GROUP_BY,NO_ENGINE_SUBSTITUTION", "REAL_AS_FLOAT,IGNORE_SPACE,ALLOW_INVALID_DATES"}
	noiseNames = []string{"utf8mb4", "latin1", "utf8mb4 COLLATE utf8mb4_unicode_ci", "latin1 COLLATE latin1_general_ci",
		"utf8mb4 COLLATE utf8mb4_bin", "utf8mb3"}
)

func makeNoiseConfig(k int) noiseConfig {
	c := noiseConfig{k: k, db: noiseDB(k)}
	// One SET for all variables (the way many connectors initialise a
	// session), and SET NAMES on its own.
	vars := []string{
		fmt.Sprintf("sql_mode = '%s'", noiseModes[k%len(noiseModes)]),
		fmt.Sprintf("time_zone = '+%02d:%02d'", k%13, 30*(k%2)),
	}
	if k%5 == 0 {
		vars = append(vars, "tx_isolation = 'READ-COMMITTED'")
	}
	if k%4 == 1 {
		vars = append(vars, fmt.Sprintf("lock_wait_timeout = %d", 1000+k))
	}
	if k%3 == 2 {
		vars = append(vars, fmt.Sprintf("sort_buffer_size = %d", 300000+4096*k))
	}
	if k%6 == 3 {
		vars = append(vars, fmt.Sprintf("sql_select_limit = %d", 100000+k))
	}
	if k%7 == 4 {
		vars = append(vars, fmt.Sprintf("div_precision_increment = %d", 6+k%10))
	}
	c.sets = []string{"SET SESSION " + strings.Join(vars, ", "), "SET NAMES " + noiseNames[k%len(noiseNames)]}
	return c
}

var (
	noiseConfigs []noiseConfig
	// noiseColumnValues holds, per probe column, every value some noise
	// session has: a deviation to one of them may be a crossing between
	// noise sessions rather than the scenario's state.
	noiseColumnValues []map[string]bool
	// noiseDefaults is the probe of a connection that set nothing.
	noiseDefaults []string
)

// resetKeepsLastInsertID is what the server does with LAST_INSERT_ID() on
// COM_RESET_CONNECTION, learnt by prepareNoise.
var resetKeepsLastInsertID bool

// prepareNoise asks the server, over direct connections, what each noise
// session's probe must answer.
func prepareNoise(t *testing.T) {
	t.Helper()
	noiseConfigs = make([]noiseConfig, noiseSessions)
	noiseColumnValues = nil
	for k := range noiseSessions {
		c := makeNoiseConfig(k)
		d, err := dial(dialOpts{addr: env.Server(t).Addr, user: semUser, pass: semPass, db: c.db})
		if err != nil {
			t.Fatalf("noise oracle: %v", err)
		}
		for _, q := range c.sets {
			if r := d.query(q); r.failed() {
				t.Fatalf("noise oracle %s: %s", q, r.display())
			}
		}
		r := d.query(noiseProbe)
		if r.failed() || r.parts[0].warnings != 0 || r.rowCount() != 1 {
			t.Fatalf("noise oracle probe: %s", r.display())
		}
		c.wantMeta = charsetsOf(r.parts[0].fields)
		for j := range r.parts[0].rows[0] {
			c.wantProbe = append(c.wantProbe, r.cell(0, j))
			if len(noiseColumnValues) <= j {
				noiseColumnValues = append(noiseColumnValues, map[string]bool{})
			}
			noiseColumnValues[j][r.cell(0, j)] = true
		}
		if k == 0 {
			fresh, err := dial(dialOpts{addr: env.Server(t).Addr, user: semUser, pass: semPass, db: c.db})
			if err != nil {
				t.Fatalf("noise oracle: %v", err)
			}
			r := fresh.query(noiseProbe)
			noiseDefaults = nil
			for j := range r.parts[0].rows[0] {
				noiseDefaults = append(noiseDefaults, r.cell(0, j))
			}
			fresh.quit()
			d.query("INSERT INTO n (v) VALUES (0)")
			d.reset()
			resetKeepsLastInsertID = d.query("SELECT LAST_INSERT_ID()").cell(0, 0) != "0"
		}
		d.quit()
		noiseConfigs[k] = c
	}
}

// noiseSet is the noise of one proxy run.
type noiseSet struct {
	px    *proxytest.Proxy
	sc    *scenario
	done  chan struct{}
	wg    sync.WaitGroup
	ready chan error
	mu    sync.Mutex
	rep   noiseReport
	once  sync.Once
	round atomic.Int64
	// baseKinds are the kinds of baseline anomaly already kept.
	baseKinds map[string]bool
}

// anomalyKind names what an anomaly is about: its statement, or for the
// settings probe the kind of deviation, without values.
func anomalyKind(what string) string {
	k := what
	if i := strings.Index(k, " -> "); i >= 0 {
		k = k[:i]
	}
	if j := strings.IndexAny(k, "0123456789\""); strings.HasPrefix(k, "settings probe") && j > 0 {
		k = k[:j]
	}
	return digits.ReplaceAllString(k, "N")
}

var digits = regexp.MustCompile(`[0-9]+`)

// noiseReport is what the noise of one run saw.
type noiseReport struct {
	anomalies  []string // the first few, for the report
	nAnomalies int
	// baseline are anomalies that show no state of the scenario: a noise
	// session lost its own value, or saw another noise session's.
	baseline  []string
	nBaseline int
	troubles  []string // errors that are no leak: acquire or queue timeouts
	nTroubles int
	// pinned counts, by pin reasons, rounds after which a noise session
	// was pinned though it does nothing that needs it.
	pinned map[string]int
	rounds int64
}

func startNoise(px *proxytest.Proxy, sc *scenario) *noiseSet {
	ns := &noiseSet{px: px, sc: sc, done: make(chan struct{}), ready: make(chan error, noiseSessions)}
	for k := range noiseSessions {
		ns.wg.Go(func() { ns.session(noiseConfigs[k], uint64(k)) })
	}
	return ns
}

// waitReady waits until every noise session has connected, applied its
// settings and passed one round.
func (ns *noiseSet) waitReady() error {
	deadline := time.After(15 * time.Second)
	for range noiseSessions {
		select {
		case err := <-ns.ready:
			if err != nil {
				return fmt.Errorf("noise: %w", err)
			}
		case <-deadline:
			return fmt.Errorf("noise sessions not ready after 15s")
		}
	}
	return nil
}

func (ns *noiseSet) stop() {
	ns.once.Do(func() { close(ns.done) })
	ns.wg.Wait()
}

func (ns *noiseSet) report() *noiseReport {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	r := ns.rep
	r.rounds = ns.round.Load()
	r.pinned = maps.Clone(ns.rep.pinned)
	return &r
}

func (ns *noiseSet) anomaly(k int, what string, scenarios bool) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if !scenarios {
		ns.rep.nBaseline++
		// Keep the first example of each kind, so that one frequent
		// kind does not hide the others.
		kind := anomalyKind(what)
		if ns.baseKinds == nil {
			ns.baseKinds = map[string]bool{}
		}
		if !ns.baseKinds[kind] && len(ns.rep.baseline) < 10 {
			ns.baseKinds[kind] = true
			ns.rep.baseline = append(ns.rep.baseline, fmt.Sprintf("noise %d: %s", k, what))
		}
		return
	}
	ns.rep.nAnomalies++
	if len(ns.rep.anomalies) < 5 {
		ns.rep.anomalies = append(ns.rep.anomalies, fmt.Sprintf("noise %d: %s", k, what))
	}
}

func (ns *noiseSet) trouble(k int, what string) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.rep.nTroubles++
	if len(ns.rep.troubles) < 3 {
		ns.rep.troubles = append(ns.rep.troubles, fmt.Sprintf("noise %d: %s", k, what))
	}
}

func (ns *noiseSet) stopped() bool {
	select {
	case <-ns.done:
		return true
	default:
		return false
	}
}

// noiseSession is one noise client while it runs.
type noiseSession struct {
	ns     *noiseSet
	cfg    noiseConfig
	c      *conn
	lastID string // LAST_INSERT_ID() it must see
	rng    *rand.Rand
}

func (ns *noiseSet) session(cfg noiseConfig, seed uint64) {
	n := &noiseSession{ns: ns, cfg: cfg, lastID: "0", rng: rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))}
	err := n.connect()
	ns.ready <- err
	if err != nil {
		return
	}
	defer func() {
		if n.c != nil {
			n.c.quit()
		}
	}()
	// Sessions start at different points of the rotation, so that every
	// kind of check runs all the time, even in a short scenario.
	for r := cfg.k; !ns.stopped(); r++ {
		if n.c == nil || n.c.dead {
			if err := n.connect(); err != nil {
				ns.trouble(cfg.k, "reconnect: "+err.Error())
				time.Sleep(50 * time.Millisecond)
				continue
			}
		}
		n.round(r)
		ns.round.Add(1)
		time.Sleep(time.Duration(n.rng.Int64N(int64(noisePause))))
	}
}

func (n *noiseSession) connect() error {
	c, err := dial(dialOpts{addr: n.ns.px.Addr, user: semUser, pass: semPass, db: n.cfg.db})
	if err != nil {
		return err
	}
	n.c, n.lastID = c, "0"
	return n.applySettings()
}

func (n *noiseSession) applySettings() error {
	for _, q := range n.cfg.sets {
		if r := n.c.query(q); r.failed() {
			return fmt.Errorf("%s: %s", q, r.display())
		}
	}
	return nil
}
