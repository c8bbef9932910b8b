package mysqlwire

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gmclient "github.com/go-mysql-org/go-mysql/client"
	gmmysql "github.com/go-mysql-org/go-mysql/mysql"
	gsdmysql "github.com/go-sql-driver/mysql"
)

// A tiny MySQL server on 127.0.0.1 that switches to the compressed protocol
// the way the proxy will: mysqlwire Reader and Writer, Reset onto a
// CompressConn after the handshake's OK. Queries it understands:
//
//	rows N    one VARCHAR column, N rows "row-<i>"
//	big N     one LONGBLOB column, one row of N bytes
//	anything else starting with "select"  one row echoing the query
//	anything else                         an OK packet
type czServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	algos []CompressAlgo // what each connection negotiated
	level []int
	zin   int // compressed packets received with a compressed payload
	errs  []error
}

// czTee records what is read from a connection.
type czTee struct {
	net.Conn
	rec bytes.Buffer
}

func (c *czTee) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.rec.Write(p[:n])
	return n, err
}

// compressedFrames counts the compressed packets in s whose payload is
// compressed.
func compressedFrames(s []byte) int {
	n := 0
	for len(s) >= CompressHeaderSize {
		clen := int(s[0]) | int(s[1])<<8 | int(s[2])<<16
		if s[4]|s[5]|s[6] != 0 {
			n++
		}
		s = s[min(len(s), CompressHeaderSize+clen):]
	}
	return n
}

const czServerCaps = ClientLongPassword | ClientLongFlag | ClientConnectWithDB | ClientProtocol41 |
	ClientTransactions | ClientSecureConnection | ClientMultiResults | ClientPluginAuth |
	ClientConnectAttrs | ClientPluginAuthLenenc | ClientCompress | ClientZstdCompressionAlgorithm

func czStartServer(t *testing.T) *czServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback listener: %v", err)
	}
	s := &czServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer nc.Close()
				if err := s.serve(nc); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					s.mu.Lock()
					s.errs = append(s.errs, err)
					s.mu.Unlock()
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
		for _, err := range s.errs {
			t.Errorf("fake server: %v", err)
		}
	})
	return s
}

func (s *czServer) addr() string { return s.ln.Addr().String() }

// compressedIn is the number of compressed packets with a compressed
// payload the server has read from finished connections.
func (s *czServer) compressedIn() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.zin
}

func (s *czServer) negotiated() ([]CompressAlgo, []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CompressAlgo(nil), s.algos...), append([]int(nil), s.level...)
}

