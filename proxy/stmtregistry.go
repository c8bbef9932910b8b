package proxy

import (
	"sync/atomic"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// stmtRegistry is a session's prepared statements by client id, and how
// many of them hold an open cursor. The map is made on the first PREPARE:
// idle sessions stay small.
type stmtRegistry struct {
	byID   map[uint32]*clientStmt
	lastID uint32
	// cursors counts the statements with an open cursor.
	cursors int
}

// full reports whether the session holds as many statements as the
// server would let it (max_prepared_stmt_count).
func (r *stmtRegistry) full() bool { return len(r.byID) >= maxClientStatements }

// len is the number of statements.
func (r *stmtRegistry) len() int { return len(r.byID) }

// get is the statement of client id id, nil if none.
func (r *stmtRegistry) get(id uint32) *clientStmt { return r.byID[id] }

// lookup returns the statement a command packet names, or the ERR the
// server gives for a malformed or unknown id.
func (r *stmtRegistry) lookup(p []byte, command string) (*clientStmt, *mysqlwire.Error) {
	id, ok := mysqlwire.StmtID(p)
	if !ok {
		return nil, stmtErr(erWrongArguments, "Incorrect arguments to %s", command)
	}
	if cs := r.byID[id]; cs != nil {
		return cs, nil
	}
	return nil, stmtErr(erUnknownStmtHandler, "Unknown prepared statement handler (%d) given to %s", id, command)
}

// add registers a statement for cache entry e under the next free client
// id (never 0), counts it in n (the server's statements of all sessions)
// and returns the id.
func (r *stmtRegistry) add(e *cachedStmt, n *atomic.Int64) uint32 {
	n.Add(1)
	if r.byID == nil {
		r.byID = make(map[uint32]*clientStmt)
	}
	for {
		r.lastID++
		if _, used := r.byID[r.lastID]; !used && r.lastID != 0 {
			break
		}
	}
	r.byID[r.lastID] = &clientStmt{e: e}
	return r.lastID
}

// remove unregisters statement id and returns it (nil if none), its long
// data dropped. Its cursor, if open, is the caller's to close first.
func (r *stmtRegistry) remove(id uint32) *clientStmt {
	cs := r.byID[id]
	if cs != nil {
		delete(r.byID, id)
		cs.dropLong()
	}
	return cs
}

// openCursor records that cs holds an open cursor in backend statement id.
func (r *stmtRegistry) openCursor(cs *clientStmt, id uint32) {
	if cs.cursorOpen {
		return
	}
	cs.cursor, cs.cursorOpen = id, true
	r.cursors++
}

// closeCursor records that cs's cursor is closed. It reports whether cs
// had one open.
func (r *stmtRegistry) closeCursor(cs *clientStmt) bool {
	if !cs.cursorOpen {
		return false
	}
	cs.cursorOpen = false
	r.cursors--
	return true
}

// forgetCursors marks every cursor closed: the connection holding them
// is gone.
func (r *stmtRegistry) forgetCursors() {
	for _, cs := range r.byID {
		cs.cursorOpen = false
	}
	r.cursors = 0
}

// clear unregisters every statement, calling each for it first (to close
// its cursor and release its cache entry), and returns how many there
// were.
func (r *stmtRegistry) clear(each func(*clientStmt)) int {
	n := len(r.byID)
	for _, cs := range r.byID {
		each(cs)
		cs.dropLong()
	}
	r.byID = nil
	r.cursors = 0
	return n
}

// sendLongData serves COM_STMT_SEND_LONG_DATA, which has no answer: the
// data is kept until the statement's next execute, up to limit bytes over
// all its parameters, its memory charged to budget (max_buffer_memory: a
// chunk that would pass it waits for others' memory as a packet read does,
// and past that wait the data is dropped and the execute gets ERR 1041).
// Errors are reported by that execute, as the server does.
func (r *stmtRegistry) sendLongData(p []byte, limit int, budget *mysqlwire.Budget) {
	id, ok := mysqlwire.StmtID(p)
	cs := r.get(id)
	if !ok || cs == nil || cs.longErr != nil {
		return
	}
	if len(p) < 7 {
		cs.longErr = stmtErr(erWrongArguments, "Incorrect arguments to mysqld_stmt_send_long_data")
		return
	}
	param := int(p[5]) | int(p[6])<<8
	data := p[7:]
	switch {
	case param >= int(cs.e.params):
		cs.longErr = stmtErr(erWrongArguments, "Incorrect arguments to mysqld_stmt_send_long_data")
	case cs.longLen+len(data) > limit:
		cs.dropLong()
		cs.longErr = mysqlwire.NewError(erNetPacketTooLarge, "HY000",
			"Parameter of prepared statement which is set through mysql_send_long_data() is longer than 'max_long_data_size' bytes")
	}
	if cs.longErr != nil {
		return
	}
	if cs.longMap == nil {
		cs.long = make([][]byte, cs.e.params)
		cs.longMap = make([]byte, (int(cs.e.params)+7)/8)
	}
	old := cs.long[param]
	if need := len(old) + len(data); need > cap(old) {
		// The chunk's new array is charged before it is made: twice the
		// old one, as append would grow it, within what may still come.
		size := max(need, min(2*cap(old), limit-cs.longLen+len(old)))
		if err := budget.Take(int64(size-cap(old)), cs.longCharged); err != nil {
			cs.dropLong()
			cs.longErr = errOutOfMemory
			return
		}
		buf := make([]byte, len(old), size)
		copy(buf, old)
		cs.long[param] = buf
		cs.longBudget = budget
		cs.longCharged += int64(size - cap(old))
	}
	cs.long[param] = append(cs.long[param], data...)
	cs.longMap[param/8] |= 1 << (param % 8)
	cs.longLen += len(data)
}
