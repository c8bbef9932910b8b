package mysqlclient_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlclient"
	"github.com/tpproxy/tpproxy/internal/sandbox"
	"github.com/tpproxy/tpproxy/internal/testcert"
)

// The shared sandbox of the integration tests: nil when no server binary
// is installed (outside CI), and tests that need it skip.
var (
	testServer *sandbox.Server
	// testCAs verifies the sandbox's TLS certificate (for 127.0.0.1).
	testCAs *x509.CertPool
)

// Accounts and schema the tests use.
const (
	testUser     = "mc"
	testPassword = "pw"
	nativeUser   = "mc_native"
	nativePass   = "native-pw"
	emptyUser    = "mc_empty"
	ed25519User  = "mc_ed25519"
	ed25519Pass  = "ed-pw"
	testDB       = "mctest"
)

// haveEd25519: MariaDB's ed25519 plugin loaded, ed25519User exists.
var haveEd25519 bool

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "mctls")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cas, caFile, certFile, keyFile, err := testcert.Write(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "write TLS files:", err)
		return 1
	}
	testCAs = cas
	srv, stop, err := sandbox.ForTestMain(sandbox.Options{ServerOptions: []string{
		"ssl_ca=" + caFile, "ssl_cert=" + certFile, "ssl_key=" + keyFile,
		// TestLargeResult reads a row of more than 16 MiB.
		"max_allowed_packet=64M",
	}})
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		fmt.Fprintln(os.Stderr, "integration tests skipped (set CI=true to make this an error):", err)
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if stop != nil {
		defer stop()
	}
	if srv != nil {
		if err := setupServer(srv); err != nil {
			fmt.Fprintln(os.Stderr, "set up test server:", err)
			return 1
		}
	}
	testServer = srv
	return m.Run()
}

// setupServer creates the accounts and the schema of the tests.
func setupServer(srv *sandbox.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.CreateUser(ctx, testUser, testPassword); err != nil {
		return err
	}
	if err := srv.CreateUser(ctx, emptyUser, ""); err != nil {
		return err
	}
	ident := "IDENTIFIED VIA mysql_native_password USING PASSWORD('" + nativePass + "')"
	if srv.Flavor == sandbox.MySQL {
		ident = "IDENTIFIED WITH mysql_native_password BY '" + nativePass + "'"
	}
	var stmts []string
	for _, host := range []string{"%", "localhost"} {
		acct := "'" + nativeUser + "'@'" + host + "'"
		stmts = append(stmts, "CREATE USER "+acct+" "+ident, "GRANT ALL ON *.* TO "+acct)
	}
	if err := srv.Exec(ctx, stmts...); err != nil {
		return err
	}
	if srv.Flavor != sandbox.MySQL && srv.Exec(ctx, "INSTALL SONAME 'auth_ed25519'") == nil {
		acct := "'" + ed25519User + "'@'%'"
		if err := srv.Exec(ctx, "CREATE USER "+acct+" IDENTIFIED VIA ed25519 USING PASSWORD('"+ed25519Pass+"')",
			"GRANT ALL ON *.* TO "+acct); err != nil {
			return err
		}
		haveEd25519 = true
	}
	return srv.CreateDatabase(ctx, testDB)
}

// server returns the shared sandbox or skips the test.
func server(tb testing.TB) *sandbox.Server {
	tb.Helper()
	if testServer == nil {
		tb.Skip("no server binary; integration test skipped")
	}
	return testServer
}

// testConfig is the Config of the test account over TCP.
func testConfig(tb testing.TB) mysqlclient.Config {
	srv := server(tb)
	return mysqlclient.Config{Addr: srv.Addr, User: testUser, Passwd: testPassword, DBName: testDB}
}

// connect opens a connection with cfg and closes it when the test ends.
func connect(tb testing.TB, cfg mysqlclient.Config) *mysqlclient.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := mysqlclient.Connect(ctx, cfg)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// mustExec runs statements that must succeed.
func mustExec(tb testing.TB, c *mysqlclient.Conn, stmts ...string) {
	tb.Helper()
	for _, q := range stmts {
		if _, err := c.ExecString(q); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
}

// rowsOf runs q and returns its row count, failing the test on error.
func rowsOf(tb testing.TB, c *mysqlclient.Conn, q string) int {
	tb.Helper()
	n, err := c.ExecString(q)
	if err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
	return n
}
