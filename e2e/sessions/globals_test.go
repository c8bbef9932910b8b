package sessions

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// TestGlobalsReachNewSessions: after SET GLOBAL, a session opened next
// through tpproxy starts from the new global value as a direct one does,
// on pooled connections dialed before the change, while a session opened
// before keeps its old value; for a SET GLOBAL through tpproxy at once, for
// one made elsewhere within the pool's globals interval.
func TestGlobalsReachNewSessions(t *testing.T) {
	root := env.Root(t)
	var oldMode string
	if err := root.QueryRow("SELECT @@GLOBAL.sql_mode").Scan(&oldMode); err != nil {
		t.Fatal(err)
	}
	var oldPacket int64
	if err := root.QueryRow("SELECT @@GLOBAL.max_allowed_packet").Scan(&oldPacket); err != nil {
		t.Fatal(err)
	}
	mustRoot := func(q string) {
		t.Helper()
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mustRoot("GRANT SUPER ON *.* TO '" + proxytest.User + "'@'%'")
	t.Cleanup(func() {
		_, _ = root.Exec("REVOKE SUPER ON *.* FROM '" + proxytest.User + "'@'%'")
		_, _ = root.Exec(fmt.Sprintf("SET GLOBAL sql_mode = '%s'", oldMode))
		_, _ = root.Exec(fmt.Sprintf("SET GLOBAL max_allowed_packet = %d", oldPacket))
		_, _ = root.Exec("SET GLOBAL net_read_timeout = DEFAULT")
	})
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 2 })
	// Warm every pooled connection under the old globals.
	warm := []*session{openSession(t, px.DSN()), openSession(t, px.DSN())}
	for _, s := range warm {
		wantString(t, s, "SELECT @@SESSION.sql_mode", oldMode)
	}
	oldDirect, oldProxy := openSession(t, env.Server(t).DSN(proxytest.User, proxytest.Password, proxytest.DB)), warm[0]

	t.Run("through_proxy", func(t *testing.T) {
		a := openSession(t, px.DSN())
		mustExec(t, a, "SET GLOBAL sql_mode = ''")
		// Immediately: the very next session sees it.
		for range 3 {
			n := openSession(t, px.DSN())
			wantString(t, n, "SELECT @@SESSION.sql_mode", "")
			n.Close()
		}
		d := openSession(t, env.Server(t).DSN(proxytest.User, proxytest.Password, proxytest.DB))
		wantString(t, d, "SELECT @@SESSION.sql_mode", "")
		// Sessions opened before keep theirs, on any connection.
		wantString(t, oldDirect, "SELECT @@SESSION.sql_mode", oldMode)
		for range 3 {
			wantString(t, oldProxy, "SELECT @@SESSION.sql_mode", oldMode)
			wantString(t, a, "SELECT @@SESSION.sql_mode", oldMode)
		}
	})

	t.Run("elsewhere", func(t *testing.T) {
		mustRoot("SET GLOBAL net_read_timeout = 77")
		eventually(t, 10*time.Second, "a new session to get the new net_read_timeout", func() bool {
			n := openSession(t, px.DSN())
			defer n.Close()
			return mustInt(t, n, "SELECT @@SESSION.net_read_timeout") == 77
		})
		if got := mustInt(t, oldProxy, "SELECT @@SESSION.net_read_timeout"); got == 77 {
			t.Fatalf("a session opened before the change took the new global value")
		}
	})

	t.Run("max_allowed_packet", func(t *testing.T) {
		a := openSession(t, px.DSN())
		mustExec(t, a, fmt.Sprintf("SET GLOBAL max_allowed_packet = %d", 64<<20))
		n := openSession(t, px.DSN())
		wantInt(t, n, "SELECT @@SESSION.max_allowed_packet", 64<<20)
		blob := make([]byte, 20<<20)
		for i := range blob {
			blob[i] = 'a' + byte(i%26)
		}
		mustExec(t, n, "CREATE TEMPORARY TABLE big_t (b LONGBLOB)")
		if _, err := n.Exec("INSERT INTO big_t VALUES ('" + string(blob) + "')"); err != nil {
			t.Fatalf("20 MB query after raising max_allowed_packet to 64M: %v", err)
		}
		wantInt(t, n, "SELECT LENGTH(b) FROM big_t", int64(len(blob)))
	})
}

// TestAutocommitOffIdle: sessions with autocommit=0 (PyMySQL's and
// MySQLdb's default) hold no backend connection while idle outside a
// transaction, so 12 of them share a pool of 4.
func TestAutocommitOffIdle(t *testing.T) {
	root := env.Root(t)
	freshTable(t, root, "ac_t", "(id INT AUTO_INCREMENT PRIMARY KEY, v INT)", "(v) VALUES (1)")
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.Size = 4
		o.Pool.AcquireTimeout = 2 * time.Second
	})
	var ss []*session
	for range 12 {
		s := openSession(t, px.DSN())
		mustExec(t, s, "SET autocommit = 0")
		wantInt(t, s, "SELECT COUNT(*) >= 1 FROM ac_t", 1) // opens a transaction
		mustExec(t, s, "COMMIT")
		ss = append(ss, s)
	}
	for _, s := range ss {
		waitUnpinned(t, px, s.ID)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(ss))
	for i, s := range ss {
		wg.Go(func() {
			if _, err := s.Exec(fmt.Sprintf("INSERT INTO ac_t (v) VALUES (%d)", 1000+i)); err != nil {
				errs <- err
				return
			}
			if _, err := s.Exec("COMMIT"); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("autocommit=0 session on a pool of 4: %v", err)
	}
	if n := rootInt(t, root, "SELECT COUNT(*) FROM ac_t WHERE v >= 1000"); n != 12 {
		t.Fatalf("%d rows committed, want 12", n)
	}
	for _, s := range ss {
		wantInt(t, s, "SELECT @@autocommit", 0)
	}
	// Uncommitted work stays invisible to others until COMMIT.
	mustExec(t, ss[0], "INSERT INTO ac_t (v) VALUES (5000)")
	waitPinned(t, px, ss[0].ID, "transaction")
	if n := rootInt(t, root, "SELECT COUNT(*) FROM ac_t WHERE v = 5000"); n != 0 {
		t.Fatalf("uncommitted row visible to others (%d)", n)
	}
	mustExec(t, ss[0], "ROLLBACK")
	waitUnpinned(t, px, ss[0].ID)
	if n := rootInt(t, root, "SELECT COUNT(*) FROM ac_t WHERE v = 5000"); n != 0 {
		t.Fatalf("uncommitted row visible to others (%d)", n)
	}
}

// wantString fails the test unless q returns want.
func wantString(t testing.TB, c querier, q, want string) {
	t.Helper()
	if got := mustRow(t, c, q).str(0); got != want {
		t.Fatalf("%s = %q, want %q", q, got, want)
	}
}