func (s *czServer) serve(nc net.Conn) error {
	r := NewReader(nc, make([]byte, 4096), nil)
	w := NewWriterSize(nc, 16<<10)

	hs := []byte{10}
	hs = append(hs, "8.0.36-tpproxy-test\x00"...)
	hs = append(hs, 1, 0, 0, 0)    // connection id
	hs = append(hs, "abcdefgh"...) // scramble, part 1
	hs = append(hs, 0)             // filler
	hs = binary.LittleEndian.AppendUint16(hs, uint16(czServerCaps&0xffff))
	hs = append(hs, 45) // utf8mb4_general_ci
	hs = binary.LittleEndian.AppendUint16(hs, StatusAutocommit)
	hs = binary.LittleEndian.AppendUint16(hs, uint16(czServerCaps>>16))
	hs = append(hs, 21)                    // auth data length
	hs = append(hs, make([]byte, 10)...)   // reserved
	hs = append(hs, "ijklmnopqrst\x00"...) // scramble, part 2
	hs = append(hs, "mysql_native_password\x00"...)
	w.SetSeq(0)
	if err := w.WritePacket(hs); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	r.SetSeq(1)
	resp, err := r.ReadPacket()
	if err != nil {
		return fmt.Errorf("handshake response: %w", err)
	}
	if len(resp) < 32 {
		return fmt.Errorf("handshake response of %d bytes", len(resp))
	}
	caps := binary.LittleEndian.Uint32(resp) & czServerCaps
	algo := NegotiatedCompression(caps)
	level := 0
	if algo == CompressZstd {
		level = int(resp[len(resp)-1]) // zstd_compression_level closes the response
	}
	s.mu.Lock()
	s.algos = append(s.algos, algo)
	s.level = append(s.level, level)
	s.mu.Unlock()
	w.SetSeq(r.Seq())
	if err := w.WriteOK(0, 0, StatusAutocommit, 0, nil); err != nil {
		return err
	}
	// The OK goes out uncompressed: flush before the switch.
	if err := w.Flush(); err != nil {
		return err
	}
	if algo != CompressNone {
		pre := r.TakeBuffered()
		tee := &czTee{Conn: nc}
		tee.rec.Write(pre)
		defer func() {
			s.mu.Lock()
			s.zin += compressedFrames(tee.rec.Bytes())
			s.mu.Unlock()
		}()
		cc := NewCompressConnBuffered(tee, algo, level, CompressServer, pre)
		r.Reset(cc)
		w.Reset(cc)
	}

	for {
		r.SetSeq(0)
		pkt, err := r.ReadPacket()
		if err != nil {
			return err
		}
		if len(pkt) == 0 {
			return errors.New("empty command")
		}
		w.SetSeq(r.Seq())
		switch pkt[0] {
		case 0x01: // COM_QUIT
			return nil
		case ComQuery:
			err = s.query(w, string(pkt[1:]))
		case 0x02, 0x0e, 0x1f: // COM_INIT_DB, COM_PING, COM_RESET_CONNECTION
			err = w.WriteOK(0, 0, StatusAutocommit, 0, nil)
		default:
			err = w.WriteERR(NewError(1047, "08S01", "unknown command %d", pkt[0]))
		}
		if err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

func (s *czServer) query(w *Writer, q string) error {
	f := strings.Fields(q)
	var col Column
	var rows [][]byte
	switch {
	case len(f) == 2 && f[0] == "rows":
		n, _ := strconv.Atoi(f[1])
		col = Column{Name: []byte("r"), Charset: 45, Length: 1024, Type: 0xfd}
		for i := range n {
			rows = append(rows, fmt.Appendf(nil, "row-%d", i))
		}
	case len(f) == 2 && f[0] == "big":
		n, _ := strconv.Atoi(f[1])
		col = Column{Name: []byte("b"), Charset: 63, Length: 1<<32 - 1, Type: 0xfb, Flags: FlagBinary}
		rows = append(rows, czBig(n))
	case strings.HasPrefix(strings.ToLower(q), "select"):
		col = Column{Name: []byte("q"), Charset: 45, Length: 1 << 20, Type: 0xfd}
		rows = append(rows, []byte(q))
	default:
		return w.WriteOK(uint64(len(q)), 0, StatusAutocommit, 0, nil)
	}
	if err := w.WritePacket([]byte{1}); err != nil {
		return err
	}
	if err := w.WriteColumn(col); err != nil {
		return err
	}
	if err := w.WriteEOF(0, StatusAutocommit); err != nil {
		return err
	}
	for _, v := range rows {
		if err := w.WritePacket(append(AppendLenEncInt(nil, uint64(len(v))), v...)); err != nil {
			return err
		}
	}
	return w.WriteEOF(0, StatusAutocommit)
}

// czBig is the value of "big n": compressible but not trivially.
func czBig(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + (i*7+i/1000)%26)
	}
	return b
}

// TestCompressInteropGoSQLDriver runs go-sql-driver/mysql with
// compress=true (zlib) against the fake server.
func TestCompressInteropGoSQLDriver(t *testing.T) {
	s := czStartServer(t)
	db, err := sql.Open("mysql", "u:p@tcp("+s.addr()+")/?compress=true&maxAllowedPacket=67108864&timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	var q string
	long := "select '" + strings.Repeat("compress me ", 1000) + "'"
	for _, query := range []string{"select 1", long, "select x"} {
		if err := db.QueryRowContext(ctx, query).Scan(&q); err != nil || q != query {
			t.Fatalf("%.20s: %q, %v", query, q, err)
		}
	}
	res, err := db.ExecContext(ctx, "do 12345")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 8 {
		t.Fatalf("rows affected %d", n)
	}
	rows, err := db.QueryContext(ctx, "rows 5000")
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for rows.Next() {
		if err := rows.Scan(&q); err != nil || q != fmt.Sprintf("row-%d", i) {
			t.Fatalf("row %d: %q, %v", i, q, err)
		}
		i++
	}
	if err := rows.Err(); err != nil || i != 5000 {
		t.Fatalf("%d rows, %v", i, err)
	}
	rows.Close()
	sizes := []int{100000}
	if !testing.Short() {
		sizes = append(sizes, 17<<20) // a row bigger than 16 MiB
	}
	for _, n := range sizes {
		var b []byte
		if err := db.QueryRowContext(ctx, fmt.Sprintf("big %d", n)).Scan(&b); err != nil {
			t.Fatalf("big %d: %v", n, err)
		}
		if !bytes.Equal(b, czBig(n)) {
			t.Fatalf("big %d: got %d bytes, not the value sent", n, len(b))
		}
	}
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("ping after: %v", err)
	}
	algos, _ := s.negotiated()
	for _, a := range algos {
		if a != CompressZlib {
			t.Fatalf("negotiated %v", algos)
		}
	}
	db.Close()
	czWaitCompressedIn(t, s)
	_ = gsdmysql.ErrInvalidConn // the driver registers itself as "mysql"
}

