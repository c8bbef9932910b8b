package proxy

import (
	"encoding/binary"
	"testing"
)

func stmtPacket(cmd byte, id uint32) []byte {
	return binary.LittleEndian.AppendUint32([]byte{cmd}, id)
}

func TestStmtRegistry(t *testing.T) {
	var r stmtRegistry
	if r.byID != nil || r.len() != 0 {
		t.Fatal("a new registry allocates")
	}
	e1, e2 := &cachedStmt{}, &cachedStmt{}
	id1, id2 := r.add(e1), r.add(e2)
	if id1 != 1 || id2 != 2 || r.len() != 2 {
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
	if a, b := r.add(e1), r.add(e1); a != ^uint32(0) || b != 1 {
		t.Errorf("wrapped ids %d %d", a, b)
	}
	if c := r.add(e1); c != 3 {
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
	for range maxClientStatements - 1 {
		r.add(&cachedStmt{})
	}
	if r.full() {
		t.Fatal("full one statement early")
	}
	r.add(&cachedStmt{})
	if !r.full() {
		t.Fatal("not full at max_prepared_stmt_count")
	}
}
