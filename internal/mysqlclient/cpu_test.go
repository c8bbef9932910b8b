package mysqlclient

import (
	"bytes"
	"net"
	"testing"
	"time"
)

// replayConn answers every write with the same canned response, so a
// benchmark measures the client's own CPU per statement without a server.
type replayConn struct {
	resp    []byte
	pending []byte
}

func (r *replayConn) Write(b []byte) (int, error) {
	r.pending = r.resp
	return len(b), nil
}

func (r *replayConn) Read(b []byte) (int, error) {
	n := copy(b, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

func (r *replayConn) Close() error                       { return nil }
func (r *replayConn) LocalAddr() net.Addr                { return &net.TCPAddr{} }
func (r *replayConn) RemoteAddr() net.Addr               { return &net.TCPAddr{} }
func (r *replayConn) SetDeadline(t time.Time) error      { return nil }
func (r *replayConn) SetReadDeadline(t time.Time) error  { return nil }
func (r *replayConn) SetWriteDeadline(t time.Time) error { return nil }

// pointSelectResponse is a server's answer to a one-row, one-column
// SELECT of a CHAR(120) value.
func pointSelectResponse() []byte {
	row := append([]byte{120}, bytes.Repeat([]byte("7"), 120)...)
	return packets(1, []byte{1}, fzCol, fzEOF, row, fzEOF)
}

// BenchmarkClientCPU is the client's own cost of a point select: building
// the command and reading the response, with the network taken out.
func BenchmarkClientCPU(b *testing.B) {
	b.Run("text", func(b *testing.B) {
		c := newConn(&replayConn{resp: pointSelectResponse()}, &Config{MaxAllowedPacket: 1 << 20})
		q := []byte("SELECT c FROM sbtest1 WHERE id=4242")
		b.ReportAllocs()
		for b.Loop() {
			if n, err := c.Exec(q); n != 1 || err != nil {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("prepared", func(b *testing.B) {
		c := newConn(&replayConn{resp: pointSelectResponse()}, &Config{MaxAllowedPacket: 1 << 20})
		s := &Stmt{ID: 1, Params: 1, Columns: 1}
		b.ReportAllocs()
		for b.Loop() {
			if n, err := c.Execute(s, Int(4242)); n != 1 || err != nil {
				b.Fatal(n, err)
			}
		}
	})
}
