package prepared

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// sharedQueries are the statements every session of TestStatementsShared
// prepares; want is the answer for argument arg.
var sharedQueries = []struct {
	sql  string
	want func(arg int) string
}{
	{"SELECT v FROM ps_share WHERE id = ?", func(arg int) string { return []string{"one", "two", "three"}[arg-1] }},
	{"SELECT ? + 1", func(arg int) string { return strconv.Itoa(arg + 1) }},
	{"SELECT COUNT(*) FROM ps_share WHERE id <= ?", strconv.Itoa},
}

// sharedArg is the argument query q gets in step n: ps_share's ids are
// 1..3.
func sharedArg(q, n int) int {
	if q == 1 {
		return n
	}
	return n%3 + 1
}

// TestStatementsShared covers many application instances preparing the
// same statements: 100 sessions (each its own connection, as 100 app
// servers would be) prepare the same three statements and execute them.
// The server must hold at most pool size × 3 statements, not 300, and the
// pool's count of statements it has prepared must agree with the server's
// once the proxy is quiet, both while the clients hold their statements and
// after they closed them.
func TestStatementsShared(t *testing.T) {
	root := env.Root(t)
	freshTable(t, root, "ps_share", "(id INT PRIMARY KEY, v VARCHAR(20))", "VALUES (1, 'one'), (2, 'two'), (3, 'three')")
	px := env.StartProxy(t) // pool of 4
	waitNoServerStatements(t, root)
	const sessions = 100
	limit := int64(px.Pool.Stats().Size * len(sharedQueries))

	ss := make([]*session, sessions)
	for i := range ss {
		ss[i] = openSession(t, psDSN(px))
	}
	ctx := testCtx(t, 2*time.Minute)
	ready := make(chan error, sessions)
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	defer releaseAll()
	done := make(chan error, sessions*len(sharedQueries))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() {
			stmts, err := prepareAndRun(ctx, s, i)
			ready <- err
			select {
			case <-release:
			case <-ctx.Done():
			}
			for _, st := range stmts {
				if err := st.Close(); err != nil {
					done <- errorf(i, "close: %w", err)
				}
			}
		})
	}
	for range sessions {
		if err := <-ready; err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	// Every session holds three prepared statements and is idle.
	checkShared(t, root, px, limit, "while 100 sessions hold 3 statements each")
	if n := serverPrepared(t, root); n < int64(len(sharedQueries)) {
		t.Errorf("while 100 sessions hold 3 statements each the server holds %d, want at least %d: the statements do not stay prepared", n, len(sharedQueries))
	}
	releaseAll()
	wg.Wait()
	close(done)
	for err := range done {
		t.Error(err)
	}
	checkShared(t, root, px, limit, "after the sessions closed their statements")
	for _, s := range ss {
		s.Close()
	}
	checkShared(t, root, px, limit, "after the sessions disconnected")
	t.Logf("pool %+v; proxy %+v", px.Pool.Stats(), px.Server.Stats())
}

// prepareAndRun prepares the shared statements on the session and runs
// each a few times; the statements stay open.
func prepareAndRun(ctx context.Context, s *session, worker int) ([]*sql.Stmt, error) {
	var stmts []*sql.Stmt
	for _, q := range sharedQueries {
		st, err := s.conn.PrepareContext(ctx, q.sql)
		if err != nil {
			return stmts, errorf(worker, "prepare %s: %w", q.sql, err)
		}
		stmts = append(stmts, st)
	}
	for r := range 3 {
		n := worker*10 + r
		for qi, q := range sharedQueries {
			var got string
			arg := sharedArg(qi, n)
			if err := stmts[qi].QueryRowContext(ctx, arg).Scan(&got); err != nil {
				return stmts, errorf(worker, "%s with %d: %w", q.sql, arg, err)
			}
			if want := q.want(arg); got != want {
				return stmts, errorf(worker, "%s with %d = %q, want %q", q.sql, arg, got, want)
			}
		}
	}
	return stmts, nil
}

