package sqlscan

import "testing"

func TestInsertFixes(t *testing.T) {
	m := Mode{MariaDB: true, Version: 101100}
	for _, c := range []struct {
		q    string
		col  string
		want bool
	}{
		{"INSERT INTO sbtest2 (id, k, c, pad) VALUES (55334, 50465, '9070-94', '4477')", "id", true},
		{"insert into t (k, ID) values ('a', 7), (f(1, 2), 8)", "id", true},
		{"INSERT LOW_PRIORITY IGNORE INTO `db`.`t` (`id`) VALUE (1)", "id", true},
		{"REPLACE t (id, x) VALUES (3, (SELECT 1)) ON DUPLICATE KEY UPDATE x = 2", "id", true},
		{"INSERT INTO t PARTITION (p0, p1) (id) VALUES (9);", "id", true},
		{"/* c */ INSERT INTO t (id) VALUES (0012) RETURNING id", "id", true},
		{"INSERT INTO t (id) VALUES (1), (0)", "id", false},   // 0 generates
		{"INSERT INTO t (id) VALUES (NULL)", "id", false},     // NULL generates
		{"INSERT INTO t (id) VALUES (DEFAULT)", "id", false},  // so does DEFAULT
		{"INSERT INTO t (id) VALUES (?)", "id", false},        // a placeholder: not known here
		{"INSERT INTO t (id) VALUES ('5')", "id", false},      // quoted: not followed
		{"INSERT INTO t (id) VALUES (-5)", "id", false},       // an expression
		{"INSERT INTO t (id) VALUES (1.5)", "id", false},      // not an integer literal
		{"INSERT INTO t (id) VALUES (5 + 1)", "id", false},    // an expression
		{"INSERT INTO t (k) VALUES (5)", "id", false},         // id not given: generated
		{"INSERT INTO t VALUES (5, 1)", "id", false},          // no column list
		{"INSERT INTO t (id) SELECT 5", "id", false},          // INSERT ... SELECT
		{"INSERT INTO t SET id = 5", "id", false},             // INSERT ... SET
		{"INSERT INTO t (id, id) VALUES (5, 6)", "id", false}, // the server rejects it
		{"INSERT INTO t (id) VALUES (5); INSERT INTO t (k) VALUES (1)", "id", false},
		{"INSERT INTO t (id) VALUES (5) /* x */ ;", "id", true},
		{"INSERT INTO t (id) VALUES (5", "id", false},
		{"INSERT INTO t (id, k) VALUES (5)", "id", false},
		{"UPDATE t SET id = 5", "id", false},
		{"SELECT 1", "id", false},
	} {
		ins, ok := ParseInsert([]byte(c.q), m)
		if got := ok && ins.Fixes(c.col); got != c.want {
			t.Errorf("Fixes(%q, %q) = %v, want %v", c.q, c.col, got, c.want)
		}
	}
}

func TestParseInsert(t *testing.T) {
	m := Mode{MariaDB: true, Version: 101100}
	for _, c := range []struct {
		q, schema, table string
		ok               bool
	}{
		{"INSERT INTO sbtest2 (id) VALUES (1)", "", "sbtest2", true},
		{"insert ignore `My DB`.`T 1` (id) values (1)", "My DB", "T 1", true},
		{"REPLACE INTO d.t PARTITION (p) (a) VALUES (1)", "d", "t", true},
		{"INSERT INTO t VALUES (1)", "", "", false},
		{"INSERT INTO t SELECT 1", "", "", false},
		{"DELETE FROM t", "", "", false},
	} {
		ins, ok := ParseInsert([]byte(c.q), m)
		if ok != c.ok || string(ins.Schema) != c.schema || string(ins.Table) != c.table {
			t.Errorf("ParseInsert(%q) = %q, %q, %v; want %q, %q, %v", c.q, ins.Schema, ins.Table, ok, c.schema, c.table, c.ok)
		}
	}
}

func FuzzInsertFixes(f *testing.F) {
	f.Add([]byte("INSERT INTO t (id, k) VALUES (1, 'a'), (2, f(3))"), "id")
	f.Add([]byte("REPLACE t PARTITION (p) (id) VALUE (1) ON DUPLICATE KEY UPDATE k=1"), "ID")
	f.Fuzz(func(t *testing.T, q []byte, col string) {
		if ins, ok := ParseInsert(q, Mode{MariaDB: true}); ok {
			_ = ins.Fixes(col)
		}
	})
}
