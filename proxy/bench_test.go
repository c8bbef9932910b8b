package proxy_test

import (
	"bytes"
	"net"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// rawClient is a minimal allocation-free MySQL client, so that allocations
// a benchmark reports are the proxy's.
type rawClient struct {
	nc net.Conn
	r  *mysqlwire.Reader
	w  *mysqlwire.Writer
}

func dialRaw(tb testing.TB, addr, db string) *rawClient {
	tb.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = nc.Close() })
	c := &rawClient{nc: nc, r: mysqlwire.NewReader(nc, make([]byte, 64<<10), nil), w: mysqlwire.NewWriterSize(nc, 64<<10)}
	greet, err := c.r.ReadPacket()
	if err != nil {
		tb.Fatal(err)
	}
	// protocol version, server version NUL, thread id, salt 1, filler,
	// caps, charset, status, caps, length, reserved, salt 2.
	i := bytes.IndexByte(greet[1:], 0) + 2 + 4
	salt := append([]byte(nil), greet[i:i+8]...)
	salt = append(salt, greet[i+8+1+2+1+2+2+1+10:][:12]...)
	const caps = 0x00000200 | 0x00008000 | 0x00080000 | 0x00000008 | 0x00020000 // 4.1, secure, plugin auth, with db, multi results
	c.w.SetSeq(c.r.Seq())
	c.w.Begin()
	c.w.AppendUint32(caps)
	c.w.AppendUint32(1 << 24)
	c.w.AppendByte(45)
	c.w.AppendBytes(make([]byte, 23))
	c.w.AppendString(proxytest.User)
	c.w.AppendByte(0)
	scramble := gomysql.CalcNativePassword(salt, []byte(proxytest.Password))
	c.w.AppendByte(byte(len(scramble)))
	c.w.AppendBytes(scramble)
	c.w.AppendString(db)
	c.w.AppendByte(0)
	c.w.AppendString("mysql_native_password")
	c.w.AppendByte(0)
	if err := c.w.End(); err != nil {
		tb.Fatal(err)
	}
	if err := c.w.Flush(); err != nil {
		tb.Fatal(err)
	}
	c.r.SetSeq(c.w.Seq())
	ok, err := c.r.ReadPacket()
	if err != nil || !mysqlwire.IsOK(ok) {
		tb.Fatalf("login: %q %v", ok, err)
	}
	return c
}

// query sends a COM_QUERY and reads its (single) response, returning the
// number of rows.
func (c *rawClient) query(tb testing.TB, q []byte) int {
	c.w.SetSeq(0)
	c.w.Begin()
	c.w.AppendByte(0x03)
	c.w.AppendBytes(q)
	if err := c.w.End(); err != nil {
		tb.Fatal(err)
	}
	if err := c.w.Flush(); err != nil {
		tb.Fatal(err)
	}
	c.r.SetSeq(1)
	return c.readResult(tb)
}

// BenchmarkPointSelectThroughProxy measures a primary-key SELECT through
// the proxy from one client: ns/op is a full round trip over loopback to
// MariaDB, allocs/op is what the proxy allocates per statement.
func BenchmarkPointSelectThroughProxy(b *testing.B) {
	px := env.StartProxy(b)
	setup := dialRaw(b, px.Addr, proxytest.DB)
	setup.query(b, []byte("CREATE TABLE IF NOT EXISTS bench_ps (id INT PRIMARY KEY, c CHAR(120))"))
	setup.query(b, []byte("REPLACE INTO bench_ps VALUES (1, REPEAT('x', 120))"))
	c := dialRaw(b, px.Addr, proxytest.DB)
	q := []byte("SELECT c FROM bench_ps WHERE id=1")
	if c.query(b, q) != 1 {
		b.Fatal("no row")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.query(b, q)
	}
}

// BenchmarkTransactionThroughProxy measures BEGIN, an UPDATE, a SELECT and
// COMMIT: pinning, status tracking and release per transaction.
func BenchmarkTransactionThroughProxy(b *testing.B) {
	px := env.StartProxy(b)
	c := dialRaw(b, px.Addr, proxytest.DB)
	c.query(b, []byte("CREATE TABLE IF NOT EXISTS bench_tx (id INT PRIMARY KEY, n INT)"))
	c.query(b, []byte("REPLACE INTO bench_tx VALUES (1, 0)"))
	stmts := [][]byte{[]byte("BEGIN"), []byte("UPDATE bench_tx SET n = n + 1 WHERE id = 1"),
		[]byte("SELECT n FROM bench_tx WHERE id = 1"), []byte("COMMIT")}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, q := range stmts {
			c.query(b, q)
		}
	}
}

