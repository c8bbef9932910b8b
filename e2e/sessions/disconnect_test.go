package sessions

import (
	"errors"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// disconnectAfter is how long a statement runs before its client drops the
// connection: the proxy watches a client for disconnects only once its
// statement has run for a second.
const disconnectAfter = 1500 * time.Millisecond

// TestClientDisconnectMidQuery drops client connections while their
// statements run: nothing may keep running on the server for nobody,
// locks must be released, and the pool must get all its connections back.
func TestClientDisconnectMidQuery(t *testing.T) {
	root := env.Root(t)
	freshTable(t, root, "dc_t", "(id INT PRIMARY KEY, v INT)", "VALUES (1, 0), (2, 0)")
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 2 })
	killLeftovers(t, root, "%SLEEP(30)%")
	killLeftovers(t, root, "%seq_1_to_%")

	// abortAfter runs q on r and drops the connection once q has run for
	// disconnectAfter.
	abortAfter := func(t *testing.T, r *rawSession, q string) {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			_, err := r.Rows(q)
			done <- err
		}()
		waitExecuting(t, px, r.ID)
		start := time.Now()
		select {
		case err := <-done:
			t.Fatalf("%s ended before the disconnect: %v", q, err)
		case <-time.After(disconnectAfter):
		}
		r.Abort()
		if err := <-done; err == nil {
			t.Fatalf("%s succeeded on a dropped connection", q)
		}
		t.Logf("dropped the client after %s", time.Since(start).Round(time.Millisecond))
	}
	// cleanAfter waits for the proxy and the server to forget the
	// dropped session.
	cleanAfter := func(t *testing.T, id uint32, pattern string) {
		t.Helper()
		start := time.Now()
		eventually(t, waitTimeout, "the dropped client's statement to stop on the server", func() bool {
			return runningLike(t, root, pattern) == 0
		})
		waitGone(t, px, id)
		waitPoolIdle(t, px)
		t.Logf("server and pool clean %s after the disconnect", time.Since(start).Round(time.Millisecond))
		if st := px.Pool.Stats(); st.Open != st.Size {
			t.Errorf("pool has %d connections, size %d", st.Open, st.Size)
		}
	}

	t.Run("sleep", func(t *testing.T) {
		r := openRaw(t, px.Addr, proxytest.User, proxytest.Password, proxytest.DB)
		abortAfter(t, r, sleepQuery)
		cleanAfter(t, r.ID, "%SLEEP(30)%")
	})

	t.Run("row_lock", func(t *testing.T) {
		r := openRaw(t, px.Addr, proxytest.User, proxytest.Password, proxytest.DB)
		mustExec(t, r, "BEGIN", "SELECT v FROM dc_t WHERE id = 1 FOR UPDATE", "UPDATE dc_t SET v = 99 WHERE id = 2")
		waitPinned(t, px, r.ID, "transaction")
		abortAfter(t, r, sleepQuery)
		cleanAfter(t, r.ID, "%SLEEP(30)%")
		// The transaction was rolled back and its locks released.
		s := openSession(t, px.DSN())
		mustExec(t, s, "SET SESSION innodb_lock_wait_timeout = 2")
		mustExec(t, s, "UPDATE dc_t SET v = v + 1 WHERE id = 1")
		wantInt(t, s, "SELECT v FROM dc_t WHERE id = 2", 0)
	})

	t.Run("large_result", func(t *testing.T) {
		r := openRaw(t, px.Addr, proxytest.User, proxytest.Password, proxytest.DB)
		// Far more than the socket buffers hold, and far more than could
		// be produced in the time the test waits: only a KILL ends it.
		const q = "SELECT seq, REPEAT('x', 500) FROM seq_1_to_100000000"
		rows := 0
		errDropped := errors.New("dropped")
		var res gomysql.Result
		err := r.c.ExecuteSelectStreaming(q, &res, func(row []gomysql.FieldValue) error {
			rows++
			if rows == 5000 {
				r.Abort()
				return errDropped
			}
			return nil
		}, nil)
		if err == nil {
			t.Fatalf("streaming ended without error after %d rows", rows)
		}
		cleanAfter(t, r.ID, "%seq_1_to_%")
	})

	t.Run("large_result_not_read", func(t *testing.T) {
		// The client reads nothing of a large result, so the proxy blocks
		// writing to it, and then drops the connection.
		r := openRaw(t, px.Addr, proxytest.User, proxytest.Password, proxytest.DB)
		const q = "SELECT seq, REPEAT('y', 500) FROM seq_1_to_100000000"
		r.c.ResetSequence()
		if err := r.c.WritePacket(append([]byte{0, 0, 0, 0, 0x03}, q...)); err != nil {
			t.Fatal(err)
		}
		waitExecuting(t, px, r.ID)
		<-time.After(disconnectAfter) // the scenario: the result fills the socket buffers meanwhile
		r.Abort()
		// The statement is killed and the rest of its result read for at
		// most 2 s (drainLimit); then the backend connection is closed,
		// which ends the statement on the server whatever it was doing.
		start := time.Now()
		cleanAfter(t, r.ID, "%seq_1_to_%")
		if d := time.Since(start); d > 4*time.Second {
			t.Errorf("the server and the pool were clean %s after the client left, want within 4 s", d.Round(time.Millisecond))
		}
	})
}
