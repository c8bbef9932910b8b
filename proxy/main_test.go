package proxy_test

import (
	"os"
	"testing"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

var env *proxytest.Env

func TestMain(m *testing.M) { os.Exit(proxytest.Run(m, &env, sandbox.Options{})) }
