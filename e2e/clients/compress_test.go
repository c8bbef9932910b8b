package clients

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// TestCompressedClients: clients that ask for the compressed protocol get
// it through tpproxy — zlib (go-sql-driver compress=true, as Connector/J,
// mysqlnd and libmariadb ask for it) and MySQL 8's zstd (go-mysql) — and
// see what they see directly: large results, a query over 16 MiB, many
// small statements, prepared statements.
func TestCompressedClients(t *testing.T) {
	px := env.StartProxy(t)
	t.Run("zlib", func(t *testing.T) {
		for _, dsn := range []string{
			env.Server(t).DSN(proxytest.User, proxytest.Password, proxytest.DB, "compress=true"),
			px.DSN("compress=true"),
		} {
			db, err := sql.Open("mysql", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			var n int64
			if err := db.QueryRow("SELECT LENGTH(REPEAT('ab', 3000000))").Scan(&n); err != nil || n != 6000000 {
				t.Fatalf("%s: %d, %v", dsn, n, err)
			}
			var s string
			if err := db.QueryRow("SELECT REPEAT('xyz', 400000)").Scan(&s); err != nil || s != strings.Repeat("xyz", 400000) {
				t.Fatalf("1.2 MB value through %s: %d bytes, %v", dsn, len(s), err)
			}
			big := strings.Repeat("0123456789", 1800000) // 18 MB: more than one packet
			if err := db.QueryRow("SELECT LENGTH('" + big + "')").Scan(&n); err != nil || n != int64(len(big)) {
				t.Fatalf("18 MB query through %s: %d, %v", dsn, n, err)
			}
			for i := range 200 {
				if err := db.QueryRow("SELECT ? + 1", i).Scan(&n); err != nil || n != int64(i+1) {
					t.Fatalf("statement %d: %d, %v", i, n, err)
				}
			}
		}
	})
	for name, flag := range map[string]uint32{"zstd": mysql.CLIENT_ZSTD_COMPRESSION_ALGORITHM, "zlib_negotiated": mysql.CLIENT_COMPRESS} {
		t.Run(name, func(t *testing.T) { compressedGoMySQL(t, px, flag) })
	}
}

// compressedGoMySQL runs go-mysql's client with a compression flag, which
// (unlike go-sql-driver) says whether the server took it.
func compressedGoMySQL(t *testing.T, px *proxytest.Proxy, flag uint32) {
	{
		c, err := client.ConnectWithTimeout(px.Addr, proxytest.User, proxytest.Password, proxytest.DB, 5*time.Second,
			func(c *client.Conn) error {
				c.SetCapability(flag)
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if !c.HasCapability(flag) {
			t.Fatalf("tpproxy did not take compression flag %#x", flag)
		}
		r, err := c.Execute("SELECT REPEAT('zstd', 500000), CONNECTION_ID()")
		if err != nil {
			t.Fatal(err)
		}
		v, _ := r.GetString(0, 0)
		if v != strings.Repeat("zstd", 500000) {
			t.Fatalf("2 MB value compressed: %d bytes", len(v))
		}
		for i := range 100 {
			if _, err := c.Execute("DO 1"); err != nil {
				t.Fatalf("statement %d compressed: %v", i, err)
			}
		}
	}
}
