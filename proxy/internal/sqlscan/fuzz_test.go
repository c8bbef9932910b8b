package sqlscan_test

import (
	"bytes"
	"testing"

	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// FuzzScan checks what must hold for any bytes a client can send: no panic, the same
// answer twice, an answer that whitespace around the query does not change, and
// internally consistent results.
func FuzzScan(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c.q))
	}
	for _, c := range modeCases {
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
		if m := sqlscan.ScanMode(q, sqlscan.Mode{}); !same(got, m) {
			t.Fatalf("Scan(%q) = %+v but ScanMode with the zero Mode = %+v", q, got, m)
		}
	})
}

// fuzzMode builds a Mode from fuzzer bits: every flag, every character set class (and
// one beyond them), and versions around the rules' edges.
func fuzzMode(bits uint8, version uint32) sqlscan.Mode {
	versions := []uint32{0, 101119, 80036, 50699, 50700, 99999, 100000, version}
	return sqlscan.Mode{
		NoBackslashEscapes: bits&1 != 0,
		AnsiQuotes:         bits&2 != 0,
		MariaDB:            bits&4 != 0,
		Charset:            sqlscan.MBCharset(bits>>3&7) % 7,
		Version:            versions[bits>>6|uint8(version&1)<<2],
	}
}

// FuzzScanMode checks ScanMode, SetTargetsMode, StatementVars and Mentions in random
// modes: no panic, the input left alone, the same answer twice and with whitespace
// around, consistent results, and names that are pieces of the query.
func FuzzScanMode(f *testing.F) {
	for i, c := range modeCases {
		f.Add([]byte(c.q), uint8(i*37), uint32(i*7919))
	}
	for i, c := range scanCases {
		f.Add([]byte(c.q), uint8(i*53), uint32(101119))
	}
	f.Fuzz(func(t *testing.T, q []byte, bits uint8, version uint32) {
		m := fuzzMode(bits, version)
		orig := bytes.Clone(q)
		got := sqlscan.ScanMode(q, m)
		if !bytes.Equal(q, orig) {
			t.Fatalf("ScanMode modified its input")
		}
		if again := sqlscan.ScanMode(q, m); !same(got, again) {
			t.Fatalf("ScanMode(%q, %+v) not deterministic: %+v then %+v", q, m, got, again)
		}
		padded := append(append([]byte(" \t\n"), q...), " \r\n\t\v\f"...)
		if p := sqlscan.ScanMode(padded, m); !same(got, p) {
			t.Fatalf("surrounding whitespace changed ScanMode(%q, %+v): %+v, padded %+v", q, m, got, p)
		}
		if got.KillID != 0 && got.Kind != sqlscan.KindKill || got.KillQuery && got.Kind != sqlscan.KindKill {
			t.Fatalf("ScanMode(%q, %+v): KILL result on %v", q, m, got.Kind)
		}
		if got.XA != sqlscan.XANone && (!got.Flags.Has(sqlscan.FlagXA) || got.Kind != sqlscan.KindXA && got.Kind != sqlscan.KindSet) {
			t.Fatalf("ScanMode(%q, %+v): XA %v with kind %v flags %v", q, m, got.XA, got.Kind, got.Flags)
		}
		if got.Flags.Has(sqlscan.FlagRelease) && got.Flags.Has(sqlscan.FlagNoRelease) && bytes.Count(bytes.ToUpper(q), []byte("RELEASE")) < 2 {
			t.Fatalf("ScanMode(%q, %+v): RELEASE and NO RELEASE from one RELEASE", q, m)
		}

		names := 0
		sqlscan.Mentions(q, m, func(qual, name []byte) bool {
			names++
			if !bytes.Contains(q, name) || qual != nil && !bytes.Contains(q, qual) || cap(name) != len(name) {
				t.Fatalf("Mentions(%q, %+v) gave %q.%q, not pieces of the query", q, m, qual, name)
			}
			return false
		})
		if got.Kind != sqlscan.KindOther && names == 0 {
			t.Fatalf("ScanMode(%q, %+v) = %v but Mentions found no name", q, m, got.Kind)
		}
		if got.Qualified && names < 2 {
			t.Fatalf("ScanMode(%q, %+v) is Qualified but Mentions found %d names", q, m, names)
		}
		check := func(what string, name []byte) {
			if len(name) == 0 || !bytes.Contains(q, name) {
				t.Fatalf("%s(%q, %+v) reported %q", what, q, m, name)
			}
		}
		sqlscan.SetTargetsMode(q, m, func(name []byte, _ bool) {
			check("SetTargetsMode", name)
			if got.Kind != sqlscan.KindSet {
				t.Fatalf("SetTargetsMode(%q, %+v) reported %q for %v", q, m, name, got.Kind)
			}
		})
		sqlscan.StatementVars(q, m, func(name []byte) {
			check("StatementVars", name)
			if got.Kind != sqlscan.KindSet {
				t.Fatalf("StatementVars(%q, %+v) reported %q for %v", q, m, name, got.Kind)
			}
		})
	})
}

// same compares two results, LocalExpr by content.
func same(a, b sqlscan.Info) bool {
	return a.Kind == b.Kind && a.Flags == b.Flags && a.Multi == b.Multi && a.Local == b.Local &&
		bytes.Equal(a.LocalExpr, b.LocalExpr) && a.KillID == b.KillID && a.KillQuery == b.KillQuery &&
		a.LimitOffset == b.LimitOffset && a.LimitCount == b.LimitCount && a.XA == b.XA && a.Qualified == b.Qualified
}
