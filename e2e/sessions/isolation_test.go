package sessions

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// probeQuery reads the replayable session state a client can observe.
const probeQuery = "SELECT @@sql_mode, @@time_zone, @@character_set_client, @@collation_connection, DATABASE()"

// isoConfig is what one session sets; the zero value sets nothing.
type isoConfig struct {
	sqlMode  *string
	timeZone string
	names    string // argument of SET NAMES
	schema   string
}

func (c isoConfig) statements() []string {
	var qs []string
	if c.sqlMode != nil {
		qs = append(qs, fmt.Sprintf("SET SESSION sql_mode = '%s'", *c.sqlMode))
	}
	if c.timeZone != "" {
		qs = append(qs, fmt.Sprintf("SET time_zone = '%s'", c.timeZone))
	}
	if c.names != "" {
		qs = append(qs, "SET NAMES "+c.names)
	}
	if c.schema != "" {
		qs = append(qs, "USE "+c.schema)
	}
	return qs
}

// TestIsolationUnderInterleaving runs many sessions with different
// replayable settings over two backend connections and checks that every
// statement of every session sees exactly its own settings, as it would on
// a server connection of its own, without pinning anyone.
func TestIsolationUnderInterleaving(t *testing.T) {
	const (
		poolSize = 2
		nSess    = 20
		rounds   = 60
	)
	root := env.Root(t)
	schemas := []string{"tpp_iso_a", "tpp_iso_b", "tpp_iso_c", "tpp_iso_d", "tpp_iso_e"}
	for _, s := range schemas {
		rootExec(t, root, "DROP DATABASE IF EXISTS "+s, "CREATE DATABASE "+s)
	}
	t.Cleanup(func() {
		for _, s := range schemas {
			_, _ = root.Exec("DROP DATABASE IF EXISTS " + s)
		}
	})
	freshTable(t, root, "iso_latin", "(id INT PRIMARY KEY, s VARCHAR(20) CHARACTER SET latin1)")

	modes := []string{
		"ANSI_QUOTES",
		"STRICT_TRANS_TABLES,NO_ZERO_DATE",
		"",
		"NO_BACKSLASH_ESCAPES,PIPES_AS_CONCAT",
		"TRADITIONAL",
		"ONLY_FULL_GROUP_BY,NO_ENGINE_SUBSTITUTION",
		"REAL_AS_FLOAT,IGNORE_SPACE,ALLOW_INVALID_DATES",
	}
	names := []string{
		"utf8mb4",
		"latin1",
		"utf8mb4 COLLATE utf8mb4_unicode_ci",
		"latin1 COLLATE latin1_general_ci",
		"utf8mb4 COLLATE utf8mb4_bin",
		"latin1 COLLATE latin1_bin",
	}
	configs := make([]isoConfig, nSess)
	for i := 1; i < nSess; i++ { // session 0 sets nothing
		configs[i] = isoConfig{
			sqlMode:  &modes[i%len(modes)],
			timeZone: fmt.Sprintf("+%02d:00", i%13),
			names:    names[i%len(names)],
			schema:   schemas[i%len(schemas)],
		}
	}

	// The oracle: what the server itself reports for each configuration
	// on a direct connection, and for one that sets nothing.
	want := make([]row, nSess)
	for i, c := range configs {
		d := openSession(t, env.DirectDSN(t))
		mustExec(t, d, c.statements()...)
		want[i] = mustRow(t, d, probeQuery)
		if n := mustInt(t, d, "SELECT @@warning_count"); n != 0 {
			t.Fatalf("config %d: the server warns about %v", i, c.statements())
		}
		d.Close()
	}
	if want[0].str(4) != proxytest.DB {
		t.Fatalf("direct default schema = %v, want %s", want[0], proxytest.DB)
	}

	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = poolSize })
	sess := make([]*session, nSess)
	for i := range sess {
		sess[i] = openSession(t, px.DSN())
	}
	for i, s := range sess {
		mustExec(t, s, configs[i].statements()...)
	}

	// Watch the pool and the pins while the sessions run.
	var maxOpen, maxPinned atomic.Int64
	watchDone := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if n := int64(px.Pool.Stats().Open); n > maxOpen.Load() {
				maxOpen.Store(n)
			}
			if n := int64(px.Server.Stats().Pinned); n > maxPinned.Load() {
				maxPinned.Store(n)
			}
			select {
			case <-watchDone:
				return
			case <-tick.C:
			}
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	errs := make(chan error, nSess)
	var wg sync.WaitGroup
	for i, s := range sess {
		wg.Go(func() {
			if err := isoWorker(ctx, px, s, configs[i], want[i], schemas, rounds, uint64(i)); err != nil {
				errs <- fmt.Errorf("session %d (%v): %w", i, configs[i].statements(), err)
				cancel()
			}
		})
	}
	wg.Wait()
	close(watchDone)
	watch.Wait()
	close(errs)
	reportFirst(t, errs)
	if t.Failed() {
		return
	}

	if n := maxOpen.Load(); n > poolSize {
		t.Errorf("pool opened %d backend connections, configured size %d", n, poolSize)
	}
	if n := maxPinned.Load(); n != 0 {
		t.Errorf("up to %d sessions were pinned by replayable settings", n)
	}
	for _, in := range px.Server.Sessions() {
		if in.Pinned {
			t.Errorf("session %d pinned (%s) after replayable settings only", in.ID, in.PinReasons)
		}
	}
	if st := px.Pool.Stats(); st.Waits == 0 {
		t.Errorf("no session ever waited for a backend: %d sessions did not share %d connections (%+v)", nSess, poolSize, st)
	}

	// A latin1 string keeps its bytes under SET NAMES latin1 and is
	// stored as the character it means.
	latin := sess[1] // SET NAMES latin1
	if got := want[1].str(2); got != "latin1" {
		t.Fatalf("session 1 character set = %q, test expects latin1", got)
	}
	mustExec(t, latin, "INSERT INTO "+proxytest.DB+".iso_latin VALUES (1, 'caf\xe9')")
	r := mustRow(t, latin, "SELECT s, HEX(s), CHAR_LENGTH(s), HEX(CONVERT('caf\xe9' USING utf8mb4)) FROM "+proxytest.DB+".iso_latin")
	if r.str(0) != "caf\xe9" || r.str(1) != "636166E9" || r.str(2) != "4" || r.str(3) != "636166C3A9" {
		t.Errorf("latin1 round trip: got %v, want (\"caf\\xe9\", \"636166E9\", \"4\", \"636166C3A9\")", r)
	}
	utf := sess[2] // utf8mb4
	if got := mustRow(t, utf, "SELECT s FROM "+proxytest.DB+".iso_latin").str(0); got != "café" {
		t.Errorf("latin1 text read by a utf8mb4 session = %q, want %q", got, "café")
	}
	if n := px.Server.Stats().Pinned; n != 0 {
		t.Errorf("%d sessions pinned after the latin1 round trip", n)
	}
}

