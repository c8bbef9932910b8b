package admin

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/scheduler"
)

var allVariables = []string{
	"backend_pool_size", "backend_prepared_per_connection", "thread_pool_algorithm", "thread_pool_codel_interval", "thread_pool_codel_target", "thread_pool_high_prio_mode",
	"thread_pool_high_prio_tickets", "thread_pool_idle_timeout", "thread_pool_max_threads", "thread_pool_oversubscribe",
	"thread_pool_prio_kickup_timer", "thread_pool_query_threads_per_group", "thread_pool_queue_timeout",
	"thread_pool_size", "thread_pool_stall_limit", "version", "version_comment",
}

func TestShowVariables(t *testing.T) {
	ae := startAdmin(t)
	adm := ae.admin(t)
	cfg := ae.px.Sched.Config()

	r := mustQuery(t, adm, "SHOW VARIABLES")
	if !slices.Equal(r.cols, []string{"Variable_name", "Value"}) {
		t.Fatalf("columns %v", r.cols)
	}
	if got := r.col("Variable_name"); !slices.Equal(got, allVariables) {
		t.Fatalf("variables:\n got %v\nwant %v", got, allVariables)
	}
	vars := r.byName()
	for name, want := range map[string]string{
		"thread_pool_algorithm":               "generic",
		"thread_pool_size":                    strconv.Itoa(cfg.Size),
		"thread_pool_stall_limit":             strconv.FormatInt(cfg.StallLimit.Milliseconds(), 10),
		"thread_pool_oversubscribe":           strconv.Itoa(cfg.Oversubscribe),
		"thread_pool_query_threads_per_group": strconv.Itoa(cfg.QueryThreadsPerGroup),
		"thread_pool_max_threads":             strconv.Itoa(cfg.MaxThreads),
		"thread_pool_idle_timeout":            strconv.FormatInt(int64(cfg.IdleTimeout/time.Second), 10),
		"thread_pool_prio_kickup_timer":       strconv.FormatInt(cfg.PrioKickupTimer.Milliseconds(), 10),
		"thread_pool_high_prio_mode":          "transactions",
		"thread_pool_high_prio_tickets":       "4294967295",
		"thread_pool_queue_timeout":           strconv.FormatInt(cfg.QueueTimeout.Milliseconds(), 10),
		"backend_pool_size":                   "4",
		"backend_prepared_per_connection":     strconv.Itoa(ae.px.Pool.Stats().PreparedLimit),
		"version":                             serverVersion,
		"version_comment":                     "tpproxy admin",
	} {
		if vars[name] != want {
			t.Errorf("%s = %q, want %q", name, vars[name], want)
		}
	}

	for _, c := range []struct {
		q    string
		want []string
	}{
		{"show global variables like 'thread_pool_s%'", []string{"thread_pool_size", "thread_pool_stall_limit"}},
		{`SHOW SESSION VARIABLES LIKE 'THREAD\_POOL\_SIZE';`, []string{"thread_pool_size"}},
		{"  show   variables\n like 'thread_pool_siz_' ;  ", []string{"thread_pool_size"}},
		{"SHOW VARIABLES LIKE '%prio%'", []string{"thread_pool_high_prio_mode", "thread_pool_high_prio_tickets", "thread_pool_prio_kickup_timer"}},
		{"SHOW VARIABLES LIKE 'backend%'", []string{"backend_pool_size", "backend_prepared_per_connection"}},
		{"SHOW VARIABLES LIKE 'version%'", []string{"version", "version_comment"}},
		{"SHOW VARIABLES LIKE 'nothing%'", nil},
	} {
		r := mustQuery(t, adm, c.q)
		if got := r.col("Variable_name"); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.q, got, c.want)
		}
	}

	// What the mysql and mariadb clients ask at connect.
	r = mustQuery(t, adm, "select @@version_comment limit 1")
	if !slices.Equal(r.cols, []string{"@@version_comment"}) || len(r.rows) != 1 || r.rows[0][0] != "tpproxy admin" {
		t.Errorf("@@version_comment: %+v", r)
	}
	r = mustQuery(t, adm, "SELECT @@thread_pool_size, @@GLOBAL.thread_pool_stall_limit AS stall, @@version, @@global.thread_pool_algorithm;")
	want := [][]string{{strconv.Itoa(cfg.Size), strconv.FormatInt(cfg.StallLimit.Milliseconds(), 10), serverVersion, "generic"}}
	if !slices.Equal(r.cols, []string{"@@thread_pool_size", "stall", "@@version", "@@global.thread_pool_algorithm"}) ||
		!reflect.DeepEqual(r.rows, want) {
		t.Errorf("SELECT @@...: %v %v, want %v", r.cols, r.rows, want)
	}
	if !slices.Equal(r.types, []string{"BIGINT", "BIGINT", "VARCHAR", "VARCHAR"}) {
		t.Errorf("column types %v", r.types)
	}
	if r := mustQuery(t, adm, "SELECT @@version LIMIT 0"); len(r.rows) != 0 || len(mustQuery(t, adm, "SELECT @@version LIMIT 1, 1").rows) != 0 {
		t.Errorf("LIMIT 0 gave %v", r.rows)
	}

	wantErr(t, adm, "SELECT @@session.thread_pool_size", 1238, "Variable 'thread_pool_size' is a GLOBAL variable")
	wantErr(t, adm, "SELECT @@local.version", 1238, "Variable 'version' is a GLOBAL variable")
	wantErr(t, adm, "SELECT @@nonexistent", 1193, "Unknown system variable 'nonexistent'")
	wantErr(t, adm, "SELECT @@max_allowed_packet", 1193, "Unknown system variable 'max_allowed_packet'")
	wantErr(t, adm, "SHOW VARIABLES LIKE", 1064, "syntax error")
}

