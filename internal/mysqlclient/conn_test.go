package mysqlclient_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlclient"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// serverCode returns the code of the server error in err, 0 if none.
func serverCode(err error) uint16 {
	var se *mysqlwire.Error
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

func TestConnectAndPing(t *testing.T) {
	c := connect(t, testConfig(t))
	if c.ConnectionID() == 0 {
		t.Error("connection id 0")
	}
	if v := c.ServerVersion(); v == "" || strings.HasPrefix(v, "5.5.5-") {
		t.Errorf("server version %q", v)
	}
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}
	// The id must be the server's: the server finds this very connection.
	q := "SELECT 1 FROM DUAL WHERE CONNECTION_ID() = " + strconv.FormatUint(uint64(c.ConnectionID()), 10)
	if n := rowsOf(t, c, q); n != 1 {
		t.Errorf("CONNECTION_ID() differs from ConnectionID() %d", c.ConnectionID())
	}
	if n := rowsOf(t, c, "SELECT 1 FROM DUAL WHERE DATABASE() = '"+testDB+"'"); n != 1 {
		t.Error("default schema not selected at login")
	}
}

func TestLoginRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*mysqlclient.Config)
		code uint16
	}{
		{"wrong password", func(c *mysqlclient.Config) { c.Passwd = "wrong" }, 1045},
		{"unknown user", func(c *mysqlclient.Config) { c.User = "nobody" }, 1045},
		{"unknown database", func(c *mysqlclient.Config) { c.DBName = "no_such_db" }, 1049},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			tc.mod(&cfg)
			c, err := mysqlclient.Connect(context.Background(), cfg)
			if err == nil {
				c.Close()
				t.Fatal("login succeeded")
			}
			if got := serverCode(err); got != tc.code {
				t.Fatalf("got %v (code %d), want server error %d", err, got, tc.code)
			}
		})
	}
}

func TestAccounts(t *testing.T) {
	srv := server(t)
	for _, tc := range []struct {
		name string
		cfg  mysqlclient.Config
	}{
		{"ed25519", mysqlclient.Config{Addr: srv.Addr, User: ed25519User, Passwd: ed25519Pass}},
		{"mysql_native_password", mysqlclient.Config{Addr: srv.Addr, User: nativeUser, Passwd: nativePass}},
		{"empty password", mysqlclient.Config{Addr: srv.Addr, User: emptyUser}},
		{"auth switch", mysqlclient.WithInitialPlugin(
			mysqlclient.Config{Addr: srv.Addr, User: nativeUser, Passwd: nativePass}, "caching_sha2_password")},
		{"unix socket", mysqlclient.Config{Net: "unix", Addr: srv.Socket, User: "root"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.User == ed25519User && !haveEd25519 {
				t.Skip("the server has no ed25519 plugin")
			}
			c := connect(t, tc.cfg)
			want := tc.cfg.User + "@"
			if n := rowsOf(t, c, "SELECT 1 FROM DUAL WHERE CURRENT_USER() LIKE '"+want+"%'"); n != 1 {
				t.Errorf("not logged in as %s", tc.cfg.User)
			}
		})
	}
}

func TestTLS(t *testing.T) {
	srv := server(t)
	encrypted := "SHOW SESSION STATUS WHERE Variable_name = 'Ssl_cipher' AND Value <> ''"
	t.Run("verified", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.TLS = &tls.Config{RootCAs: testCAs, MinVersion: tls.VersionTLS12}
		c := connect(t, cfg)
		if n := rowsOf(t, c, encrypted); n != 1 {
			t.Error("connection not encrypted")
		}
		if n := rowsOf(t, c, "SELECT 1 UNION ALL SELECT 2"); n != 2 {
			t.Errorf("got %d rows over TLS, want 2", n)
		}
	})
	t.Run("DSN skip-verify", func(t *testing.T) {
		cfg, err := mysqlclient.FromDSN(srv.DSN(testUser, testPassword, testDB, "tls=skip-verify"))
		if err != nil {
			t.Fatal(err)
		}
		c := connect(t, cfg)
		if n := rowsOf(t, c, encrypted); n != 1 {
			t.Error("connection not encrypted")
		}
	})
	t.Run("unknown CA", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.TLS = &tls.Config{RootCAs: x509.NewCertPool()}
		c, err := mysqlclient.Connect(context.Background(), cfg)
		if err == nil {
			c.Close()
			t.Fatal("connected with an unverifiable certificate")
		}
		var uerr x509.UnknownAuthorityError
		if !errors.As(err, &uerr) {
			t.Fatalf("got %v, want an unknown-authority error", err)
		}
	})
}

