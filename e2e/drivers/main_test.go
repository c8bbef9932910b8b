// Package drivers runs the client drivers of other ecosystems (Node mysql2,
// PHP mysqli and PDO_mysql, Python PyMySQL and mysqlclient, MariaDB
// Connector/J) through the same scenarios directly against a private
// MariaDB and through tpproxy in front of it, and compares what each driver
// observed, scenario by scenario. See README.md.
package drivers

import (
	"os"
	"testing"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

var env *proxytest.Env

func TestMain(m *testing.M) {
	// The server keeps its defaults (max_allowed_packet 16 MiB,
	// max_prepared_stmt_count 16382, sql_mode strict): the large_packet,
	// prepared and globals scenarios change them with SET GLOBAL, and the
	// test restores them after every script run.
	os.Exit(proxytest.Run(m, &env, sandbox.Options{}))
}
