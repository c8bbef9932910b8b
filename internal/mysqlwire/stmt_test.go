package mysqlwire

import (
	"bytes"
	"errors"
	"testing"
)

// execPacket builds a COM_STMT_EXECUTE payload for statement 7.
func execPacket(nulls []byte, bound bool, types, values []byte) []byte {
	p := []byte{0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0}
	p = append(p, nulls...)
	if bound {
		p = append(p, 1)
		p = append(p, types...)
	} else {
		p = append(p, 0)
	}
	return append(p, values...)
}

func TestParseExecute(t *testing.T) {
	types := []byte{TypeLongLong, 0x80, TypeVarString, 0, TypeDatetime, 0}
	values := []byte{1, 0, 0, 0, 0, 0, 0, 0, 3, 'a', 'b', 'c', 4, 0xea, 0x07, 1, 2}
	cases := []struct {
		name  string
		p     []byte
		bound []byte
		long  []byte
		err   error
	}{
		{"types bound", execPacket([]byte{0}, true, types, values), nil, nil, nil},
		{"types remembered", execPacket([]byte{0}, false, nil, values), types, nil, nil},
		{"no types", execPacket([]byte{0}, false, nil, values), nil, nil, ErrNoParamTypes},
		{"truncated value", execPacket([]byte{0}, true, types, values[:len(values)-1]), nil, nil, ErrMalformed},
		{"truncated string", execPacket([]byte{0}, true, types, values[:10]), nil, nil, ErrMalformed},
		{"null skips value", execPacket([]byte{4}, true, types, values[:12]), nil, nil, nil},
		{"long data skips value", execPacket([]byte{0}, true, types, append(values[:8:8], 4, 0xea, 0x07, 1, 2)), nil, []byte{2}, nil},
		{"trailing bytes ignored", execPacket([]byte{0}, true, types, append(values, 9, 9)), nil, nil, nil},
		{"no null bitmap", []byte{0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0}, nil, nil, ErrMalformed},
		{"types truncated", execPacket([]byte{0}, true, types[:3], nil), nil, nil, ErrMalformed},
		{"short head", []byte{0x17, 7, 0}, nil, nil, ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := ParseExecute(c.p, 3, c.bound, c.long)
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if err != nil {
				return
			}
			if e.StmtID != 7 || e.Flags != 0 {
				t.Fatalf("id %d flags %d", e.StmtID, e.Flags)
			}
			if e.NewBound != (c.p[11] == 1) || e.TypesAt != 12 {
				t.Fatalf("NewBound %v TypesAt %d", e.NewBound, e.TypesAt)
			}
			if e.NewBound && !bytes.Equal(e.Types, types) {
				t.Fatalf("types %v", e.Types)
			}
		})
	}
}

func TestParseExecuteNoParams(t *testing.T) {
	e, err := ParseExecute([]byte{0x17, 9, 0, 0, 0, CursorReadOnly, 1, 0, 0, 0}, 0, nil, nil)
	if err != nil || e.StmtID != 9 || e.Flags != CursorReadOnly || e.TypesAt != 10 {
		t.Fatalf("%+v %v", e, err)
	}
}

func TestParseStmtPrepareOK(t *testing.T) {
	ok, err := ParseStmtPrepareOK([]byte{0, 5, 0, 0, 0, 2, 0, 3, 0, 0, 1, 0})
	if err != nil || ok != (StmtPrepareOK{StmtID: 5, Columns: 2, Params: 3, Warnings: 1}) {
		t.Fatalf("%+v %v", ok, err)
	}
	if _, err := ParseStmtPrepareOK([]byte{0, 5, 0}); !errors.Is(err, ErrMalformed) {
		t.Fatal(err)
	}
}

// TestWritePacketParts checks that a payload written in parts is framed
// like the same payload written whole, across the 16 MiB split.
func TestWritePacketParts(t *testing.T) {
	for _, size := range []int{0, 10, MaxPayload - 3, MaxPayload, MaxPayload + 5, 2*MaxPayload + 1} {
		payload := make([]byte, size)
		for i := range payload {
			payload[i] = byte(i * 7)
		}
		var whole, parts bytes.Buffer
		w1 := NewWriterSize(&whole, 1024)
		w2 := NewWriterSize(&parts, 1024)
		a, b := min(3, size), min(size, size/2+3)
		if err := w1.WritePacket(payload); err != nil {
			t.Fatal(err)
		}
		if err := w2.WritePacketParts(payload[:a], payload[a:b], payload[b:]); err != nil {
			t.Fatal(err)
		}
		_ = w1.Flush()
		_ = w2.Flush()
		if !bytes.Equal(whole.Bytes(), parts.Bytes()) {
			t.Fatalf("size %d: framing differs (%d vs %d bytes)", size, whole.Len(), parts.Len())
		}
	}
}
