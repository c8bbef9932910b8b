package pool_test

import (
	"testing"

	"github.com/tpproxy/tpproxy/internal/mysqlclient"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/pool"
)

// The dial benchmarks measure, against the sandbox server, the pool's dial
// (internal/mysqlclient's Login, then the pool's session initialisation)
// and the login alone as the pool asks for it.

func BenchmarkDialPool(b *testing.B) {
	p := newPool(b, func(c *pool.Config) { c.Size = 1 })
	ctx := ctxT(b)
	b.ReportAllocs()
	for b.Loop() {
		closeConn, err := pool.DialForBench(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		closeConn()
	}
}

func BenchmarkHandshakeLogin(b *testing.B) {
	cfg := mysqlclient.Config{
		Addr: env.Server(b).Addr, User: proxytest.User, Passwd: proxytest.Password,
		CollationID: 45, MultiStatements: true,
		ConnectAttrs: map[string]string{"_client_name": "tpproxy", "program_name": "tpproxy"},
	}
	want := mysqlclient.Protocol{
		Caps: mysqlwire.ClientLongFlag | mysqlwire.ClientTransactions | mysqlwire.ClientMultiResults |
			mysqlwire.ClientPSMultiResults | mysqlwire.ClientSessionTrack,
		ExtCaps: mysqlwire.MariaDBClientStmtBulkOperations,
	}
	ctx := ctxT(b)
	b.ReportAllocs()
	for b.Loop() {
		s, err := mysqlclient.Login(ctx, cfg, want)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = s.Conn.Write([]byte{1, 0, 0, 0, mysqlwire.ComQuit})
		_ = s.Conn.Close()
	}
}