func TestExec(t *testing.T) {
	c := connect(t, testConfig(t))
	mustExec(t, c, "DROP TABLE IF EXISTS exec_t", "CREATE TABLE exec_t (id INT PRIMARY KEY, v VARCHAR(20))")
	if n := rowsOf(t, c, "INSERT INTO exec_t VALUES (1, 'a'), (2, 'b'), (3, NULL)"); n != 0 {
		t.Errorf("INSERT reported %d rows", n)
	}
	if n, err := c.Exec([]byte("SELECT id, v FROM exec_t")); n != 3 || err != nil {
		t.Errorf("SELECT: %d rows, %v; want 3", n, err)
	}
	if n := rowsOf(t, c, "SELECT id FROM exec_t WHERE id > 100"); n != 0 {
		t.Errorf("empty SELECT reported %d rows", n)
	}
	if n := rowsOf(t, c, "UPDATE exec_t SET v = 'z' WHERE id = 1"); n != 0 {
		t.Errorf("UPDATE reported %d rows", n)
	}

	_, err := c.ExecString("SELECT * FROM no_such_table")
	if serverCode(err) != 1146 {
		t.Fatalf("got %v, want server error 1146", err)
	}
	if c.Broken() {
		t.Fatal("a server error broke the connection")
	}
	if n := rowsOf(t, c, "SELECT 1"); n != 1 {
		t.Errorf("after an error: %d rows, want 1", n)
	}

	// A query larger than the write buffer goes straight to the socket.
	long := "SELECT 1 FROM DUAL WHERE '" + strings.Repeat("x", 10000) + "' <> ''"
	if n := rowsOf(t, c, long); n != 1 {
		t.Errorf("long query: %d rows", n)
	}
	if n, err := c.Exec([]byte(long)); n != 1 || err != nil {
		t.Errorf("long query as bytes: %d rows, %v", n, err)
	}
}

func TestMultiResult(t *testing.T) {
	c := connect(t, testConfig(t))
	mustExec(t, c,
		"DROP PROCEDURE IF EXISTS two_sets",
		"CREATE PROCEDURE two_sets() BEGIN SELECT 1; SELECT 1 UNION ALL SELECT 2; END",
		"DROP PROCEDURE IF EXISTS set_then_error",
		"CREATE PROCEDURE set_then_error() BEGIN SELECT 1; SELECT * FROM no_such_table; END",
	)
	if n := rowsOf(t, c, "CALL two_sets()"); n != 3 {
		t.Errorf("CALL: %d rows, want 3", n)
	}
	s, err := c.Prepare("CALL two_sets()")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Execute(s); n != 3 || err != nil {
		t.Errorf("prepared CALL: %d rows, %v; want 3", n, err)
	}
	n, err := c.ExecString("CALL set_then_error()")
	if n != 1 || serverCode(err) != 1146 {
		t.Errorf("CALL with error: %d rows, %v; want 1 row then error 1146", n, err)
	}
	if n := rowsOf(t, c, "SELECT 1"); n != 1 || c.Broken() {
		t.Errorf("after the failed CALL: %d rows, broken %v", n, c.Broken())
	}
}

func TestMultiStatements(t *testing.T) {
	q := "SELECT 1; SELECT 1 UNION ALL SELECT 2; DO 1"
	c := connect(t, testConfig(t))
	if _, err := c.ExecString(q); serverCode(err) != 1064 {
		t.Errorf("without MultiStatements got %v, want syntax error 1064", err)
	}
	cfg := testConfig(t)
	cfg.MultiStatements = true
	c = connect(t, cfg)
	if n := rowsOf(t, c, q); n != 3 {
		t.Errorf("%d rows, want 3", n)
	}
}

func TestParams(t *testing.T) {
	cfg := testConfig(t)
	cfg.Params = map[string]string{"sql_mode": "'ANSI_QUOTES'"}
	c := connect(t, cfg)
	if n := rowsOf(t, c, "SELECT 1 FROM DUAL WHERE @@SESSION.sql_mode = 'ANSI_QUOTES'"); n != 1 {
		t.Error("session variable from Params not set")
	}
}

func TestLargeResult(t *testing.T) {
	c := connect(t, testConfig(t))
	mustExec(t, c, "DROP TABLE IF EXISTS ten",
		"CREATE TABLE ten (n INT PRIMARY KEY)",
		"INSERT INTO ten VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)")
	if n := rowsOf(t, c, "SELECT a.n, b.n, c.n, d.n, e.n FROM ten a, ten b, ten c, ten d, ten e"); n != 100000 {
		t.Errorf("got %d rows, want 100000", n)
	}
	// Rows larger than the read buffer, the buffer pool's buffers, and one
	// physical packet (16 MiB) in turn; then the stream must be in step.
	for _, size := range []int{5000, 100000, 17 << 20} {
		q := "SELECT REPEAT('x', " + strconv.Itoa(size) + ") FROM ten WHERE n < 2"
		if n := rowsOf(t, c, q); n != 2 {
			t.Errorf("rows of %d bytes: got %d rows, want 2", size, n)
		}
		if n := rowsOf(t, c, "SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3"); n != 3 {
			t.Errorf("after rows of %d bytes: %d rows, want 3", size, n)
		}
	}
}

