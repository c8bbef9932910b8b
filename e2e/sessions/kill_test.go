package sessions

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/proxy"
)

const sleepQuery = "SELECT SLEEP(30)"

// outcome is what a client sees of a statement: its first value or its
// error code (-1 for a connection-level failure without a server error).
type outcome struct {
	value string
	code  int
	err   error
	took  time.Duration
}

func (o outcome) String() string {
	if o.err != nil {
		return fmt.Sprintf("error %d (%v) after %s", o.code, o.err, o.took.Round(time.Millisecond))
	}
	return fmt.Sprintf("value %q after %s", o.value, o.took.Round(time.Millisecond))
}

// same compares what a client can tell: the value, or the error code.
func (o outcome) same(p outcome) bool {
	if (o.err == nil) != (p.err == nil) {
		return false
	}
	return o.value == p.value && o.code == p.code
}

// runAsync starts q on s and delivers what the client saw. The statement
// is abandoned (the client closes its connection) when the test ends.
func runAsync(t *testing.T, s *session, q string) <-chan outcome {
	ch := make(chan outcome, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	t.Cleanup(cancel)
	go func() {
		defer cancel()
		start := time.Now()
		rows, err := s.RowsContext(ctx, q)
		o := outcome{err: err, took: time.Since(start)}
		switch {
		case err != nil && errCode(err) != 0:
			o.code = int(errCode(err))
		case err != nil:
			o.code = -1
		case len(rows) > 0:
			o.value = rows[0].str(0)
		}
		ch <- o
	}()
	return ch
}

// await waits for an outcome no longer than bound.
func await(t *testing.T, ch <-chan outcome, bound time.Duration, what string) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(bound):
		t.Fatalf("%s still running after %s", what, bound)
		return outcome{}
	}
}

