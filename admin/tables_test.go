package admin

import (
	"database/sql"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

var groupCols = []string{"GROUP_ID", "CONNECTIONS", "THREADS", "ACTIVE_THREADS", "STANDBY_THREADS", "QUEUE_LENGTH",
	"HAS_LISTENER", "IS_STALLED", "CAPACITY", "EXTRA", "PINNED", "STALLED_STATEMENTS", "QUEUE_HIGH", "QUEUE_LOW"}

var statsCols = []string{"GROUP_ID", "THREAD_CREATIONS", "THREAD_CREATIONS_DUE_TO_STALL", "WAKES", "WAKES_DUE_TO_STALL",
	"THROTTLES", "STALLS", "POLLS_BY_LISTENER", "POLLS_BY_WORKER", "DEQUEUES_BY_LISTENER", "DEQUEUES_BY_WORKER",
	"ADMITTED", "HIGH_PRIORITY_ADMITTED", "QUEUED", "QUEUE_WAIT_MICROSECONDS", "QUEUE_TIMEOUTS", "KICKUPS"}

func TestThreadPoolGroups(t *testing.T) {
	ae := startAdmin(t, func(o *proxytest.Options) { o.Scheduler.Size = 4 })
	adm := ae.admin(t)
	want := make([]int, 4) // connections per group
	for range 6 {
		_, id := clientSession(t, ae.px)
		want[id%4]++
	}

	r := mustQuery(t, adm, "SELECT * FROM information_schema.THREAD_POOL_GROUPS")
	if !slices.Equal(r.cols, groupCols) {
		t.Fatalf("columns %v", r.cols)
	}
	if got := r.col("GROUP_ID"); !slices.Equal(got, []string{"0", "1", "2", "3"}) {
		t.Fatalf("groups %v", got)
	}
	for i, row := range r.rows {
		g := ae.px.Sched.Groups()[i]
		if row[1] != strconv.Itoa(want[i]) {
			t.Errorf("group %d: CONNECTIONS %s, want %d", i, row[1], want[i])
		}
		if row[6] != "1" || row[7] != "0" || row[5] != "0" {
			t.Errorf("group %d: HAS_LISTENER %s IS_STALLED %s QUEUE_LENGTH %s", i, row[6], row[7], row[5])
		}
		if row[8] != strconv.Itoa(g.Capacity) || row[8] != "4" {
			t.Errorf("group %d: CAPACITY %s, scheduler %d, want 1+oversubscribe = 4", i, row[8], g.Capacity)
		}
	}

	for _, c := range []struct {
		q          string
		cols, rows []string
	}{
		{"SELECT GROUP_ID FROM information_schema.thread_pool_groups WHERE GROUP_ID >= 1 AND group_id <> 2 ORDER BY GROUP_ID DESC",
			[]string{"GROUP_ID"}, []string{"3", "1"}},
		{"select group_id from THREAD_POOL_GROUPS order by group_id desc limit 2;",
			[]string{"group_id"}, []string{"3", "2"}},
		{"SELECT GROUP_ID FROM Information_Schema.Thread_Pool_Groups ORDER BY 1 LIMIT 1, 2",
			[]string{"GROUP_ID"}, []string{"1", "2"}},
		{"SELECT GROUP_ID AS g FROM information_schema.THREAD_POOL_GROUPS ORDER BY g DESC LIMIT 2 OFFSET 1",
			[]string{"g"}, []string{"2", "1"}},
		{"SELECT GROUP_ID FROM information_schema.THREAD_POOL_GROUPS WHERE HAS_LISTENER = 1 AND GROUP_ID < '2'",
			[]string{"GROUP_ID"}, []string{"0", "1"}},
		{"SELECT GROUP_ID FROM information_schema.THREAD_POOL_GROUPS WHERE GROUP_ID = 9", []string{"GROUP_ID"}, nil},
		{"SELECT GROUP_ID FROM information_schema.THREAD_POOL_GROUPS WHERE GROUP_ID LIKE '3'", []string{"GROUP_ID"}, []string{"3"}},
		{"SELECT GROUP_ID FROM information_schema.THREAD_POOL_GROUPS WHERE GROUP_ID != 0 AND GROUP_ID <= 2 AND GROUP_ID > 1",
			[]string{"GROUP_ID"}, []string{"2"}},
		{"SELECT * FROM information_schema.THREAD_POOL_GROUPS LIMIT 0", groupCols, nil},
		{"SELECT GROUP_ID FROM information_schema.THREAD_POOL_GROUPS LIMIT 9 OFFSET 4", []string{"GROUP_ID"}, nil},
	} {
		r := mustQuery(t, adm, c.q)
		if !slices.Equal(r.cols, c.cols) {
			t.Errorf("%s: columns %v, want %v", c.q, r.cols, c.cols)
			continue
		}
		if got := r.col(c.cols[0]); len(c.rows) > 0 && !slices.Equal(got, c.rows) || len(c.rows) == 0 && len(got) != 0 {
			t.Errorf("%s: %v, want %v", c.q, got, c.rows)
		}
	}

	// ORDER BY a computed column, ties by GROUP_ID.
	order := []int{0, 1, 2, 3}
	slices.SortStableFunc(order, func(a, b int) int { return want[b] - want[a] })
	var wantOrder []string
	for _, g := range order {
		wantOrder = append(wantOrder, strconv.Itoa(g))
	}
	r = mustQuery(t, adm, "SELECT GROUP_ID, CONNECTIONS FROM information_schema.THREAD_POOL_GROUPS ORDER BY CONNECTIONS DESC, GROUP_ID ASC")
	if got := r.col("GROUP_ID"); !slices.Equal(got, wantOrder) {
		t.Errorf("ORDER BY CONNECTIONS DESC: %v, want %v (connections %v)", r.rows, wantOrder, want)
	}

	wantErr(t, adm, "SELECT NOPE FROM information_schema.THREAD_POOL_GROUPS", 1054, "Unknown column 'NOPE' in 'field list'")
	wantErr(t, adm, "SELECT * FROM information_schema.THREAD_POOL_GROUPS WHERE nope = 1", 1054, "Unknown column 'nope' in 'where clause'")
	wantErr(t, adm, "SELECT * FROM information_schema.THREAD_POOL_GROUPS ORDER BY nope", 1054, "Unknown column 'nope' in 'order clause'")
	wantErr(t, adm, "SELECT GROUP_ID FROM information_schema.THREAD_POOL_GROUPS ORDER BY 2", 1054, "Unknown column '2' in 'order clause'")
	wantErr(t, adm, "SELECT * FROM information_schema.THREAD_POOL_NOPE", 1109, "Unknown table 'THREAD_POOL_NOPE' in information_schema")
	wantErr(t, adm, "SELECT * FROM thread_pool_nope", 1146, "Table 'information_schema.thread_pool_nope' doesn't exist")
	wantErr(t, adm, "SELECT * FROM mysql.user", 1146, "Table 'mysql.user' doesn't exist")
	wantErr(t, adm, "SELECT * FROM information_schema.THREAD_POOL_GROUPS WHERE GROUP_ID = = 2", 1064, "syntax error near '= 2' at line 1")
}

// TestQueuesStatsFlush makes a statement queue behind a running one and
// reads it in THREAD_POOL_QUEUES, PROCESSLIST, THREAD_POOL_GROUPS, SHOW
// STATUS and, once through, THREAD_POOL_STATS and _WAITS; then FLUSH
// THREAD_POOL_STATS zeroes the group counters.
func TestQueuesStatsFlush(t *testing.T) {
	root := env.Root(t)
	ae := startAdmin(t, func(o *proxytest.Options) {
		o.Scheduler.Size = 1
		o.Scheduler.Oversubscribe = 0 // one statement at a time
		o.Scheduler.StallLimit = time.Minute
	})
	adm := ae.admin(t)
	a, idA := clientSession(t, ae.px)
	b, idB := clientSession(t, ae.px)

	chA := runAsync(t, a, "SELECT SLEEP(5)")
	waitOnServer(t, adm, root, idA, "SELECT SLEEP(5)")
	chB := runAsync(t, b, "SELECT 42")
	q := fmt.Sprintf("SELECT GROUP_ID, POSITION, PRIORITY, CONNECTION_ID, QUEUEING_TIME_MICROSECONDS FROM information_schema.THREAD_POOL_QUEUES WHERE CONNECTION_ID = %d", idB)
	var r result
	eventually(t, "the second statement queued", func() bool {
		r = mustQuery(t, adm, q)
		return len(r.rows) == 1
	})
	if row := r.rows[0]; row[0] != "0" || row[1] != "0" || row[2] != "1" || row[3] != strconv.Itoa(int(idB)) {
		t.Errorf("queue row %v, want group 0, position 0, priority 1 (low), connection %d", row, idB)
	}
	if p := processRow(t, adm, idB, false); p["State"] != "queued" {
		t.Errorf("queued session in PROCESSLIST: %v", p)
	}
	if p := processRow(t, adm, idA, false); p["State"] != "executing" {
		t.Errorf("running session in PROCESSLIST: %v", p)
	}
	g := mustQuery(t, adm, "SELECT QUEUE_LENGTH, QUEUE_LOW, QUEUE_HIGH, ACTIVE_THREADS, THREADS FROM information_schema.THREAD_POOL_GROUPS")
	if !reflect.DeepEqual(g.rows, [][]string{{"1", "1", "0", "1", "1"}}) {
		t.Errorf("group while one statement queues: %v", g.rows)
	}
	if st := mustQuery(t, adm, "SHOW STATUS LIKE 'Threadpool_queued'").byName(); st["Threadpool_queued"] != "1" {
		t.Errorf("Threadpool_queued %v", st)
	}

	mustExec(t, adm, fmt.Sprintf("KILL QUERY %d", idA))
	wantInterrupted(t, await(t, chA, "the killed SLEEP"))
	if o := await(t, chB, "the queued statement"); o.err != nil || o.value != "42" {
		t.Fatalf("queued statement: %+v", o)
	}

	s := mustQuery(t, adm, "SELECT * FROM information_schema.THREAD_POOL_STATS")
	if !slices.Equal(s.cols, statsCols) || len(s.rows) != 1 {
		t.Fatalf("THREAD_POOL_STATS: %v %v", s.cols, s.rows)
	}
	stats := make(map[string]int64)
	for i, c := range s.cols {
		stats[c], _ = strconv.ParseInt(s.rows[0][i], 10, 64)
	}
	if stats["QUEUED"] < 1 || stats["THROTTLES"] != stats["QUEUED"] || stats["ADMITTED"] < 2 || stats["WAKES"] != stats["ADMITTED"] ||
		stats["QUEUE_WAIT_MICROSECONDS"] <= 0 || stats["DEQUEUES_BY_WORKER"] != stats["QUEUED"]-stats["QUEUE_TIMEOUTS"] ||
		stats["STALLS"] != 0 || stats["THREAD_CREATIONS"] != 0 {
		t.Errorf("THREAD_POOL_STATS after one queued statement: %v", stats)
	}
	w := mustQuery(t, adm, "SELECT REASON, COUNT FROM information_schema.THREAD_POOL_WAITS ORDER BY REASON").byName()
	if n, _ := strconv.Atoi(w["QUEUE"]); n < 1 || len(w) != 3 || w["QUEUE_TIMEOUT"] != "0" || w["BACKEND_CONNECTION"] == "" {
		t.Errorf("THREAD_POOL_WAITS %v", w)
	}

	// The pool by account: every connection is the pool's own account's here.
	pools := mustQuery(t, adm, "SELECT ACCOUNT, CONNECTIONS, IDLE, IN_USE, WAITING FROM information_schema.TPPROXY_POOLS")
	if len(pools.rows) != 1 || pools.rows[0][0] == "" || pools.rows[0][1] == "0" {
		t.Errorf("TPPROXY_POOLS %v", pools.rows)
	}

	mustExec(t, adm, "flush thread_pool_stats;")
	s = mustQuery(t, adm, "SELECT * FROM information_schema.THREAD_POOL_STATS")
	for i, c := range s.cols[1:] {
		if v := s.rows[0][i+1]; v != "0" {
			t.Errorf("%s = %s after FLUSH THREAD_POOL_STATS", c, v)
		}
	}
}

// waitOnServer waits until session id runs stmt on its backend as the
// server itself sees it, so that a KILL QUERY cannot arrive before it.
func waitOnServer(t *testing.T, adm *session, root *sql.DB, id uint32, stmt string) {
	t.Helper()
	eventually(t, stmt+" running on the backend", func() bool {
		p := processRow(t, adm, id, true)
		if p == nil || p["State"] != "executing" || p["Backend_thread"] == "NULL" {
			return false
		}
		var n int
		if err := root.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND INFO = ?",
			p["Backend_thread"], stmt).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	})
}

