package clients

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// openDirect opens a go-sql-driver handle on the server itself, closed
// when t ends.
func openDirect(t testing.TB, params ...string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", env.DirectDSN(t, append([]string{"interpolateParams=true"}, params...)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// mysqlErr returns err's server error number, or 0.
func mysqlErr(err error) (uint16, string, string) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number, string(me.SQLState[:]), me.Message
	}
	return 0, "", ""
}

func mustExec(t testing.TB, ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, q string, args ...any) sql.Result {
	t.Helper()
	res, err := db.ExecContext(ctx, q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return res
}

func TestGoSQLCRUD(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	px := env.StartProxy(t)
	db := px.Open(t)
	mustExec(t, ctx, db, "DROP TABLE IF EXISTS gosql_crud")
	mustExec(t, ctx, db, "CREATE TABLE gosql_crud (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(50) NOT NULL, qty INT)")
	t.Cleanup(func() { serverExec(t, "DROP TABLE IF EXISTS tpproxy_test.gosql_crud") })

	var ids []int64
	for i, name := range []string{"apple", "pear", "plum"} {
		res := mustExec(t, ctx, db, "INSERT INTO gosql_crud (name, qty) VALUES (?, ?)", name, i*10)
		id, err := res.LastInsertId()
		if err != nil || id != int64(i+1) {
			t.Fatalf("LastInsertId after insert %d = %d, %v", i, id, err)
		}
		ids = append(ids, id)
	}
	res := mustExec(t, ctx, db, "UPDATE gosql_crud SET qty = qty + 1 WHERE id IN (?, ?)", ids[0], ids[2])
	if n, _ := res.RowsAffected(); n != 2 {
		t.Errorf("UPDATE affected %d rows, want 2", n)
	}
	// An UPDATE that changes nothing: affected (changed) rows are 0 without
	// CLIENT_FOUND_ROWS, as go-sql-driver asks by default.
	res = mustExec(t, ctx, db, "UPDATE gosql_crud SET qty = 1 WHERE id = ?", ids[0])
	if n, _ := res.RowsAffected(); n != 0 {
		t.Errorf("no-op UPDATE affected %d rows, want 0", n)
	}
	res = mustExec(t, ctx, db, "DELETE FROM gosql_crud WHERE name = ?", "pear")
	if n, _ := res.RowsAffected(); n != 1 {
		t.Errorf("DELETE affected %d rows, want 1", n)
	}
	rows, err := db.QueryContext(ctx, "SELECT id, name, qty FROM gosql_crud ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var id, qty int
		var name string
		if err := rows.Scan(&id, &name, &qty); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d:%s:%d", id, name, qty))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if want := []string{"1:apple:1", "3:plum:21"}; !reflect.DeepEqual(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}

	// clientFoundRows=true: affected rows are matched rows, as the server
	// reports for a connection with CLIENT_FOUND_ROWS.
	fdb := px.Open(t, "clientFoundRows=true")
	res = mustExec(t, ctx, fdb, "UPDATE gosql_crud SET qty = qty WHERE id = ?", ids[0])
	if n, _ := res.RowsAffected(); n != 1 {
		t.Errorf("no-op UPDATE with clientFoundRows affected %d rows, want 1 (matched)", n)
	}
	// And without it again on the first handle, whatever backend it gets.
	res = mustExec(t, ctx, db, "UPDATE gosql_crud SET qty = qty WHERE id = ?", ids[0])
	if n, _ := res.RowsAffected(); n != 0 {
		t.Errorf("no-op UPDATE without clientFoundRows affected %d rows, want 0", n)
	}
}

func TestGoSQLTransactions(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	// Every connection of the pool of 4 pinned by a transaction at once
	// (below): past the automatic pinned budget, which leaves unpinned work
	// a reserve.
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Proxy.MaxPinned = o.Pool.Size })
	db := px.Open(t)
	mustExec(t, ctx, db, "DROP TABLE IF EXISTS gosql_tx")
	mustExec(t, ctx, db, "CREATE TABLE gosql_tx (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB")
	t.Cleanup(func() { serverExec(t, "DROP TABLE IF EXISTS tpproxy_test.gosql_tx") })
	count := func(q *sql.DB) int {
		t.Helper()
		var n int
		if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM gosql_tx").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Commit.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, ctx, tx, "INSERT INTO gosql_tx VALUES (?, ?)", 1, "committed")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := count(db); n != 1 {
		t.Fatalf("after commit: %d rows, want 1", n)
	}

	// Rollback, with a read of its own uncommitted row inside.
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, ctx, tx, "INSERT INTO gosql_tx VALUES (?, ?)", 2, "rolled back")
	var inside int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM gosql_tx").Scan(&inside); err != nil || inside != 2 {
		t.Fatalf("inside the transaction: %d rows, %v; want 2", inside, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := count(db); n != 1 {
		t.Fatalf("after rollback: %d rows, want 1", n)
	}

	// Isolation: a READ UNCOMMITTED transaction sees another session's
	// uncommitted row, a REPEATABLE READ one does not. go-sql-driver sends
	// SET TRANSACTION ISOLATION LEVEL (next transaction only) first.
	writer, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = writer.Rollback() }()
	mustExec(t, ctx, writer, "INSERT INTO gosql_tx VALUES (?, ?)", 3, "dirty")
	for _, c := range []struct {
		level sql.IsolationLevel
		want  int
	}{{sql.LevelReadUncommitted, 2}, {sql.LevelRepeatableRead, 1}, {sql.LevelReadUncommitted, 2}} {
		rtx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: c.level})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := rtx.QueryRowContext(ctx, "SELECT COUNT(*) FROM gosql_tx").Scan(&n); err != nil {
			t.Fatal(err)
		}
		_ = rtx.Rollback()
		if n != c.want {
			t.Errorf("%s transaction saw %d rows, want %d", c.level, n, c.want)
		}
	}
	_ = writer.Rollback()

	// A read-only transaction refuses writes with the server's error.
	ro, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ro.ExecContext(ctx, "INSERT INTO gosql_tx VALUES (9, 'ro')")
	_ = ro.Rollback()
	if code, _, _ := mysqlErr(err); code != 1792 {
		t.Errorf("insert in a read-only transaction: %v, want error 1792", err)
	}

	// A transaction pins its backend: with a pool of 4, five sessions in
	// open transactions cannot all get one until one ends, but nothing
	// deadlocks, and the sixth statement of a pinned session never waits.
	conns := make([]*sql.Tx, 4)
	for i := range conns {
		if conns[i], err = db.BeginTx(ctx, nil); err != nil {
			t.Fatal(err)
		}
		mustExec(t, ctx, conns[i], "INSERT INTO gosql_tx VALUES (?, 'pinned')", 100+i)
	}
	if st := px.Server.Stats(); st.Pinned != 4 {
		t.Errorf("4 open transactions: %d sessions pinned, want 4", st.Pinned)
	}
	for i, c := range conns {
		mustExec(t, ctx, c, "UPDATE gosql_tx SET v = 'again' WHERE id = ?", 100+i)
		if i%2 == 0 {
			err = c.Commit()
		} else {
			err = c.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := count(db); n != 3 {
		t.Errorf("after two commits and two rollbacks: %d rows, want 3", n)
	}
	waitFor(t, 5*time.Second, "sessions to unpin after their transactions", func() bool {
		return px.Server.Stats().Pinned == 0
	})
}

// typesDDL has one column of each common type.
const typesDDL = `CREATE TABLE gosql_types (
	id INT PRIMARY KEY,
	ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, mi MEDIUMINT, i INT, iu INT UNSIGNED,
	bi BIGINT, bu BIGINT UNSIGNED,
	f FLOAT, d DOUBLE, dc DECIMAL(30,10), bt BIT(12),
	c CHAR(10), vc VARCHAR(255), tx TEXT, lt LONGTEXT,
	vb VARBINARY(300), bl BLOB,
	dt DATE, dtm DATETIME(6), ts TIMESTAMP(3) NULL DEFAULT NULL, tm TIME(6), yr YEAR,
	j JSON, e ENUM('small','large'), st SET('x','y','z')
) DEFAULT CHARSET=utf8mb4`

const typesCols = "ti, tiu, si, mi, i, iu, bi, bu, f, d, dc, bt, c, vc, tx, lt, vb, bl, dt, dtm, ts, tm, yr, j, e, st"

func TestGoSQLTypes(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	px := env.StartProxy(t)
	db := px.Open(t, "parseTime=true", "loc=UTC")
	direct := openDirect(t, "parseTime=true", "loc=UTC")
	mustExec(t, ctx, db, "DROP TABLE IF EXISTS gosql_types")
	mustExec(t, ctx, db, typesDDL)
	t.Cleanup(func() { serverExec(t, "DROP TABLE IF EXISTS tpproxy_test.gosql_types") })

	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	tricky := "it's \"quoted\" \\ back\\\\slash \x00 nul \n\r\t\x1a ünïcödé 中文 😀🚀"
	dtm := time.Date(2024, 2, 29, 23, 59, 58, 123456000, time.UTC)
	ts := time.Date(2038, 1, 19, 3, 14, 7, 999000000, time.UTC)
	type row struct {
		ti  int8
		tiu uint8
		si  int16
		mi  int32
		i   int32
		iu  uint32
		bi  int64
		bu  uint64
		f   float32
		d   float64
		dc  string
		bt  []byte
		c   string
		vc  string
		tx  string
		lt  string
		vb  []byte
		bl  []byte
		dt  time.Time
		dtm time.Time
		ts  time.Time
		tm  string
		yr  int
		j   string
		e   string
		st  string
	}
	want := []row{
		{math.MinInt8, math.MaxUint8, math.MinInt16, -8388608, math.MinInt32, math.MaxUint32,
			math.MinInt64, math.MaxUint64, 3.5, math.MaxFloat64, "-12345678901234567890.0123456789", []byte{0x0f, 0xff},
			"char", tricky, strings.Repeat("text ", 1000), strings.Repeat("😀", 70000),
			allBytes, bytes.Repeat(allBytes, 200),
			time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), dtm, ts, "-838:59:59.000000", 1901,
			`{"a": [1, 2.5, "x\"y"], "b": {"c": null, "d": "😀"}}`, "large", "x,z"},
		{math.MaxInt8, 0, math.MaxInt16, 8388607, math.MaxInt32, 0,
			math.MaxInt64, 0, -1.25e-3, math.SmallestNonzeroFloat64, "0.0000000001", []byte{0, 0},
			"", "", "", "", []byte{}, []byte{0},
			time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(1970, 1, 1, 0, 0, 1, 1000, time.UTC),
			time.Date(1970, 1, 1, 0, 0, 1, 0, time.UTC), "00:00:00.000001", 2155,
			`[]`, "small", ""},
	}
	for n, r := range want {
		mustExec(t, ctx, db, "INSERT INTO gosql_types (id, "+typesCols+") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			n+1, r.ti, r.tiu, r.si, r.mi, r.i, r.iu, r.bi, r.bu, r.f, r.d, r.dc, r.bt, r.c, r.vc, r.tx, r.lt,
			r.vb, r.bl, r.dt, r.dtm, r.ts, r.tm, r.yr, r.j, r.e, r.st)
	}
	// A row of NULLs.
	mustExec(t, ctx, db, "INSERT INTO gosql_types (id) VALUES (?)", 3)

	for n, w := range want {
		var g row
		err := db.QueryRowContext(ctx, "SELECT "+typesCols+" FROM gosql_types WHERE id = ?", n+1).Scan(
			&g.ti, &g.tiu, &g.si, &g.mi, &g.i, &g.iu, &g.bi, &g.bu, &g.f, &g.d, &g.dc, &g.bt, &g.c, &g.vc, &g.tx, &g.lt,
			&g.vb, &g.bl, &g.dt, &g.dtm, &g.ts, &g.tm, &g.yr, &g.j, &g.e, &g.st)
		if err != nil {
			t.Fatalf("row %d: %v", n+1, err)
		}
		// JSON is stored as text in MariaDB; MySQL normalises it. Compare
		// the proxy with the server below; here only that it is there.
		if !strings.Contains(g.j, "[") {
			t.Errorf("row %d: json = %q", n+1, g.j)
		}
		g.j, w.j = "", ""
		if g.vb == nil {
			g.vb = []byte{}
		}
		if !reflect.DeepEqual(g, w) {
			gv, wv := reflect.ValueOf(g), reflect.ValueOf(w)
			for i := range gv.NumField() {
				if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
					t.Errorf("row %d column %s: got %.80v, want %.80v", n+1, gv.Type().Field(i).Name,
						gv.Field(i).Interface(), wv.Field(i).Interface())
				}
			}
		}
	}

	// Every column of every row reads the same, byte for byte, through
	// the proxy and directly; NULLs stay NULL.
	q := "SELECT id, " + typesCols + " FROM gosql_types ORDER BY id"
	viaProxy := rawRows(t, ctx, db, q)
	viaServer := rawRows(t, ctx, direct, q)
	if len(viaProxy) != 3 {
		t.Fatalf("%d rows through the proxy, want 3", len(viaProxy))
	}
	for i := range viaProxy {
		for j := range viaProxy[i] {
			if !reflect.DeepEqual(viaProxy[i][j], viaServer[i][j]) {
				t.Errorf("row %d column %d: proxy %.60q, server %.60q", i+1, j, deref(viaProxy[i][j]), deref(viaServer[i][j]))
			}
		}
	}
	for j, v := range viaProxy[2][1:] {
		if v != nil {
			t.Errorf("NULL row column %d = %q, want NULL", j+1, *v)
		}
	}

	// Column metadata matches the server's.
	pc := columnTypes(t, ctx, db, "SELECT * FROM gosql_types")
	dc := columnTypes(t, ctx, direct, "SELECT * FROM gosql_types")
	if !reflect.DeepEqual(pc, dc) {
		t.Errorf("column types differ:\nproxy:  %v\nserver: %v", pc, dc)
	}
	if len(pc) != 27 {
		t.Errorf("%d columns, want 27", len(pc))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<NULL>"
	}
	return *s
}

