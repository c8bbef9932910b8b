package pool_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/tpproxy/tpproxy/internal/mysqlclient"
	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/pool"
)

// The dial benchmarks compare the pool's dial (go-mysql's handshake with
// the greeting sniffer, then the pool's session initialisation) with
// internal/mysqlclient's handshake doing the same statements, against the
// sandbox server. Handshake* measure the login alone.

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

func BenchmarkDialMysqlclientInit(b *testing.B) {
	p := newPool(b, func(c *pool.Config) { c.Size = 1 })
	cfg := mysqlclientConfig(b)
	init := pool.InitSQL(p)
	ctx := ctxT(b)
	b.ReportAllocs()
	for b.Loop() {
		c, err := mysqlclient.Connect(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.ExecString(init); err != nil {
			b.Fatal(err)
		}
		if _, err := c.ExecString(pool.DefaultsSQL); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

func BenchmarkHandshakeGoMySQL(b *testing.B) {
	addr := env.Server(b).Addr
	ctx := ctxT(b)
	b.ReportAllocs()
	for b.Loop() {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := client.ConnectWithDialer(cctx, "tcp", addr, proxytest.User, proxytest.Password, "", (&net.Dialer{}).DialContext,
			func(cc *client.Conn) error { return cc.SetCollation("utf8mb4_general_ci") })
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		_ = c.Quit()
	}
}

func BenchmarkHandshakeMysqlclient(b *testing.B) {
	cfg := mysqlclientConfig(b)
	ctx := ctxT(b)
	b.ReportAllocs()
	for b.Loop() {
		c, err := mysqlclient.Connect(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

func mysqlclientConfig(b *testing.B) mysqlclient.Config {
	return mysqlclient.Config{
		Net: "tcp", Addr: env.Server(b).Addr,
		User: proxytest.User, Passwd: proxytest.Password,
		Collation: "utf8mb4_general_ci", MultiStatements: true,
	}
}
