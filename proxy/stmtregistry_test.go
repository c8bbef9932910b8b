package proxy

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
)

func stmtPacket(cmd byte, id uint32) []byte {
	return binary.LittleEndian.AppendUint32([]byte{cmd}, id)
}

func TestStmtRegistry(t *testing.T) {
	var r stmtRegistry
	var n atomic.Int64
	if r.byID != nil || r.len() != 0 {
		t.Fatal("a new registry allocates")
	}
	e1, e2 := &cachedStmt{}, &cachedStmt{}
	id1, id2 := r.add(e1, &n), r.add(e2, &n)
	if id1 != 1 || id2 != 2 || r.len() != 2 || n.Load() != 2 {
		t.Fatalf("ids %d %d, len %d", id1, id2, r.len())
	}
	cs, err := r.lookup(stmtPacket(comStmtExecute, id2), "mysqld_stmt_execute")
	if err != nil || cs.e != e2 {
		t.Fatalf("lookup: %v %v", cs, err)
	}
	if _, err := r.lookup(stmtPacket(comStmtExecute, 9), "mysqld_stmt_execute"); err == nil || err.Code != erUnknownStmtHandler ||
		err.Message != "Unknown prepared statement handler (9) given to mysqld_stmt_execute" {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := r.lookup([]byte{comStmtExecute, 1}, "mysqld_stmt_execute"); err == nil || err.Code != erWrongArguments {
		t.Errorf("short packet: %v", err)
	}

	// Cursors are counted once each.
	r.openCursor(cs, 40)
	r.openCursor(cs, 41)
	if r.cursors != 1 || cs.cursor != 40 {
		t.Errorf("cursors %d, backend id %d", r.cursors, cs.cursor)
	}
	if !r.closeCursor(cs) || r.closeCursor(cs) || r.cursors != 0 {
		t.Errorf("closeCursor: cursors %d", r.cursors)
	}
	r.openCursor(cs, 42)
	r.forgetCursors()
	if r.cursors != 0 || cs.cursorOpen {
		t.Error("forgetCursors left a cursor")
	}

	// Ids are reused only when free, and never 0.
	if r.remove(id1) == nil || r.remove(id1) != nil || r.get(id1) != nil {
		t.Error("remove")
	}
	r.lastID = ^uint32(0) - 1
	if a, b := r.add(e1, &n), r.add(e1, &n); a != ^uint32(0) || b != 1 {
		t.Errorf("wrapped ids %d %d", a, b)
	}
	if c := r.add(e1, &n); c != 3 {
		t.Errorf("id after wrap %d (2 is taken)", c)
	}

	var seen int
	r.openCursor(r.get(2), 7)
	if n := r.clear(func(*clientStmt) { seen++ }); n != 4 || seen != 4 || r.len() != 0 || r.cursors != 0 || r.byID != nil {
		t.Errorf("clear: %d, saw %d, left %d", n, seen, r.len())
	}
}

func TestStmtRegistryFull(t *testing.T) {
	var r stmtRegistry
	var n atomic.Int64
	for range maxClientStatements - 1 {
		r.add(&cachedStmt{}, &n)
	}
	if r.full() {
		t.Fatal("full one statement early")
	}
	r.add(&cachedStmt{}, &n)
	if !r.full() {
		t.Fatal("not full at max_prepared_stmt_count")
	}
}

// TestSendLongData: COM_STMT_SEND_LONG_DATA pieces add up per parameter;
// a bad parameter number or too much data is kept as the error the next
// execute reports, and nothing is answered.
func TestSendLongData(t *testing.T) {
	var r stmtRegistry
	var n atomic.Int64
	id := r.add(&cachedStmt{params: 2}, &n)
	piece := func(param uint16, data string) []byte {
		p := stmtPacket(comStmtSendLongData, id)
		p = binary.LittleEndian.AppendUint16(p, param)
		return append(p, data...)
	}
	r.sendLongData(piece(1, "ab"), 10)
	r.sendLongData(piece(1, "cd"), 10)
	r.sendLongData(stmtPacket(comStmtSendLongData, 99), 10) // unknown statement: ignored
	cs := r.get(id)
	if cs.longErr != nil || string(cs.long[1]) != "abcd" || cs.long[0] != nil || cs.longMap[0] != 2 || cs.longLen != 4 {
		t.Fatalf("long data %q, map %v, len %d, err %v", cs.long, cs.longMap, cs.longLen, cs.longErr)
	}
	r.sendLongData(piece(1, "0123456"), 10)
	if cs.longErr == nil || cs.longErr.Code != erNetPacketTooLarge || cs.long != nil || cs.longLen != 0 {
		t.Fatalf("over max: %v, kept %d bytes", cs.longErr, cs.longLen)
	}
	cs.clearLong()
	r.sendLongData(piece(2, "x"), 10)
	if cs.longErr == nil || cs.longErr.Code != erWrongArguments {
		t.Fatalf("parameter out of range: %v", cs.longErr)
	}
	cs.clearLong()
	r.sendLongData(append(stmtPacket(comStmtSendLongData, id), 0), 10)
	if cs.longErr == nil || cs.longErr.Code != erWrongArguments {
		t.Fatalf("short packet: %v", cs.longErr)
	}
}
