package prepared

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// typeCol is one column of the round-trip table: its definition, the
// argument inserted for each non-NULL row, and what go-sql-driver reads
// back (parseTime=true, loc=UTC) into the scan type.
type typeCol struct {
	name, def string
	scan      func() (dest any, value func() any)
	args      []any
	want      []any
	equal     func(a, b any) bool // nil: sameValue
}

// scanAs scans a column into sql.Null[T]; value is nil for NULL.
func scanAs[T any]() func() (any, func() any) {
	return func() (any, func() any) {
		var n sql.Null[T]
		return &n, func() any {
			if !n.Valid {
				return nil
			}
			return n.V
		}
	}
}

// col is a column that reads back exactly what was inserted.
func col[T any](name, def string, vals ...T) typeCol {
	c := typeCol{name: name, def: def, scan: scanAs[T]()}
	for _, v := range vals {
		c.args = append(c.args, v)
		c.want = append(c.want, v)
	}
	return c
}

// typeRows is the number of non-NULL rows; one more row is all NULL.
const typeRows = 3

func typeColumns() []typeCol {
	blob := make([]byte, 65535)
	if _, err := rand.Read(blob); err != nil {
		panic(err)
	}
	text := strings.Repeat("ünïcødé 😀 ", 65535/len("ünïcødé 😀 "))
	bits := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	ts := func(s string) time.Time {
		t, err := time.ParseInLocation("2006-01-02 15:04:05.999999", s, time.UTC)
		if err != nil {
			panic(err)
		}
		return t
	}
	return []typeCol{
		col[int64]("c_tinyint", "TINYINT", 127, -128, 0),
		col[uint64]("c_tinyint_u", "TINYINT UNSIGNED", 255, 0, 1),
		col[int64]("c_smallint", "SMALLINT", 32767, -32768, -1),
		col[uint64]("c_smallint_u", "SMALLINT UNSIGNED", 65535, 0, 1),
		col[int64]("c_mediumint", "MEDIUMINT", 8388607, -8388608, 42),
		col[uint64]("c_mediumint_u", "MEDIUMINT UNSIGNED", 16777215, 0, 42),
		col[int64]("c_int", "INT", math.MaxInt32, math.MinInt32, -42),
		col[uint64]("c_int_u", "INT UNSIGNED", math.MaxUint32, 0, 42),
		col[int64]("c_bigint", "BIGINT", math.MaxInt64, math.MinInt64, -1),
		col[uint64]("c_bigint_u", "BIGINT UNSIGNED", math.MaxUint64, 0, 1<<63),
		col[float32]("c_float", "FLOAT", math.MaxFloat32, -math.SmallestNonzeroFloat32*(1<<23), 0.5),
		col[float64]("c_double", "DOUBLE", math.MaxFloat64, -2.2250738585072014e-308, 0.1),
		col[string]("c_decimal", "DECIMAL(65,30)",
			"99999999999999999999999999999999999.999999999999999999999999999999",
			"-99999999999999999999999999999999999.999999999999999999999999999999",
			"0.000000000000000000000000000001"),
		col[string]("c_char", "CHAR(10)", "ab😀cdéfgh", "", "x"),
		col[string]("c_varchar", "VARCHAR(200)", "héllo wörld 😀🎉 世界", "", "it's a \"quote\", a \\ and a \x00 NUL"),
		{name: "c_binary", def: "BINARY(8)", scan: scanAs[[]byte](),
			args: []any{[]byte{0xff, 0xfe, 0, 1, 2, 3, 4, 0x80}, []byte{}, []byte{1, 2, 3}},
			want: []any{[]byte{0xff, 0xfe, 0, 1, 2, 3, 4, 0x80}, make([]byte, 8), []byte{1, 2, 3, 0, 0, 0, 0, 0}}},
		col[[]byte]("c_varbinary", "VARBINARY(64)", []byte{0, 0xff, 0x80, '\'', '\\', '"'}, []byte{}, []byte("abc")),
		col[string]("c_text", "TEXT", text, "", "short"),
		col[[]byte]("c_blob", "BLOB", blob, []byte{}, []byte{0}),
		col[string]("c_enum", "ENUM('a','b','c😀')", "c😀", "a", "b"),
		col[string]("c_set", "SET('x','y','z')", "x,y,z", "", "y"),
		{name: "c_bit", def: "BIT(64)", scan: scanAs[[]byte](),
			args: []any{uint64(math.MaxUint64), uint64(0), uint64(1<<63 | 1)},
			want: []any{bits(math.MaxUint64), bits(0), bits(1<<63 | 1)}},
		col[int64]("c_year", "YEAR", 2155, 1901, 2000),
		col[time.Time]("c_date", "DATE", ts("9999-12-31 00:00:00"), ts("1000-01-01 00:00:00"), ts("2024-02-29 00:00:00")),
		// TIME is not parsed by go-sql-driver; it reads the server's text.
		col[string]("c_time", "TIME(6)", "838:59:59.999999", "-838:59:59.999999", "-25:00:00.000001"),
		col[time.Time]("c_datetime", "DATETIME(6)",
			ts("9999-12-31 23:59:59.999999"), ts("1000-01-01 00:00:00"), ts("2024-02-29 12:34:56.789012")),
		col[time.Time]("c_timestamp", "TIMESTAMP(6) NULL",
			ts("2038-01-19 03:14:07.999999"), ts("1970-01-01 00:00:01"), ts("2024-02-29 12:34:56.789012")),
		{name: "c_json", def: "JSON", scan: scanAs[string](),
			args:  []any{`{"a": [1, 2.5, "😀", null, true], "b": {"c": "d"}}`, `[]`, `"str"`},
			want:  []any{`{"a": [1, 2.5, "😀", null, true], "b": {"c": "d"}}`, `[]`, `"str"`},
			equal: sameJSON},
	}
}

