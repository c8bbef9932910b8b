// Package semantics is an adversarial, differential end-to-end suite for
// tpproxy's session multiplexing. Every scenario is a short script of SQL
// steps for a subject session, interleaved with steps of other clients. It
// runs twice against one private MariaDB: once over direct server
// connections (the oracle) and once through a tpproxy whose pool of three
// backend connections is shared with ~40 noise sessions that keep checking
// that everything they can observe is their own. The subject must see
// exactly what it sees directly (else DIFF), and nobody else may see the
// subject's state (else LEAK).
//
// Run it with
//
//	go test -race -count=1 ./e2e/semantics/
//
// SEMANTICS_REPORT=<file> also writes the summary as a markdown table;
// SEMANTICS_RUN=<regexp> runs only the scenarios whose id matches;
// SEMANTICS_PROXY_LOG=1 sends the proxies' warnings to the test log;
// SEMANTICS_SELFCHECK=1 runs every scenario directly twice (without any
// proxy): all must PASS, or a scenario is not deterministic;
// SEMANTICS_DUMP=1 logs every observation of both runs;
// SEMANTICS_BUDGET=<duration> (default 8m) stops starting scenarios after
// that long, so that a slow proxy still gets its summary.
package semantics

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

var env *proxytest.Env

func TestMain(m *testing.M) {
	var opts sandbox.Options
	// Every scenario creates and drops its database twice: on tmpfs the
	// server's fsyncs cost nothing, and the suite keeps to its budget.
	dir, err := os.MkdirTemp("/dev/shm", "sem")
	if err == nil {
		opts.BaseDir = dir
		opts.ServerOptions = []string{"innodb_flush_method=fsync"}
	}
	code := proxytest.Run(m, &env, opts)
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// The account every client of the suite uses, directly and through the
// proxy (which also logs its backend connections in with it). Unlike
// proxytest.User it has no global SELECT, so that a role can give it a
// privilege it does not have otherwise.
const (
	semUser = "sem_app"
	semPass = "sem_secret"
	// secretDB holds a table only sem_role may read. Its name must not
	// match the `sem%` pattern semUser has all privileges on.
	secretDB = "tpsecret"
	semRole  = "sem_role"
)

// Time bounds: a proxy bug must fail a step, never hang the suite.
const (
	opTimeout      = 10 * time.Second // one client round trip
	connectTimeout = 10 * time.Second
	goneTimeout    = 2 * time.Second // a disconnected session to vanish
	rootTimeout    = 15 * time.Second
)

// fixtureSQL creates what every scenario may use: the account, the role
// and the table only the role may read, and the noise sessions' schemas.
func fixtureSQL() []string {
	qs := []string{
		"DROP USER IF EXISTS '" + semUser + "'@'%', '" + semUser + "'@'localhost'",
		"DROP ROLE IF EXISTS " + semRole,
		"DROP DATABASE IF EXISTS " + secretDB,
	}
	for _, host := range []string{"%", "localhost"} {
		acct := "'" + semUser + "'@'" + host + "'"
		qs = append(qs,
			"CREATE USER "+acct+" IDENTIFIED BY '"+semPass+"'",
			"GRANT ALL PRIVILEGES ON `sem%`.* TO "+acct,
			"GRANT PROCESS, RELOAD, SUPER ON *.* TO "+acct,
		)
	}
	qs = append(qs,
		"CREATE DATABASE "+secretDB,
		"CREATE TABLE "+secretDB+".secret (x INT)",
		"INSERT INTO "+secretDB+".secret VALUES (42)",
		"CREATE TABLE "+secretDB+".pub (x INT)",
		"INSERT INTO "+secretDB+".pub VALUES (7)",
		"CREATE ROLE "+semRole,
		"GRANT SELECT ON "+secretDB+".secret TO "+semRole,
		"GRANT "+semRole+" TO '"+semUser+"'@'%', '"+semUser+"'@'localhost'",
	)
	for k := range noiseSessions {
		db := noiseDB(k)
		qs = append(qs, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db,
			fmt.Sprintf("CREATE TABLE %s.n (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB AUTO_INCREMENT=%d", db, noiseIDBase+k*100000))
	}
	return qs
}

func fixtureDropSQL() []string {
	qs := []string{
		"DROP USER IF EXISTS '" + semUser + "'@'%', '" + semUser + "'@'localhost'",
		"DROP ROLE IF EXISTS " + semRole,
		"DROP DATABASE IF EXISTS " + secretDB,
	}
	for k := range noiseSessions {
		qs = append(qs, "DROP DATABASE IF EXISTS "+noiseDB(k))
	}
	return qs
}

// installFixtures runs fixtureSQL as root and removes it all when t ends.
func installFixtures(t *testing.T) {
	t.Helper()
	root, err := dialRoot(t)
	if err != nil {
		t.Fatalf("root: %v", err)
	}
	defer root.quit()
	for _, q := range fixtureSQL() {
		if r := root.query(q); r.failed() {
			t.Fatalf("fixture %s: %s", q, r.display())
		}
	}
	t.Cleanup(func() {
		root, err := dialRoot(t)
		if err != nil {
			t.Logf("fixture cleanup: %v", err)
			return
		}
		defer root.quit()
		for _, q := range fixtureDropSQL() {
			if r := root.query(q); r.failed() {
				t.Logf("fixture cleanup %s: %s", q, r.display())
			}
		}
	})
}

// waitNoSemThreads waits until the server has no connection of semUser
// left: nothing of one run may still be alive when the next starts.
func waitNoSemThreads(root *conn) error {
	deadline := time.Now().Add(rootTimeout)
	for {
		r := root.query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = '" + semUser + "'")
		if r.failed() {
			return fmt.Errorf("processlist: %s", r.display())
		}
		if r.cell(0, 0) == "0" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s server connections of %s still open after %s", r.cell(0, 0), semUser, rootTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func rootContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), rootTimeout)
}
