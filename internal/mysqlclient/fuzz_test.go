package mysqlclient

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// memConn is a net.Conn whose peer has sent everything in advance: reads
// drain in and then see EOF, writes are discarded.
type memConn struct{ in *bytes.Reader }

func (m *memConn) Read(b []byte) (int, error)         { return m.in.Read(b) }
func (m *memConn) Write(b []byte) (int, error)        { return len(b), nil }
func (m *memConn) Close() error                       { return nil }
func (m *memConn) LocalAddr() net.Addr                { return &net.TCPAddr{} }
func (m *memConn) RemoteAddr() net.Addr               { return &net.TCPAddr{} }
func (m *memConn) SetDeadline(t time.Time) error      { return nil }
func (m *memConn) SetReadDeadline(t time.Time) error  { return nil }
func (m *memConn) SetWriteDeadline(t time.Time) error { return nil }

// packets frames payloads with sequence ids from seq on.
func packets(seq byte, payloads ...[]byte) []byte {
	var b []byte
	for _, p := range payloads {
		b = append(b, byte(len(p)), byte(len(p)>>8), byte(len(p)>>16), seq)
		b = append(b, p...)
		seq++
	}
	return b
}

var (
	fzOK     = []byte{0, 0, 0, 2, 0, 0, 0}
	fzMoreOK = []byte{0, 0, 0, 0x0a, 0, 0, 0}
	fzEOF    = []byte{0xfe, 0, 0, 2, 0}
	fzMore   = []byte{0xfe, 0, 0, 0x0a, 0}
	fzCol    = []byte{3, 'd', 'e', 'f', 0, 0, 0, 1, 'c', 0, 0x0c, 63, 0, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0}
	fzERR    = []byte("\xff\x7a\x04#42S02Table 'x' doesn't exist")
)

// FuzzReadResult feeds arbitrary server bytes to the client's response
// readers (COM_QUERY, COM_PING, COM_STMT_PREPARE, COM_STMT_EXECUTE): no
// panic, no hang, and a consistent account of whether the connection is
// still usable.
func FuzzReadResult(f *testing.F) {
	f.Add(byte(0), packets(1, fzOK))
	f.Add(byte(0), packets(1, fzERR))
	f.Add(byte(0), packets(1, []byte{1}, fzCol, fzEOF, []byte{1, '1'}, []byte{0xfb}, fzEOF))
	f.Add(byte(0), packets(1, []byte{1}, fzCol, fzEOF, []byte{1, '1'}, fzMore, []byte{1}, fzCol, fzEOF, fzEOF))
	f.Add(byte(0), packets(1, fzMoreOK, []byte{1}, fzCol, fzEOF, []byte{1, '1'}, fzERR))
	f.Add(byte(1), packets(1, fzOK))
	f.Add(byte(2), packets(1, []byte{0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}, fzCol, fzEOF, fzCol, fzEOF))
	f.Add(byte(2), packets(1, fzERR))
	f.Add(byte(3), packets(1, []byte{1}, fzCol, fzEOF, []byte{0, 0, 1, 0, 0, 0, 0, 0, 0, 0}, fzEOF))
	f.Add(byte(7), packets(1, []byte{1, 1}, fzCol, fzEOF, []byte{0, 0, 1, 0, 0, 0, 0, 0, 0, 0}, fzEOF))
	f.Add(byte(7), packets(1, []byte{1, 0}, fzEOF, []byte{0, 0, 1, 0, 0, 0, 0, 0, 0, 0}, fzEOF))
	f.Fuzz(func(t *testing.T, op byte, data []byte) {
		c := newConn(&memConn{in: bytes.NewReader(data)}, &Config{MaxAllowedPacket: 1 << 20})
		// MariaDB's metadata caching changes the column count packet.
		c.cacheMeta = op&4 != 0
		var err error
		var rows int
		switch op & 3 {
		case 0:
			rows, err = c.ExecString("SELECT c FROM t")
		case 1:
			err = c.Ping()
		case 2:
			var s *Stmt
			s, err = c.Prepare("SELECT c FROM t WHERE id = ?")
			if err == nil && (s.Params < 0 || s.Columns < 0) {
				t.Fatalf("statement %+v", s)
			}
		case 3:
			rows, err = c.Execute(&Stmt{ID: 1, Params: 2}, Int(1), String("x"))
		}
		if rows < 0 {
			t.Fatalf("%d rows", rows)
		}
		var se *mysqlwire.Error
		switch {
		case err == nil, errors.As(err, &se):
			if c.Broken() {
				t.Fatalf("broken after a complete response (err %v)", err)
			}
		case !errors.Is(err, ErrBroken) || !c.Broken():
			t.Fatalf("error %v does not break the connection (broken %v)", err, c.Broken())
		}
		if c.Broken() {
			if _, err2 := c.ExecString("SELECT 1"); !errors.Is(err2, ErrBroken) {
				t.Fatalf("a broken connection answered %v", err2)
			}
		}
	})
}