// isoWorker interleaves probes with changes of the replayable settings and
// checks every probe against the session's own expected values.
func isoWorker(ctx context.Context, px *proxytest.Proxy, s *session, c isoConfig, want row, schemas []string, rounds int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 0x150))
	want = append(row(nil), want...)
	for r := range rounds {
		switch n := rng.IntN(10); {
		case n == 0 && c.timeZone != "":
			// A new time zone must follow the session to whichever backend
			// runs its next statement.
			tz := fmt.Sprintf("-%02d:%02d", 1+rng.IntN(11), 30*rng.IntN(2))
			if _, err := s.RowsContext(ctx, "SET time_zone = '"+tz+"'"); err != nil {
				return err
			}
			want[1].String = tz
		case n == 1 && c.schema != "":
			schema := schemas[rng.IntN(len(schemas))]
			if _, err := s.RowsContext(ctx, "USE "+schema); err != nil {
				return err
			}
			want[4].String = schema
		case n == 2:
			if _, err := s.RowsContext(ctx, "DO 0"); err != nil {
				return err
			}
		}
		rows, err := s.RowsContext(ctx, probeQuery)
		if err != nil {
			return fmt.Errorf("round %d: %w", r, err)
		}
		if len(rows) != 1 || rows[0].String() != want.String() {
			return fmt.Errorf("round %d: probe = %v, want %v", r, rows, want)
		}
		if n := px.Server.Stats().Pinned; n != 0 {
			return fmt.Errorf("round %d: %d sessions pinned", r, n)
		}
	}
	return nil
}

