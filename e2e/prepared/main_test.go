// Package prepared holds end-to-end tests of server-side prepared
// statements through tpproxy: COM_STMT_PREPARE, EXECUTE, SEND_LONG_DATA,
// FETCH, RESET and CLOSE from go-sql-driver (interpolateParams=false),
// sysbench and a hand-written protocol client, against one private
// MariaDB/MySQL server. Client statements are the session's own while the
// proxy shares backend statements among sessions and prepares them lazily
// on whichever backend connection a statement lands; no client may be able
// to tell.
//
// Several tests read the server's global Prepared_stmt_count, so none of
// them runs in parallel.
package prepared

import (
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

var env *proxytest.Env

// wantOpenFiles covers the sysbench test's 512 client connections, whose
// accepted ends live in this process, plus the 100-session sharing test.
const wantOpenFiles = 4096

func TestMain(m *testing.M) {
	if err := raiseOpenFiles(wantOpenFiles); err != nil {
		fmt.Fprintln(os.Stderr, "prepared:", err)
	}
	os.Exit(proxytest.Run(m, &env, sandbox.Options{
		// 17 MiB arguments, and execute packets of more than 16 MiB; the
		// server keeps its default max_prepared_stmt_count (16382), which
		// TestSysbenchPrepared asserts.
		ServerOptions: []string{"max_allowed_packet=64M"},
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
