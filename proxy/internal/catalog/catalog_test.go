package catalog

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// fakeServer answers the catalog's queries from definitions per schema.
type fakeServer struct {
	schemas map[string][]definition
	loads   map[string]int // load queries per schema
	names   int            // SCHEMATA queries
	fail    error
}

func (f *fakeServer) Query(_ context.Context, sql string, onRow func(row []byte) error) error {
	if f.fail != nil {
		return f.fail
	}
	if strings.Contains(sql, "SCHEMATA") {
		f.names++
		for name := range f.schemas {
			if err := onRow(row(name)); err != nil {
				return err
			}
		}
		return nil
	}
	for name, defs := range f.schemas {
		if !strings.Contains(sql, "= "+quoteString(name)+" ") {
			continue
		}
		if f.loads == nil {
			f.loads = make(map[string]int)
		}
		f.loads[name]++
		for _, d := range defs {
			r := row(string(d.kind), d.name)
			if d.body == nil {
				r = append(r, 0xfb)
			} else {
				r = append(r, row(string(d.body))...)
			}
			r = append(r, row(d.sqlMode)...)
			if err := onRow(r); err != nil {
				return err
			}
		}
		return nil
	}
	return nil // an unknown schema has no definitions
}

// row encodes text-protocol values.
func row(vals ...string) []byte {
	var b []byte
	for _, v := range vals {
		b = mysqlwire.AppendLenEncInt(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

func def(kind byte, name, body string) definition {
	return definition{kind: kind, name: name, body: []byte(body)}
}

func check(t *testing.T, c *Catalog, srv *fakeServer, schema, q string) Verdict {
	t.Helper()
	m := sqlscan.Mode{Version: 101119, MariaDB: true}
	info := sqlscan.ScanMode([]byte(q), m)
	v, err := c.Check(context.Background(), srv, schema, []byte(q), m, &info)
	if err != nil {
		t.Fatalf("Check(%q): %v", q, err)
	}
	return v
}

func testServer() *fakeServer {
	return &fakeServer{schemas: map[string][]definition{
		"app": {
			def('R', "f_set", "BEGIN SET @v = 1; RETURN 1; END"),
			def('R', "f_lock", "RETURN GET_LOCK('l', 0)"),
			def('R', "f_pure", "RETURN x + 1"),
			def('R', "f_outer", "RETURN f_lock() + 1"),
			def('R', "p_tmp", "BEGIN CREATE TEMPORARY TABLE tt (a INT); END"),
			def('R', "p_calls", "BEGIN CALL p_tmp(); END"),
			def('R', "f_other", "RETURN other.g()"),
			def('R', "f_hidden", "RETURN 1"),
			{kind: 'R', name: "f_secret"}, // body not readable
			def('T', "audit", "BEGIN SET @last = NEW.id; END"),
			def('T', "plain", "BEGIN SET NEW.x = NEW.y * 2; END"),
			def('D', "orders", "nextval(`app`.`seq`)"),
			def('V', "v_fn", "select `app`.`f_set`() AS `x`"),
			def('V', "v_orders", "select `app`.`orders`.`id` AS `id` from `app`.`orders`"),
			def('V', "v_plain", "select 1 AS `one`"),
			def('A', "orders", "id"),
			def('A', "v_orders", "id"), // were a view's column shown so
		},
		"other": {
			def('R', "g", "RETURN NEXTVAL(s)"),
			def('A', "items", "item_id"),
			def('A', "Items", "other_id"),
		},
		"empty": {},
	}}
}

func TestCheck(t *testing.T) {
	srv := testServer()
	c := New(time.Minute)
	cases := []struct {
		schema, q string
		stateful  bool
		flags     sqlscan.Flags
	}{
		{"app", "SELECT f_set()", true, sqlscan.FlagUserVar},
		{"app", "SELECT `F_SET`() FROM t", true, sqlscan.FlagUserVar},
		{"app", "SELECT f_lock()", true, sqlscan.FlagGetLock},
		{"app", "SELECT f_pure(1)", false, 0},
		{"app", "SELECT f_outer()", true, sqlscan.FlagGetLock},
		{"app", "CALL p_tmp()", true, sqlscan.FlagTempTable},
		{"app", "CALL p_calls()", true, sqlscan.FlagTempTable},
		{"app", "SELECT f_other()", true, sqlscan.FlagSequence},
		{"app", "SELECT f_secret()", true, 0},
		{"app", "INSERT INTO audit VALUES (1)", true, sqlscan.FlagUserVar},
		{"app", "SELECT * FROM audit", false, 0}, // triggers fire on writes only
		{"app", "INSERT INTO plain VALUES (1)", false, 0},
		{"app", "INSERT INTO orders (v) VALUES (1)", true, sqlscan.FlagSequence},
		{"app", "UPDATE orders SET v = 2", true, sqlscan.FlagSequence},
		{"app", "SELECT * FROM orders", false, 0},
		{"app", "SELECT * FROM v_fn", true, sqlscan.FlagUserVar},
		{"app", "SELECT * FROM v_orders", false, 0},
		{"app", "INSERT INTO v_orders (id) VALUES (1)", true, sqlscan.FlagSequence},
		{"app", "SELECT * FROM v_plain", false, 0},
		{"app", "SELECT 'f_set()', x AS f_set2 FROM t -- f_set()", false, 0},
		{"empty", "SELECT f_set()", false, 0},
		{"empty", "SELECT app.f_set()", true, sqlscan.FlagUserVar},
		{"empty", "SELECT t.f_set FROM t", false, 0}, // t is no schema
		{"", "SELECT other.g()", true, sqlscan.FlagSequence},
		{"", "SELECT 1", false, 0},
	}
	for _, tc := range cases {
		v := check(t, c, srv, tc.schema, tc.q)
		if v.Stateful != tc.stateful || v.Flags != tc.flags {
			t.Errorf("%s: %q: stateful=%v flags=%v (%s), want %v %v", tc.schema, tc.q, v.Stateful, v.Flags, v.Object, tc.stateful, tc.flags)
		}
	}
}

func TestCacheAndInvalidate(t *testing.T) {
	srv := testServer()
	now := time.Unix(1000, 0)
	c := New(time.Second)
	c.now = func() time.Time { return now }
	for range 3 {
		check(t, c, srv, "app", "SELECT f_pure(1)")
	}
	if srv.loads["app"] != 1 {
		t.Fatalf("app read %d times within the TTL, want 1", srv.loads["app"])
	}
	now = now.Add(1500 * time.Millisecond)
	check(t, c, srv, "app", "SELECT f_pure(1)")
	if srv.loads["app"] != 2 {
		t.Fatalf("app read %d times after the TTL, want 2", srv.loads["app"])
	}
	// A function made stateful by DDL the proxy saw is seen at once.
	srv.schemas["app"] = append(srv.schemas["app"], def('R', "f_new", "RETURN GET_LOCK('x', 1)"))
	if v := check(t, c, srv, "app", "SELECT f_new()"); v.Stateful {
		t.Fatalf("f_new stateful before the catalog was read again")
	}
	c.Invalidate()
	if v := check(t, c, srv, "app", "SELECT f_new()"); !v.Stateful || v.Flags != sqlscan.FlagGetLock {
		t.Fatalf("after Invalidate: %+v, want stateful GetLock", v)
	}

	// TTL 0: every check reads again.
	c0 := New(0)
	srv.loads = nil
	check(t, c0, srv, "app", "SELECT 1")
	check(t, c0, srv, "app", "SELECT 1")
	if srv.loads["app"] != 2 {
		t.Fatalf("TTL 0: app read %d times for two checks, want 2", srv.loads["app"])
	}
}

func TestCheckError(t *testing.T) {
	boom := errors.New("boom")
	srv := &fakeServer{fail: boom}
	c := New(time.Minute)
	m := sqlscan.Mode{}
	info := sqlscan.ScanMode([]byte("SELECT 1"), m)
	if _, err := c.Check(context.Background(), srv, "app", []byte("SELECT 1"), m, &info); !errors.Is(err, boom) {
		t.Fatalf("Check with a failing server: %v, want %v", err, boom)
	}
}

// TestAutoIncrement: the AUTO_INCREMENT column of a table of the default
// schema or a named one, read with the rest in one query, and nothing for
// a table without one; T1 and t1 stay apart.
func TestAutoIncrement(t *testing.T) {
	srv := testServer()
	c := New(time.Minute)
	ctx := context.Background()
	app := c.Schema("app")
	for _, k := range []struct{ schema, table, want string }{
		{"", "orders", "id"},
		{"", "ORDERS", "id"}, // as lower_case_table_names=1 stores it
		{"", "audit", ""},
		{"other", "items", "item_id"},
		{"other", "Items", "other_id"},
		{"other", "ITEMS", "item_id"},
		{"nosuch", "orders", ""},
		{"", "v_orders", ""}, // a view: not a table with a column of its own
	} {
		got, err := c.AutoIncrement(ctx, srv, app, k.schema, k.table)
		if err != nil || got != k.want {
			t.Errorf("AutoIncrement(%q, %q) = %q, %v; want %q", k.schema, k.table, got, err, k.want)
		}
	}
	if got, err := c.AutoIncrement(ctx, srv, nil, "", "orders"); got != "" || err != nil {
		t.Errorf("no default schema: %q, %v", got, err)
	}
	before := srv.loads["app"] + srv.loads["other"]
	for range 3 {
		_, _ = c.AutoIncrement(ctx, srv, app, "", "orders")
		_, _ = c.AutoIncrement(ctx, srv, app, "other", "items")
	}
	if after := srv.loads["app"] + srv.loads["other"]; after != before {
		t.Errorf("%d more loads within the TTL, want none", after-before)
	}
	// The 'A' rows are no objects: reading orders is not stateful.
	if v := check(t, c, srv, "app", "SELECT id FROM orders"); v.Stateful {
		t.Errorf("reading orders: %+v", v)
	}
}
