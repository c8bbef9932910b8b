package mysqlwire

import (
	"bytes"
	"testing"
)

// FuzzParseOK feeds arbitrary bytes to the OK parser and the session state
// walker, which read what backends send.
func FuzzParseOK(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 0, 0, 0}, true)
	f.Add([]byte{0, 1, 5, 2, 0x40, 0, 0, 0, 5, 1, 3, 2, 'd', '1'}, true)
	f.Add([]byte{0, 0xfc, 1, 0, 0, 2, 0, 0, 0, 3, 'a', 'b', 'c'}, false)
	f.Fuzz(func(t *testing.T, p []byte, track bool) {
		ok, err := ParseOK(p, track)
		if err != nil {
			return
		}
		rest := ok.SessionState
		for i := 0; len(rest) > 0 && i < 1000; i++ {
			var e StateEntry
			if e, rest, err = NextStateEntry(rest); err != nil {
				return
			}
			switch e.Type {
			case TrackSystemVariables:
				_, _, _ = SystemVariable(e.Data)
			case TrackSchema:
				_, _ = TrackedSchema(e.Data)
			}
		}
	})
}

// FuzzParseERR checks the ERR parser on arbitrary bytes.
func FuzzParseERR(f *testing.F) {
	f.Add([]byte{0xff, 0x19, 0x04, '#', '4', '2', '0', '0', '0', 'x'})
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, p []byte) {
		e := ParseERR(p)
		if len(e.State) != 5 {
			t.Fatalf("state %q", e.State)
		}
	})
}

// FuzzReader reads packets from arbitrary streams: no panics, and every
// packet handed out lies within what the stream held.
func FuzzReader(f *testing.F) {
	f.Add(packet(0, []byte("select 1")), 0)
	f.Add(append(packet(0, []byte{1}), packet(1, []byte{2, 3})...), 8)
	f.Add([]byte{0xff, 0xff, 0xff, 0, 1, 2, 3}, 4)
	f.Fuzz(func(t *testing.T, stream []byte, max int) {
		b := NewBudget(0)
		r := NewReader(bytes.NewReader(stream), make([]byte, 16), NewBufferPool(64))
		r.MaxPacket = max
		r.Budget = b
		defer func() {
			r.Drop()
			if n := b.Used(); n != 0 {
				t.Fatalf("after Drop the budget holds %d bytes", n)
			}
		}()
		total := 0
		for i := 0; i < 100; i++ {
			p, err := r.ReadPacket()
			// Memory follows what arrived: at most twice the stream, and a
			// step, whatever the headers claim.
			if n := b.Used(); n > 2*int64(len(stream))+2*growStep+64 {
				t.Fatalf("%d bytes of buffer for a %d-byte stream", n, len(stream))
			}
			if err != nil {
				return
			}
			total += len(p)
			if total > len(stream) {
				t.Fatalf("read %d payload bytes from a %d-byte stream", total, len(stream))
			}
			if max > 0 && len(p) >= max {
				t.Fatalf("packet of %d bytes passed MaxPacket %d", len(p), max)
			}
			r.Shrink()
		}
	})
}

// FuzzParseExecute checks the COM_STMT_EXECUTE parser, which reads what
// clients send, on arbitrary packets and parameter counts.
func FuzzParseExecute(f *testing.F) {
	f.Add([]byte{0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0}, uint8(1), []byte(nil), []byte(nil))
	f.Add([]byte{0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 3, 'a', 'b', 'c'}, uint8(1), []byte{0xfd, 0}, []byte(nil))
	f.Add([]byte{0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 4, 1, 2, 3, 4}, uint8(2), []byte{0x0c, 0, 0xfc, 0}, []byte{1})
	f.Fuzz(func(t *testing.T, p []byte, n uint8, bound, long []byte) {
		e, err := ParseExecute(p, int(n), bound, long)
		if err != nil {
			return
		}
		if e.TypesAt > len(p) || e.TypesAt+len(e.Types) > len(p) {
			t.Fatalf("offsets beyond the packet: %+v len %d", e, len(p))
		}
		if e.NewBound && len(e.Types) != 2*int(n) {
			t.Fatalf("types %d bytes for %d params", len(e.Types), n)
		}
	})
}
