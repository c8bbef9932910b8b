package mysqlclient_test

import (
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/tpproxy/tpproxy/internal/mysqlclient"
)

func TestPreparedArgs(t *testing.T) {
	c := connect(t, testConfig(t))
	mustExec(t, c, "DROP TABLE IF EXISTS args_t",
		"CREATE TABLE args_t (id INT PRIMARY KEY, i BIGINT, s VARCHAR(300), b LONGBLOB, n INT NULL)")
	ins, err := c.Prepare("INSERT INTO args_t VALUES (?, ?, ?, ?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	if ins.Params != 5 || ins.Columns != 0 {
		t.Errorf("INSERT statement: %d params, %d columns; want 5, 0", ins.Params, ins.Columns)
	}
	// Values chosen to cover each length-encoding width and bytes that a
	// text protocol would have to escape.
	bin := []byte{0, 1, '\'', '\\', 0xfe, 0xff}
	cases := []struct {
		id  int64
		i   int64
		s   string
		b   []byte
		sql string // WHERE clause that matches exactly the row
	}{
		{1, -42, "héllo", bin, ""},
		{2, 1 << 62, strings.Repeat("s", 300), []byte(strings.Repeat("b", 70000)), ""},
		{3, 0, "", nil, ""},
		// Larger than the write buffer and than 64 KiB (3-byte length).
		{4, 7, "x", []byte(strings.Repeat("\x00z", 100000)), ""},
	}
	for _, tc := range cases {
		if n, err := c.Execute(ins, mysqlclient.Int(tc.id), mysqlclient.Int(tc.i), mysqlclient.String(tc.s),
			mysqlclient.Bytes(tc.b), mysqlclient.Null()); n != 0 || err != nil {
			t.Fatalf("insert %d: %d rows, %v", tc.id, n, err)
		}
	}
	for _, tc := range cases {
		q := "SELECT 1 FROM args_t WHERE id = " + itoa(tc.id) + " AND i = " + itoa(tc.i) +
			" AND s = X'" + hex.EncodeToString([]byte(tc.s)) + "' AND HEX(b) = '" + strings.ToUpper(hex.EncodeToString(tc.b)) +
			"' AND n IS NULL"
		if n := rowsOf(t, c, q); n != 1 {
			t.Errorf("row %d was not stored as sent", tc.id)
		}
	}
	// The same values as arguments of a query select the same rows.
	sel, err := c.Prepare("SELECT id, s FROM args_t WHERE i = ? AND b = ? AND s = ? AND ? IS NULL")
	if err != nil {
		t.Fatal(err)
	}
	if sel.Params != 4 || sel.Columns != 2 {
		t.Errorf("SELECT statement: %d params, %d columns; want 4, 2", sel.Params, sel.Columns)
	}
	for _, tc := range cases {
		n, err := c.Execute(sel, mysqlclient.Int(tc.i), mysqlclient.Bytes(tc.b), mysqlclient.String(tc.s), mysqlclient.Null())
		if n != 1 || err != nil {
			t.Errorf("select row %d: %d rows, %v", tc.id, n, err)
		}
	}
	if err := c.CloseStmt(ins); err != nil {
		t.Error(err)
	}
	if err := c.CloseStmt(sel); err != nil {
		t.Error(err)
	}
}

func TestPreparedResultSet(t *testing.T) {
	c := connect(t, testConfig(t))
	mustExec(t, c, "DROP TABLE IF EXISTS ps_rows",
		"CREATE TABLE ps_rows (id INT PRIMARY KEY, v DOUBLE, d DATETIME, s TEXT)",
		"INSERT INTO ps_rows VALUES (1, 1.5, NOW(), 'a'), (2, NULL, NULL, NULL), (3, -2, '2020-01-02 03:04:05', REPEAT('y', 5000))")
	s, err := c.Prepare("SELECT id, v, d, s FROM ps_rows WHERE id <= ?")
	if err != nil {
		t.Fatal(err)
	}
	for want := range 4 {
		if n, err := c.Execute(s, mysqlclient.Int(int64(want))); n != want || err != nil {
			t.Errorf("id <= %d: %d rows, %v", want, n, err)
		}
	}
	none, err := c.Prepare("SELECT 1 FROM DUAL")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Execute(none); n != 1 || err != nil {
		t.Errorf("statement without parameters: %d rows, %v", n, err)
	}
}