// BenchmarkPointSelectDirect is BenchmarkPointSelectThroughProxy without
// the proxy: the difference is the proxy's cost per round trip.
func BenchmarkPointSelectDirect(b *testing.B) {
	c := dialRaw(b, env.Server(b).Addr, proxytest.DB)
	c.query(b, []byte("CREATE TABLE IF NOT EXISTS bench_ps (id INT PRIMARY KEY, c CHAR(120))"))
	c.query(b, []byte("REPLACE INTO bench_ps VALUES (1, REPEAT('x', 120))"))
	q := []byte("SELECT c FROM bench_ps WHERE id=1")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.query(b, q)
	}
}

// prepare sends COM_STMT_PREPARE and returns the statement id.
func (c *rawClient) prepare(tb testing.TB, q []byte) uint32 {
	c.w.SetSeq(0)
	c.w.Begin()
	c.w.AppendByte(0x16)
	c.w.AppendBytes(q)
	if err := c.w.End(); err != nil {
		tb.Fatal(err)
	}
	if err := c.w.Flush(); err != nil {
		tb.Fatal(err)
	}
	c.r.SetSeq(1)
	p, err := c.r.ReadPacket()
	if err != nil {
		tb.Fatal(err)
	}
	ok, err := mysqlwire.ParseStmtPrepareOK(p)
	if err != nil {
		tb.Fatalf("prepare: %v %v", mysqlwire.ParseERR(p), err)
	}
	for _, n := range []uint16{ok.Params, ok.Columns} {
		for i := 0; n > 0 && i <= int(n); i++ {
			if _, err := c.r.ReadPacket(); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return ok.StmtID
}

// executeInt runs a one-parameter statement with an INT argument, sending
// the parameter type only when bind is set (as libmysqlclient and sysbench
// do after the first execute), and returns the number of rows.
func (c *rawClient) executeInt(tb testing.TB, id uint32, bind bool, v int32) int {
	c.w.SetSeq(0)
	c.w.Begin()
	c.w.AppendByte(0x17)
	c.w.AppendUint32(id)
	c.w.AppendByte(0)
	c.w.AppendUint32(1)
	c.w.AppendByte(0) // NULL bitmap
	if bind {
		c.w.AppendByte(1)
		c.w.AppendUint16(mysqlwire.TypeLong)
	} else {
		c.w.AppendByte(0)
	}
	c.w.AppendUint32(uint32(v))
	if err := c.w.End(); err != nil {
		tb.Fatal(err)
	}
	if err := c.w.Flush(); err != nil {
		tb.Fatal(err)
	}
	c.r.SetSeq(1)
	return c.readResult(tb)
}

// readResult reads an OK or one result set.
func (c *rawClient) readResult(tb testing.TB) int {
	p, err := c.r.ReadPacket()
	if err != nil {
		tb.Fatal(err)
	}
	switch {
	case mysqlwire.IsOK(p):
		return 0
	case mysqlwire.IsERR(p):
		tb.Fatal(mysqlwire.ParseERR(p))
	}
	eofs, rows := 0, 0
	for eofs < 2 {
		p, err := c.r.ReadPacket()
		if err != nil {
			tb.Fatal(err)
		}
		switch {
		case mysqlwire.IsEOF(p):
			eofs++
		case mysqlwire.IsERR(p):
			tb.Fatal(mysqlwire.ParseERR(p))
		case eofs == 1:
			rows++
		}
	}
	return rows
}

// benchPrepared runs sysbench's point select as a prepared statement:
// types bound on the first execute only.
func benchPrepared(b *testing.B, addr string) {
	setup := dialRaw(b, addr, proxytest.DB)
	setup.query(b, []byte("CREATE TABLE IF NOT EXISTS bench_ps (id INT PRIMARY KEY, c CHAR(120))"))
	setup.query(b, []byte("REPLACE INTO bench_ps VALUES (1, REPEAT('x', 120))"))
	c := dialRaw(b, addr, proxytest.DB)
	id := c.prepare(b, []byte("SELECT c FROM bench_ps WHERE id=?"))
	if c.executeInt(b, id, true, 1) != 1 {
		b.Fatal("no row")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.executeInt(b, id, false, 1)
	}
}

// BenchmarkPreparedPointSelectThroughProxy measures COM_STMT_EXECUTE
// through the proxy: id rewrite, type replay and binary relay.
func BenchmarkPreparedPointSelectThroughProxy(b *testing.B) {
	benchPrepared(b, env.StartProxy(b).Addr)
}

// BenchmarkPreparedPointSelectDirect is the same without the proxy.
func BenchmarkPreparedPointSelectDirect(b *testing.B) {
	benchPrepared(b, env.Server(b).Addr)
}
