package sqlscan_test

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// insert1K builds a sysbench-style multi-row INSERT of about 1 KiB.
func insert1K() []byte {
	const row = ", 4993, '83868641912-28773972837-60736120486-75162659906-27563526494', " +
		"'67847967377-48000963322-62604785301')"
	q := []byte("INSERT INTO sbtest1 (id, k, c, pad) VALUES ")
	for i := 0; len(q)+len(row)+8 <= 1024; i++ {
		if i > 0 {
			q = append(q, ", "...)
		}
		q = append(q, '(')
		q = strconv.AppendInt(q, int64(1000+i), 10)
		q = append(q, row...)
	}
	return q
}

func benchScan(b *testing.B, q []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(q)))
	for b.Loop() {
		sqlscan.Scan(q)
	}
}

func BenchmarkScanPointSelect(b *testing.B) {
	benchScan(b, []byte("SELECT c FROM sbtest1 WHERE id=4242"))
}

func BenchmarkScanInsert1K(b *testing.B) {
	q := insert1K()
	if len(q) < 900 || len(q) > 1100 {
		b.Fatalf("insert is %d bytes", len(q))
	}
	benchScan(b, q)
}

func BenchmarkScanLocal(b *testing.B) {
	benchScan(b, []byte("SELECT LAST_INSERT_ID()"))
}

func BenchmarkScanDumpHeader(b *testing.B) {
	benchScan(b, []byte("/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n"+
		"/*!40101 SET NAMES utf8mb4 */;\n/*!40103 SET @OLD_TIME_ZONE=@@TIME_ZONE */;\n"+
		"-- comment\n/* block */ SELECT 1"))
}

// The pathological inputs show that cost stays linear in the length: one long string
// made of escapes, and one made of doubled quotes.
func BenchmarkScanBackslashes1M(b *testing.B) {
	q := append([]byte("SELECT '"), bytes.Repeat([]byte(`\\`), 1<<19)...)
	benchScan(b, append(q, '\''))
}

func BenchmarkScanDoubledQuotes1M(b *testing.B) {
	q := append([]byte("SELECT '"), bytes.Repeat([]byte(`''`), 1<<19)...)
	benchScan(b, append(q, '\''))
}

func BenchmarkScanTokens1M(b *testing.B) {
	benchScan(b, bytes.Repeat([]byte("a,@b,(c),"), 1<<20/9))
}

func benchScanMode(b *testing.B, q []byte, m sqlscan.Mode) {
	b.ReportAllocs()
	b.SetBytes(int64(len(q)))
	for b.Loop() {
		sqlscan.ScanMode(q, m)
	}
}

// The same inserts in a session that lexes gbk, and under NO_BACKSLASH_ESCAPES.
func BenchmarkScanModeGBKInsert1K(b *testing.B) {
	benchScanMode(b, insert1K(), sqlscan.Mode{Charset: sqlscan.MBGBK, Version: 101119, MariaDB: true})
}

func BenchmarkScanModeNBEInsert1K(b *testing.B) {
	benchScanMode(b, insert1K(), sqlscan.Mode{NoBackslashEscapes: true, Version: 101119, MariaDB: true})
}

func BenchmarkScanModeDumpHeader(b *testing.B) {
	benchScanMode(b, []byte("/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n"+
		"/*!40101 SET NAMES utf8mb4 */;\n/*!40103 SET @OLD_TIME_ZONE=@@TIME_ZONE */;\n"+
		"/*!99999 SET x = 1 */; -- comment\n/* block */ SELECT 1"), sqlscan.Mode{Version: 101119, MariaDB: true})
}

func BenchmarkMentions(b *testing.B) {
	q := []byte("SELECT c.id, c.name, o.total FROM shop.customers AS c JOIN `shop`.`orders` o ON o.cid = c.id WHERE o.total > 10")
	b.ReportAllocs()
	b.SetBytes(int64(len(q)))
	n := 0
	for b.Loop() {
		sqlscan.Mentions(q, sqlscan.Mode{}, func(_, _ []byte) bool { n++; return false })
	}
}
