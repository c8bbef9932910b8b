//go:build sqlscandiff

package sqlscan_test

// TestServerDiff checks the lexer against a real server: it sends random queries made
// of tricky fragments around a user variable assignment, "SELECT 1 <fragments>,
// @x:=1 <fragments>", in several character sets and sql_modes, and for every query the
// server accepts compares whether the server assigned @x with whether ScanMode sees a
// user variable in code. A server that assigned it while the scanner saw none is a
// leak (the test fails); the reverse is a needless pin (logged).
//
//	SQLSCAN_DIFF_DSN='user:pass@tcp(127.0.0.1:3306)/db' go test -tags sqlscandiff -run TestServerDiff ./internal/sqlscan/
//
// Against MariaDB 10.11.19 it found no difference either way in 57,937 accepted queries
// (15,000 per character set and sql_mode); with the zero Mode it finds hundreds of leaks.

import (
	"context"
	"database/sql"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// diffFrags are the pieces of the random queries. None contains '@' or ';'.
var diffFrags = []string{
	"'a'", `'\''`, `'\\'`, "''''", "'it''s'", `"x"`, `"a\""`, `"a"""`, "'\xbf\x5c'", "'\x81\x5c'", "'\\\x81\x5c'",
	"'", `"`, "`", "`a`", "`a``b`", "`\xbf\x60`", "`\x81`", "\"\x81\"",
	"/* c */", "/*! 1 */", "/*!99999 x */", "/*!50700 , 2 */", "/*M!50700 , 3 */", "/*!100000 , 4 */",
	"/*!101120 , 5 */", "/*!101119 , 6 */", "/*!80036 , 7 */", "/*", "*/", "-- ", "--", "#", "\n", "/*!", "/*M!",
	"/*!5000 ", "/*!12345", "/*!999999", "/*M!999999", "/*!00000", "/*/", "**/", " ", " ", " ", ",", "1", "x",
	" AS ", "a.b", "\xa0", "\xff", "\x81", "\xa1", "\xbf", "\x5c", "\x60", "\x22", "\x27", "--\xa0", "--\x7f", "\t",
	"0x", "1e", ".5",
}

func diffQuery(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("SELECT 1")
	for n := 1 + r.Intn(6); n > 0; n-- {
		b.WriteString(diffFrags[r.Intn(len(diffFrags))])
	}
	b.WriteString(", @x:=1")
	for n := r.Intn(4); n > 0; n-- {
		b.WriteString(diffFrags[r.Intn(len(diffFrags))])
	}
	return b.String()
}

func TestServerDiff(t *testing.T) {
	dsn := os.Getenv("SQLSCAN_DIFF_DSN")
	if dsn == "" {
		t.Skip("SQLSCAN_DIFF_DSN is not set")
	}
	perMode := 15000
	if n, err := strconv.Atoi(os.Getenv("SQLSCAN_DIFF_N")); err == nil && n > 0 {
		perMode = n
	}
	charsets := []string{"utf8mb4", "gbk", "big5", "sjis", "cp932", "latin1", "cp852"}
	sqlModes := []string{"", "NO_BACKSLASH_ESCAPES", "ANSI_QUOTES", "ANSI_QUOTES,NO_BACKSLASH_ESCAPES"}
	ctx := context.Background()
	r := rand.New(rand.NewSource(1))
	var checked, leaks, needless int
	for _, cs := range charsets {
		db, err := sql.Open("mysql", dsn+"?charset="+cs+"&interpolateParams=false")
		if err != nil {
			t.Fatal(err)
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var version string
		if err := conn.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
			t.Fatal(err)
		}
		v, mariadb := sqlscan.ParseVersion(version)
		for _, sm := range sqlModes {
			if _, err := conn.ExecContext(ctx, "SET SESSION sql_mode='"+sm+"'"); err != nil {
				t.Fatal(err)
			}
			m := sqlscan.Mode{
				NoBackslashEscapes: strings.Contains(sm, "NO_BACKSLASH_ESCAPES"),
				AnsiQuotes:         strings.Contains(sm, "ANSI_QUOTES"),
				Charset:            sqlscan.MBCharsetOf(cs),
				Version:            v,
				MariaDB:            mariadb,
			}
			for i := 0; i < perMode; i++ {
				q := diffQuery(r)
				if _, err := conn.ExecContext(ctx, "SET @x = NULL"); err != nil {
					t.Fatal(err)
				}
				rows, err := conn.QueryContext(ctx, q)
				if err == nil {
					for rows.Next() {
					}
					err = rows.Err()
					rows.Close()
				}
				if err != nil {
					continue // rejected: nothing ran
				}
				var x sql.NullString
				if err := conn.QueryRowContext(ctx, "SELECT @x").Scan(&x); err != nil {
					t.Fatal(err)
				}
				checked++
				seen := sqlscan.ScanMode([]byte(q), m).Flags.Has(sqlscan.FlagUserVar)
				switch {
				case x.Valid && !seen:
					leaks++
					t.Errorf("leak, %s %q: the server assigned @x, the scanner saw no user variable: %q", cs, sm, q)
				case !x.Valid && seen:
					needless++
					if needless <= 20 {
						t.Logf("needless, %s %q: %q", cs, sm, q)
					}
				}
			}
		}
		conn.Close()
		db.Close()
	}
	t.Logf("%d accepted queries: %d leaks, %d needless", checked, leaks, needless)
}
