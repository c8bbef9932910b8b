// Package threadpool holds end-to-end tests of tpproxy's thread-group
// scheduler against a real server: statements are admitted per group as
// thread_pool_size, _oversubscribe and _stall_limit say, and sessions in
// transactions are never starved by statements waiting for their locks.
// Timings have generous margins; what is asserted are orderings and counts.
package threadpool

import (
	"os"
	"testing"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

var env *proxytest.Env

func TestMain(m *testing.M) { os.Exit(proxytest.Run(m, &env, sandbox.Options{})) }
