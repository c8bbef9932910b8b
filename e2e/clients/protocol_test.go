package clients

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// TestLargePackets sends and receives logical packets of 16 MiB and more,
// which travel as several physical packets: a 20 MiB LONGBLOB in both
// directions, a query and a row of exactly 2^24-1 bytes (followed by an
// empty packet), and a 40 MiB row.
func TestLargePackets(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Proxy.MaxAllowedPacket = 64 << 20 })
	db := px.Open(t, "maxAllowedPacket=0")
	mustExec(t, ctx, db, "DROP TABLE IF EXISTS big_blobs")
	mustExec(t, ctx, db, "CREATE TABLE big_blobs (id INT PRIMARY KEY, b LONGBLOB)")
	t.Cleanup(func() { serverExec(t, "DROP TABLE IF EXISTS tpproxy_test.big_blobs") })

	blob := make([]byte, 20<<20)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(blob)
	mustExec(t, ctx, db, "INSERT INTO big_blobs VALUES (1, ?)", blob)
	var n int
	var serverSum string
	if err := env.Root(t).QueryRowContext(ctx, "SELECT LENGTH(b), SHA2(b, 256) FROM tpproxy_test.big_blobs WHERE id = 1").Scan(&n, &serverSum); err != nil {
		t.Fatal(err)
	}
	if n != len(blob) || serverSum != hex.EncodeToString(sum[:]) {
		t.Fatalf("the server stored %d bytes with SHA-256 %s; sent %d bytes with %x", n, serverSum, len(blob), sum)
	}
	var back []byte
	if err := db.QueryRowContext(ctx, "SELECT b FROM big_blobs WHERE id = 1").Scan(&back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, blob) {
		t.Fatalf("read back %d bytes, differing from the %d written", len(back), len(blob))
	}

	// Exact boundaries, with the raw client that sees every packet.
	c := mustRaw(t, ctx, px.Addr, rawOptions{User: "app", Password: "secret", DB: proxytest.DB})
	c.timeout = time.Minute
	const maxPayload = 1<<24 - 1
	head, tail := "SELECT LENGTH('", "') AS l"
	q := head + strings.Repeat("q", maxPayload-1-len(head)-len(tail)) + tail
	if 1+len(q) != maxPayload {
		t.Fatalf("query payload %d", 1+len(q))
	}
	if got := c.scalar(t, q); got != strconv.Itoa(maxPayload-1-len(head)-len(tail)) {
		t.Errorf("LENGTH of the literal in a 2^24-1 byte query = %s", got)
	}
	// A row payload of 2^24-1: a 4-byte length prefix and the value.
	if got := c.scalar(t, "SELECT REPEAT('r', "+strconv.Itoa(maxPayload-4)+")"); len(got) != maxPayload-4 || strings.Trim(got, "r") != "" {
		t.Errorf("row of 2^24-1 bytes came back as %d bytes", len(got))
	}
	// The connection is in step afterwards.
	if got := c.scalar(t, "SELECT 'after'"); got != "after" {
		t.Errorf("after the boundary row: %q", got)
	}
	r := c.mustQuery(t, "SELECT REPEAT('s', 40 << 20) AS big, 'tail' AS t")
	if len(r.Rows) != 1 || len(*r.Rows[0][0]) != 40<<20 || *r.Rows[0][1] != "tail" {
		t.Errorf("40 MiB row: %d rows", len(r.Rows))
	}
	if err := c.ping(); err != nil {
		t.Errorf("ping after large rows: %v", err)
	}
}