func TestSetGlobal(t *testing.T) {
	ae := startAdmin(t)
	adm := ae.admin(t)
	sched := ae.px.Sched

	for _, c := range []struct {
		q, name, show string
		check         func(scheduler.Config) bool
	}{
		{"SET GLOBAL thread_pool_size = 3", "thread_pool_size", "3", func(c scheduler.Config) bool { return c.Size == 3 }},
		{"set global thread_pool_stall_limit=250;", "thread_pool_stall_limit", "250",
			func(c scheduler.Config) bool { return c.StallLimit == 250*time.Millisecond }},
		{"SET @@global.thread_pool_oversubscribe = 0", "thread_pool_oversubscribe", "0",
			func(c scheduler.Config) bool { return c.Oversubscribe == 0 }},
		{"SET @@GLOBAL.thread_pool_query_threads_per_group := 2", "thread_pool_query_threads_per_group", "2",
			func(c scheduler.Config) bool { return c.QueryThreadsPerGroup == 2 }},
		{"SET GLOBAL thread_pool_max_threads = 64", "thread_pool_max_threads", "64",
			func(c scheduler.Config) bool { return c.MaxThreads == 64 }},
		{"SET GLOBAL thread_pool_idle_timeout = 30", "thread_pool_idle_timeout", "30",
			func(c scheduler.Config) bool { return c.IdleTimeout == 30*time.Second }},
		{"SET GLOBAL thread_pool_prio_kickup_timer = 0", "thread_pool_prio_kickup_timer", "0",
			func(c scheduler.Config) bool { return c.PrioKickupTimer == 0 }},
		{"SET GLOBAL thread_pool_prio_kickup_timer = 1500", "thread_pool_prio_kickup_timer", "1500",
			func(c scheduler.Config) bool { return c.PrioKickupTimer == 1500*time.Millisecond }},
		{"SET GLOBAL thread_pool_high_prio_mode = statements", "thread_pool_high_prio_mode", "statements",
			func(c scheduler.Config) bool { return c.HighPrioMode == scheduler.PrioStatements }},
		{"SET GLOBAL thread_pool_high_prio_mode = 'NONE'", "thread_pool_high_prio_mode", "none",
			func(c scheduler.Config) bool { return c.HighPrioMode == scheduler.PrioNone }},
		{"SET GLOBAL thread_pool_high_prio_mode = 0", "thread_pool_high_prio_mode", "transactions",
			func(c scheduler.Config) bool { return c.HighPrioMode == scheduler.PrioTransactions }},
		{"SET GLOBAL thread_pool_high_prio_tickets = 10", "thread_pool_high_prio_tickets", "10",
			func(c scheduler.Config) bool { return c.HighPrioTickets == 10 }},
		{"SET GLOBAL thread_pool_algorithm = 'Enterprise'", "thread_pool_algorithm", "enterprise",
			func(c scheduler.Config) bool { return c.Algorithm == scheduler.Enterprise }},
		{"SET GLOBAL thread_pool_algorithm = DEFAULT", "thread_pool_algorithm", "generic",
			func(c scheduler.Config) bool { return c.Algorithm == scheduler.Generic }},
		{"SET GLOBAL thread_pool_queue_timeout = 1500", "thread_pool_queue_timeout", "1500",
			func(c scheduler.Config) bool { return c.QueueTimeout == 1500*time.Millisecond }},
		{"SET GLOBAL thread_pool_stall_limit = default", "thread_pool_stall_limit", "500",
			func(c scheduler.Config) bool { return c.StallLimit == 500*time.Millisecond }},
	} {
		mustExec(t, adm, c.q)
		if cfg := sched.Config(); !c.check(cfg) {
			t.Errorf("%s: config now %+v", c.q, cfg)
		}
		if got := mustQuery(t, adm, fmt.Sprintf("SHOW VARIABLES LIKE '%s'", c.name)).byName()[c.name]; got != c.show {
			t.Errorf("%s: SHOW VARIABLES says %q, want %q", c.q, got, c.show)
		}
	}
	if n := len(sched.Groups()); n != 3 {
		t.Errorf("%d groups after SET GLOBAL thread_pool_size = 3", n)
	}

	before := configOf(sched)
	for _, c := range []struct {
		q    string
		code uint16
		msg  string
	}{
		{"SET GLOBAL nosuch = 1", 1193, "Unknown system variable 'nosuch'"},
		{"SET GLOBAL backend_pool_size = 8", 1238, "Variable 'backend_pool_size' is a read only variable"},
		{"SET backend_prepared_per_connection = 8", 1238, "Variable 'backend_prepared_per_connection' is a read only variable"},
		{"SET GLOBAL version = 'x'", 1238, "Variable 'version' is a read only variable"},
		{"SET thread_pool_size = 2", 1229, "Variable 'thread_pool_size' is a GLOBAL variable and should be set with SET GLOBAL"},
		{"SET SESSION thread_pool_size = 2", 1229, "should be set with SET GLOBAL"},
		{"SET LOCAL thread_pool_size = 2", 1229, "should be set with SET GLOBAL"},
		{"SET @@session.thread_pool_size = 2", 1229, "should be set with SET GLOBAL"},
		{"SET @@thread_pool_size = 2", 1229, "should be set with SET GLOBAL"},
		{"SET GLOBAL thread_pool_size = 0", 1231, "Variable 'thread_pool_size' can't be set to the value of '0'"},
		{"SET GLOBAL thread_pool_size = -1", 1231, "Variable 'thread_pool_size' can't be set to the value of '-1'"},
		{"SET GLOBAL thread_pool_size = 100001", 1231, "can't be set to the value of '100001'"},
		{"SET GLOBAL thread_pool_size = 99999999999999999999", 1231, "can't be set to the value of '99999999999999999999'"},
		{"SET GLOBAL thread_pool_oversubscribe = 1001", 1231, "Variable 'thread_pool_oversubscribe' can't be set"},
		{"SET GLOBAL thread_pool_stall_limit = 0", 1231, "Variable 'thread_pool_stall_limit' can't be set to the value of '0'"},
		{"SET GLOBAL thread_pool_max_threads = 0", 1231, "Variable 'thread_pool_max_threads' can't be set"},
		{"SET GLOBAL thread_pool_queue_timeout = 0", 1231, "Variable 'thread_pool_queue_timeout' can't be set"},
		{"SET GLOBAL thread_pool_prio_kickup_timer = -5", 1231, "Variable 'thread_pool_prio_kickup_timer' can't be set"},
		{"SET GLOBAL thread_pool_high_prio_tickets = 4294967296", 1231, "Variable 'thread_pool_high_prio_tickets' can't be set"},
		{"SET GLOBAL thread_pool_algorithm = 'bogus'", 1231, "Variable 'thread_pool_algorithm' can't be set to the value of 'bogus'"},
		{"SET GLOBAL thread_pool_algorithm = 2", 1231, "Variable 'thread_pool_algorithm' can't be set to the value of '2'"},
		{"SET GLOBAL thread_pool_high_prio_mode = sometimes", 1231, "can't be set to the value of 'sometimes'"},
		{"SET GLOBAL thread_pool_size = '4'", 1232, "Incorrect argument type to variable 'thread_pool_size'"},
		{"SET GLOBAL thread_pool_size = 1.5", 1232, "Incorrect argument type to variable 'thread_pool_size'"},
		{"SET GLOBAL thread_pool_stall_limit = ON", 1232, "Incorrect argument type to variable 'thread_pool_stall_limit'"},
		{"SET GLOBAL thread_pool_algorithm = 0.5", 1232, "Incorrect argument type to variable 'thread_pool_algorithm'"},
		{"SET GLOBAL thread_pool_size =", 1064, "syntax error"},
		{"SET GLOBAL thread_pool_size 4", 1064, "syntax error near '4'"},
		{"SET GLOBAL sql_mode = ''", 1193, "Unknown system variable 'sql_mode'"},
		{"SET foo = 1", 1193, "Unknown system variable 'foo'"},
		{"SET wait_timeout = 10", 1193, "Unknown system variable 'wait_timeout'"},
		{"SET @x = 1", 1064, "unsupported statement"},
	} {
		wantErr(t, adm, c.q, c.code, c.msg)
		if after := configOf(sched); !reflect.DeepEqual(after, before) {
			t.Fatalf("%s changed the config:\n%+v\n->\n%+v", c.q, before, after)
		}
	}

	// What connectors send at connect is accepted and changes nothing.
	for _, q := range []string{
		"SET NAMES utf8mb4", "SET NAMES 'utf8mb4' COLLATE 'utf8mb4_general_ci'", "set names default",
		"SET CHARACTER SET utf8", "SET CHARSET latin1", "SET autocommit=1", "SET AUTOCOMMIT = 0",
		"SET SESSION sql_mode = 'STRICT_TRANS_TABLES'", "SET time_zone = '+00:00'", "SET @@session.time_zone = 'SYSTEM'",
		"SET character_set_results = NULL", "SET session_track_schema = ON", "set collation_connection=utf8mb4_bin",
		"SET NAMES utf8mb4, autocommit = 1, sql_mode = ''",
	} {
		mustExec(t, adm, q)
	}
	if after := configOf(sched); !reflect.DeepEqual(after, before) {
		t.Fatalf("connector SETs changed the config")
	}
	// go-sql-driver sends DSN parameters as SET at connect.
	s := openSession(t, ae.dsn(adminUser, adminPass, "charset=utf8mb4", "sql_mode=%27ANSI%27", "time_zone=%27%2B00:00%27", "autocommit=true"))
	if got := mustInt(t, s, "SELECT @@thread_pool_size"); got != 3 {
		t.Errorf("thread_pool_size through a session with connect-time SETs: %d", got)
	}
}

