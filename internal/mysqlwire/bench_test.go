package mysqlwire

import (
	"bytes"
	"io"
	"testing"
)

// smallResult is a point-select response: column count, one column
// definition, EOF, one row, EOF.
func smallResult() []byte {
	var b []byte
	b = append(b, packet(1, []byte{1})...)
	b = append(b, packet(2, append([]byte{3, 'd', 'e', 'f', 6}, "sbtestsbtest1sbtest1cc\x0c\x21\x00\xe0\x01\x00\x00\xfe\x00\x00\x00\x00\x00"...))...)
	b = append(b, packet(3, []byte{0xfe, 0, 0, 2, 0})...)
	b = append(b, packet(4, append([]byte{119}, bytes.Repeat([]byte("7"), 119)...))...)
	b = append(b, packet(5, []byte{0xfe, 0, 0, 2, 0})...)
	return b
}

// loopReader serves the same response forever.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

// BenchmarkRelaySmallResult measures relaying a point-select response
// packet by packet from a backend reader to a client writer, as the proxy
// does: read raw, classify, stamp the sequence, write, flush at the end.
func BenchmarkRelaySmallResult(b *testing.B) {
	resp := smallResult()
	br := NewReader(&loopReader{data: resp}, make([]byte, 64<<10), nil)
	pool := NewBufferPool(16 << 10)
	cw := NewWriter(io.Discard, pool)
	b.SetBytes(int64(len(resp)))
	b.ReportAllocs()
	for b.Loop() {
		br.SetSeq(1)
		cw.SetSeq(1)
		for eofs := 0; eofs < 2; {
			raw, err := br.ReadRaw()
			if err != nil {
				b.Fatal(err)
			}
			if IsEOF(raw[HeaderSize:]) {
				eofs++
			}
			if err := cw.WriteRaw(raw); err != nil {
				b.Fatal(err)
			}
		}
		if err := cw.Flush(); err != nil {
			b.Fatal(err)
		}
		cw.Release()
	}
}

// BenchmarkReadCommand measures reading a client command into the
// resident buffer of an idle session.
func BenchmarkReadCommand(b *testing.B) {
	cmd := packet(0, append([]byte{3}, "SELECT c FROM sbtest1 WHERE id=4242"...))
	r := NewReader(&loopReader{data: cmd}, make([]byte, 512), NewBufferPool(16<<10))
	b.ReportAllocs()
	for b.Loop() {
		r.SetSeq(0)
		if _, err := r.ReadPacket(); err != nil {
			b.Fatal(err)
		}
		r.Shrink()
	}
}

// BenchmarkWriteOK measures building an OK packet in place.
func BenchmarkWriteOK(b *testing.B) {
	w := NewWriterSize(io.Discard, 16<<10)
	info := []byte("Rows matched: 1  Changed: 1  Warnings: 0")
	b.ReportAllocs()
	for b.Loop() {
		if err := w.WriteOK(1, 0, StatusAutocommit, 0, info); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWritePacket measures forwarding a client command to a backend.
func BenchmarkWritePacket(b *testing.B) {
	w := NewWriterSize(io.Discard, 64<<10)
	cmd := append([]byte{3}, "SELECT c FROM sbtest1 WHERE id=4242"...)
	b.ReportAllocs()
	for b.Loop() {
		w.SetSeq(0)
		if err := w.WritePacket(cmd); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}