func TestPreparedErrors(t *testing.T) {
	c := connect(t, testConfig(t))
	if _, err := c.Prepare("SELEKT 1"); serverCode(err) != 1064 {
		t.Errorf("syntax error: got %v, want 1064", err)
	}
	if _, err := c.Prepare("SELECT * FROM no_such_table WHERE id = ?"); serverCode(err) != 1146 {
		t.Errorf("unknown table: got %v, want 1146", err)
	}
	s, err := c.Prepare("SELECT ? + 1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Execute(s); !errors.Is(err, mysqlclient.ErrBadArgs) {
		t.Errorf("no arguments: got %v, want ErrBadArgs", err)
	}
	if _, err := c.Execute(s, mysqlclient.Int(1), mysqlclient.Int(2)); !errors.Is(err, mysqlclient.ErrBadArgs) {
		t.Errorf("two arguments: got %v, want ErrBadArgs", err)
	}
	if _, err := c.Execute(s, mysqlclient.Arg{Kind: 99}); !errors.Is(err, mysqlclient.ErrBadArgs) {
		t.Errorf("unknown kind: got %v, want ErrBadArgs", err)
	}
	if n, err := c.Execute(s, mysqlclient.Int(1)); n != 1 || err != nil {
		t.Fatalf("after refused arguments: %d rows, %v", n, err)
	}
	if err := c.CloseStmt(s); err != nil {
		t.Fatal(err)
	}
	// The server no longer knows the statement: ER_UNKNOWN_STMT_HANDLER.
	if _, err := c.Execute(s, mysqlclient.Int(1)); serverCode(err) != 1243 {
		t.Errorf("closed statement: got %v, want 1243", err)
	}
	// An error of the execution itself: a duplicate key.
	mustExec(t, c, "DROP TABLE IF EXISTS dup_t", "CREATE TABLE dup_t (id INT PRIMARY KEY)")
	ins, err := c.Prepare("INSERT INTO dup_t VALUES (?)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Execute(ins, mysqlclient.Int(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Execute(ins, mysqlclient.Int(1)); serverCode(err) != 1062 {
		t.Errorf("duplicate key: got %v, want 1062", err)
	}
	if c.Broken() {
		t.Fatal("server errors broke the connection")
	}
	if n := rowsOf(t, c, "SELECT 1"); n != 1 {
		t.Errorf("after errors: %d rows", n)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestExecuteSendsTypesOnlyWhenTheyChange: once an execute with some
// parameter types succeeded, later executes with the same types leave them
// out (new-params-bound 0); a change of type sends them again.
func TestExecuteSendsTypesOnlyWhenTheyChange(t *testing.T) {
	s := &mysqlclient.Stmt{ID: 7, Params: 1}
	first, err := mysqlclient.AppendExecute(nil, s, []mysqlclient.Arg{mysqlclient.Int(5)})
	if err != nil {
		t.Fatal(err)
	}
	// cmd, id(4), flags, iterations(4), null bitmap(1), bound flag, type(2), value(8)
	if len(first) != 1+4+1+4+1+1+2+8 || first[11] != 1 {
		t.Fatalf("first execute % x", first)
	}
	again, _ := mysqlclient.AppendExecute(nil, s, []mysqlclient.Arg{mysqlclient.Int(6)})
	if again[11] != 1 {
		t.Fatal("types left out before an execute with them succeeded")
	}
	mysqlclient.SetBound(s)
	again, _ = mysqlclient.AppendExecute(nil, s, []mysqlclient.Arg{mysqlclient.Int(6)})
	if len(again) != len(first)-2 || again[11] != 0 {
		t.Fatalf("same types again: % x", again)
	}
	changed, _ := mysqlclient.AppendExecute(nil, s, []mysqlclient.Arg{mysqlclient.String("6")})
	if changed[11] != 1 {
		t.Fatalf("changed type not sent: % x", changed)
	}

	// On the server: alternating types give the right answers.
	c := connect(t, testConfig(t))
	st, err := c.Prepare("SELECT 1 FROM DUAL WHERE ? = 5")
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		arg  mysqlclient.Arg
		rows int
	}{
		{mysqlclient.Int(5), 1}, {mysqlclient.Int(5), 1}, {mysqlclient.Int(4), 0}, {mysqlclient.Null(), 0},
		{mysqlclient.Int(5), 1}, {mysqlclient.String("5"), 1}, {mysqlclient.String("x"), 0}, {mysqlclient.Int(5), 1},
	} {
		if n, err := c.Execute(st, tc.arg); n != tc.rows || err != nil {
			t.Errorf("execute %d: %d rows, %v; want %d", i, n, err, tc.rows)
		}
	}
}