// checkShared asserts the server holds at most limit statements and that
// the pool's PreparedOpen agrees with the server's Prepared_stmt_count
// (COM_STMT_CLOSE has no answer, so the server may trail the pool for a
// moment).
func checkShared(t *testing.T, root *sql.DB, px *proxytest.Proxy, limit int64, when string) {
	t.Helper()
	server := serverPrepared(t, root)
	if server > limit {
		t.Errorf("%s: the server holds %d prepared statements, want at most %d (pool size × statements)", when, server, limit)
	}
	var open int64
	if !proxytest.Poll(waitTimeout, 10*time.Millisecond, func() bool {
		server = serverPrepared(t, root)
		open = px.Pool.Stats().PreparedOpen
		return open == server
	}) {
		t.Errorf("%s: the pool counts %d statements prepared on its connections, the server %d", when, open, server)
	}
	t.Logf("%s: %d statements prepared on the server", when, server)
}

// TestPreparedLRU covers an application with more distinct statements than
// a backend connection may keep (MaxPreparedPerConn=2 on a pool of 2): six
// statements executed round robin keep answering right while the proxy
// closes the least recently used statement on a connection to make room
// and prepares it again when it comes back, so the server never holds more
// than 2 × 2. The raw part executes without parameter types
// (new_params_bound_flag=0) after the first execute, so every re-prepared
// statement needs the types the client sent once.
func TestPreparedLRU(t *testing.T) {
	root := env.Root(t)
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.Size = 2
		o.Pool.MaxPreparedPerConn = 2
	})
	waitNoServerStatements(t, root)
	const statements, rounds, limit = 6, 20, 4

	s := openSession(t, psDSN(px))
	stmts := make([]*sql.Stmt, statements)
	for k := range stmts {
		stmts[k] = s.prepare(t, fmt.Sprintf("SELECT ? + %d", k+1))
	}
	c := rawConnect(t, px.Addr)
	raws := make([]stmt, statements)
	for k := range raws {
		raws[k] = c.mustPrepare(t, fmt.Sprintf("SELECT CONCAT(?, '-%d')", k+1), 1)
		res, err := c.execute(executePacket(raws[k].ID, cursorNone, true, []param{strParam("first")}))
		if err != nil {
			t.Fatal(err)
		}
		wantRow(t, fmt.Sprintf("raw statement %d, first execute", k), res, fmt.Sprintf("first-%d", k+1))
	}
	for r := range rounds {
		for k, st := range stmts {
			v := r*100 + k
			got, err := queryString(st, v)
			if err != nil {
				t.Fatalf("round %d, statement %d: %v", r, k, err)
			}
			if want := strconv.Itoa(v + k + 1); got != want {
				t.Fatalf("round %d: SELECT ? + %d with %d = %s, want %s", r, k+1, v, got, want)
			}
			arg := fmt.Sprintf("r%d", r)
			res, err := c.execute(executePacket(raws[k].ID, cursorNone, false, []param{strParam(arg)}))
			if err != nil {
				t.Fatal(err)
			}
			wantRow(t, fmt.Sprintf("round %d, raw statement %d without types", r, k), res, fmt.Sprintf("%s-%d", arg, k+1))
		}
	}
	// The same inside a transaction: evictions and prepares on the
	// connection the transaction holds.
	s.mustExec(t, "BEGIN")
	for r := range 3 {
		for k, st := range stmts {
			if got, err := queryString(st, r); err != nil || got != strconv.Itoa(r+k+1) {
				t.Fatalf("in a transaction, round %d: SELECT ? + %d with %d = %q, %v", r, k+1, r, got, err)
			}
		}
	}
	s.mustExec(t, "COMMIT")

	// The proxy is quiet: every eviction's COM_STMT_CLOSE went out before
	// the PREPARE that needed the room, on the same connection.
	if n := serverPrepared(t, root); n > limit {
		t.Errorf("the server holds %d prepared statements with 12 client statements open, want at most %d (2 connections × 2)", n, limit)
	}
	st := px.Pool.Stats()
	if st.PreparedEvictions == 0 {
		t.Errorf("no evictions with 12 statements on 2 connections of 2 each: %+v", st)
	}
	if st.PreparedOpen > limit {
		t.Errorf("the pool counts %d statements open, want at most %d", st.PreparedOpen, limit)
	}
	t.Logf("pool %+v", st)
}