// wantInterrupted checks that a SLEEP ended early: MySQL returns 1 from an
// interrupted SLEEP, MariaDB may answer ER_QUERY_INTERRUPTED.
func wantInterrupted(t *testing.T, o outcome) {
	t.Helper()
	if !(o.err == nil && o.value == "1" || errCode(o.err) == 1317) {
		t.Errorf("killed SLEEP gave %q, %v: not interrupted", o.value, o.err)
	}
}

func TestProcesslistAndKill(t *testing.T) {
	root := env.Root(t)
	ae := startAdmin(t, func(o *proxytest.Options) { o.Scheduler.Size = 4 })
	adm := ae.admin(t)
	a, idA := clientSession(t, ae.px)
	b, idB := clientSession(t, ae.px)
	_, idC := clientSession(t, ae.px)

	mustExec(t, b, "BEGIN", "SELECT 1")
	chA := runAsync(t, a, "SELECT SLEEP(2)")
	waitOnServer(t, adm, root, idA, "SELECT SLEEP(2)")

	r := mustQuery(t, adm, "SHOW PROCESSLIST")
	if want := []string{"Id", "User", "Host", "db", "Command", "Time", "State", "Info", "Group", "Backend_thread", "Pin_reason"}; !slices.Equal(r.cols, want) {
		t.Fatalf("columns %v", r.cols)
	}
	ids := []string{strconv.Itoa(int(idA)), strconv.Itoa(int(idB)), strconv.Itoa(int(idC))}
	slices.Sort(ids)
	if got := r.col("Id"); !slices.Equal(got, ids) {
		t.Errorf("processlist ids %v, want the client sessions %v only, in order", got, ids)
	}
	for _, full := range []bool{false, true} {
		pa := processRow(t, adm, idA, full)
		if pa["State"] != "executing" || pa["Command"] != "Query" || pa["Info"] != "SELECT SLEEP(2)" ||
			pa["User"] != proxytest.User || pa["db"] != proxytest.DB || pa["Group"] != strconv.Itoa(int(idA%4)) ||
			pa["Backend_thread"] == "NULL" || pa["Pin_reason"] != "NULL" || !strings.HasPrefix(pa["Host"], "127.0.0.1:") {
			t.Errorf("running session (full %v): %v", full, pa)
		}
		if sec, err := strconv.Atoi(pa["Time"]); err != nil || sec < 0 || sec > 2 {
			t.Errorf("running session: Time %q", pa["Time"])
		}
	}
	pb := processRow(t, adm, idB, false)
	if pb["State"] != "pinned" || pb["Command"] != "Sleep" || !strings.Contains(pb["Pin_reason"], "transaction") ||
		pb["Info"] != "NULL" || pb["Backend_thread"] == "NULL" || pb["Time"] != "0" {
		t.Errorf("session in a transaction: %v", pb)
	}
	pc := processRow(t, adm, idC, false)
	if pc["State"] != "idle" || pc["Command"] != "Sleep" || pc["Pin_reason"] != "NULL" || pc["Backend_thread"] != "NULL" {
		t.Errorf("idle session: %v", pc)
	}
	st := mustQuery(t, adm, "SHOW STATUS").byName()
	if st["Sessions_pinned"] != "1" || st["Threads_connected"] != "3" || st["Threads_running"] == "0" {
		t.Errorf("status with one pinned and one running session: %v", st)
	}

	mustExec(t, adm, fmt.Sprintf("KILL QUERY %d", idA))
	wantInterrupted(t, await(t, chA, "the killed SLEEP"))
	if got := mustInt(t, a, "SELECT 7"); got != 7 {
		t.Errorf("session after KILL QUERY: %d", got)
	}

	mustExec(t, adm, fmt.Sprintf("kill connection %d;", idB))
	eventually(t, "the killed session gone", func() bool { return processRow(t, adm, idB, false) == nil })
	if _, err := b.Query("SELECT 1"); err == nil {
		t.Errorf("a killed session still answers")
	}

	wantErr(t, adm, "KILL 999999", 1094, "Unknown thread id: 999999")
	wantErr(t, adm, "KILL QUERY 999999", 1094, "Unknown thread id: 999999")
	wantErr(t, adm, "KILL CONNECTION 4294967296", 1094, "Unknown thread id: 4294967296")
	wantErr(t, adm, "KILL me", 1064, "syntax error")
}