// directKill runs sleepQuery on a direct server connection and kills it
// from another one with killStmt ("KILL QUERY" or "KILL"): the server's
// behaviour the proxy must reproduce.
func directKill(t *testing.T, killStmt string) outcome {
	t.Helper()
	root := env.Root(t)
	target, killer := openSession(t, env.DirectDSN(t)), openSession(t, env.DirectDSN(t))
	ch := runAsync(t, target, sleepQuery)
	eventually(t, waitTimeout, "the direct SLEEP to start", func() bool {
		return rootInt(t, root, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND INFO = ?", target.ID, sleepQuery) == 1
	})
	mustExec(t, killer, fmt.Sprintf("%s %d", killStmt, target.ID))
	o := await(t, ch, waitTimeout, "directly killed SLEEP")
	t.Logf("server: %s %d during %s -> %s", killStmt, target.ID, sleepQuery, o)
	return o
}

// waitSleeping waits until proxy session id runs sleepQuery on its
// backend, as the server sees it.
func waitSleeping(t *testing.T, px *proxytest.Proxy, root *sql.DB, id uint32) {
	t.Helper()
	th := waitExecuting(t, px, id)
	eventually(t, waitTimeout, "SLEEP running on the session's backend", func() bool {
		return rootInt(t, root, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND INFO = ?", th, sleepQuery) == 1
	})
}

// TestKill checks KILL [CONNECTION|QUERY] of proxy connection ids: it
// reaches the right backend statement, behaves like the server's KILL,
// leaves nothing running, and respects ownership.
func TestKill(t *testing.T) {
	root := env.Root(t)
	// tpp_other's server account (backend.identity passthrough).
	for _, q := range []string{"CREATE USER IF NOT EXISTS 'tpp_other'@'%' IDENTIFIED BY 'other-secret'",
		"GRANT ALL ON " + proxytest.DB + ".* TO 'tpp_other'@'%'"} {
		if _, err := root.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.Size = 3
		o.Proxy.Users = append(o.Proxy.Users, proxy.User{Name: "tpp_other", Plain: "other-secret"})
	})
	killLeftovers(t, root, "%SLEEP(30)%")

	noSleep := func(t *testing.T) {
		t.Helper()
		eventually(t, waitTimeout, "no SLEEP left on the server", func() bool {
			return runningLike(t, root, "%SLEEP(30)%") == 0
		})
		waitPoolIdle(t, px)
		if st := px.Pool.Stats(); st.Open != st.Size {
			t.Errorf("pool has %d connections, size %d: a backend connection was lost", st.Open, st.Size)
		}
	}

	t.Run("query", func(t *testing.T) {
		want := directKill(t, "KILL QUERY")
		target, killer := openSession(t, px.DSN()), openSession(t, px.DSN())
		ch := runAsync(t, target, sleepQuery)
		waitSleeping(t, px, root, target.ID)
		start := time.Now()
		mustExec(t, killer, fmt.Sprintf("KILL QUERY %d", target.ID))
		got := await(t, ch, waitTimeout, "killed SLEEP")
		t.Logf("proxy: KILL QUERY during %s -> %s (%s after the KILL)", sleepQuery, got, time.Since(start).Round(time.Millisecond))
		if !got.same(want) {
			t.Errorf("target got %s, the server gives %s", got, want)
		}
		// The target goes on as if nothing happened.
		wantInt(t, target, "SELECT 1", 1)
		wantInt(t, target, "SELECT CONNECTION_ID()", int64(target.ID))
		wantInt(t, killer, "SELECT 2", 2)
		noSleep(t)
	})

	for _, stmt := range []string{"KILL", "KILL CONNECTION"} {
		t.Run(stmt+"_running", func(t *testing.T) {
			want := directKill(t, stmt)
			target, killer := openSession(t, px.DSN()), openSession(t, px.DSN())
			ch := runAsync(t, target, sleepQuery)
			waitSleeping(t, px, root, target.ID)
			mustExec(t, killer, fmt.Sprintf("%s %d", stmt, target.ID))
			got := await(t, ch, waitTimeout, "SLEEP of a killed connection")
			t.Logf("proxy: %s during %s -> %s", stmt, sleepQuery, got)
			if !got.same(want) {
				t.Errorf("target got %s, the server gives %s", got, want)
			}
			waitGone(t, px, target.ID)
			if _, err := target.Rows("SELECT 1"); err == nil {
				t.Errorf("a killed connection still answers")
			}
			wantInt(t, killer, "SELECT 2", 2)
			noSleep(t)
		})
	}

	t.Run("connection_idle", func(t *testing.T) {
		target, killer := openSession(t, px.DSN()), openSession(t, px.DSN())
		mustExec(t, target, "SET @tpp_k = 1") // pinned: the kill must free its backend
		waitPinned(t, px, target.ID, "user_variable")
		mustExec(t, killer, fmt.Sprintf("KILL %d", target.ID))
		waitGone(t, px, target.ID)
		if _, err := target.Rows("SELECT 1"); err == nil {
			t.Errorf("a killed connection still answers")
		}
		noSleep(t)
	})

	t.Run("unknown_id", func(t *testing.T) {
		killer := openSession(t, px.DSN())
		for _, q := range []string{"KILL 999999", "KILL QUERY 999999", "KILL CONNECTION 999999"} {
			wantErr(t, killer, q, erNoSuchThread)
		}
		wantInt(t, killer, "SELECT 1", 1)
	})

	t.Run("other_user", func(t *testing.T) {
		// tpp_other may not kill app's sessions (app, with ALL
		// PRIVILEGES, may kill anyone's: TestKillForms).
		app := openSession(t, px.DSN())
		ch := runAsync(t, app, sleepQuery)
		waitSleeping(t, px, root, app.ID)
		other := openSession(t, px.DSNFor("tpp_other", "other-secret", proxytest.DB))
		for _, q := range []string{"KILL %d", "KILL QUERY %d", "KILL CONNECTION %d"} {
			wantErr(t, other, fmt.Sprintf(q, app.ID), erKillDenied)
		}
		owner := openSession(t, px.DSN())
		select {
		case o := <-ch:
			t.Fatalf("the other user's statement ended: %s", o)
		default:
		}
		if in, ok := sessionInfo(px, app.ID); !ok || !in.Executing {
			t.Fatalf("the other user's session is not running its statement any more: %+v", in)
		}
		// Its owner may kill it.
		mustExec(t, owner, fmt.Sprintf("KILL QUERY %d", app.ID))
		if o := await(t, ch, waitTimeout, "SLEEP killed by its owner"); o.err != nil && o.code != 1317 {
			t.Errorf("killed SLEEP: %s", o)
		}
		wantInt(t, other, "SELECT 1", 1)
		wantInt(t, app, "SELECT 1", 1)
		noSleep(t)
	})
}