func TestInterrupt(t *testing.T) {
	c := connect(t, testConfig(t))
	watch := connect(t, testConfig(t))
	done := make(chan error, 1)
	go func() {
		_, err := c.ExecString("SELECT SLEEP(5)")
		done <- err
	}()
	// Interrupt once the server is in the sleep, so the read is blocked.
	sleeping := "SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = " +
		strconv.FormatUint(uint64(c.ConnectionID()), 10) + " AND INFO LIKE 'SELECT SLEEP%'"
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(3 * time.Second); rowsOf(t, watch, sleeping) == 0; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatal("the statement never showed up in the processlist")
		}
	}
	start := time.Now()
	c.Interrupt()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Second):
		t.Fatal("Interrupt did not unblock the statement within a second")
	}
	t.Logf("unblocked after %v: %v", time.Since(start), err)
	if !errors.Is(err, mysqlclient.ErrInterrupted) || !errors.Is(err, mysqlclient.ErrBroken) {
		t.Errorf("got %v, want ErrInterrupted and ErrBroken", err)
	}
	if !c.Broken() {
		t.Error("not Broken after Interrupt")
	}
	if err := c.Ping(); !errors.Is(err, mysqlclient.ErrBroken) {
		t.Errorf("Ping after Interrupt: %v, want ErrBroken", err)
	}
}

func TestInterruptIdle(t *testing.T) {
	c := connect(t, testConfig(t))
	c.Interrupt()
	if !c.Broken() {
		t.Fatal("not Broken after Interrupt")
	}
	_, err := c.ExecString("SELECT REPEAT('x', 10000)")
	if !errors.Is(err, mysqlclient.ErrInterrupted) || !errors.Is(err, mysqlclient.ErrBroken) {
		t.Errorf("got %v, want ErrInterrupted and ErrBroken", err)
	}
}

func TestClose(t *testing.T) {
	c := connect(t, testConfig(t))
	watch := connect(t, testConfig(t))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.ExecString("SELECT REPEAT('x', 10000)"); !errors.Is(err, mysqlclient.ErrClosed) || !errors.Is(err, mysqlclient.ErrBroken) {
		t.Errorf("Exec after Close: %v, want ErrClosed and ErrBroken", err)
	}
	// COM_QUIT ends the server's session without an "aborted" count; at
	// the least the session must go away.
	gone := "SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = " + strconv.FormatUint(uint64(c.ConnectionID()), 10)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(5 * time.Second); rowsOf(t, watch, gone) != 0; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatal("the server still lists the closed connection")
		}
	}
}

func TestConnectTimeout(t *testing.T) {
	// A server that accepts and never greets: Connect must give up on time.
	addr := silentListener(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := mysqlclient.Connect(ctx, mysqlclient.Config{Addr: addr, User: "x"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Connect took %v", d)
	}
	_, err = mysqlclient.Connect(context.Background(), mysqlclient.Config{Addr: addr, User: "x", Timeout: 100 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("with Config.Timeout: got %v, want a deadline error", err)
	}
}

func TestFromDSN(t *testing.T) {
	cfg, err := mysqlclient.FromDSN("u:p@w@tcp(db.example:3307)/sbtest?tls=skip-verify&timeout=5s&multiStatements=true&collation=utf8mb4_bin&autocommit=1")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Net != "tcp" || cfg.Addr != "db.example:3307" || cfg.User != "u" || cfg.Passwd != "p@w" || cfg.DBName != "sbtest" {
		t.Errorf("address or account wrong: %+v", cfg)
	}
	if cfg.TLS == nil || !cfg.TLS.InsecureSkipVerify || cfg.Timeout != 5*time.Second || !cfg.MultiStatements ||
		cfg.Collation != "utf8mb4_bin" || cfg.Params["autocommit"] != "1" {
		t.Errorf("parameters wrong: %+v", cfg)
	}
	cfg, err = mysqlclient.FromDSN("u@unix(/tmp/x.sock)/?tls=preferred")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Net != "unix" || cfg.Addr != "/tmp/x.sock" || cfg.TLS == nil || !cfg.AllowFallbackToPlaintext {
		t.Errorf("unix/preferred DSN: %+v", cfg)
	}
	for _, bad := range []string{"u@tcp(", "u@tcp(h:1)/db?timeout=soon", "u@tcp(h:1)/db?collation=klingon_ci"} {
		if _, err := mysqlclient.FromDSN(bad); !errors.Is(err, mysqlclient.ErrBadDSN) {
			t.Errorf("%q: got %v, want ErrBadDSN", bad, err)
		}
	}
}

// TestConnectionFootprint holds idle connections to their promise of a
// few KiB each, so that tens of thousands fit in a load driver.
func TestConnectionFootprint(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation behaviour")
	}
	const n = 200
	cfg := testConfig(t)
	conns := make([]*mysqlclient.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		c, err := mysqlclient.Connect(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Use each once, with a response that needs a borrowed buffer,
		// so that what is measured is a connection after work.
		if _, err := c.ExecString("SELECT REPEAT('x', 10000)"); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// A borrowed buffer goes back to the pool when the response has been
	// read; the pool lets go of it within two collections.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d bytes of heap per idle connection", per)
	if per > 12<<10 {
		t.Errorf("%d bytes of heap per idle connection, want at most 12 KiB", per)
	}
}