var allStatus = []string{
	"Aborted_connects", "Backend_pool_idle", "Backend_pool_in_use", "Backend_pool_size", "Backend_pool_waits",
	"Pinned_connections", "Pinned_connections_limit", "Pinned_overdrafts", "Pinned_per_account_limit", "Pinned_refusals",
	"Pinned_shed", "Pinned_sticky", "Pinned_sticky_limit", "Pinned_waiting", "Pinned_waits",
	"Pins_total", "Prepared_stmt_backend", "Prepared_stmt_client", "Questions", "Sessions_pinned",
	"Threadpool_admitted", "Threadpool_idle_threads", "Threadpool_kickups", "Threadpool_queue_timeouts", "Threadpool_queue_wait_us",
	"Threadpool_queued", "Threadpool_shed", "Threadpool_stalls", "Threadpool_threads", "Threadpool_waited", "Threads_connected", "Threads_running",
}

func TestShowStatus(t *testing.T) {
	ae := startAdmin(t)
	adm := ae.admin(t)
	s, _ := clientSession(t, ae.px)

	r := mustQuery(t, adm, "SHOW STATUS")
	if got := r.col("Variable_name"); !slices.Equal(got, allStatus) {
		t.Fatalf("status variables:\n got %v\nwant %v", got, allStatus)
	}
	st := r.byName()
	if st["Backend_pool_size"] != "4" || st["Threads_connected"] != "1" || st["Sessions_pinned"] != "0" ||
		st["Threadpool_queued"] != "0" || st["Threads_running"] != "0" ||
		st["Pinned_connections"] != "0" || st["Pinned_connections_limit"] == "" || st["Pinned_sticky_limit"] == "" {
		t.Errorf("status: %v", st)
	}
	r = mustQuery(t, adm, "SHOW GLOBAL STATUS LIKE 'backend_pool_%'")
	if got := r.col("Variable_name"); !slices.Equal(got, []string{"Backend_pool_idle", "Backend_pool_in_use", "Backend_pool_size", "Backend_pool_waits"}) {
		t.Errorf("LIKE 'backend_pool_%%': %v", got)
	}

	num := func(name string) int64 {
		t.Helper()
		v := mustQuery(t, adm, "SHOW SESSION STATUS LIKE '"+name+"'").byName()[name]
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s = %q", name, v)
		}
		return n
	}
	q, adm0 := num("Questions"), num("Threadpool_admitted")
	mustExec(t, s, "SELECT 1 FROM DUAL WHERE 1 = 1")
	if got := num("Questions"); got <= q {
		t.Errorf("Questions %d after a statement, was %d", got, q)
	}
	if got := num("Threadpool_admitted"); got <= adm0 {
		t.Errorf("Threadpool_admitted %d after a statement, was %d", got, adm0)
	}

	aborted := num("Aborted_connects")
	bad := ae.px.DSNFor(proxytest.User, "wrong", proxytest.DB)
	if _, err := sqlPing(bad); errCode(err) != 1045 {
		t.Fatalf("proxy login with a wrong password: %v", err)
	}
	if got := num("Aborted_connects"); got != aborted+1 {
		t.Errorf("Aborted_connects %d after a failed login, was %d", got, aborted)
	}

	ps := openSession(t, ae.px.DSN("interpolateParams=false"))
	stmt, err := ps.conn.PrepareContext(t.Context(), "SELECT ?")
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if got := num("Prepared_stmt_client"); got < 1 {
		t.Errorf("Prepared_stmt_client %d with a statement prepared", got)
	}
}

