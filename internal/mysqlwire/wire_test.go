package mysqlwire

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// packet builds a physical packet.
func packet(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

func TestReaderReadsPacketsAcrossSmallReads(t *testing.T) {
	var stream []byte
	stream = append(stream, packet(0, []byte("hello"))...)
	stream = append(stream, packet(1, bytes.Repeat([]byte("x"), 3000))...)
	stream = append(stream, packet(2, nil)...)
	// iotest-style one byte at a time reader
	r := NewReader(&oneByteReader{b: stream}, make([]byte, 16), NewBufferPool(4096))
	p, err := r.ReadPacket()
	if err != nil || string(p) != "hello" {
		t.Fatalf("first packet %q, %v", p, err)
	}
	p, err = r.ReadPacket()
	if err != nil || len(p) != 3000 {
		t.Fatalf("second packet len %d, %v", len(p), err)
	}
	p, err = r.ReadPacket()
	if err != nil || len(p) != 0 {
		t.Fatalf("third packet %q, %v", p, err)
	}
	if _, err := r.ReadPacket(); !errors.Is(err, io.EOF) {
		t.Fatalf("at end: %v, want EOF", err)
	}
	r.Shrink()
	if len(r.buf) != 16 {
		t.Fatalf("after Shrink the reader holds %d bytes, want its 16-byte resident buffer", len(r.buf))
	}
}

type oneByteReader struct{ b []byte }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, io.EOF
	}
	p[0] = o.b[0]
	o.b = o.b[1:]
	return 1, nil
}

func TestReaderChecksSequence(t *testing.T) {
	r := NewReader(bytes.NewReader(packet(3, []byte("x"))), make([]byte, 64), nil)
	if _, err := r.ReadPacket(); !errors.Is(err, ErrSequence) {
		t.Fatalf("got %v, want ErrSequence", err)
	}
}

func TestReaderTruncatedPacket(t *testing.T) {
	raw := packet(0, []byte("hello"))
	r := NewReader(bytes.NewReader(raw[:6]), make([]byte, 64), nil)
	if _, err := r.ReadPacket(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v, want ErrUnexpectedEOF", err)
	}
}

func TestReaderJoinsLargePackets(t *testing.T) {
	payload := make([]byte, MaxPayload+10)
	for i := range payload {
		payload[i] = byte(i)
	}
	var buf bytes.Buffer
	w := NewWriterSize(&buf, 1024)
	if err := w.WritePacket(payload); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if w.Seq() != 2 {
		t.Fatalf("a %d-byte payload took %d packets, want 2", len(payload), w.Seq())
	}
	r := NewReader(&buf, make([]byte, 64), nil)
	got, err := r.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatalf("joined payload differs (len %d vs %d)", len(got), len(payload))
	}
}

func TestReaderExactMultipleOfMaxPayloadEndsWithEmptyPacket(t *testing.T) {
	payload := make([]byte, MaxPayload)
	var buf bytes.Buffer
	w := NewWriterSize(&buf, 1024)
	if err := w.WritePacket(payload); err != nil {
		t.Fatal(err)
	}
	_ = w.Flush()
	if w.Seq() != 2 {
		t.Fatalf("payload of exactly MaxPayload must be followed by an empty packet; wrote %d packets", w.Seq())
	}
	r := NewReader(&buf, make([]byte, 64), nil)
	got, err := r.ReadPacket()
	if err != nil || len(got) != MaxPayload {
		t.Fatalf("len %d, %v", len(got), err)
	}
}

func TestReaderMaxPacket(t *testing.T) {
	r := NewReader(bytes.NewReader(packet(0, make([]byte, 2000))), make([]byte, 64), nil)
	r.MaxPacket = 1000
	if _, err := r.ReadPacket(); !errors.Is(err, ErrPacketTooLarge) {
		t.Fatalf("got %v, want ErrPacketTooLarge", err)
	}
	if len(r.buf) > 64 {
		t.Fatalf("the reader buffered %d bytes of a packet it refused", len(r.buf))
	}
}