// rawRows reads every value of a query as text (nil for NULL).
func rawRows(t testing.TB, ctx context.Context, db *sql.DB, q string) [][]*string {
	t.Helper()
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]*string
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]*string, len(cols))
		for i, v := range vals {
			if v != nil {
				s := string(v)
				row[i] = &s
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// columnTypes describes a query's columns as go-sql-driver reports them.
func columnTypes(t testing.TB, ctx context.Context, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ct := range cts {
		l, hasLen := ct.Length()
		p, s, hasDec := ct.DecimalSize()
		null, hasNull := ct.Nullable()
		out = append(out, fmt.Sprintf("%s %s len=%d/%v dec=%d,%d/%v null=%v/%v scan=%v",
			ct.Name(), ct.DatabaseTypeName(), l, hasLen, p, s, hasDec, null, hasNull, ct.ScanType()))
	}
	for rows.Next() {
	}
	return out
}

func TestGoSQLMultiStatements(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	px := env.StartProxy(t)
	db := px.Open(t, "multiStatements=true")
	direct := openDirect(t, "multiStatements=true")
	mustExec(t, ctx, db, "DROP TABLE IF EXISTS gosql_multi; CREATE TABLE gosql_multi (id INT PRIMARY KEY, v INT)")
	t.Cleanup(func() { serverExec(t, "DROP TABLE IF EXISTS tpproxy_test.gosql_multi") })

	res := mustExec(t, ctx, db, "INSERT INTO gosql_multi VALUES (1, 10); INSERT INTO gosql_multi VALUES (2, 20), (3, 30); UPDATE gosql_multi SET v = v + 1 WHERE id > 1")
	if n, _ := res.RowsAffected(); n != 2 {
		// go-sql-driver reports the last statement's count.
		t.Errorf("RowsAffected = %d, want 2 (of the last statement)", n)
	}
	var sum int
	if err := db.QueryRowContext(ctx, "SELECT SUM(v) FROM gosql_multi").Scan(&sum); err != nil || sum != 62 {
		t.Fatalf("SUM(v) = %d, %v; want 62", sum, err)
	}

	sets := func(h *sql.DB, q string) ([][]string, error) {
		conn, err := h.Conn(ctx)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		rows, err := conn.QueryContext(ctx, q)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out [][]string
		for {
			cols, _ := rows.Columns()
			set := []string{strings.Join(cols, ",")}
			for rows.Next() {
				vals := make([]sql.NullString, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					return out, err
				}
				var s []string
				for _, v := range vals {
					s = append(s, fmt.Sprint(v.String, v.Valid))
				}
				set = append(set, strings.Join(s, ","))
			}
			out = append(out, set)
			if !rows.NextResultSet() {
				break
			}
		}
		// Whether the usable connection survived the error is checked by
		// the caller with another query.
		if err := rows.Err(); err != nil {
			return out, err
		}
		var one int
		if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			return out, fmt.Errorf("connection unusable after the multi-result query: %w", err)
		}
		return out, nil
	}
	for _, q := range []string{
		"SELECT 1 AS a; SELECT 'x' AS b, NULL AS c; SELECT * FROM gosql_multi WHERE id < 0",
		"SELECT id FROM gosql_multi ORDER BY id; UPDATE gosql_multi SET v = v WHERE id = 1; SELECT COUNT(*) AS n FROM gosql_multi",
		"DO 1; SELECT 'after do' AS s",
		"SELECT 1 AS ok; SELECT * FROM gosql_no_such_table; SELECT 3",
		"SELECT 1 AS ok; SELEKT 2",
	} {
		gotSets, gotErr := sets(db, q)
		wantSets, wantErr := sets(direct, q)
		if !reflect.DeepEqual(gotSets, wantSets) {
			t.Errorf("%s:\nproxy result sets:  %q\nserver result sets: %q", q, gotSets, wantSets)
		}
		gc, gs, gm := mysqlErr(gotErr)
		wc, ws, wm := mysqlErr(wantErr)
		if (gotErr == nil) != (wantErr == nil) || gc != wc || gs != ws || gm != wm {
			t.Errorf("%s:\nproxy error:  %v\nserver error: %v", q, gotErr, wantErr)
		}
	}
	if sum := sumSets(t, ctx, db); sum != 3 {
		t.Errorf("table has %d rows after the queries, want 3", sum)
	}
}

func sumSets(t testing.TB, ctx context.Context, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM gosql_multi").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestGoSQLStoredProcedure(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	px := env.StartProxy(t)
	db := px.Open(t)
	db.SetMaxIdleConns(0) // every Conn is a new client session
	mustExec(t, ctx, db, "DROP PROCEDURE IF EXISTS gosql_two_sets")
	mustExec(t, ctx, db, `CREATE PROCEDURE gosql_two_sets(IN n INT, OUT total INT)
BEGIN
  SELECT n AS first_n, 'one' AS label;
  SELECT n * 2 AS doubled, n * 3 AS tripled UNION ALL SELECT n * 4, n * 5;
  SET total = n * 100;
END`)
	t.Cleanup(func() { serverExec(t, "DROP PROCEDURE IF EXISTS tpproxy_test.gosql_two_sets") })

	for round := range 3 {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := conn.QueryContext(ctx, "CALL gosql_two_sets(?, @total)", 7+round)
		if err != nil {
			t.Fatal(err)
		}
		var sets [][]string
		for {
			cols, _ := rows.Columns()
			set := []string{strings.Join(cols, ",")}
			for rows.Next() {
				var a, b string
				if err := rows.Scan(&a, &b); err != nil {
					t.Fatal(err)
				}
				set = append(set, a+","+b)
			}
			sets = append(sets, set)
			if !rows.NextResultSet() {
				break
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		n := 7 + round
		want := [][]string{
			{"first_n,label", fmt.Sprintf("%d,one", n)},
			{"doubled,tripled", fmt.Sprintf("%d,%d", 2*n, 3*n), fmt.Sprintf("%d,%d", 4*n, 5*n)},
		}
		if !reflect.DeepEqual(sets, want) {
			t.Errorf("CALL result sets = %q, want %q", sets, want)
		}
		// The OUT parameter went into a user variable of this session.
		var total int
		if err := conn.QueryRowContext(ctx, "SELECT @total").Scan(&total); err != nil || total != n*100 {
			t.Errorf("@total = %d, %v; want %d", total, err, n*100)
		}
		conn.Close()
	}
	// A fresh session must not see another session's @total.
	var total sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT @total").Scan(&total); err != nil || total.Valid {
		t.Errorf("@total in a new session = %v, %v; want NULL", total, err)
	}
}

// TestConnectionCharsets logs in with several handshake collations through
// a pool of one, interleaving the sessions so every statement needs the
// backend's character set switched, and compares what each session sees
// with the same login on the server.
func TestConnectionCharsets(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	serverExec(t, "DROP TABLE IF EXISTS tpproxy_test.charsets",
		"CREATE TABLE tpproxy_test.charsets (id INT PRIMARY KEY, s VARCHAR(20)) DEFAULT CHARSET=utf8mb4")
	t.Cleanup(func() { serverExec(t, "DROP TABLE IF EXISTS tpproxy_test.charsets") })
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })

	const vars = "SELECT @@character_set_client, @@character_set_connection, @@character_set_results, @@collation_connection"
	ids := []byte{8, 33, 45, 46, 224, 63}
	type pair struct{ proxy, server *rawConn }
	var sessions []pair
	for _, id := range ids {
		o := rawOptions{User: "app", Password: "secret", DB: proxytest.DB, Collation: id}
		sessions = append(sessions, pair{mustRaw(t, ctx, px.Addr, o), mustRaw(t, ctx, env.Server(t).Addr, o)})
	}
	for round := range 2 {
		for i, s := range sessions {
			got, want := rowsText(s.proxy.mustQuery(t, vars)), rowsText(s.server.mustQuery(t, vars))
			if got != want {
				t.Errorf("round %d, collation id %d: proxy %q, server %q", round, ids[i], got, want)
			}
		}
	}
	// A latin1 client writes 'é' as one byte; a utf8mb4 client reads it
	// back as two.
	latin1, utf8 := sessions[0].proxy, sessions[2].proxy
	latin1.mustQuery(t, "INSERT INTO charsets VALUES (1, '\xe9t\xe9')")
	utf8.mustQuery(t, "INSERT INTO charsets VALUES (2, 'été')")
	if got := utf8.scalar(t, "SELECT s FROM charsets WHERE id = 1"); got != "été" {
		t.Errorf("latin1 insert read by utf8mb4 = %q, want %q", got, "été")
	}
	if got := latin1.scalar(t, "SELECT s FROM charsets WHERE id = 2"); got != "\xe9t\xe9" {
		t.Errorf("utf8mb4 insert read by latin1 = %q, want %q", got, "\xe9t\xe9")
	}
	// SET NAMES moves a session to another character set, and it stays
	// there while the backend serves others in between.
	utf8.mustQuery(t, "SET NAMES latin1")
	latin1.mustQuery(t, "SET NAMES utf8mb4")
	for range 2 {
		if got := utf8.scalar(t, "SELECT s FROM charsets WHERE id = 2"); got != "\xe9t\xe9" {
			t.Errorf("after SET NAMES latin1: %q", got)
		}
		if got := latin1.scalar(t, "SELECT s FROM charsets WHERE id = 1"); got != "été" {
			t.Errorf("after SET NAMES utf8mb4: %q", got)
		}
	}
	// go-sql-driver's charset and collation parameters.
	for _, p := range []string{"charset=latin1", "collation=utf8mb4_unicode_ci", "charset=utf8mb4&collation=utf8mb4_bin"} {
		db := px.Open(t, p)
		direct := openDirect(t, p)
		got, want := rawRows(t, ctx, db, vars), rawRows(t, ctx, direct, vars)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: proxy %q, server %q", p, deref(got[0][3]), deref(want[0][3]))
		}
	}
}