// TestSQLUnderLoad runs what a DBA asks of MariaDB's thread-pool views
// against the live views: 16 sessions in 4 thread groups, 4 of them
// running a long statement, 4 holding a transaction open and 8 running
// statements back to back. The answers must agree with SHOW STATUS and
// with what the test knows it set up.
func TestSQLUnderLoad(t *testing.T) {
	ae := startAdmin(t, func(o *proxytest.Options) {
		o.Scheduler.Size = 4
		o.Scheduler.StallLimit = 200 * time.Millisecond
		o.Pool.Size = 12 // the long statements and the transactions hold 8
	})
	adm := ae.admin(t)
	type sess struct {
		s  *session
		id uint32
	}
	var all []sess
	for range 16 {
		s, id := clientSession(t, ae.px)
		all = append(all, sess{s, id})
	}
	// The long statements run in one group, the transactions in another,
	// the back-to-back statements in the other two.
	var sleepers, pinned, loopers []sess
	for _, x := range all {
		switch ae.px.Sched.GroupOf(x.id) {
		case 0:
			sleepers = append(sleepers, x)
		case 1:
			pinned = append(pinned, x)
		default:
			loopers = append(loopers, x)
		}
	}
	if len(sleepers) != 4 || len(pinned) != 4 {
		t.Fatalf("sessions per group: %d in 0, %d in 1", len(sleepers), len(pinned))
	}
	var sleeps []<-chan outcome
	for _, x := range sleepers {
		sleeps = append(sleeps, runAsync(t, x.s, "SELECT SLEEP(6)"))
	}
	for _, x := range pinned {
		mustExec(t, x.s, "BEGIN", "SELECT 1")
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, x := range loopers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := x.s.Query("SELECT 1"); err != nil {
					t.Errorf("looping session: %v", err)
					return
				}
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	eventually(t, "the 4 long statements run", func() bool {
		r := mustQuery(t, adm, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP%' AND STATE = 'executing'")
		return r.rows[0][0] == "4"
	})

	one := func(q string) string {
		t.Helper()
		r := mustQuery(t, adm, q)
		if len(r.rows) != 1 || len(r.rows[0]) != 1 {
			t.Fatalf("%s: %v", q, r.rows)
		}
		return r.rows[0][0]
	}
	status := func(name string) int64 {
		t.Helper()
		v, err := strconv.ParseInt(mustQuery(t, adm, "SHOW STATUS LIKE '"+name+"'").byName()[name], 10, 64)
		if err != nil {
			t.Fatalf("SHOW STATUS %s: %v", name, err)
		}
		return v
	}
	asInt := func(s string) int64 {
		t.Helper()
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return v
	}

	// 1-2: COUNT and SUM.
	if got := one("SELECT COUNT(*) FROM information_schema.THREAD_POOL_GROUPS"); got != "4" {
		t.Errorf("COUNT(*) of groups: %s", got)
	}
	if got, want := asInt(one("SELECT SUM(CONNECTIONS) FROM information_schema.THREAD_POOL_GROUPS")), status("Threads_connected"); got != want || got != 16 {
		t.Errorf("SUM(CONNECTIONS) %d, Threads_connected %d, want 16", got, want)
	}
	// 3: GROUP BY IS_STALLED agrees with the groups row by row.
	perGroup := mustQuery(t, adm, "SELECT IS_STALLED FROM information_schema.THREAD_POOL_GROUPS").col("IS_STALLED")
	counts := make(map[string]int)
	for _, v := range perGroup {
		counts[v]++
	}
	r := mustQuery(t, adm, "SELECT IS_STALLED, COUNT(*) FROM information_schema.THREAD_POOL_GROUPS GROUP BY IS_STALLED ORDER BY IS_STALLED")
	if len(r.rows) != len(counts) {
		t.Errorf("GROUP BY IS_STALLED: %v, groups %v", r.rows, perGroup)
	}
	for _, row := range r.rows {
		if strconv.Itoa(counts[row[0]]) != row[1] {
			t.Errorf("GROUP BY IS_STALLED: %v, groups %v", r.rows, perGroup)
		}
	}
	// 4: a JOIN of the groups and their stats; the admitted statements go
	// on rising, so SHOW STATUS before and after bound it.
	before := status("Threadpool_admitted")
	joined := asInt(one("SELECT SUM(s.ADMITTED) FROM information_schema.THREAD_POOL_GROUPS g " +
		"JOIN information_schema.THREAD_POOL_STATS s ON s.GROUP_ID = g.GROUP_ID"))
	after := status("Threadpool_admitted")
	if joined < before || joined > after || before == after {
		t.Errorf("SUM(ADMITTED) over the join %d, Threadpool_admitted before %d after %d (rising under load)", joined, before, after)
	}
	// 5: MAX(GROUP_ID)+1 is the pool size.
	if got := one("SELECT MAX(GROUP_ID)+1 FROM information_schema.THREAD_POOL_GROUPS"); got != one("SELECT @@thread_pool_size") || got != "4" {
		t.Errorf("MAX(GROUP_ID)+1: %s", got)
	}
	// 6: PROCESSLIST WHERE INFO LIKE: the long statements by id.
	r = mustQuery(t, adm, "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE '%sleep(6)%' ORDER BY ID")
	var ids []int
	for _, x := range sleepers {
		ids = append(ids, int(x.id))
	}
	slices.Sort(ids)
	var wantIDs []string
	for _, id := range ids {
		wantIDs = append(wantIDs, strconv.Itoa(id))
	}
	if got := r.col("ID"); !slices.Equal(got, wantIDs) {
		t.Errorf("INFO LIKE: %v, want %v", got, wantIDs)
	}
	// 7: pin reasons agree with Sessions_pinned.
	if got, want := asInt(one("SELECT COUNT(*) FROM PROCESSLIST WHERE PINNED = 1 AND PIN_REASON LIKE '%transaction%'")), status("Sessions_pinned"); got != want || got != 4 {
		t.Errorf("pinned in a transaction %d, Sessions_pinned %d, want 4", got, want)
	}
	// 8: the sessions per group, with HAVING, agree with THREAD_POOL_GROUPS.
	r = mustQuery(t, adm, "SELECT p.GROUP_ID, COUNT(*) AS n, MAX(g.CONNECTIONS) AS c FROM PROCESSLIST p "+
		"JOIN THREAD_POOL_GROUPS g USING (GROUP_ID) GROUP BY p.GROUP_ID HAVING COUNT(*) > 0 ORDER BY 1")
	total := 0
	for _, row := range r.rows {
		if row[1] != row[2] {
			t.Errorf("group %s: %s sessions in PROCESSLIST, CONNECTIONS %s", row[0], row[1], row[2])
		}
		n, _ := strconv.Atoi(row[1])
		total += n
	}
	if total != 16 {
		t.Errorf("sessions over the groups: %d (%v)", total, r.rows)
	}
	// A subquery: the sessions that share a group with a long statement
	// are those of group 0.
	r = mustQuery(t, adm, "SELECT ID FROM PROCESSLIST WHERE GROUP_ID IN "+
		"(SELECT GROUP_ID FROM PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP%') ORDER BY ID")
	if got := r.col("ID"); !slices.Equal(got, wantIDs) {
		t.Errorf("sessions in the long statements' group: %v, want %v", got, wantIDs)
	}
	// Variables and status as tables, and an expression over both.
	if got := one("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME = 'thread_pool_size'"); got != "4" {
		t.Errorf("GLOBAL_VARIABLES thread_pool_size: %s", got)
	}
	if got := one("SELECT VARIABLE_VALUE - @@thread_pool_size * 4 FROM GLOBAL_STATUS WHERE VARIABLE_NAME = 'Threads_connected'"); got != "0" {
		t.Errorf("Threads_connected - 16: %s", got)
	}
	// The statement cache: a statement one session holds prepared.
	stmt, err := pinned[0].s.conn.PrepareContext(t.Context(), "SELECT ? + 1")
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if got := one("SELECT COUNT(*) FROM TPPROXY_STATEMENT_CACHE WHERE SQL_TEXT = 'SELECT ? + 1' AND PARAMETERS = 1 AND SESSIONS = 1 AND SHARED = 1"); got != "1" {
		t.Errorf("statement cache: %s", got)
	}

	for _, x := range sleepers {
		mustExec(t, adm, fmt.Sprintf("KILL QUERY %d", x.id))
	}
	for _, ch := range sleeps {
		wantInterrupted(t, await(t, ch, "the killed SLEEP"))
	}
}

// BenchmarkSQL1000Sessions times admin queries over the live views with
// 1,000 client sessions connected, and reports the heap the SQL engine
// takes once opened (engine-heap-KB).
func BenchmarkSQL1000Sessions(b *testing.B) {
	ae := startAdmin(b, func(o *proxytest.Options) { o.Scheduler.Size = 4 })
	adm := openSession(b, ae.dsn(adminUser, adminPass))
	for range 1000 {
		openSession(b, ae.px.DSN())
	}
	// The engine's memory is the C heap of SQLite's Go translation,
	// outside Go's heap: the process's resident set shows it.
	runtime.GC()
	before := residentKB(b)
	if r := mustQuery(b, adm, "SELECT COUNT(*) FROM PROCESSLIST"); r.rows[0][0] != "1000" {
		b.Fatalf("sessions: %v", r.rows)
	}
	mustQuery(b, adm, "SELECT * FROM PROCESSLIST p JOIN THREAD_POOL_GROUPS g USING (GROUP_ID)")
	runtime.GC()
	engineKB := float64(residentKB(b) - before)
	for _, c := range []struct{ name, q string }{
		{"count-groups", "SELECT COUNT(*) FROM information_schema.THREAD_POOL_GROUPS"},
		{"processlist-like", "SELECT ID, INFO FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP%'"},
		{"processlist-group-by", "SELECT GROUP_ID, COUNT(*) FROM PROCESSLIST GROUP BY GROUP_ID HAVING COUNT(*) > 1"},
		{"processlist-join-groups", "SELECT g.GROUP_ID, COUNT(*), MAX(g.CONNECTIONS) FROM PROCESSLIST p JOIN THREAD_POOL_GROUPS g USING (GROUP_ID) GROUP BY 1"},
		{"processlist-all", "SELECT * FROM PROCESSLIST"},
		{"show-processlist", "SHOW FULL PROCESSLIST"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				mustQuery(b, adm, c.q)
			}
			b.ReportMetric(engineKB, "engine-RSS-KB")
		})
	}
}

// residentKB is the test process's resident set size.
func residentKB(t testing.TB) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
