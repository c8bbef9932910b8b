// Package sessions holds end-to-end tests of tpproxy's session
// multiplexing: many client sessions share a small pool of backend
// connections, and no client may be able to tell. Each test starts its own
// in-process proxy in front of one private MariaDB/MySQL server and checks
// the proxy against what the server itself does for a direct connection.
package sessions

import (
	"os"
	"testing"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

var env *proxytest.Env

func TestMain(m *testing.M) { os.Exit(proxytest.Run(m, &env, sandbox.Options{})) }
