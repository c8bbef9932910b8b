// Package clients runs real MySQL clients (the mariadb CLI, go-sql-driver,
// go-mysql, PyMySQL, sysbench) and hand-written protocol exchanges against
// tpproxy in front of a private MariaDB/MySQL server, and checks that they
// see what the server itself would show them.
package clients

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

var env *proxytest.Env

// wantOpenFiles covers the 2,000-connection test: both ends of every client
// connection live in this process, plus the pool and the test's own handles.
const wantOpenFiles = 8192

func TestMain(m *testing.M) {
	if err := raiseOpenFiles(wantOpenFiles); err != nil {
		fmt.Fprintln(os.Stderr, "clients:", err)
	}
	os.Exit(proxytest.Run(m, &env, sandbox.Options{
		// 20 MiB blobs travel through the proxy; the server must take them.
		ServerOptions: []string{"max_allowed_packet=256M"},
	}))
}

// raiseOpenFiles lifts the soft RLIMIT_NOFILE to at least n when the hard
// limit allows it.
func raiseOpenFiles(n uint64) error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return fmt.Errorf("getrlimit: %w", err)
	}
	if rl.Cur >= n {
		return nil
	}
	rl.Cur = min(n, rl.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return fmt.Errorf("setrlimit %d: %w", rl.Cur, err)
	}
	return nil
}

// openFilesLimit is the current soft RLIMIT_NOFILE.
func openFilesLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return rl.Cur
}

// inCI reports CI=true, where a missing tool is a failure rather than a skip.
func inCI() bool { return os.Getenv("CI") == "true" }

// needTool returns the path of an external program. Without it the test
// skips, except in CI where it fails.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if inCI() {
			t.Fatalf("CI=true but %s is not installed: %v", name, err)
		}
		t.Skipf("%s not installed: %v", name, err)
	}
	return path
}

// testCtx is a context that ends after d or when the test ends, whichever
// comes first, so that a hanging proxy fails a test instead of the binary.
func testCtx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// serverExec runs statements as root on the sandbox server directly.
func serverExec(t testing.TB, stmts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := env.Server(t).Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond on a ticker until it holds or d passes; it is for
// state that changes in another process or goroutine with no event to wait
// on (the server's thread count, the proxy's session table).
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if cond() {
		return
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s", d, what)
		case <-tick.C:
			if cond() {
				return
			}
		}
	}
}
