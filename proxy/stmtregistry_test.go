package proxy

import (
	"encoding/binary"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
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
	r.sendLongData(piece(1, "ab"), 10, nil)
	r.sendLongData(piece(1, "cd"), 10, nil)
	r.sendLongData(stmtPacket(comStmtSendLongData, 99), 10, nil) // unknown statement: ignored
	cs := r.get(id)
	if cs.longErr != nil || string(cs.long[1]) != "abcd" || cs.long[0] != nil || cs.longMap[0] != 2 || cs.longLen != 4 {
		t.Fatalf("long data %q, map %v, len %d, err %v", cs.long, cs.longMap, cs.longLen, cs.longErr)
	}
	r.sendLongData(piece(1, "0123456"), 10, nil)
	if cs.longErr == nil || cs.longErr.Code != erNetPacketTooLarge || cs.long != nil || cs.longLen != 0 {
		t.Fatalf("over max: %v, kept %d bytes", cs.longErr, cs.longLen)
	}
	cs.clearLong()
	r.sendLongData(piece(2, "x"), 10, nil)
	if cs.longErr == nil || cs.longErr.Code != erWrongArguments {
		t.Fatalf("parameter out of range: %v", cs.longErr)
	}
	cs.clearLong()
	r.sendLongData(append(stmtPacket(comStmtSendLongData, id), 0), 10, nil)
	if cs.longErr == nil || cs.longErr.Code != erWrongArguments {
		t.Fatalf("short packet: %v", cs.longErr)
	}
}

// TestSendLongDataIsChargedToTheBufferBudget: long data is memory a client
// sends at will, so it counts in max_buffer_memory: charged as it arrives,
// given back by the execute, a reset, a close or the session's end, and a
// chunk that would pass the budget waits for another's memory to come back.
func TestSendLongDataIsChargedToTheBufferBudget(t *testing.T) {
	budget := mysqlwire.NewBudget(100)
	var n atomic.Int64
	var a, b stmtRegistry
	ida, idb := a.add(&cachedStmt{params: 1}, &n), b.add(&cachedStmt{params: 1}, &n)
	piece := func(id uint32, size int) []byte {
		p := stmtPacket(comStmtSendLongData, id)
		p = binary.LittleEndian.AppendUint16(p, 0)
		return append(p, strings.Repeat("x", size)...)
	}
	a.sendLongData(piece(ida, 60), 1000, budget)
	if got := budget.Used(); got != 60 {
		t.Fatalf("60 bytes of long data charged %d", got)
	}
	b.sendLongData(piece(idb, 30), 1000, budget)
	if got := budget.Used(); got != 90 {
		t.Fatalf("90 bytes of long data charged %d", got)
	}
	// b's next chunk needs 30 more (its array doubles): past the budget, it
	// waits for a's memory.
	done := make(chan struct{})
	go func() {
		b.sendLongData(piece(idb, 30), 1000, budget)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("a chunk past max_buffer_memory did not wait")
	case <-time.After(50 * time.Millisecond):
	}
	a.remove(ida) // COM_STMT_CLOSE
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the chunk still waits after the other statement's memory came back")
	}
	cs := b.get(idb)
	if cs.longErr != nil || len(cs.long[0]) != 60 {
		t.Fatalf("after the wait: %d bytes, %v", len(cs.long[0]), cs.longErr)
	}
	if got := budget.Used(); got != 60 {
		t.Fatalf("charged %d for b's 60 bytes", got)
	}
	cs.clearLong() // the execute
	if got := budget.Used(); got != 0 {
		t.Fatalf("charged %d after the execute", got)
	}
	b.sendLongData(piece(idb, 10), 1000, budget)
	b.clear(func(*clientStmt) {}) // the session ends
	if got := budget.Used(); got != 0 {
		t.Fatalf("charged %d after the session ended", got)
	}
}
