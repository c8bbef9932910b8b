package mysqlclient_test

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	_ "github.com/go-sql-driver/mysql" // the database/sql baseline

	"github.com/tpproxy/tpproxy/internal/mysqlclient"
)

// sbRows is the size of the sysbench-like table of the benchmarks.
const sbRows = 10000

// sbOnce creates sbtest1 once per test binary.
var sbOnce sync.Once

// sbTable creates a sysbench-like sbtest1 with sbRows rows (unless it
// exists with them) and returns a connection to its schema.
func sbTable(tb testing.TB) *mysqlclient.Conn {
	tb.Helper()
	c := connect(tb, testConfig(tb))
	sbOnce.Do(func() {
		if n, err := c.ExecString("SELECT id FROM sbtest1"); err == nil && n == sbRows {
			return
		}
		mustExec(tb, c, "DROP TABLE IF EXISTS sbtest1", "CREATE TABLE sbtest1 ("+
			"id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL DEFAULT 0, "+
			"c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k))")
		rng := rand.New(rand.NewPCG(1, 2))
		digits := func(groups int) string {
			var sb strings.Builder
			for g := range groups {
				if g > 0 {
					sb.WriteByte('-')
				}
				sb.WriteString(strconv.FormatUint(rng.Uint64N(1e11), 10))
			}
			return sb.String()
		}
		for batch := 0; batch < sbRows; batch += 1000 {
			var q strings.Builder
			q.WriteString("INSERT INTO sbtest1 (k, c, pad) VALUES ")
			for i := range 1000 {
				if i > 0 {
					q.WriteByte(',')
				}
				q.WriteString("(" + strconv.Itoa(rng.IntN(sbRows)) + ",'" + digits(10) + "','" + digits(5) + "')")
			}
			mustExec(tb, c, q.String())
		}
	})
	return c
}

// appendPointSelect builds the text point select of id into b.
func appendPointSelect(b []byte, id int) []byte {
	b = append(b[:0], "SELECT c FROM sbtest1 WHERE id="...)
	return strconv.AppendInt(b, int64(id), 10)
}

func BenchmarkPointSelectText(b *testing.B) {
	c := sbTable(b)
	rng := rand.New(rand.NewPCG(3, 4))
	q := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		q = appendPointSelect(q, 1+rng.IntN(sbRows))
		if n, err := c.Exec(q); n != 1 || err != nil {
			b.Fatalf("%s: %d rows, %v", q, n, err)
		}
	}
}

func BenchmarkPointSelectPrepared(b *testing.B) {
	c := sbTable(b)
	s, err := c.Prepare("SELECT c FROM sbtest1 WHERE id=?")
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	b.ReportAllocs()
	for b.Loop() {
		if n, err := c.Execute(s, mysqlclient.Int(int64(1+rng.IntN(sbRows)))); n != 1 || err != nil {
			b.Fatalf("%d rows, %v", n, err)
		}
	}
}

// BenchmarkPointSelectDatabaseSQL is the baseline the client replaces:
// database/sql with go-sql-driver, one connection, scanning the value.
func BenchmarkPointSelectDatabaseSQL(b *testing.B) {
	sbTable(b)
	srv := server(b)
	for _, mode := range []string{"text", "prepared"} {
		b.Run(mode, func(b *testing.B) {
			db, err := sql.Open("mysql", srv.DSN(testUser, testPassword, testDB, "interpolateParams=true"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			ctx := context.Background()
			query := func(id int) *sql.Row { return db.QueryRowContext(ctx, "SELECT c FROM sbtest1 WHERE id=?", id) }
			if mode == "prepared" {
				st, err := db.PrepareContext(ctx, "SELECT c FROM sbtest1 WHERE id=?")
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				query = func(id int) *sql.Row { return st.QueryRowContext(ctx, id) }
			}
			rng := rand.New(rand.NewPCG(3, 4))
			var v sql.RawBytes
			b.ReportAllocs()
			for b.Loop() {
				var s []byte
				if err := query(1 + rng.IntN(sbRows)).Scan(&s); err != nil {
					b.Fatal(err)
				}
				v = s
			}
			_ = v
		})
	}
}

// TestZeroAllocs holds the hot paths to their promise: no allocation per
// statement once a connection is set up.
func TestZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation behaviour")
	}
	c := sbTable(t)
	s, err := c.Prepare("SELECT c FROM sbtest1 WHERE id=?")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := c.Prepare("SELECT c FROM sbtest1 WHERE id=? AND c <> ?")
	if err != nil {
		t.Fatal(err)
	}
	q := make([]byte, 0, 64)
	id := 0
	next := func() int { id = id%sbRows + 1; return id }
	for _, tc := range []struct {
		name string
		run  func() (int, error)
	}{
		{"Exec", func() (int, error) { q = appendPointSelect(q, next()); return c.Exec(q) }},
		{"ExecString", func() (int, error) { return c.ExecString("SELECT c FROM sbtest1 WHERE id=42") }},
		{"Execute int", func() (int, error) { return c.Execute(s, mysqlclient.Int(int64(next()))) }},
		{"Execute int string", func() (int, error) {
			return c.Execute(s2, mysqlclient.Int(int64(next())), mysqlclient.String("x"))
		}},
		{"Ping", func() (int, error) { return 1, c.Ping() }},
	} {
		var err error
		allocs := testing.AllocsPerRun(200, func() {
			var n int
			if n, err = tc.run(); err == nil && n != 1 {
				t.Errorf("%s: %d rows", tc.name, n)
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per statement, want 0", tc.name, allocs)
		}
	}
}