// FuzzHandshake feeds arbitrary server bytes to the connection phase, as
// Connect and as the pool (Login) run it.
func FuzzHandshake(f *testing.F) {
	greeting := []byte("\x0a5.5.5-10.11.14-MariaDB\x00\x2a\x00\x00\x00" +
		"ABCDEFGH\x00\xfe\xf7\x2d\x02\x00\xff\x81\x15\x00\x00\x00\x00\x00\x00\x1d\x00\x00\x00" +
		"IJKLMNOPQRST\x00mysql_native_password\x00")
	f.Add(false, append(packets(0, greeting), packets(2, fzOK)...))
	f.Add(true, append(packets(0, greeting), packets(2, fzOK)...))
	f.Add(false, append(packets(0, greeting), packets(2, []byte("\xfecaching_sha2_password\x00abcdefghij0123456789\x00"))...))
	f.Add(false, append(packets(0, greeting), packets(2, []byte("\xfeclient_ed25519\x00abcdefghij0123456789abcdefghij01"), fzOK)...))
	f.Add(true, append(packets(0, greeting), packets(2, []byte("\xfesha256_password\x00abcdefghij0123456789\x00"), []byte("\x01-----BEGIN PUBLIC KEY-----"))...))
	f.Add(false, append(packets(0, greeting), packets(2, []byte{1, 3}, fzOK)...))
	f.Add(false, append(packets(0, greeting), packets(2, []byte{1, 4})...))
	f.Add(false, append(packets(0, greeting), packets(2, fzOK, fzOK)...))
	f.Add(false, packets(0, greeting[:30]))
	f.Add(false, packets(0, []byte{10, 0}))
	f.Add(false, packets(0, fzERR))
	f.Fuzz(func(t *testing.T, proxy bool, data []byte) {
		cfg := (&Config{Addr: "x", User: "u", Passwd: "p", MaxAllowedPacket: 1 << 20}).withDefaults()
		want := Protocol{Caps: baseCaps, ExtCaps: mysqlwire.MariaDBClientCacheMetadata}
		if proxy {
			cfg.CollationID, cfg.ConnectAttrs = 45, map[string]string{"program_name": "tpproxy"}
			want = Protocol{Caps: mysqlwire.ClientSessionTrack | mysqlwire.ClientMultiResults,
				ExtCaps: mysqlwire.MariaDBClientStmtBulkOperations | mysqlwire.MariaDBClientExtendedMetadata}
		}
		c := newConn(&memConn{in: bytes.NewReader(data)}, &cfg)
		g, sent, err := c.handshake(context.Background(), &cfg, want)
		var se *mysqlwire.Error
		if err != nil && !errors.As(err, &se) && !c.Broken() {
			t.Fatalf("handshake error %v leaves the connection usable", err)
		}
		if err != nil {
			return
		}
		if len(g.Salt) < 20 {
			t.Fatalf("logged in with a salt of %d bytes", len(g.Salt))
		}
		if sent.Caps&^(g.Caps|mysqlwire.ClientSSL) != 0 || sent.ExtCaps&^(want.ExtCaps&g.ExtCaps) != 0 {
			t.Fatalf("asked for %#x/%#x of an offer of %#x/%#x", sent.Caps, sent.ExtCaps, g.Caps, g.ExtCaps)
		}
		if sent.ExtCaps != 0 && sent.Caps&mysqlwire.ClientLongPassword != 0 {
			t.Fatal("extended capabilities asked for with CLIENT_MYSQL set")
		}
	})
}
