package prepared

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// TestStatementsEndWithSession covers connection pools that recycle a
// client connection with COM_RESET_CONNECTION or COM_CHANGE_USER: the
// server deallocates the session's statements, so executing an old id
// answers ERR 1243, and a statement prepared afterwards works.
func TestStatementsEndWithSession(t *testing.T) {
	px := env.StartProxy(t)
	for _, tg := range []target{directTarget(t), proxyTarget(px)} {
		t.Run(tg.name, func(t *testing.T) {
			c := rawConnect(t, tg.addr)
			for _, step := range []struct {
				name string
				do   func() error
			}{
				{"COM_RESET_CONNECTION", func() error { return c.simpleCommand([]byte{0x1f}) }},
				{"COM_CHANGE_USER", func() error { return c.changeUser(proxytest.User, proxytest.Password, proxytest.DB) }},
			} {
				st := c.mustPrepare(t, "SELECT CONCAT(?, '.')", 1)
				res, err := c.execute(executePacket(st.ID, cursorNone, true, []param{strParam("before")}))
				if err != nil {
					t.Fatal(err)
				}
				wantRow(t, "before "+step.name, res, "before.")
				if err := step.do(); err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				res, err = c.execute(executePacket(st.ID, cursorNone, true, []param{strParam("after")}))
				wantErrCode(t, "execute of a statement prepared before "+step.name, res, err, erUnknownStmtHandler)
				again := c.mustPrepare(t, "SELECT CONCAT(?, '.')", 1)
				res, err = c.execute(executePacket(again.ID, cursorNone, true, []param{strParam("after")}))
				if err != nil {
					t.Fatal(err)
				}
				wantRow(t, "statement prepared after "+step.name, res, "after.")
			}
		})
	}
}

// TestCloseSharedStatement covers sessions that prepare the same SQL text
// and close it at different times: closing one session's statement leaves
// the others' working, in the same session too, and the text prepares
// again after every session closed it. A pool of one puts every backend
// statement on the same connection.
func TestCloseSharedStatement(t *testing.T) {
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
	const q = "SELECT CONCAT('shared:', ?)"
	a := rawConnect(t, px.Addr)
	b := rawConnect(t, px.Addr)
	exec := func(c *rawConn, st stmt, bound bool, v string) {
		t.Helper()
		res, err := c.execute(executePacket(st.ID, cursorNone, bound, []param{strParam(v)}))
		if err != nil {
			t.Fatal(err)
		}
		wantRow(t, fmt.Sprintf("execute of statement %d with %q", st.ID, v), res, "shared:"+v)
	}
	closeStmt := func(c *rawConn, st stmt) {
		t.Helper()
		if err := c.command(stmtPacket(comStmtClose, st.ID)); err != nil {
			t.Fatal(err)
		}
	}
	sa := a.mustPrepare(t, q, 1)
	sa2 := a.mustPrepare(t, q, 1) // the same text twice in one session
	sb := b.mustPrepare(t, q, 1)
	exec(a, sa, true, "a")
	exec(a, sa2, true, "a2")
	exec(b, sb, true, "b")
	closeStmt(a, sa)
	exec(a, sa2, false, "a2 after closing a's other statement")
	exec(b, sb, false, "b after a closed one")
	closeStmt(a, sa2)
	exec(b, sb, false, "b after a closed both")
	res, err := a.execute(executePacket(sa2.ID, cursorNone, false, []param{strParam("x")}))
	wantErrCode(t, "execute of a closed statement", res, err, erUnknownStmtHandler)
	closeStmt(b, sb)
	a.mustSelectOne(t, "every session closed the statement")
	c := rawConnect(t, px.Addr)
	sc := c.mustPrepare(t, q, 1)
	exec(c, sc, true, "c")
	exec(c, sc, false, "c again")
}

// TestManyParameters covers statements with hundreds of parameters (bulk
// INSERTs, long IN lists): a NULL bitmap of many bytes, NULLs in changing
// positions, and executes without types on a connection that never saw
// the statement.
func TestManyParameters(t *testing.T) {
	px := env.StartProxy(t, pinAll(2))
	const params = 1000
	q := "SELECT COUNT(*), SUM(seq) FROM " + seqTable(t, 2*params+8) + " WHERE seq IN (?" + strings.Repeat(", ?", params-1) + ")"
	for _, tg := range []target{directTarget(t), proxyTarget(px)} {
		t.Run(tg.name, func(t *testing.T) {
			var sw *backendSwitch
			if tg.px != nil {
				sw = newBackendSwitch(t, px)
			}
			c := rawConnect(t, tg.addr)
			st := c.mustPrepare(t, q, params)
			for round := range 6 {
				ps := make([]param, params)
				count, sum := 0, 0
				for i := range ps {
					v := i*2 + round + 1
					// A NULL matches nothing; its position moves each round.
					if (i+round)%7 == 0 {
						ps[i] = param{Type: typeLongLong, Null: true}
						continue
					}
					ps[i] = intParam(int64(v))
					count++
					sum += v
				}
				res, err := c.execute(executePacket(st.ID, cursorNone, round == 0, ps))
				if err != nil {
					t.Fatal(err)
				}
				wantRow(t, fmt.Sprintf("round %d (new_params_bound_flag=%v)", round, round == 0), res, strconv.Itoa(count), strconv.Itoa(sum))
				sw.flip()
			}
		})
	}
}

// seqTable is a table of the integers 1..n.
func seqTable(t testing.TB, n int) string {
	if isMySQL(t) {
		return fmt.Sprintf("(WITH RECURSIVE s (seq) AS (SELECT 1 UNION ALL SELECT seq + 1 FROM s WHERE seq < %d) SELECT seq FROM s) AS s", n)
	}
	return fmt.Sprintf("seq_1_to_%d", n)
}

// errIs reports whether err is a server error with code.
func errIs(err error, code uint16) bool {
	var se *serverError
	return errors.As(err, &se) && se.Code == code
}
