package prepared

import (
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// appThreads lists the server threads of the proxy's account.
func appThreads(t testing.TB, root *sql.DB) []int64 {
	t.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	rows, err := root.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = '"+proxytest.User+"'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestKilledBackend covers a backend connection that dies under a prepared
// statement (a DBA's KILL, a server-side timeout, a failover): the
// application's statement handle keeps working, because the proxy
// prepares it again on a new connection, and no error reaches the client.
func TestKilledBackend(t *testing.T) {
	root := env.Root(t)
	freshTable(t, root, "ps_kill", "(id INT PRIMARY KEY, v VARCHAR(10))", "VALUES (1, 'one'), (2, 'two')")
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 2 })
	s := openSession(t, psDSN(px))
	st := s.prepare(t, "SELECT v FROM ps_kill WHERE id = ?")
	if got, err := queryString(st, 1); err != nil || got != "one" {
		t.Fatalf("before the kill: %q, %v", got, err)
	}
	for round := range 2 {
		ids := appThreads(t, root)
		if len(ids) == 0 {
			t.Fatal("the proxy has no connections on the server")
		}
		for _, id := range ids {
			ctx, cancel := opCtx()
			_, err := root.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
			cancel()
			if code, _ := mysqlErr(err); err != nil && code != 1094 { // already gone
				t.Fatalf("KILL CONNECTION %d: %v", id, err)
			}
		}
		eventually(t, waitTimeout, fmt.Sprintf("killed threads %v gone from the server", ids), func() bool {
			now := appThreads(t, root)
			return !slices.ContainsFunc(ids, func(id int64) bool { return slices.Contains(now, id) })
		})
		for i, id := range []int{2, 1} {
			want := []string{"two", "one"}[i]
			if got, err := queryString(st, id); err != nil || got != want {
				t.Fatalf("round %d: execute after every backend was killed: %q, %v; want %q", round, got, err, want)
			}
		}
	}
	t.Logf("pool %+v", px.Pool.Stats())
}

// TestKillPreparedQuery covers KILL QUERY of a session whose prepared
// statement is running (a runaway report query): the statement ends as it
// does on the server itself, and the session and its statement go on.
func TestKillPreparedQuery(t *testing.T) {
	root := env.Root(t)
	px := env.StartProxy(t)
	t.Cleanup(func() { killSleepers(t, root) })
	var want outcome
	for _, tg := range []struct{ name, dsn string }{{"direct", directPSDSN(t)}, {"proxy", psDSN(px)}} {
		t.Run(tg.name, func(t *testing.T) {
			target, killer := openSession(t, tg.dsn), openSession(t, tg.dsn)
			sleep := target.prepare(t, "SELECT SLEEP(?)")
			done := make(chan outcome, 1)
			go func() {
				v, err := queryString(sleep, 30)
				code, _ := mysqlErr(err)
				done <- outcome{value: v, code: code, err: err}
			}()
			eventually(t, waitTimeout, "the prepared SLEEP running on the server", func() bool {
				return rootInt(t, root, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = '"+proxytest.User+"' AND INFO LIKE 'SELECT SLEEP(%'") == 1
			})
			killer.mustExec(t, fmt.Sprintf("KILL QUERY %d", target.ID))
			var got outcome
			select {
			case got = <-done:
			case <-time.After(waitTimeout):
				t.Fatalf("the prepared SLEEP still runs %s after KILL QUERY", waitTimeout)
			}
			t.Logf("KILL QUERY during a prepared SLEEP(30): %s", got)
			if tg.name == "direct" {
				want = got
			} else if got.value != want.value || got.code != want.code || (got.err == nil) != (want.err == nil) {
				t.Errorf("the killed prepared statement answered %s, the server itself %s", got, want)
			}
			if v, err := queryString(sleep, 0); err != nil || v != "0" {
				t.Fatalf("the statement after KILL QUERY: %q, %v", v, err)
			}
		})
	}
}

// outcome is what a client sees of a statement: its value or its error.
type outcome struct {
	value string
	code  uint16
	err   error
}

func (o outcome) String() string {
	if o.err != nil {
		return fmt.Sprintf("error %d (%v)", o.code, o.err)
	}
	return fmt.Sprintf("value %q", o.value)
}

// killSleepers kills what TestKillPreparedQuery may have left running.
func killSleepers(t testing.TB, root *sql.DB) {
	ctx, cancel := opCtx()
	defer cancel()
	rows, err := root.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = '"+proxytest.User+"' AND INFO LIKE 'SELECT SLEEP(%'")
	if err != nil {
		return
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if rows.Scan(&id) == nil {
			ids = append(ids, id)
		}
	}
	_ = rows.Close()
	for _, id := range ids {
		_, _ = root.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", id))
	}
}

// TestKilledBackendUnderCursor covers a backend connection that dies while
// a session has a cursor open on it: the next FETCH answers error 9003
// instead of hanging, and, as README documents for every session whose
// pinned connection is lost, the proxy then ends the session. The pool
// recovers: a new session opens a cursor on the same SQL and reads it all.
func TestKilledBackendUnderCursor(t *testing.T) {
	root := env.Root(t)
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 2 })
	c := rawConnect(t, px.Addr)
	st := c.mustPrepare(t, cursorQuery(t), 0)
	res, err := c.execute(executePacket(st.ID, cursorReadOnly, false, nil))
	if err != nil || res.Err != nil || res.HeaderStatus&statusCursorExists == 0 {
		t.Fatalf("open a cursor: %v %v status %#x", err, res.Err, res.HeaderStatus)
	}
	thread := waitPinned(t, px, c.connID, "cursor").BackendThread
	rootExec(t, root, fmt.Sprintf("KILL CONNECTION %d", thread))
	eventually(t, waitTimeout, fmt.Sprintf("killed thread %d gone", thread), func() bool {
		return !slices.Contains(appThreads(t, root), int64(thread))
	})
	f, err := c.fetch(st.ID, 10, res.Columns)
	wantErrCode(t, "fetch from a cursor whose backend was killed", f, err, codeBackendLost)
	if err := c.expectClosed(); err != nil {
		t.Fatalf("after losing the cursor's backend: %v", err)
	}

	d := rawConnect(t, px.Addr)
	st = d.mustPrepare(t, cursorQuery(t), 0)
	res, err = d.execute(executePacket(st.ID, cursorReadOnly, false, nil))
	if err != nil || res.Err != nil || res.HeaderStatus&statusCursorExists == 0 {
		t.Fatalf("a new cursor after the kill: %v %v status %#x", err, res.Err, res.HeaderStatus)
	}
	f, err = d.fetch(st.ID, 200, res.Columns)
	if err != nil || f.Err != nil || len(f.Rows) != 100 || f.Status&statusLastRowSent == 0 {
		t.Fatalf("fetch from the new cursor: %v %v, %d rows, status %#x", err, f.Err, len(f.Rows), f.Status)
	}
	waitUnpinned(t, px, d.connID)
}