// sameValue compares a value read back with the expected one.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	return a == b
}

// sameJSON compares JSON documents by value: MySQL normalises the text.
func sameJSON(a, b any) bool {
	as, ok1 := a.(string)
	bs, ok2 := b.(string)
	if !ok1 || !ok2 {
		return a == b
	}
	var x, y any
	if json.Unmarshal([]byte(as), &x) != nil || json.Unmarshal([]byte(bs), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// showValue renders a value for failure messages.
func showValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		if len(x) > 24 {
			return fmt.Sprintf("%x...(%d bytes)", x[:24], len(x))
		}
		return fmt.Sprintf("%x", x)
	case string:
		if len(x) > 40 {
			return fmt.Sprintf("%q...(%d bytes)", x[:40], len(x))
		}
		return fmt.Sprintf("%q", x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%v (%T)", v, v)
}

// typesDSNParams: dates as time.Time in UTC, TIMESTAMP converted in UTC.
var typesDSNParams = []string{"parseTime=true", "loc=UTC", "time_zone=%27%2B00%3A00%27"}

// TestTypeRoundTrip covers an application that uses server-side prepared
// statements for every statement with arguments (go-sql-driver with
// interpolateParams=false): every MySQL column type, at its limits and as
// NULL, is inserted as a binary-protocol argument and read back as a
// binary-protocol row, exactly. 24 sessions over a pool of 4 do it at once,
// half keeping their statements prepared (so that executes hop between
// backend connections that prepare them lazily), half preparing and
// closing one per query. The server itself is checked first with the same
// values.
func TestTypeRoundTrip(t *testing.T) {
	cols := typeColumns()
	root := env.Root(t)
	defs := make([]string, len(cols))
	names := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = c.name + " " + c.def
		names[i] = c.name
	}
	freshTable(t, root, "ps_types", "(id INT PRIMARY KEY, "+strings.Join(defs, ", ")+") DEFAULT CHARSET=utf8mb4")
	insert := "INSERT INTO ps_types (id, " + strings.Join(names, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(cols)) + ")"
	query := "SELECT " + strings.Join(names, ", ") + " FROM ps_types WHERE id = ?"

	px := env.StartProxy(t)
	for _, tc := range []struct {
		name    string
		dsn     string
		workers int
	}{
		{"direct", directPSDSN(t, typesDSNParams...), 2},
		{"proxy", psDSN(px, typesDSNParams...), 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sessions := make([]*session, tc.workers)
			for w := range sessions {
				sessions[w] = openSession(t, tc.dsn)
			}
			errs := make(chan error, tc.workers)
			var wg sync.WaitGroup
			base := 0
			if tc.name == "proxy" {
				base = 100000
			}
			for w, s := range sessions {
				wg.Go(func() {
					if err := roundTripWorker(s, w%2 == 0, base+w*100, cols, insert, query); err != nil {
						errs <- errorf(w, "%w", err)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// roundTripWorker inserts every row of cols three times under new ids and
// reads each back. With keep the session prepares its two statements once;
// otherwise database/sql prepares and closes one per call.
func roundTripWorker(s *session, keep bool, firstID int, cols []typeCol, insert, query string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	exec := func(args ...any) error {
		_, err := s.conn.ExecContext(ctx, insert, args...)
		return err
	}
	queryRow := func(args ...any) *sql.Row { return s.conn.QueryRowContext(ctx, query, args...) }
	if keep {
		ins, err := s.conn.PrepareContext(ctx, insert)
		if err != nil {
			return fmt.Errorf("prepare insert: %w", err)
		}
		defer ins.Close()
		sel, err := s.conn.PrepareContext(ctx, query)
		if err != nil {
			return fmt.Errorf("prepare select: %w", err)
		}
		defer sel.Close()
		exec = func(args ...any) error {
			_, err := ins.ExecContext(ctx, args...)
			return err
		}
		queryRow = func(args ...any) *sql.Row { return sel.QueryRowContext(ctx, args...) }
	}
	id := firstID
	for round := range 3 {
		for r := range typeRows + 1 { // the last row is all NULL
			id++
			args := []any{id}
			for _, c := range cols {
				if r == typeRows {
					args = append(args, nil)
				} else {
					args = append(args, c.args[r])
				}
			}
			if err := exec(args...); err != nil {
				return fmt.Errorf("round %d: insert row %d (id %d): %w", round, r, id, err)
			}
			dests := make([]any, len(cols))
			values := make([]func() any, len(cols))
			for i, c := range cols {
				dests[i], values[i] = c.scan()
			}
			if err := queryRow(id).Scan(dests...); err != nil {
				return fmt.Errorf("round %d: select row %d (id %d): %w", round, r, id, err)
			}
			for i, c := range cols {
				var want any
				if r < typeRows {
					want = c.want[r]
				}
				got := values[i]()
				eq := c.equal
				if eq == nil {
					eq = sameValue
				}
				if (got == nil) != (want == nil) || (got != nil && !eq(got, want)) {
					return fmt.Errorf("round %d, row %d (id %d), %s %s: read back %s, want %s",
						round, r, id, c.name, c.def, showValue(got), showValue(want))
				}
			}
		}
	}
	return nil
}
