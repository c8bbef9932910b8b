package sqlscan_test

import (
	"bytes"
	"testing"

	"github.com/tpproxy/tpproxy/internal/sqlscan"
)

// FuzzScan checks what must hold for any bytes a client can send: no panic, the same
// answer twice, an answer that whitespace around the query does not change, and
// internally consistent results.
func FuzzScan(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c.q))
	}
	for _, q := range []string{
		"KILL QUERY 7", "SELECT CONNECTION_ID()", "select  Connection_Id( ) ;",
		"/*!", "/*M!1", "/*!*/", "'\\", "`", "@@", "@@session.", "--", "-- ", "#",
		"SELECT 'a\\\\\\'b' , \"c\"\"d\" /* e */ -- f\n#g\n;", "LAST_INSERT_ID(",
	} {
		f.Add([]byte(q))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		orig := bytes.Clone(q)
		got := sqlscan.Scan(q)
		if !bytes.Equal(q, orig) {
			t.Fatalf("Scan modified its input")
		}
		if again := sqlscan.Scan(q); !same(got, again) {
			t.Fatalf("Scan(%q) not deterministic: %+v then %+v", q, got, again)
		}

		padded := append(append([]byte(" \t\n"), q...), " \r\n\t\v\f"...)
		if p := sqlscan.Scan(padded); !same(got, p) {
			t.Fatalf("surrounding whitespace changed the result of %q: %+v, padded %+v", q, got, p)
		}

		switch got.Local {
		case sqlscan.LocalNone:
			if got.LocalExpr != nil {
				t.Fatalf("Scan(%q): LocalExpr %q without a local form", q, got.LocalExpr)
			}
		case sqlscan.LocalShowWarnings, sqlscan.LocalShowErrors, sqlscan.LocalCountWarnings, sqlscan.LocalCountErrors:
			if got.Kind != sqlscan.KindShow || got.Multi || got.LocalExpr != nil {
				t.Fatalf("Scan(%q): inconsistent local form %+v", q, got)
			}
		default:
			if got.Kind != sqlscan.KindSelect || got.Multi || len(got.LocalExpr) == 0 ||
				!bytes.Contains(q, got.LocalExpr) {
				t.Fatalf("Scan(%q): inconsistent local form %+v", q, got)
			}
		}
		if got.KillID != 0 && got.Kind != sqlscan.KindKill || got.KillQuery && got.Kind != sqlscan.KindKill {
			t.Fatalf("Scan(%q): KILL result on %v", q, got.Kind)
		}
		if got.Kind != sqlscan.KindOther && sqlscan.FirstKeyword(q) == nil {
			t.Fatalf("Scan(%q) = %v without a first keyword", q, got.Kind)
		}
	})
}

// same compares two results, LocalExpr by content.
func same(a, b sqlscan.Info) bool {
	return a.Kind == b.Kind && a.Flags == b.Flags && a.Multi == b.Multi && a.Local == b.Local &&
		bytes.Equal(a.LocalExpr, b.LocalExpr) && a.KillID == b.KillID && a.KillQuery == b.KillQuery &&
		a.LimitOffset == b.LimitOffset && a.LimitCount == b.LimitCount
}