// TestSetAtomic checks that one SET applies all its assignments or none.
func TestSetAtomic(t *testing.T) {
	ae := startAdmin(t, func(o *proxytest.Options) { o.Scheduler.Size = 2 })
	adm := ae.admin(t)
	sched := ae.px.Sched
	before := configOf(sched)
	for _, c := range []struct {
		q    string
		code uint16
		msg  string
	}{
		{"SET GLOBAL thread_pool_size = 3, thread_pool_oversubscribe = 5, thread_pool_algorithm = 'bogus'", 1231,
			"Variable 'thread_pool_algorithm' can't be set to the value of 'bogus'"},
		{"SET GLOBAL thread_pool_size = 3, thread_pool_stall_limit = 0", 1231, "Variable 'thread_pool_stall_limit'"},
		{"SET GLOBAL thread_pool_size = 3, thread_pool_oversubscribe = '5'", 1232, "thread_pool_oversubscribe"},
		{"SET GLOBAL thread_pool_size = 3, backend_pool_size = 1", 1238, "backend_pool_size"},
		{"SET GLOBAL thread_pool_size = 3, nosuch = 1", 1193, "nosuch"},
		// The @@global. of the first assignment does not carry over.
		{"SET @@global.thread_pool_size = 3, thread_pool_oversubscribe = 1", 1229, "thread_pool_oversubscribe"},
		{"SET GLOBAL thread_pool_size = 3, SESSION thread_pool_oversubscribe = 1", 1229, "thread_pool_oversubscribe"},
	} {
		wantErr(t, adm, c.q, c.code, c.msg)
		if after := configOf(sched); !reflect.DeepEqual(after, before) {
			t.Fatalf("%s changed the config:\n%+v\n->\n%+v", c.q, before, after)
		}
	}
	if n := len(sched.Groups()); n != 2 {
		t.Fatalf("%d groups, want 2", n)
	}

	mustExec(t, adm, "SET GLOBAL thread_pool_size = 3, thread_pool_oversubscribe = 5, thread_pool_high_prio_mode = none")
	if c := sched.Config(); c.Size != 3 || c.Oversubscribe != 5 || c.HighPrioMode != scheduler.PrioNone {
		t.Errorf("after a good SET: %+v", c)
	}
	// GLOBAL applies to the assignments after it that have no scope.
	mustExec(t, adm, "SET GLOBAL thread_pool_size = 2, SESSION sql_mode = '', GLOBAL thread_pool_oversubscribe = 4, thread_pool_max_threads = 9")
	if c := sched.Config(); c.Size != 2 || c.Oversubscribe != 4 || c.MaxThreads != 9 {
		t.Errorf("after a mixed SET: %+v", c)
	}
	// The later of two assignments to one variable wins.
	mustExec(t, adm, "SET GLOBAL thread_pool_size = 5, thread_pool_size = 4")
	if c := sched.Config(); c.Size != 4 {
		t.Errorf("size %d, want 4", c.Size)
	}

	// Sessions changing different variables at once: no change is lost
	// to another session's read-modify-write of the config. Each variable
	// has one writer counting up, which checks before each SET that its
	// last value is still there.
	vars := []struct {
		name string
		read func(scheduler.Config) int64
	}{
		{"thread_pool_oversubscribe", func(c scheduler.Config) int64 { return int64(c.Oversubscribe) }},
		{"thread_pool_high_prio_tickets", func(c scheduler.Config) int64 { return int64(c.HighPrioTickets) }},
		{"thread_pool_max_threads", func(c scheduler.Config) int64 { return int64(c.MaxThreads) }},
		{"thread_pool_queue_timeout", func(c scheduler.Config) int64 { return c.QueueTimeout.Milliseconds() }},
	}
	const rounds = 300
	var wg sync.WaitGroup
	for _, v := range vars {
		wg.Go(func() {
			for k := int64(1); k <= rounds; k++ {
				if got := v.read(sched.Config()); k > 1 && got != k-1 {
					t.Errorf("%s is %d, its last SET was %d: a concurrent SET undid it", v.name, got, k-1)
					return
				}
				st, err := parse(fmt.Sprintf("SET GLOBAL %s = %d", v.name, k))
				if err == nil {
					_, err = ae.srv.run(t.Context(), &handler{a: ae.srv, id: 1, host: "127.0.0.1"}, st)
				}
				if err != nil {
					t.Errorf("%s = %d: %v", v.name, k, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestResizeUnderLoad changes thread_pool_size while 16 clients run
// statements through the proxy; none of them may see an error.
func TestResizeUnderLoad(t *testing.T) {
	ae := startAdmin(t, func(o *proxytest.Options) { o.Scheduler.Size = 2 })
	adm := ae.admin(t)
	db := ae.px.Open(t)
	db.SetMaxOpenConns(16)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done atomic.Int64
	progress := make(chan struct{}, 1)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for ctx.Err() == nil {
				qctx, qcancel := context.WithTimeout(ctx, opTimeout)
				var v int64
				err := db.QueryRowContext(qctx, "SELECT SLEEP(0.01)").Scan(&v)
				qcancel()
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				done.Add(1)
				select {
				case progress <- struct{}{}:
				default:
				}
			}
		})
	}
	// waitProgress waits until the clients completed n more statements.
	waitProgress := func(n int64) {
		t.Helper()
		target := done.Load() + n
		deadline := time.NewTimer(opTimeout)
		defer deadline.Stop()
		for done.Load() < target {
			select {
			case <-progress:
			case err := <-errs:
				t.Fatalf("client error: %v", err)
			case <-deadline.C:
				t.Fatalf("clients stuck at %d statements", done.Load())
			}
		}
	}
	waitProgress(32)
	for _, size := range []int{1, 4, 2, 4, 1} {
		mustExec(t, adm, fmt.Sprintf("SET GLOBAL thread_pool_size = %d", size))
		if got := ae.px.Sched.Config().Size; got != size {
			t.Fatalf("Config().Size = %d after SET %d", got, size)
		}
		r := mustQuery(t, adm, "SELECT GROUP_ID FROM information_schema.THREAD_POOL_GROUPS")
		if len(r.rows) != size {
			t.Fatalf("%d groups listed after SET %d", len(r.rows), size)
		}
		waitProgress(32)
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("client error: %v", err)
	}
	t.Logf("%d statements during the resizes", done.Load())
}
