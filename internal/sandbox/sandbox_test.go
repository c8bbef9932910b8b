package sandbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/sandbox"
)

// shared is the server of this test binary; nil when no server binary exists
// outside CI.
var shared *sandbox.Server

// sharedMaxConnections is set through ServerOptions so TestServerOptions can
// see that they reach the server.
const sharedMaxConnections = 1234

func TestMain(m *testing.M) {
	srv, stop, err := sandbox.ForTestMain(sandbox.Options{
		ServerOptions: []string{fmt.Sprintf("max-connections=%d", sharedMaxConnections)},
	})
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		fmt.Fprintln(os.Stderr, "sandbox: integration tests skipped:", err)
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared = srv
	code := m.Run()
	if stop != nil {
		stop()
	}
	os.Exit(code)
}

func needServer(t *testing.T) *sandbox.Server {
	t.Helper()
	if shared == nil {
		t.Skip("no mysqld/mariadbd binary (set TPPROXY_MYSQLD)")
	}
	return shared
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// startServer starts a server of the test's own and stops it at cleanup.
func startServer(t *testing.T, opts sandbox.Options) *sandbox.Server {
	t.Helper()
	needServer(t)
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	srv, err := sandbox.Start(testContext(t), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return srv
}

func queryString(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var v string
	if err := db.QueryRowContext(testContext(t), q).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

func rootDB(t *testing.T, srv *sandbox.Server) *sql.DB {
	t.Helper()
	db, err := srv.DB(testContext(t))
	if err != nil {
		t.Fatalf("DB: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestStartStopTwoServers(t *testing.T) {
	t.Parallel()
	first := needServer(t)
	ctx := testContext(t)
	srv, err := sandbox.Start(ctx, sandbox.Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if srv.Port == first.Port || srv.Port == 0 {
		t.Errorf("ports: %d and %d", srv.Port, first.Port)
	}
	if srv.Addr != fmt.Sprintf("127.0.0.1:%d", srv.Port) || srv.PID <= 0 || srv.Version == "" || srv.Flavor == "" {
		t.Errorf("server fields: %+v", srv)
	}
	for _, s := range []*sandbox.Server{first, srv} {
		if got := queryString(t, rootDB(t, s), "SELECT @@port"); got != fmt.Sprint(s.Port) {
			t.Errorf("server %s answers with @@port %s", s.Addr, got)
		}
	}
	st, err := srv.Status(ctx)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if st.ThreadsConnected < 1 || st.MaxConnections != sandbox.DefaultMaxConnections || st.Version != srv.Version || st.PID != srv.PID {
		t.Errorf("status: %+v", st)
	}

	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if srv.Alive() {
		t.Error("Alive after Stop")
	}
	// The base dir was a temporary directory of the sandbox: gone with it.
	if _, err := os.Stat(filepath.Dir(srv.DataDir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("base dir of %s still there: %v", srv.DataDir, err)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := srv.Status(ctx); !errors.Is(err, sandbox.ErrNotRunning) {
		t.Errorf("Status after Stop: %v, want ErrNotRunning", err)
	}
	// The other server is unaffected.
	if got := queryString(t, rootDB(t, first), "SELECT 1"); got != "1" {
		t.Errorf("shared server: %s", got)
	}
}

func TestServerOptions(t *testing.T) {
	srv := needServer(t)
	db := rootDB(t, srv)
	want := map[string]string{
		"max_connections":                fmt.Sprint(sharedMaxConnections), // ServerOptions
		"innodb_flush_log_at_trx_commit": "2",                              // defaults
		"performance_schema":             "OFF",
		"character_set_server":           "utf8mb4",
		"bind_address":                   "127.0.0.1",
		"skip_name_resolve":              "ON",
		"log_bin":                        "OFF",
	}
	for name, value := range want {
		var n, v string
		err := db.QueryRowContext(testContext(t), "SHOW GLOBAL VARIABLES LIKE '"+name+"'").Scan(&n, &v)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if v != value {
			t.Errorf("%s = %q, want %q", name, v, value)
		}
	}
}

func TestCreateUser(t *testing.T) {
	srv := needServer(t)
	ctx := testContext(t)
	const user, password, dbName = "app_user", `pa's\word`, "sbtest"
	if err := srv.CreateUser(ctx, user, "first"); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	// Again with another password: the account is updated, not duplicated.
	if err := srv.CreateUser(ctx, user, password); err != nil {
		t.Fatalf("CreateUser again: %v", err)
	}
	if err := srv.CreateDatabase(ctx, dbName); err != nil {
		t.Fatalf("CreateDatabase: %v", err)
	}
	db, err := sql.Open("mysql", srv.DSN(user, password, dbName, "parseTime=true"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := queryString(t, db, "SELECT CONCAT(CURRENT_USER(), ' ', DATABASE())"); got != user+"@% "+dbName {
		t.Errorf("connected as %q", got)
	}
	// Privileges: the user may create a table.
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY)"); err != nil {
		t.Errorf("CREATE TABLE as %s: %v", user, err)
	}

	bad, err := sql.Open("mysql", srv.DSN(user, "first", dbName))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	var me *mysql.MySQLError
	if err := bad.PingContext(ctx); !errors.As(err, &me) || me.Number != 1045 {
		t.Errorf("old password: %v, want error 1045", err)
	}
}

func TestSaveLoadAlive(t *testing.T) {
	t.Parallel()
	srv := startServer(t, sandbox.Options{})
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "state.json")
	if err := srv.Save(path); err != nil {
		t.Fatalf("Save: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state file: %v %v", fi, err)
	}
	loaded, err := sandbox.Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if loaded.PID != srv.PID || loaded.Addr != srv.Addr || loaded.Port != srv.Port || loaded.DataDir != srv.DataDir ||
		loaded.Socket != srv.Socket || loaded.Flavor != srv.Flavor || loaded.Version != srv.Version {
		t.Errorf("loaded %+v, saved %+v", loaded, srv)
	}
	if loaded.RootDSN("") != srv.RootDSN("") {
		t.Errorf("RootDSN %q, want %q", loaded.RootDSN(""), srv.RootDSN(""))
	}
	if !loaded.Alive() {
		t.Fatal("loaded server not Alive")
	}
	if _, err := loaded.Status(ctx); err != nil {
		t.Errorf("Status of loaded server: %v", err)
	}

	// Stopping through the loaded handle stops the real server.
	if err := loaded.Stop(ctx); err != nil {
		t.Fatalf("Stop of loaded server: %v", err)
	}
	if loaded.Alive() || srv.Alive() {
		t.Errorf("Alive after Stop: loaded %v, original %v", loaded.Alive(), srv.Alive())
	}
	if _, err := os.Stat(srv.DataDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("datadir after Stop: %v", err)
	}
	stale, err := sandbox.Load(path)
	if err != nil {
		t.Fatalf("Load stale: %v", err)
	}
	if stale.Alive() {
		t.Error("stale state reported Alive")
	}
	if _, err := stale.Status(ctx); !errors.Is(err, sandbox.ErrNotRunning) {
		t.Errorf("Status of stale state: %v, want ErrNotRunning", err)
	}
	if err := stale.Stop(ctx); err != nil {
		t.Errorf("Stop of stale state: %v", err)
	}

	if _, err := sandbox.Load(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load missing: %v, want fs.ErrNotExist", err)
	}
}

// A datadir kept by KeepDataDir is reused by the next Start on the same
// BaseDir, including its data and root password.
func TestReuseDataDir(t *testing.T) {
	t.Parallel()
	needServer(t)
	ctx := testContext(t)
	base := t.TempDir()
	opts := sandbox.Options{BaseDir: base, KeepDataDir: true, RootPassword: "r00t", Logger: testLogger(t)}
	srv, err := sandbox.Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := srv.Exec(ctx, "CREATE DATABASE keep", "USE keep", "CREATE TABLE t (v INT)", "INSERT INTO t VALUES (42)"); err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(srv.DataDir); err != nil {
		t.Fatalf("KeepDataDir: %v", err)
	}

	opts.KeepDataDir = false
	again := startServer(t, opts)
	if got := queryString(t, rootDB(t, again), "SELECT v FROM keep.t"); got != "42" {
		t.Errorf("reused datadir: v = %s", got)
	}
	// A second server on the same datadir is refused before it can touch
	// the running one's files.
	_, err = sandbox.Start(ctx, sandbox.Options{BaseDir: base, Logger: testLogger(t)})
	if !errors.Is(err, sandbox.ErrDataDirInUse) {
		t.Fatalf("second Start on a datadir in use: %v, want ErrDataDirInUse", err)
	}
	if got := queryString(t, rootDB(t, again), "SELECT 1"); got != "1" {
		t.Errorf("running server after the refused start: %s", got)
	}
}

// A server that outlasts StopTimeout after SIGTERM gets SIGKILL, and Stop
// still cleans up.
func TestStopKillsAfterBound(t *testing.T) {
	t.Parallel()
	needServer(t)
	ctx := testContext(t)
	srv, err := sandbox.Start(ctx, sandbox.Options{StopTimeout: time.Nanosecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if srv.Alive() {
		t.Error("Alive after Stop")
	}
	if _, err := os.Stat(srv.DataDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("datadir after Stop: %v", err)
	}
}

func TestStartFailureShowsLog(t *testing.T) {
	t.Parallel()
	needServer(t)
	base := t.TempDir()
	begin := time.Now()
	_, err := sandbox.Start(testContext(t), sandbox.Options{
		BaseDir:       base,
		ServerOptions: []string{"no_such_option=1"},
		Logger:        testLogger(t),
	})
	elapsed := time.Since(begin)
	if !errors.Is(err, sandbox.ErrExited) {
		t.Fatalf("Start with a bad option: %v, want ErrExited", err)
	}
	if !strings.Contains(err.Error(), "no_such_option") {
		t.Errorf("error lacks the log tail naming the option:\n%v", err)
	}
	if elapsed > 20*time.Second {
		t.Errorf("failing start took %v", elapsed)
	}
	if _, err := os.Stat(filepath.Join(base, "data")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("datadir of a failed start left behind: %v", err)
	}
}

func TestInvalidOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []sandbox.Options{
		{Port: -1},
		{Port: 70000},
		{StartTimeout: -time.Second},
		{ServerOptions: []string{"port=3306"}},
		{ServerOptions: []string{"--datadir=/var/lib/mysql"}},
		{ServerOptions: []string{"log_error=/tmp/x"}},
		{ServerOptions: []string{""}},
		{ServerOptions: []string{"[client]"}},
		{ServerOptions: []string{"a=1\nport=1"}},
		{NetNS: "../etc"},
		{NetNS: "a/b"},
		{Host: "localhost"},
		{RootHost: "10.0.0.1/24"},
	} {
		if _, err := sandbox.Start(t.Context(), o); !errors.Is(err, sandbox.ErrInvalidOptions) {
			t.Errorf("Start(%+v): %v, want ErrInvalidOptions", o, err)
		}
	}
}

func TestForTestMainWithoutBinary(t *testing.T) {
	missing := sandbox.Options{Binary: filepath.Join(t.TempDir(), "no-mysqld")}

	t.Setenv("CI", "")
	srv, stop, err := sandbox.ForTestMain(missing)
	if !errors.Is(err, sandbox.ErrNotFound) || srv != nil || stop != nil {
		t.Errorf("outside CI: %v, %v, %v; want nil, nil, ErrNotFound", srv, stop != nil, err)
	}

	t.Setenv("CI", "true")
	_, _, err = sandbox.ForTestMain(missing)
	if err == nil || errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("in CI: %v; want an error that is not ErrNotFound", err)
	}
}