func TestLoadDataLocal(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, time.Minute)
	serverExec(t, "DROP TABLE IF EXISTS tpproxy_test.load_local",
		"CREATE TABLE tpproxy_test.load_local (id INT PRIMARY KEY, name VARCHAR(40))")
	t.Cleanup(func() { serverExec(t, "DROP TABLE IF EXISTS tpproxy_test.load_local") })

	dir := t.TempDir()
	small := filepath.Join(dir, "small.csv")
	if err := os.WriteFile(small, []byte("1,one\n2,two\n3,ünï 😀\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mysql.RegisterLocalFile(small)
	t.Cleanup(func() { mysql.DeregisterLocalFile(small) })
	// A bigger stream, several packets long.
	var big bytes.Buffer
	for i := 1000; i < 101000; i++ {
		fmt.Fprintf(&big, "%d,name-%d\n", i, i)
	}
	handler := "e2e_load_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	mysql.RegisterReaderHandler(handler, func() io.Reader { return bytes.NewReader(big.Bytes()) })
	t.Cleanup(func() { mysql.DeregisterReaderHandler(handler) })
	load := "LOAD DATA LOCAL INFILE '%s' INTO TABLE load_local CHARACTER SET utf8mb4 FIELDS TERMINATED BY ','"

	t.Run("enabled", func(t *testing.T) {
		px := env.StartProxy(t, func(o *proxytest.Options) {
			o.Proxy.LoadDataLocal = true
			o.Pool.LocalInfile = true
		})
		db := px.Open(t)
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		res := mustExec(t, ctx, conn, fmt.Sprintf(load, small))
		if n, _ := res.RowsAffected(); n != 3 {
			t.Errorf("small file: %d rows loaded, want 3", n)
		}
		res = mustExec(t, ctx, conn, fmt.Sprintf(load, "Reader::"+handler))
		if n, _ := res.RowsAffected(); n != 100000 {
			t.Errorf("reader: %d rows loaded, want 100000", n)
		}
		var name string
		if err := conn.QueryRowContext(ctx, "SELECT name FROM load_local WHERE id = 3").Scan(&name); err != nil || name != "ünï 😀" {
			t.Errorf("row 3 = %q, %v", name, err)
		}
		// A file the client will not send: the client answers with an
		// empty file, the server with OK, and the connection goes on.
		_, err = conn.ExecContext(ctx, fmt.Sprintf(load, filepath.Join(dir, "not-registered.csv")))
		if err == nil {
			t.Error("LOAD DATA of an unregistered file succeeded")
		}
		var count int
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM load_local").Scan(&count); err != nil || count != 100003 {
			t.Errorf("after the refused file: COUNT(*) = %d, %v; want 100003", count, err)
		}
		mustExec(t, ctx, conn, "DELETE FROM load_local")
	})

	t.Run("disabled", func(t *testing.T) {
		px := env.StartProxy(t)
		db := px.Open(t)
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, q := range []string{fmt.Sprintf(load, small), "/* hint */ " + fmt.Sprintf(strings.ToLower(load), small)} {
			_, err = conn.ExecContext(ctx, q)
			if code, _, _ := mysqlErr(err); code != 1148 {
				t.Errorf("%s: %v; want error 1148", q, err)
			}
			var one int
			if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatalf("connection unusable after the refusal: %v", err)
			}
		}
		var count int
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM load_local").Scan(&count); err != nil || count != 0 {
			t.Errorf("COUNT(*) = %d, %v; want 0 (nothing loaded)", count, err)
		}
	})
}