// czWaitCompressedIn waits for the server to see the client's connections
// end and checks that the client sent compressed payloads (its long
// queries), which the server inflated.
func czWaitCompressedIn(t *testing.T, s *czServer) {
	t.Helper()
	for i := 0; s.compressedIn() == 0 && i < 100; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if s.compressedIn() == 0 {
		t.Fatal("the client sent no compressed payload")
	}
}

// TestCompressInteropGoMySQL runs the go-mysql client with zstd and with
// zlib against the fake server. It resets the compressed sequence on every
// packet it writes and checks the server's strictly, so it also checks the
// sequence the server answers with.
func TestCompressInteropGoMySQL(t *testing.T) {
	s := czStartServer(t)
	for _, flag := range []uint32{gmmysql.CLIENT_ZSTD_COMPRESSION_ALGORITHM, gmmysql.CLIENT_COMPRESS} {
		c, err := gmclient.ConnectWithTimeout(s.addr(), "u", "p", "", 5*time.Second, func(c *gmclient.Conn) error {
			c.SetCapability(flag)
			return nil
		})
		if err != nil {
			t.Fatalf("connect with %#x: %v", flag, err)
		}
		long := "select '" + strings.Repeat("zstd or zlib ", 2000) + "'"
		for _, query := range []string{"select 1", long} {
			r, err := c.Execute(query)
			if err != nil {
				t.Fatalf("%#x %.20s: %v", flag, query, err)
			}
			if v, _ := r.GetString(0, 0); v != query {
				t.Fatalf("%#x: %.20q", flag, v)
			}
		}
		r, err := c.Execute("rows 3000")
		if err != nil {
			t.Fatal(err)
		}
		if r.RowNumber() != 3000 {
			t.Fatalf("%d rows", r.RowNumber())
		}
		if v, _ := r.GetString(2999, 0); v != "row-2999" {
			t.Fatalf("last row %q", v)
		}
		r, err = c.Execute("big 300000")
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := r.GetString(0, 0); v != string(czBig(300000)) {
			t.Fatalf("big: %d bytes", len(v))
		}
		if err := c.Ping(); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	czWaitCompressedIn(t, s)
	algos, levels := s.negotiated()
	if len(algos) != 2 || algos[0] != CompressZstd || levels[0] != 3 || algos[1] != CompressZlib {
		t.Fatalf("negotiated %v levels %v", algos, levels)
	}
}

// TestCompressInteropMariaDBClient runs the mysql command-line client
// (libmariadb or libmysqlclient) with --compress against the fake server.
// It needs the binary and TPPROXY_TEST_MYSQL_CLIENT=1.
func TestCompressInteropMariaDBClient(t *testing.T) {
	if os.Getenv("TPPROXY_TEST_MYSQL_CLIENT") == "" {
		t.Skip("set TPPROXY_TEST_MYSQL_CLIENT=1 to run the mysql command-line client")
	}
	bin, err := exec.LookPath("mysql")
	if err != nil {
		t.Skip("no mysql client")
	}
	s := czStartServer(t)
	host, port, _ := net.SplitHostPort(s.addr())
	query := "select '" + strings.Repeat("over the wire ", 500) + "'; rows 2000; big 20000000; do 1"
	var script strings.Builder
	for q := range strings.SplitSeq(query, "; ") {
		script.WriteString(q + ";\n")
	}
	cmd := exec.Command(bin, "--no-defaults", "--compress", "--skip-ssl", "--protocol=tcp", "-h", host, "-P", port,
		"-u", "u", "-pp", "--batch", "--skip-column-names", "--max-allowed-packet=64M")
	cmd.Stdin = strings.NewReader(script.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mysql client: %v\n%.2000s", err, out)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 1+2000+1 {
		t.Fatalf("%d lines of output", len(lines))
	}
	if lines[0] != strings.TrimSuffix(strings.SplitN(query, "; ", 2)[0], ";") || lines[2000] != "row-1999" || lines[2001] != string(czBig(20000000)) {
		t.Fatalf("unexpected output: %.200q ... %.50q", lines[0], lines[2001])
	}
	if algos, _ := s.negotiated(); len(algos) != 1 || algos[0] != CompressZlib {
		t.Fatalf("negotiated %v", algos)
	}
	czWaitCompressedIn(t, s)
}