// TestReplayedSessionVariables sets common session variables and checks
// that they follow the session from backend to backend without pinning it,
// and that no other session ever sees them.
func TestReplayedSessionVariables(t *testing.T) {
	cases := []struct{ set, probe string }{
		{"SET SESSION lock_wait_timeout = 7", "@@lock_wait_timeout"},
		{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "@@tx_isolation"},
		{"SET SESSION max_statement_time = 5", "@@max_statement_time"},
		{"SET SESSION group_concat_max_len = 4096", "@@group_concat_max_len"},
		{"SET sql_select_limit = 10", "@@sql_select_limit"},
		{"SET SESSION sql_safe_updates = 1", "@@sql_safe_updates"},
		{"SET SESSION div_precision_increment = 8", "@@div_precision_increment"},
		{"SET SESSION optimizer_switch = 'index_merge=off'", "@@optimizer_switch"},
		{"SET SESSION default_storage_engine = MyISAM", "@@default_storage_engine"},
		{"SET SESSION wait_timeout = 100", "@@wait_timeout"},
		// Storage-engine (plugin) variables.
		{"SET SESSION innodb_lock_wait_timeout = 7", "@@innodb_lock_wait_timeout"},
		{"SET SESSION innodb_strict_mode = OFF", "@@innodb_strict_mode"},
	}
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 2 })
	for _, tc := range cases {
		t.Run(tc.probe[2:], func(t *testing.T) {
			d := openSession(t, env.DirectDSN(t))
			def := mustRow(t, d, "SELECT "+tc.probe).str(0)
			mustExec(t, d, tc.set)
			want := mustRow(t, d, "SELECT "+tc.probe).str(0)
			if want == def {
				t.Fatalf("test needs a value other than the default %q", def)
			}

			s := openSession(t, px.DSN())
			mustExec(t, s, tc.set)
			wantUnpinned(t, px, s.ID)
			// Other sessions compete for the two backends, so the session
			// runs on both; each must see its own value everywhere.
			others := []*session{openSession(t, px.DSN()), openSession(t, px.DSN())}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			errs := make(chan error, len(others))
			done := make(chan struct{})
			var wg sync.WaitGroup
			for _, o := range others {
				wg.Go(func() {
					for {
						select {
						case <-done:
							return
						default:
						}
						rows, err := o.RowsContext(ctx, "SELECT "+tc.probe)
						if err == nil && rows[0].str(0) != def {
							err = fmt.Errorf("another session sees %s = %q, default %q", tc.probe, rows[0].str(0), def)
						}
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			threads := map[string]bool{}
			for i := 0; i < 200 && len(threads) < 2; i++ {
				r := mustRow(t, s, "SELECT "+tc.probe+", "+threadExpr()+" AS c")
				if r.str(0) != want {
					t.Errorf("statement %d (backend %s): %s = %q, want %q", i, r.str(1), tc.probe, r.str(0), want)
					break
				}
				threads[r.str(1)] = true
			}
			close(done)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if in, _ := sessionInfo(px, s.ID); in.Pinned {
				t.Errorf("%s pinned the session (%s); it is a session variable to replay", tc.set, in.PinReasons)
			} else if len(threads) < 2 {
				t.Errorf("the session never moved to the other backend: the replay was not exercised")
			}
		})
	}
}

// TestStatementScopedSettings: statements that change a variable for
// their own duration only (SET STATEMENT ... FOR, NOWAIT, WAIT n) leave the
// session as it was, on whichever backend it runs next; and they should not
// pin it for good.
func TestStatementScopedSettings(t *testing.T) {
	const probe = "SELECT @@max_statement_time, @@lock_wait_timeout, @@innodb_lock_wait_timeout"
	root := env.Root(t)
	freshTable(t, root, "ss_t", "(id INT PRIMARY KEY, v INT)", "VALUES (1, 0)")
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 2 })
	d := openSession(t, env.DirectDSN(t))
	want := mustRow(t, d, probe)
	for _, q := range []string{
		"SET STATEMENT max_statement_time = 10 FOR DO 1",
		"SET STATEMENT max_statement_time = 10 FOR UPDATE ss_t SET v = v + 1 WHERE id = 1",
		"SET STATEMENT max_statement_time = 10 FOR SELECT v FROM ss_t",
		"SELECT v FROM ss_t WHERE id = 1 FOR UPDATE NOWAIT",
		"SELECT v FROM ss_t WHERE id = 1 FOR UPDATE WAIT 3",
		"SELECT v FROM ss_t WHERE id = 1 FOR UPDATE SKIP LOCKED",
	} {
		t.Run(q, func(t *testing.T) {
			mustExec(t, d, q)
			if got := mustRow(t, d, probe); got.String() != want.String() {
				t.Fatalf("server: after %q the session has %v, before %v", q, got, want)
			}
			s := openSession(t, px.DSN())
			mustExec(t, s, q)
			// Other sessions compete for the backends so that an unpinned
			// session moves; wherever it runs it has its old values.
			stop := startNoise(t, px, 2, "SELECT 1")
			for i := range 50 {
				if got := mustRow(t, s, probe); got.String() != want.String() {
					t.Fatalf("statement %d after %q sees %v; the server has %v again after that statement", i, q, got, want)
				}
			}
			stop()
			wantUnpinned(t, px, s.ID)
		})
	}
}