func TestFieldList(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	serverExec(t, "DROP TABLE IF EXISTS tpproxy_test.field_list",
		"CREATE TABLE tpproxy_test.field_list (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "+
			"alpha VARCHAR(30) DEFAULT 'x', amount DECIMAL(9,3), beta BLOB, created DATETIME(3) DEFAULT CURRENT_TIMESTAMP(3))")
	t.Cleanup(func() { serverExec(t, "DROP TABLE IF EXISTS tpproxy_test.field_list") })
	px := env.StartProxy(t)
	connect := func(addr string) *client.Conn {
		c, err := client.ConnectWithContext(ctx, addr, proxytest.User, proxytest.Password, proxytest.DB, 10*time.Second, readTimeouts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	viaProxy, direct := connect(px.Addr), connect(env.Server(t).Addr)
	describe := func(fs []*gomysql.Field) []string {
		var out []string
		for _, f := range fs {
			out = append(out, fmt.Sprintf("%s.%s/%s type=%d charset=%d len=%d flags=%#x dec=%d default=%q",
				f.Table, f.Name, f.OrgName, f.Type, f.Charset, f.ColumnLength, f.Flag, f.Decimal, f.DefaultValue))
		}
		return out
	}
	for _, wild := range []string{"", "a%", "nomatch%"} {
		got, err := viaProxy.FieldList("field_list", wild)
		if err != nil {
			t.Fatalf("FieldList(%q) through the proxy: %v", wild, err)
		}
		want, err := direct.FieldList("field_list", wild)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(describe(got), describe(want)) {
			t.Errorf("FieldList(%q):\nproxy:  %q\nserver: %q", wild, describe(got), describe(want))
		}
		if wild == "" && len(got) != 5 {
			t.Errorf("FieldList of all columns: %d fields", len(got))
		}
	}
	_, err := viaProxy.FieldList("no_such_table", "")
	if me, ok := err.(*gomysql.MyError); !ok || me.Code != 1146 {
		t.Errorf("FieldList of a missing table: %v; want error 1146", err)
	}
	r, err := viaProxy.Execute("SELECT COUNT(*) FROM field_list")
	if err != nil {
		t.Fatalf("query after COM_FIELD_LIST: %v", err)
	}
	if n, _ := r.GetInt(0, 0); n != 0 {
		t.Errorf("COUNT(*) = %d", n)
	}
}

func TestStatisticsAndPing(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	px := env.StartProxy(t)
	c := mustRaw(t, ctx, px.Addr, rawOptions{User: "app", Password: "secret", DB: proxytest.DB})
	for range 3 {
		if err := c.command([]byte{comStatistics}); err != nil {
			t.Fatal(err)
		}
		p, err := c.readPacket()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(p, []byte("Uptime: ")) || !bytes.Contains(p, []byte("Threads: ")) {
			t.Errorf("COM_STATISTICS = %q", p)
		}
		if err := c.ping(); err != nil {
			t.Errorf("COM_PING: %v", err)
		}
		if got := c.scalar(t, "SELECT 'in step'"); got != "in step" {
			t.Errorf("after COM_STATISTICS: %q", got)
		}
	}
	db := px.Open(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for range 3 {
		if err := conn.PingContext(ctx); err != nil {
			t.Errorf("go-sql-driver ping: %v", err)
		}
	}
}

// setOption sends COM_SET_OPTION and expects the server's EOF answer.
func setOption(t *testing.T, c *rawConn, on bool) {
	t.Helper()
	v := uint16(1)
	if on {
		v = 0
	}
	if err := c.command(binary.LittleEndian.AppendUint16([]byte{comSetOption}, v)); err != nil {
		t.Fatal(err)
	}
	r, err := c.readResult()
	if err != nil {
		t.Fatal(err)
	}
	if r.Err != nil || !r.IsEOF {
		t.Fatalf("COM_SET_OPTION(%v) = %+v, want EOF", on, r)
	}
}

// multiOutcome runs a two-statement query and says how it went.
func multiOutcome(t *testing.T, c *rawConn) string {
	t.Helper()
	rs, err := c.query("SELECT 1 AS a; SELECT 2 AS b")
	if err != nil {
		t.Fatal(err)
	}
	last := rs[len(rs)-1]
	if last.Err != nil {
		// A statement after the error, so that the session does not keep
		// its backend for a SHOW WARNINGS that never comes (see
		// TestIdleSessionAfterErrorKeepsNoBackend).
		c.mustQuery(t, "DO 0")
		return fmt.Sprintf("error %d", last.Err.Code)
	}
	return fmt.Sprintf("%d results", len(rs))
}

func TestSetOptionMultiStatements(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	// Two backends for three sessions: statements keep moving between
	// connections, so the option must follow the session.
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 2 })
	login := rawOptions{User: "app", Password: "secret", DB: proxytest.DB}
	a := mustRaw(t, ctx, px.Addr, login)
	b := mustRaw(t, ctx, px.Addr, login)
	noMulti := login
	noMulti.NoMultiStatements = true
	cNo := mustRaw(t, ctx, px.Addr, noMulti)
	direct := mustRaw(t, ctx, env.Server(t).Addr, login)
	directB := mustRaw(t, ctx, env.Server(t).Addr, login)
	directNo := mustRaw(t, ctx, env.Server(t).Addr, noMulti)

	check := func(step string, c, server *rawConn) {
		t.Helper()
		got, want := multiOutcome(t, c), multiOutcome(t, server)
		if got != want {
			t.Errorf("%s: multi-statement query through the proxy: %s; server: %s", step, got, want)
		}
	}
	check("multi-statements on", a, direct)
	check("client without CLIENT_MULTI_STATEMENTS", cNo, directNo)
	if got := multiOutcome(t, cNo); got != "error 1064" {
		t.Errorf("multi-statement query without the capability: %s, want error 1064", got)
	}

	setOption(t, a, false)
	setOption(t, direct, false)
	for range 4 {
		check("after OFF", a, direct)
		check("other session", b, directB)
		check("client without CLIENT_MULTI_STATEMENTS", cNo, directNo)
	}
	if got := multiOutcome(t, a); got != "error 1064" {
		t.Errorf("after MYSQL_OPTION_MULTI_STATEMENTS_OFF: %s, want error 1064", got)
	}
	setOption(t, a, true)
	setOption(t, direct, true)
	check("after ON", a, direct)
	if got := multiOutcome(t, a); got != "2 results" {
		t.Errorf("after MYSQL_OPTION_MULTI_STATEMENTS_ON: %s, want 2 results", got)
	}
	setOption(t, cNo, true)
	setOption(t, directNo, true)
	check("capability-less client after ON", cNo, directNo)
}
