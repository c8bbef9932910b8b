package bench

import (
	"testing"
)

// TestWorkloadsStatementsAndEffects runs one transaction of every sysbench
// workload on the sandbox: each sends sysbench's statement count and has
// its effect (reads change nothing, oltp_insert adds a row, ...).
func TestWorkloadsStatementsAndEffects(t *testing.T) {
	srv := server(t)
	ctx := t.Context()
	db, err := OpenDB(srv.DSN(testUser, testPassword, testDB), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := Schema{Tables: 1, TableSize: 500}
	if err := Prepare(ctx, db, schema.Tables, schema.TableSize); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = Cleanup(ctx, db, schema.Tables) }()
	sess := testSession(t, srv.DSN(testUser, testPassword, testDB), schema)
	state := func() (rows, sumK int64) {
		t.Helper()
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*), SUM(k) FROM sbtest1").Scan(&rows, &sumK); err != nil {
			t.Fatal(err)
		}
		return rows, sumK
	}
	for _, c := range []struct {
		name       string
		statements int
		rowsDelta  int64
		kChanges   bool
	}{
		{"oltp_point_select", 1, 0, false},
		{"oltp_read_only", 16, 0, false},
		{"oltp_update_index", 1, 0, true},
		{"oltp_write_only", 6, 0, true},
		{"oltp_read_write", readWriteStmts, 0, true},
		{"oltp_insert", 1, 1, true},
	} {
		wl, err := NewWorkload(c.name, schema)
		if err != nil {
			t.Fatal(err)
		}
		if c.name == "oltp_read_write" {
			// The same transaction once more with prepared statements.
			ps := schema
			ps.Prepared = true
			pw, _ := NewWorkload(c.name, ps)
			psess := testSession(t, srv.DSN(testUser, testPassword, testDB), ps)
			if err := pw.NewClient(9).Tx(psess); err != nil || psess.queries != readWriteStmts {
				t.Fatalf("prepared %s: %d statements, %v", c.name, psess.queries, err)
			}
		}
		if wl.Name() != c.name {
			t.Errorf("%s: Name() = %s", c.name, wl.Name())
		}
		rows0, k0 := state()
		q0 := sess.queries
		err = wl.NewClient(7).Tx(sess)
		n := sess.queries - q0
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		rows1, k1 := state()
		if n != c.statements {
			t.Errorf("%s: %d statements, want %d", c.name, n, c.statements)
		}
		if rows1-rows0 != c.rowsDelta {
			t.Errorf("%s: rows %d -> %d, want %+d", c.name, rows0, rows1, c.rowsDelta)
		}
		if (k1 != k0) != c.kChanges {
			t.Errorf("%s: SUM(k) %d -> %d; a change expected: %v", c.name, k0, k1, c.kChanges)
		}
	}
}

// testSession opens a benchmark session on dsn.
func testSession(t *testing.T, dsn string, s Schema) *Session {
	t.Helper()
	d, err := newDialer(Target{Name: "test", DSN: dsn}, s)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := d.session(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.conn.Close() })
	return sess
}

// TestPreparedOncePerConnection: with Schema.Prepared a client prepares
// each statement once on its connection and then only executes it, as
// sysbench --db-ps-mode=auto does; a new connection prepares again.
func TestPreparedOncePerConnection(t *testing.T) {
	srv := server(t)
	ctx := t.Context()
	dsn := srv.DSN(testUser, testPassword, testDB)
	db, err := OpenDB(dsn, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := Schema{Tables: 1, TableSize: 100, Prepared: true}
	if err := Prepare(ctx, db, schema.Tables, schema.TableSize); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = Cleanup(ctx, db, schema.Tables) }()
	wl, err := NewWorkload("oltp_point_select", schema)
	if err != nil {
		t.Fatal(err)
	}
	client := wl.NewClient(1)
	status := func(name string) int {
		t.Helper()
		var n string
		var v int
		if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for round := range 2 {
		sess := testSession(t, dsn, schema)
		p0, e0 := status("Com_stmt_prepare"), status("Com_stmt_execute")
		for range 5 {
			if err := client.Tx(sess); err != nil {
				t.Fatal(err)
			}
		}
		if p, e := status("Com_stmt_prepare")-p0, status("Com_stmt_execute")-e0; p != 1 || e != 5 {
			t.Errorf("connection %d: %d prepares and %d executes for 5 transactions, want 1 and 5", round, p, e)
		}
		sess.conn.Close()
	}
}
