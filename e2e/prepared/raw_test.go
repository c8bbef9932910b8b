package prepared

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// typesQuery takes an integer and a string parameter; a client may bind
// either as integers or as strings, and the result text is the same.
const typesQuery = "SELECT ?+0, CONCAT(?, 'x')"

// bindKind is how a raw session binds typesQuery's parameters.
type bindKind int

const (
	bindInts    bindKind = iota // both LONGLONG
	bindStrings                 // both VAR_STRING
)

func (k bindKind) String() string {
	if k == bindInts {
		return "integer"
	}
	return "string"
}

// typesArgs are typesQuery's parameters for n bound as k, and the row
// the server answers.
func typesArgs(k bindKind, n int) ([]param, []string) {
	if k == bindInts {
		return []param{intParam(int64(n)), intParam(int64(n) * 10)},
			[]string{strconv.Itoa(n), strconv.Itoa(n*10) + "x"}
	}
	s := strconv.Itoa(n)
	return []param{strParam(s), strParam("s" + s)}, []string{s, "s" + s + "x"}
}

// TestExecuteWithoutTypesOnOtherBackend covers connectors (libmysqlclient,
// the C connector behind sysbench, PHP mysqlnd) that send parameter types
// only with a statement's first execute (new_params_bound_flag=1) and none
// after (flag=0). Two transactions pin the pool's two connections in turn
// so that each later execute is forced onto a connection that has never
// prepared the statement, or on which another session last bound the same
// SQL text with other types: the proxy must supply the client's own types.
func TestExecuteWithoutTypesOnOtherBackend(t *testing.T) {
	px := env.StartProxy(t, pinAll(2))
	sw := newBackendSwitch(t, px)
	ints := rawConnect(t, px.Addr)
	strs := rawConnect(t, px.Addr)
	n := 0
	exec := func(c *rawConn, st stmt, k bindKind, bound bool, where string) {
		t.Helper()
		n++
		ps, want := typesArgs(k, n)
		what := fmt.Sprintf("execute %d (%s parameters, new_params_bound_flag=%v) %s", n, k, bound, where)
		res, err := c.execute(executePacket(st.ID, cursorNone, bound, ps))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		wantRow(t, what, res, want...)
	}

	si := ints.mustPrepare(t, typesQuery, 2)
	exec(ints, si, bindInts, true, "on the first backend")
	sw.flip()
	exec(ints, si, bindInts, false, "on a backend that never prepared the statement")
	ss := strs.mustPrepare(t, typesQuery, 2)
	exec(strs, ss, bindStrings, true, "of the same SQL with string types")
	exec(ints, si, bindInts, false, "on a backend where another session last bound strings")
	exec(strs, ss, bindStrings, false, "after another session bound integers")
	sw.flip()
	exec(strs, ss, bindStrings, false, "on a backend where another session last bound integers")
	exec(ints, si, bindInts, false, "back on the first backend")
}

// TestExecuteWithoutTypesConcurrent is the same client behaviour under
// load: six sessions over a pool of two bind the parameters of three SQL
// texts, each text once as integers and once as strings, with one execute
// that carries types, then execute concurrently without types so that their
// executes land on whichever backend is free.
func TestExecuteWithoutTypesConcurrent(t *testing.T) {
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 2 })
	for _, tg := range []target{directTarget(t), proxyTarget(px)} {
		t.Run(tg.name, func(t *testing.T) {
			const sessions, rounds = 6, 50
			conns := make([]*rawConn, sessions)
			stmts := make([]stmt, sessions)
			kind := func(i int) bindKind { return bindKind(i % 2) }
			literal := func(i int) string { return strconv.Itoa(i % 3) }
			var hold *session
			if tg.px != nil {
				// Keep one backend busy while the typed executes run, so
				// that the other one has never seen a type when the
				// untyped executes start.
				hold = openSession(t, px.DSN())
				hold.mustExec(t, "BEGIN", "SELECT 1")
				waitPinned(t, px, hold.ID, "transaction")
			}
			for i := range sessions {
				conns[i] = rawConnect(t, tg.addr)
				stmts[i] = conns[i].mustPrepare(t, typesQuery+", "+literal(i), 2)
				ps, want := typesArgs(kind(i), i*1000)
				res, err := conns[i].execute(executePacket(stmts[i].ID, cursorNone, true, ps))
				if err != nil {
					t.Fatal(err)
				}
				wantRow(t, fmt.Sprintf("session %d: first execute with %s types", i, kind(i)), res, append(want, literal(i))...)
			}
			if hold != nil {
				// Both backends serve the untyped executes.
				hold.mustExec(t, "COMMIT")
				waitUnpinned(t, px, hold.ID)
			}
			runConcurrentUntyped(t, conns, stmts, rounds, kind, literal)
		})
	}
}