func TestWriterStampsSequenceAndReleases(t *testing.T) {
	var buf bytes.Buffer
	pool := NewBufferPool(1024)
	w := NewWriter(&buf, pool)
	w.SetSeq(5)
	raw := packet(0, []byte("abc"))
	if err := w.WriteRaw(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteOK(1, 2, StatusAutocommit, 0, []byte("Rows matched: 1")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	w.Release()
	if w.buf != nil {
		t.Fatal("Release kept the buffer")
	}
	r := NewReader(&buf, make([]byte, 64), nil)
	r.SetSeq(5)
	if p, err := r.ReadPacket(); err != nil || string(p) != "abc" {
		t.Fatalf("raw packet %q, %v", p, err)
	}
	p, err := r.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	ok, err := ParseOK(p, false)
	if err != nil {
		t.Fatal(err)
	}
	if ok.AffectedRows != 1 || ok.InsertID != 2 || ok.Status != StatusAutocommit || string(ok.Info) != "Rows matched: 1" {
		t.Fatalf("OK round trip: %+v", ok)
	}
}

func TestWriterLargeRawPacketBypassesBuffer(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriterSize(&buf, 64)
	big := packet(0, bytes.Repeat([]byte("y"), 1000))
	if err := w.WriteRaw(packet(0, []byte("a"))); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRaw(big); err != nil {
		t.Fatal(err)
	}
	_ = w.Flush()
	r := NewReader(&buf, make([]byte, 8), nil)
	if p, _ := r.ReadPacket(); string(p) != "a" {
		t.Fatalf("order broken: first packet %q", p)
	}
	if p, _ := r.ReadPacket(); len(p) != 1000 {
		t.Fatalf("second packet length %d", len(p))
	}
}

func TestParseOKWithSessionState(t *testing.T) {
	// OK with SERVER_SESSION_STATE_CHANGED: sql_mode var, schema, state change.
	var st []byte
	st = append(st, TrackSystemVariables)
	v := AppendLenEncInt(nil, 8)
	v = append(v, "sql_mode"...)
	v = AppendLenEncInt(v, 4)
	v = append(v, "ANSI"...)
	st = AppendLenEncInt(st, uint64(len(v)))
	st = append(st, v...)
	st = append(st, TrackSchema)
	st = AppendLenEncInt(st, 3)
	st = AppendLenEncInt(st, 2)
	st = append(st, "d1"...)
	st = append(st, TrackStateChange, 1, '1')

	p := []byte{OKHeader, 0, 0, 0x02, 0x40, 0, 0}
	p = append(p, 0) // empty info
	p = AppendLenEncInt(p, uint64(len(st)))
	p = append(p, st...)
	ok, err := ParseOK(p, true)
	if err != nil {
		t.Fatal(err)
	}
	var vars, schemas []string
	changed := false
	rest := ok.SessionState
	for len(rest) > 0 {
		var e StateEntry
		e, rest, err = NextStateEntry(rest)
		if err != nil {
			t.Fatal(err)
		}
		switch e.Type {
		case TrackSystemVariables:
			n, v, err := SystemVariable(e.Data)
			if err != nil {
				t.Fatal(err)
			}
			vars = append(vars, string(n)+"="+string(v))
		case TrackSchema:
			s, err := TrackedSchema(e.Data)
			if err != nil {
				t.Fatal(err)
			}
			schemas = append(schemas, string(s))
		case TrackStateChange:
			changed = string(e.Data) == "1"
		}
	}
	if strings.Join(vars, ",") != "sql_mode=ANSI" || strings.Join(schemas, ",") != "d1" || !changed {
		t.Fatalf("vars %v schemas %v changed %v", vars, schemas, changed)
	}
}

// EachStateEntry walks the entries in order, stops when told, and stops
// with an error at a malformed one.
func TestEachStateEntry(t *testing.T) {
	var st []byte
	st = AppendStateEntry(st, TrackSchema, []byte{2, 'd', '1'})
	st = AppendStateEntry(st, TrackStateChange, []byte("1"))
	st = AppendStateEntry(st, TrackSchema, []byte{2, 'd', '2'})
	var types []byte
	if err := EachStateEntry(st, func(e StateEntry) bool {
		types = append(types, e.Type)
		return e.Type != TrackStateChange
	}); err != nil || !bytes.Equal(types, []byte{TrackSchema, TrackStateChange}) {
		t.Fatalf("stopped at the second entry: saw %v, err %v", types, err)
	}
	n := 0
	bad := append(slices.Clip(st), TrackSchema, 0xfc) // a length cut short
	if err := EachStateEntry(bad, func(StateEntry) bool { n++; return true }); err == nil || n != 3 {
		t.Fatalf("malformed last entry: %d entries, err %v", n, err)
	}
}

func TestParseERR(t *testing.T) {
	p := append([]byte{0xff, 0x19, 0x04, '#'}, "42000Unknown database 'x'"...)
	e := ParseERR(p)
	if e.Code != 1049 || e.State != "42000" || e.Message != "Unknown database 'x'" {
		t.Fatalf("%+v", e)
	}
	if got := e.Error(); got != "ERROR 1049 (42000): Unknown database 'x'" {
		t.Fatalf("Error() = %q", got)
	}
}

func TestIsEOFDistinguishesRows(t *testing.T) {
	if !IsEOF([]byte{0xfe, 0, 0, 2, 0}) {
		t.Fatal("EOF not recognised")
	}
	row := append([]byte{0xfe}, make([]byte, 8)...)
	if IsEOF(row) {
		t.Fatal("a 9-byte row starting with 0xfe taken for EOF")
	}
}

func TestLenEnc(t *testing.T) {
	for _, v := range []uint64{0, 250, 251, 1<<16 - 1, 1 << 16, 1<<24 - 1, 1 << 24, 1<<64 - 1} {
		b := AppendLenEncInt(nil, v)
		got, isNull, n := LenEncInt(b)
		if got != v || isNull || n != len(b) {
			t.Fatalf("%d: got %d null=%v n=%d (len %d)", v, got, isNull, n, len(b))
		}
		if _, _, n := LenEncInt(b[:len(b)-1]); len(b) > 1 && n != 0 {
			t.Fatalf("%d: truncated encoding accepted", v)
		}
	}
	if _, isNull, n := LenEncInt([]byte{0xfb}); !isNull || n != 1 {
		t.Fatal("NULL not recognised")
	}
	if _, _, err := LenEncString([]byte{5, 'a'}); err == nil {
		t.Fatal("string longer than its packet accepted")
	}
}

func TestRowValues(t *testing.T) {
	row := []byte{1, 'a', 0xfb, 0, 3, 'x', 'y', 'z'}
	got, err := RowValues(nil, row)
	if err != nil || len(got) != 4 || string(got[0]) != "a" || got[1] != nil || got[2] == nil || len(got[2]) != 0 || string(got[3]) != "xyz" {
		t.Fatalf("RowValues = %q, %v", got, err)
	}
	if _, err := RowValues(nil, []byte{5, 'a'}); err == nil {
		t.Fatal("truncated value accepted")
	}
}

// stallingReader returns its stream in pieces, failing with errStall
// before each piece after the first.
type stallingReader struct {
	pieces [][]byte
	stall  bool
}

var errStall = errors.New("deadline")

func (s *stallingReader) Read(p []byte) (int, error) {
	if len(s.pieces) == 0 {
		return 0, io.EOF
	}
	if s.stall {
		s.stall = false
		return 0, errStall
	}
	n := copy(p, s.pieces[0])
	if s.pieces[0] = s.pieces[0][n:]; len(s.pieces[0]) == 0 {
		s.pieces = s.pieces[1:]
		s.stall = true
	}
	return n, nil
}

// TestReaderResumesAfterAnError: an error in the middle of a packet (a
// read deadline) loses nothing: the next ReadPacket returns the packet,
// whether the error came inside a physical packet or between the physical
// packets of a large one.
func TestReaderResumesAfterAnError(t *testing.T) {
	large := make([]byte, MaxPayload+10)
	for i := range large {
		large[i] = byte(i * 7)
	}
	var buf bytes.Buffer
	w := NewWriterSize(&buf, 1024)
	if err := w.WritePacket(large); err != nil {
		t.Fatal(err)
	}
	w.SetSeq(2)
	if err := w.WritePacket([]byte("next")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	stream := buf.Bytes()
	// Cut inside the first header, inside the first payload, right after
	// the first physical packet, inside the second header and the last
	// packet.
	cuts := []int{2, 1000, HeaderSize + MaxPayload, HeaderSize + MaxPayload + 2, len(stream) - 3}
	var pieces [][]byte
	prev := 0
	for _, c := range cuts {
		pieces = append(pieces, stream[prev:c])
		prev = c
	}
	pieces = append(pieces, stream[prev:])
	// With a packet limit the reader looks at each header before reading
	// on (checkSize): a stall there must not end the packet either.
	for _, limit := range []int{0, 64 << 20} {
		readStalled(t, pieces, limit, len(cuts), large)
	}
}

func readStalled(t *testing.T, pieces [][]byte, limit, cuts int, large []byte) {
	t.Helper()
	r := NewReader(&stallingReader{pieces: append([][]byte(nil), pieces...)}, make([]byte, 64), nil)
	r.MaxPacket = limit
	var got [][]byte
	stalls := 0
	for len(got) < 2 {
		p, err := r.ReadPacket()
		if errors.Is(err, errStall) {
			stalls++
			if !r.InPacket() {
				t.Fatalf("limit %d, stall %d: InPacket false in the middle of a packet", limit, stalls)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, append([]byte(nil), p...))
	}
	if stalls != cuts {
		t.Fatalf("limit %d: %d stalls, want %d", limit, stalls, cuts)
	}
	if !bytes.Equal(got[0], large) || string(got[1]) != "next" {
		t.Fatalf("limit %d: packets differ after the stalls (len %d, %q)", limit, len(got[0]), got[1])
	}
	if r.InPacket() {
		t.Fatal("InPacket after the last packet")
	}
}