// runConcurrentUntyped executes every session's statement rounds times
// without types, all sessions at once, and checks every row.
func runConcurrentUntyped(t *testing.T, conns []*rawConn, stmts []stmt, rounds int, kind func(int) bindKind, literal func(int) string) {
	t.Helper()
	errs := make(chan error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			for r := 1; r <= rounds; r++ {
				ps, want := typesArgs(kind(i), i*1000+r)
				res, err := c.execute(executePacket(stmts[i].ID, cursorNone, false, ps))
				if err == nil {
					err = checkRow(res, append(want, literal(i))...)
				}
				if err != nil {
					errs <- errorf(i, "execute %d without types (%s bound first): %w", r, kind(i), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestUnknownStatementID covers clients that use a statement id the
// session does not have (never prepared, or closed): EXECUTE, RESET and
// FETCH answer ERR 1243 like the server, and CLOSE answers nothing.
func TestUnknownStatementID(t *testing.T) {
	px := env.StartProxy(t)
	for _, tg := range []target{directTarget(t), proxyTarget(px)} {
		t.Run(tg.name, func(t *testing.T) {
			c := rawConnect(t, tg.addr)
			closed := c.mustPrepare(t, "SELECT ?", 1)
			if err := c.command(stmtPacket(comStmtClose, closed.ID)); err != nil {
				t.Fatal(err)
			}
			for _, id := range []uint32{0x7ffffff0, closed.ID} {
				what := fmt.Sprintf("statement %d", id)
				if id == closed.ID {
					what = fmt.Sprintf("closed statement %d", id)
				}
				res, err := c.execute(executePacket(id, cursorNone, true, []param{intParam(1)}))
				if e := wantErrCode(t, "COM_STMT_EXECUTE of "+what, res, err, erUnknownStmtHandler); e.State != "HY000" {
					t.Errorf("COM_STMT_EXECUTE of %s: SQLSTATE %q, want HY000", what, e.State)
				}
				err = c.simpleCommand(stmtPacket(comStmtReset, id))
				if !errIs(err, erUnknownStmtHandler) {
					t.Errorf("COM_STMT_RESET of %s: %v, want error %d", what, err, erUnknownStmtHandler)
				}
				res, err = c.fetch(id, 10, nil)
				wantErrCode(t, "COM_STMT_FETCH of "+what, res, err, erUnknownStmtHandler)

				// COM_STMT_CLOSE is never answered, not even for an
				// unknown id: the next packet must be PING's OK.
				if err := c.command(stmtPacket(comStmtClose, id)); err != nil {
					t.Fatal(err)
				}
				if err := c.ping(); err != nil {
					t.Fatalf("COM_PING after COM_STMT_CLOSE of %s: %v", what, err)
				}
				c.mustSelectOne(t, "COM_STMT_CLOSE of "+what)
			}
		})
	}
}

// TestMalformedExecute covers buggy or hostile clients: COM_STMT_EXECUTE
// packets that end too early are answered with ERR (the server says 1210,
// "Incorrect arguments to mysqld_stmt_execute", where it notices), and the
// session, and the statement, stay usable.
func TestMalformedExecute(t *testing.T) {
	px := env.StartProxy(t)
	long := make([]byte, 17<<20)
	if _, err := rand.Read(long); err != nil {
		t.Fatal(err)
	}
	for _, tg := range []target{directTarget(t), proxyTarget(px)} {
		t.Run(tg.name, func(t *testing.T) {
			c := rawConnect(t, tg.addr)

			if tg.px != nil {
				// A first execute without types: nothing says how to decode
				// the values. Only through the proxy: MariaDB 10.11.14
				// itself dies of SIGSEGV on it (Item_param::
				// convert_str_value via Prepared_statement::set_parameters),
				// so the proxy must answer it and never forward it.
				fresh := c.mustPrepare(t, "SELECT CONCAT(?, '')", 1)
				res, err := c.execute(executePacket(fresh.ID, cursorNone, false, []param{strParam("no types")}))
				e := wantErrCode(t, "first execute with new_params_bound_flag=0", res, err, 0)
				t.Logf("first execute without types: %v", e)
				c.mustSelectOne(t, "a first execute without types")
				res, err = c.execute(executePacket(fresh.ID, cursorNone, true, []param{strParam("typed")}))
				if err != nil {
					t.Fatal(err)
				}
				wantRow(t, "typed execute after the untyped first one", res, "typed")
			}

			st := c.mustPrepare(t, "SELECT CONCAT(?, '')", 1)
			header := executePacket(st.ID, cursorNone, false, nil) // command, id, flags, iteration count
			// serverRejects marks what MariaDB 10.11 itself answers with an
			// ERR. It takes the others, reading a few bytes past the end
			// of the packet into the value ("short\x00(?"); the proxy
			// parses every execute packet to supply types and must reject
			// them all.
			cases := []struct {
				name          string
				packet        []byte
				serverRejects bool
			}{
				{"integer value cut short",
					trimEnd(executePacket(st.ID, cursorNone, true, []param{intParam(7)}), 5), true},
				{"string value cut short",
					trimEnd(executePacket(st.ID, cursorNone, true, []param{strParam("hello world")}), 4), false},
				{"no NULL bitmap", header, true},
				{"no new_params_bound_flag", append(bytes.Clone(header), 0), true},
				{"flag set but no types", append(bytes.Clone(header), 0, 1), true},
				{"string length beyond the packet",
					append(append(append(bytes.Clone(header), 0, 1, typeVarString, 0), mysqlwire.AppendLenEncInt(nil, 1000)...), "short"...), false},
				// More than 16 MiB, so it travels as two physical packets,
				// declaring a 20 MiB value of which 17 MiB arrive.
				{"long packet with a truncated value",
					append(append(append(bytes.Clone(header), 0, 1, typeBlob, 0), mysqlwire.AppendLenEncInt(nil, 20<<20)...), long...), false},
			}
			for i, tc := range cases {
				res, err := c.execute(tc.packet)
				if tg.px == nil && !tc.serverRejects {
					if err != nil {
						t.Fatalf("%s: %v", tc.name, err)
					}
					t.Logf("%s (%d bytes): the server answers %v %s", tc.name, len(tc.packet), res.Err, showRows(res.Rows))
				} else {
					e := wantErrCode(t, tc.name, res, err, 0)
					t.Logf("%s (%d bytes): %v", tc.name, len(tc.packet), e)
				}
				c.mustSelectOne(t, tc.name)
				v := "ok" + strconv.Itoa(i)
				res, err = c.execute(executePacket(st.ID, cursorNone, true, []param{strParam(v)}))
				if err != nil {
					t.Fatalf("execute after %s: %v", tc.name, err)
				}
				wantRow(t, "execute after "+tc.name, res, v)
			}
		})
	}
}

// trimEnd returns p without its last n bytes.
func trimEnd(p []byte, n int) []byte { return p[:len(p)-n] }

// TestSendLongData covers clients that stream a parameter in pieces with
// COM_STMT_SEND_LONG_DATA (go-sql-driver does for values above
// maxAllowedPacket/(params+1), libmysqlclient on request): the execute sees
// the concatenation; long data is used by one execute only; COM_STMT_RESET
// discards it; and one session's long data never reaches another session
// that executes the same SQL text on the same (single) backend connection.
func TestSendLongData(t *testing.T) {
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
	big := make([]byte, 128<<10)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	bigHex := []byte(hex.EncodeToString(big))
	for _, tg := range []target{directTarget(t), proxyTarget(px)} {
		t.Run(tg.name, func(t *testing.T) {
			c := rawConnect(t, tg.addr)
			other := rawConnect(t, tg.addr)
			const q = "SELECT ?, ?"
			st := c.mustPrepare(t, q, 2)
			ost := other.mustPrepare(t, q, 2)
			sendLong := func(chunks ...[]byte) {
				t.Helper()
				for _, ch := range chunks {
					if err := c.command(longDataPacket(st.ID, 0, ch)); err != nil {
						t.Fatal(err)
					}
				}
			}
			exec := func(what string, bound bool, ps []param, want ...string) {
				t.Helper()
				res, err := c.execute(executePacket(st.ID, cursorNone, bound, ps))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				wantRow(t, what, res, want...)
			}
			longParam := param{Type: typeBlob, Long: true}

			sendLong([]byte("alpha-"), bigHex, []byte("-omega"))
			// Another session executes the same SQL with values of its own
			// meanwhile; it must not see this session's long data.
			res, err := other.execute(executePacket(ost.ID, cursorNone, true, []param{blobParam([]byte("mine")), strParam("o")}))
			if err != nil {
				t.Fatal(err)
			}
			wantRow(t, "another session's execute of the same SQL while long data is pending", res, "mine", "o")
			exec("execute after three chunks of long data", true, []param{longParam, strParam("p1")},
				"alpha-"+string(bigHex)+"-omega", "p1")
			exec("second execute, value in the packet", true, []param{blobParam([]byte("inline")), strParam("p2")}, "inline", "p2")
			exec("third execute, no types", false, []param{blobParam([]byte("again")), strParam("p3")}, "again", "p3")

			sendLong([]byte("second-"), []byte("round"))
			exec("long data again, execute without types", false, []param{longParam, strParam("p4")}, "second-round", "p4")

			sendLong([]byte("discarded"))
			if err := c.simpleCommand(stmtPacket(comStmtReset, st.ID)); err != nil {
				t.Fatalf("COM_STMT_RESET: %v", err)
			}
			exec("execute after COM_STMT_RESET discarded the long data", true,
				[]param{blobParam([]byte("after-reset")), strParam("p5")}, "after-reset", "p5")
			c.mustSelectOne(t, "long data")
		})
	}
}

// cursorQuery returns 1..100 in order.
func cursorQuery(t testing.TB) string {
	if isMySQL(t) {
		return "WITH RECURSIVE s (seq) AS (SELECT 1 UNION ALL SELECT seq + 1 FROM s WHERE seq < 100) SELECT seq FROM s"
	}
	return "SELECT seq FROM seq_1_to_100" // MariaDB's SEQUENCE engine
}

// TestCursor covers read-only cursors (JDBC useCursorFetch, ODBC, C
// clients with STMT_ATTR_CURSOR_TYPE): an execute with CURSOR_TYPE_READ_ONLY
// answers only the column definitions with SERVER_STATUS_CURSOR_EXISTS, the
// session holds its backend while the cursor is open, COM_STMT_FETCH
// returns the rows in batches, the last with SERVER_STATUS_LAST_ROW_SENT,
// and then the backend is released. Without the flag no cursor is
// announced. COM_STMT_RESET closes an open cursor.
func TestCursor(t *testing.T) {
	px := env.StartProxy(t)
	want := make([]string, 100)
	for i := range want {
		want[i] = strconv.Itoa(i + 1)
	}
	for _, tg := range []target{directTarget(t), proxyTarget(px)} {
		t.Run(tg.name, func(t *testing.T) {
			c := rawConnect(t, tg.addr)
			st := c.mustPrepare(t, cursorQuery(t), 0)

			res, err := c.execute(executePacket(st.ID, cursorNone, false, nil))
			if err != nil || res.Err != nil {
				t.Fatalf("execute without cursor: %v %v", err, res.Err)
			}
			if res.HeaderStatus&statusCursorExists != 0 || res.Status&statusCursorExists != 0 {
				t.Errorf("execute without cursor flag: status %#x / %#x announce a cursor", res.HeaderStatus, res.Status)
			}
			if got := column0(res.Rows); !slices.Equal(got, want) {
				t.Fatalf("execute without cursor returned %d rows %v, want 1..100", len(got), got)
			}
			if tg.px != nil {
				waitUnpinned(t, px, c.connID)
			}

			res, err = c.execute(executePacket(st.ID, cursorReadOnly, false, nil))
			if err != nil || res.Err != nil {
				t.Fatalf("execute with a cursor: %v %v", err, res.Err)
			}
			if res.HeaderStatus&statusCursorExists == 0 {
				t.Fatalf("execute with CURSOR_TYPE_READ_ONLY: EOF status %#x lacks SERVER_STATUS_CURSOR_EXISTS; rows %s", res.HeaderStatus, showRows(res.Rows))
			}
			if len(res.Columns) != 1 || len(res.Rows) != 0 {
				t.Fatalf("execute with a cursor: %d columns and %d rows, want 1 column and no rows", len(res.Columns), len(res.Rows))
			}
			if tg.px != nil {
				waitPinned(t, px, c.connID, "cursor")
			}
			var got []string
			for fetches := 1; ; fetches++ {
				f, err := c.fetch(st.ID, 30, res.Columns)
				if err != nil || f.Err != nil {
					t.Fatalf("fetch %d: %v %v", fetches, err, f.Err)
				}
				got = append(got, column0(f.Rows)...)
				last := f.Status&statusLastRowSent != 0
				if !last && len(f.Rows) != 30 {
					t.Fatalf("fetch %d returned %d rows without SERVER_STATUS_LAST_ROW_SENT (status %#x), want 30", fetches, len(f.Rows), f.Status)
				}
				if last {
					break
				}
				if fetches > 4 {
					t.Fatalf("no SERVER_STATUS_LAST_ROW_SENT after %d fetches of 30 rows; %d rows seen", fetches, len(got))
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("fetched %d rows %v, want 1..100 in order", len(got), got)
			}
			if tg.px != nil {
				waitUnpinned(t, px, c.connID)
			}
			f, err := c.fetch(st.ID, 30, res.Columns)
			e := wantErrCode(t, "fetch after the last row", f, err, 0)
			t.Logf("fetch after the last row: %v", e)

			// COM_STMT_RESET closes an open cursor.
			res, err = c.execute(executePacket(st.ID, cursorReadOnly, false, nil))
			if err != nil || res.Err != nil || res.HeaderStatus&statusCursorExists == 0 {
				t.Fatalf("second execute with a cursor: %v %v status %#x", err, res.Err, res.HeaderStatus)
			}
			if f, err = c.fetch(st.ID, 10, res.Columns); err != nil || f.Err != nil || len(f.Rows) != 10 {
				t.Fatalf("fetch 10 rows: %v %v %d rows", err, f.Err, len(f.Rows))
			}
			if err := c.simpleCommand(stmtPacket(comStmtReset, st.ID)); err != nil {
				t.Fatalf("COM_STMT_RESET with an open cursor: %v", err)
			}
			f, err = c.fetch(st.ID, 10, res.Columns)
			e = wantErrCode(t, "fetch after COM_STMT_RESET", f, err, 0)
			t.Logf("fetch after COM_STMT_RESET: %v", e)

			// Two statements of the same SQL text in one session have
			// cursors of their own (a nested loop over the same query).
			st2 := c.mustPrepare(t, cursorQuery(t), 0)
			var got1, got2 []string
			for _, x := range []struct {
				st   stmt
				rows *[]string
			}{{st, &got1}, {st2, &got2}, {st, &got1}, {st2, &got2}} {
				if len(*x.rows) == 0 {
					res, err = c.execute(executePacket(x.st.ID, cursorReadOnly, false, nil))
					if err != nil || res.Err != nil || res.HeaderStatus&statusCursorExists == 0 {
						t.Fatalf("cursor on statement %d: %v %v status %#x", x.st.ID, err, res.Err, res.HeaderStatus)
					}
				}
				f, err := c.fetch(x.st.ID, 40, res.Columns)
				if err != nil || f.Err != nil {
					t.Fatalf("fetch from statement %d after %d rows, with another cursor on the same SQL open: %v %v", x.st.ID, len(*x.rows), err, f.Err)
				}
				*x.rows = append(*x.rows, column0(f.Rows)...)
			}
			if !slices.Equal(got1, want[:80]) || !slices.Equal(got2, want[:80]) {
				t.Fatalf("two cursors on the same SQL text, 2 × 40 rows each: %v and %v, want 1..80 each", got1, got2)
			}
			if err := c.command(stmtPacket(comStmtClose, st2.ID)); err != nil {
				t.Fatal(err)
			}

			// An open cursor ends with its statement.
			res, err = c.execute(executePacket(st.ID, cursorReadOnly, false, nil))
			if err != nil || res.Err != nil || res.HeaderStatus&statusCursorExists == 0 {
				t.Fatalf("third execute with a cursor: %v %v status %#x", err, res.Err, res.HeaderStatus)
			}
			if err := c.command(stmtPacket(comStmtClose, st.ID)); err != nil {
				t.Fatal(err)
			}
			c.mustSelectOne(t, "closing a statement with an open cursor")
			if tg.px != nil {
				waitUnpinned(t, px, c.connID)
			}
		})
	}
}

func column0(rows [][]*string) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		if len(r) == 0 || r[0] == nil {
			out = append(out, "NULL")
			continue
		}
		out = append(out, *r[0])
	}
	return out
}
