package sqlscan_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

var (
	plain  = sqlscan.Mode{}
	nbe    = sqlscan.Mode{NoBackslashEscapes: true}
	ansi   = sqlscan.Mode{AnsiQuotes: true}
	gbk    = sqlscan.Mode{Charset: sqlscan.MBGBK}
	big5   = sqlscan.Mode{Charset: sqlscan.MBBig5}
	sjis   = sqlscan.Mode{Charset: sqlscan.MBSJIS}
	latin1 = sqlscan.Mode{Charset: sqlscan.SBSpaceA0}
	cp852  = sqlscan.Mode{Charset: sqlscan.SBSpaceFF}
	maria  = sqlscan.Mode{Version: 101119, MariaDB: true}
	mysql  = sqlscan.Mode{Version: 80036}
)

// modeCase is a query, the modes it is scanned in, and the exact result in each.
type modeCase struct {
	q     string
	modes []sqlscan.Mode
	kind  sqlscan.Kind
	flags sqlscan.Flags
}

const (
	uv = sqlscan.FlagUserVar
	gl = sqlscan.FlagGetLock
)

func in(m ...sqlscan.Mode) []sqlscan.Mode { return m }

var modeCases = []modeCase{
	// NO_BACKSLASH_ESCAPES: only a doubled quote escapes the quote.
	{q: `SELECT 'a\', @x:=1 -- '`, modes: in(nbe), kind: sqlscan.KindSelect, flags: uv},
	{q: `SELECT 'a\', @x:=1 -- '`, modes: in(plain, ansi, gbk, maria), kind: sqlscan.KindSelect},
	{q: `SELECT "a\", @x:=1 -- "`, modes: in(nbe), kind: sqlscan.KindSelect, flags: uv},
	{q: `SELECT 'a\\', @x`, modes: in(plain, nbe), kind: sqlscan.KindSelect, flags: uv},
	{q: `SELECT 'it''s', @x`, modes: in(plain, nbe), kind: sqlscan.KindSelect, flags: uv},
	{q: `SELECT 'a'' @x'`, modes: in(plain, nbe), kind: sqlscan.KindSelect},
	{q: `SELECT 'a\''' , @x -- '`, modes: in(nbe), kind: sqlscan.KindSelect, flags: uv},
	{q: `SELECT 'a\''' , @x -- '`, modes: in(plain), kind: sqlscan.KindSelect},
	{q: `SELECT 'unterminated @x`, modes: in(nbe), kind: sqlscan.KindSelect},
	{q: "SELECT 'a\\", modes: in(nbe, plain, gbk), kind: sqlscan.KindSelect},

	// ANSI_QUOTES: "..." is an identifier, where a backslash is an ordinary byte.
	{q: `SELECT 1 AS "a\" , @x -- "`, modes: in(ansi), kind: sqlscan.KindSelect, flags: uv},
	{q: `SELECT 1 AS "a\" , @x -- "`, modes: in(plain), kind: sqlscan.KindSelect},
	{q: `SELECT 1 AS "\"", @x -- "`, modes: in(ansi), kind: sqlscan.KindSelect},
	{q: `SELECT 1 AS "\"", @x -- "`, modes: in(plain), kind: sqlscan.KindSelect, flags: uv},
	{q: `SELECT "a""b", @x`, modes: in(ansi, plain), kind: sqlscan.KindSelect, flags: uv},
	{q: `SELECT "a"" @x"`, modes: in(ansi, plain), kind: sqlscan.KindSelect},
	{q: `SELECT "GET_LOCK"('a', 1)`, modes: in(ansi), kind: sqlscan.KindSelect, flags: gl},
	{q: `SELECT "GET_LOCK"('a', 1)`, modes: in(plain), kind: sqlscan.KindSelect},
	{q: `SELECT @"x"`, modes: in(ansi, plain), kind: sqlscan.KindSelect, flags: uv},
	{q: `SELECT "@x"`, modes: in(ansi, plain), kind: sqlscan.KindSelect},
	{q: `"select" 1`, modes: in(ansi), kind: sqlscan.KindOther},
	{q: `SELECT "unterminated, @x`, modes: in(ansi), kind: sqlscan.KindSelect},

	// Multi-byte characters whose second byte is a backslash, a quote or a backquote.
	{q: "SELECT '\xbf\x5c', @x:=1, '", modes: in(gbk, big5), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT '\xbf\x5c', @x:=1, '", modes: in(plain, sjis), kind: sqlscan.KindSelect},
	{q: "SELECT '\x81\x5c', @x -- '", modes: in(gbk, sjis), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT '\x81\x5c', @x -- '", modes: in(plain, big5), kind: sqlscan.KindSelect}, // not a big5 lead
	{q: "SELECT '\xa4\x5c', @x -- '", modes: in(big5, gbk), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT '\xa1\x5c', @x -- '", modes: in(sjis), kind: sqlscan.KindSelect},    // katakana: one byte
	{q: "SELECT '\xfd\x5c', @x -- '", modes: in(sjis), kind: sqlscan.KindSelect},    // no sjis lead
	{q: "SELECT '\xfa\x5c', @x -- '", modes: in(big5), kind: sqlscan.KindSelect},    // no big5 lead
	{q: "SELECT '\x81\x30\x5c', @x -- '", modes: in(gbk), kind: sqlscan.KindSelect}, // 0x30 is no trail
	{q: "SELECT '\x81\x7f', @x", modes: in(gbk, sjis), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT '\\\x81\x5c', @x -- '", modes: in(gbk, big5, sjis, plain), kind: sqlscan.KindSelect}, // the escape takes one byte
	{q: "SELECT '\x81\x81\x5c', @x -- '", modes: in(gbk), kind: sqlscan.KindSelect},                  // 81 81, then an escape
	{q: "SELECT 1 AS `\xbf\x60`, @x -- `", modes: in(gbk, big5), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 AS `\xbf\x60`, @x -- `", modes: in(plain, sjis), kind: sqlscan.KindSelect},
	{q: "SELECT 1 AS `\x81`, @x -- `", modes: in(gbk, sjis), kind: sqlscan.KindSelect},
	{q: "SELECT 1 AS `\x81`, @x -- `", modes: in(plain, big5), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 AS `\xa4\x60`, @x -- `", modes: in(big5, gbk), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 AS `\x81\x60`, @x -- `", modes: in(gbk, sjis), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 AS `\x81\x60`, @x -- `", modes: in(big5, plain), kind: sqlscan.KindSelect},
	{q: "SELECT 1 AS `\xe0\x60`, @x -- `", modes: in(sjis, gbk), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 AS `\xa1\x60`, @x -- `", modes: in(sjis), kind: sqlscan.KindSelect}, // katakana: one byte
	{q: "SELECT 1 AS `\xbf\x5c`, @x", modes: in(gbk, big5, sjis, plain), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 AS `\xbf\x5c``, @x -- `", modes: in(gbk, big5, sjis, plain), kind: sqlscan.KindSelect},
	{q: "SELECT 1 AS b\xbf\x60, GET_LOCK('a',0) -- `", modes: in(gbk, big5), kind: sqlscan.KindSelect, flags: gl},
	{q: "SELECT 1 AS b\xbf\x60, GET_LOCK('a',0) -- `", modes: in(plain), kind: sqlscan.KindSelect},
	{q: "SELECT 12\xbf\x60, GET_LOCK('a',0) -- `", modes: in(gbk), kind: sqlscan.KindSelect, flags: gl},
	{q: "SELECT \"\xbf\x5c\", @x -- \"", modes: in(gbk), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 AS \"\xbf\", @x", modes: in(sqlscan.Mode{AnsiQuotes: true, Charset: sqlscan.MBGBK}), kind: sqlscan.KindSelect, flags: uv}, // '"' is no trail
	{q: "SELECT 1 AS \"\xbf\x60\", @x -- \"", modes: in(sqlscan.Mode{AnsiQuotes: true, Charset: sqlscan.MBGBK}), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 AS \"\x81\", @x -- \"", modes: in(sqlscan.Mode{AnsiQuotes: true, Charset: sqlscan.MBSJIS}), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT '\xbf\x5c', @x -- '", modes: in(sqlscan.Mode{NoBackslashEscapes: true, Charset: sqlscan.MBGBK}), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT '\xbf", modes: in(gbk), kind: sqlscan.KindSelect},
	// User and system variable names are read byte by byte, and only the character
	// set's letters continue a user variable: gbk's 0xA1 does, 0x81 does not.
	{q: "SELECT @a\xa1`, GET_LOCK('a',0) -- `", modes: in(gbk, big5), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT @a\x81`, GET_LOCK('a',0) -- `", modes: in(gbk, sjis), kind: sqlscan.KindSelect, flags: uv | gl},
	{q: "SELECT @@a\x81`, GET_LOCK('a',0) -- `", modes: in(gbk), kind: sqlscan.KindSelect},
	{q: "SELECT @@session.a\x81`, GET_LOCK('a',0) -- `", modes: in(gbk), kind: sqlscan.KindSelect, flags: gl},

	// Single-byte sets in which a byte above 0x7F is whitespace.
	{q: "SELECT\xa0GET_LOCK('a',0)", modes: in(latin1), kind: sqlscan.KindSelect, flags: gl},
	{q: "SELECT\xa0GET_LOCK('a',0)", modes: in(plain, cp852, gbk), kind: sqlscan.KindOther},
	{q: "LOCK\xa0TABLES t READ", modes: in(latin1), kind: sqlscan.KindLock, flags: sqlscan.FlagLockTables},
	{q: "SELECT\xffGET_LOCK('a',0)", modes: in(cp852), kind: sqlscan.KindSelect, flags: gl},
	{q: "SELECT 1 --\xa0@x", modes: in(latin1), kind: sqlscan.KindSelect},
	{q: "SELECT 1 --\xa0@x", modes: in(plain), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT @x\xa0:= 1", modes: in(latin1, plain), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT `a\xa0b`, 'c\xa0d'", modes: in(latin1), kind: sqlscan.KindSelect},

	// Executable comments, MariaDB 10.11.19 and MySQL 8.0.36.
	{q: "SELECT 1 /*!99999 ' */ , @a:=1 -- '", modes: in(maria, mysql), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*!99999 ' */ , @a:=1 -- '", modes: in(plain), kind: sqlscan.KindSelect},
	{q: "SELECT 9 /*!99999 /* nested */ , @x */ , 11", modes: in(maria, mysql), kind: sqlscan.KindSelect},
	{q: "SELECT 9 /*!99999 /* nested */ , @x */ , 11", modes: in(plain), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 9 /*!99999 /* nested */ , 10 */ , @x", modes: in(maria, mysql, plain), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 37 /*!99999 /*!50000 , @x */ , @y */ , 40", modes: in(maria, mysql), kind: sqlscan.KindSelect},
	{q: "SELECT 37 /*!99999 /*!50000 , 38 */ , 39 */ , @x", modes: in(maria, mysql), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*!99999 /*/ , @x */ , @y */ , 4", modes: in(maria), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*!5000 , @x */", modes: in(maria, mysql), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*! , @x */", modes: in(maria, mysql, plain), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*!*/ , @x", modes: in(maria, mysql, plain), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*!50700 , @x */", modes: in(maria), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*!50700 , @x */", modes: in(mysql, plain), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*!99999 , @x */", modes: in(maria, mysql), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*!50699 , @x */", modes: in(maria, mysql), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*M!50700 , @x */", modes: in(maria, plain), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*M!50700 , @x */", modes: in(mysql), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*M! , @x */", modes: in(maria), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*M! , @x */", modes: in(mysql), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*M!5000 , @x */", modes: in(maria), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*!100000 , @x */", modes: in(maria, mysql), kind: sqlscan.KindSelect, flags: uv}, // MySQL: 10000, then "0"
	{q: "SELECT 1 /*!999999 , @x */", modes: in(maria, mysql), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*M!999999 , @x */", modes: in(maria), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*!101119 , @x */", modes: in(maria), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*!101120 , @x */", modes: in(maria), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*M!101120 , @x */", modes: in(maria), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*!00000 , @x */", modes: in(maria, mysql), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*!12345x , @x */", modes: in(maria, mysql), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*!80036 , @x */", modes: in(mysql), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*!80037 , @x */", modes: in(mysql), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*!800371 , @x */", modes: in(mysql), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*!800361 , @x */", modes: in(mysql), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*!1 , @x */", modes: in(maria, mysql), kind: sqlscan.KindSelect, flags: uv},
	// Inside a running comment another may open; the first "*/" ends both.
	{q: "SELECT 1 /*! , 2 /*! , @x:=1 */", modes: in(maria, mysql, plain), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*! , 2 /* @x */ , 3 */", modes: in(maria, mysql, plain), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*! , 2 /*!99999 , @x /* n */ , @y */ , 5 */ , 6", modes: in(maria, mysql), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*! , 2 /*!99999 , @x /* n */ , @y */ , 5 */ , 6", modes: in(plain), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*!10000 , 2 /*M!999999 , @x */ , 3 */", modes: in(maria), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*!10000 , 2 /*M!99999 , @x */ , 3 */", modes: in(maria), kind: sqlscan.KindSelect, flags: uv},
	{q: "SELECT 1 /*! '*/' , @x */", modes: in(maria, plain), kind: sqlscan.KindSelect, flags: uv},
	// Unterminated comments run to the end.
	{q: "SELECT 1 /*!99999 , @x", modes: in(maria, mysql), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*!99999 /* , @x", modes: in(maria, mysql), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*!99999 /* a */ , @x", modes: in(maria, mysql), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*!9999", modes: in(maria, mysql), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*!", modes: in(maria, mysql, plain), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*M", modes: in(maria, mysql, plain), kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*!99999 */ /*", modes: in(maria, mysql, plain), kind: sqlscan.KindSelect},
	// The first statement's class from inside a comment.
	{q: "/*!40101 SET NAMES utf8 */", modes: in(maria, mysql, plain), kind: sqlscan.KindSet},
	{q: "/*!99999 SET @x = 1 */ SELECT 1", modes: in(maria, mysql), kind: sqlscan.KindSelect},
	{q: "/*M!100301 SELECT 1 */", modes: in(maria, plain), kind: sqlscan.KindSelect},
	{q: "/*M!100301 SELECT 1 */", modes: in(mysql), kind: sqlscan.KindOther},
	{q: "SELECT 1 /*!99999 ; SELECT 2 */", modes: in(maria), kind: sqlscan.KindSelect},
	{q: "/*!50000 GET_LOCK */ ('a', 1)", modes: in(maria), kind: sqlscan.KindOther, flags: gl},
}

func modeName(m sqlscan.Mode) string {
	s := m.Charset.String()
	if m.NoBackslashEscapes {
		s += ",nbe"
	}
	if m.AnsiQuotes {
		s += ",ansi"
	}
	if m.Version != 0 {
		s += ",v" + strconv.Itoa(int(m.Version))
	}
	if m.MariaDB {
		s += ",mariadb"
	}
	return s
}

func TestScanMode(t *testing.T) {
	for _, c := range modeCases {
		for _, m := range c.modes {
			got := sqlscan.ScanMode([]byte(c.q), m)
			if got.Kind != c.kind || got.Flags != c.flags {
				t.Errorf("ScanMode(%q, %s) = kind %v flags %v; want kind %v flags %v",
					c.q, modeName(m), got.Kind, got.Flags, c.kind, c.flags)
			}
		}
	}
	// The zero Mode is Scan.
	for _, c := range scanCases {
		if a, b := sqlscan.Scan([]byte(c.q)), sqlscan.ScanMode([]byte(c.q), plain); !same(a, b) {
			t.Errorf("Scan(%q) = %+v, ScanMode with the zero Mode = %+v", c.q, a, b)
		}
	}
	// A Charset value beyond the known ones is lexed as MBNone.
	if got := sqlscan.ScanMode([]byte("SELECT '\xbf\x5c', @x -- '"), sqlscan.Mode{Charset: 200}); got.Flags != 0 {
		t.Errorf("unknown charset: flags %v", got.Flags)
	}
}

func TestScanModeDoesNotAllocate(t *testing.T) {
	modes := []sqlscan.Mode{plain, nbe, ansi, gbk, big5, sjis, latin1, maria, mysql,
		{NoBackslashEscapes: true, AnsiQuotes: true, Charset: sqlscan.MBSJIS, Version: 100600, MariaDB: true}}
	for _, c := range modeCases {
		q := []byte(c.q)
		for _, m := range modes {
			if n := testing.AllocsPerRun(5, func() { sqlscan.ScanMode(q, m) }); n != 0 {
				t.Errorf("ScanMode(%q, %s) allocates %v times", c.q, modeName(m), n)
			}
		}
	}
}

func TestXA(t *testing.T) {
	cases := []struct {
		q    string
		want sqlscan.XAKind
	}{
		{"XA START 'x'", sqlscan.XAStart},
		{"xa begin 'x'", sqlscan.XAStart},
		{"XA END 'x'", sqlscan.XAEnd},
		{"XA PREPARE 'x'", sqlscan.XAPrepare},
		{"XA COMMIT 'x' ONE PHASE", sqlscan.XACommit},
		{"XA ROLLBACK 'x'", sqlscan.XARollback},
		{"XA RECOVER", sqlscan.XARecover},
		{"XA", sqlscan.XAOther},
		{"XA 'x'", sqlscan.XAOther},
		{"XA `start`", sqlscan.XAOther},
		{"/*!XA END 'x'*/", sqlscan.XAEnd},
		{"XA /* c */ commit 'x'; SELECT 1", sqlscan.XACommit},
		{"SET STATEMENT max_statement_time=1 FOR XA START 'x'", sqlscan.XAStart},
		{"SELECT 1", sqlscan.XANone},
		{"SELECT 1; XA START 'x'", sqlscan.XANone},
		{"SELECT 'XA START'", sqlscan.XANone},
	}
	for _, c := range cases {
		got := sqlscan.Scan([]byte(c.q))
		if got.XA != c.want || (c.want != sqlscan.XANone) != got.Flags.Has(sqlscan.FlagXA) && !strings.Contains(c.q, ";") {
			t.Errorf("Scan(%q).XA = %v (flags %v); want %v", c.q, got.XA, got.Flags, c.want)
		}
	}
	if got := sqlscan.Scan([]byte("SELECT 1; XA START 'x'")).Flags; !got.Has(sqlscan.FlagXA) {
		t.Errorf("later XA: flags %v", got)
	}
	if s := sqlscan.XAKind(99).String(); s != "xa(99)" {
		t.Errorf("XAKind(99) = %q", s)
	}
	for k := sqlscan.XANone; k <= sqlscan.XAOther; k++ {
		if strings.HasPrefix(k.String(), "xa(") {
			t.Errorf("XAKind %d has no name", k)
		}
	}
}

func TestQualified(t *testing.T) {
	cases := []struct {
		q    string
		m    sqlscan.Mode
		want bool
	}{
		{"SELECT t.a FROM t", plain, true},
		{"SELECT `db`.`t`", plain, true},
		{"SELECT a . b", plain, true},
		{"SELECT db.f(1)", plain, true},
		{"SELECT x FROM db.`t`", plain, true},
		{"SELECT t.1e5, t.5", plain, true},
		{"SELECT 1a.b", plain, true},
		{`SELECT "db"."t"`, ansi, true},
		{`SELECT "db"."t"`, plain, false},
		{"SELECT @x.y, @`x`.y, @'x'.y", plain, false},
		{"SELECT @@a.b, @@session.x, @@global.keycache.key_buffer_size", plain, false},
		{"SELECT 1.5, .5, 1.e5", plain, false},
		{"SELECT 'a'.b", plain, false},
		{"SELECT t.*", plain, false},
		{"SELECT 'db.t', `db.t`", plain, false},
		{"SELECT 1 -- a.b", plain, false},
		{"SELECT 1 /*!99999 a.b */", maria, false},
		{"SELECT 1 /*!99999 a.b */", plain, true},
		{"SELECT a.; b", plain, false},
		{"SELECT a; .b", plain, false},
	}
	for _, c := range cases {
		if got := sqlscan.ScanMode([]byte(c.q), c.m).Qualified; got != c.want {
			t.Errorf("ScanMode(%q, %s).Qualified = %v; want %v", c.q, modeName(c.m), got, c.want)
		}
	}
}

func TestKillInSetStatement(t *testing.T) {
	got := sqlscan.Scan([]byte("SET STATEMENT max_statement_time=1 FOR KILL 5"))
	if got.Kind != sqlscan.KindSet || got.KillID != 0 || got.KillQuery ||
		got.Flags != sqlscan.FlagSetStatement|sqlscan.FlagKillUnsupported {
		t.Errorf("SET STATEMENT ... FOR KILL: %+v", got)
	}
}

func TestSetTargetsMode(t *testing.T) {
	cases := []struct {
		q    string
		m    sqlscan.Mode
		want string
	}{
		{"SET x = DEFAULT", plain, "x:true"},
		{"SET @@session.x := default", plain, "x:true"},
		{"SET SESSION x = /* c */ DEFAULT /* d */", plain, "x:true"},
		{"SET x = DEFAULT + 1", plain, "x:false"},
		{"SET x = (DEFAULT)", plain, "x:false"},
		{"SET x = `DEFAULT`", plain, "x:false"},
		{"SET x = 'DEFAULT'", plain, "x:false"},
		{"SET a = DEFAULT, b = 2, c = default", plain, "a:true,b:false,c:true"},
		{"SET a = default; SET b = default", plain, "a:true"},
		{"SET a = f(DEFAULT, 1), b = DEFAULT", plain, "a:false,b:true"},
		{"SET NAMES utf8, autocommit = DEFAULT", plain, "autocommit:true"},
		{"SET @x = 1, autocommit = DEFAULT", plain, "autocommit:true"},
		{"SET @@global.x = 1, @@y = DEFAULT", plain, "y:true"},
		{"SET GLOBAL a = DEFAULT, SESSION b = DEFAULT", plain, "b:true"},
		{"SET sql_mode = 'a', @@session.wait_timeout = DEFAULT;", plain, "sql_mode:false,wait_timeout:true"},
		{"SET `time_zone` = DEFAULT", plain, "time_zone:true"},
		{"SET timestamp = 0, @@session.TIMESTAMP = 0", plain, "timestamp:true,TIMESTAMP:true"},
		{"SET timestamp = 1000000, timestamp = 0.0, x = 0", plain, "timestamp:false,timestamp:false,x:false"},
		{"SET keycache1.key_buffer_size = 1", plain, "keycache1.key_buffer_size:false"},
		{"SET @@keycache1.key_buffer_size = 1", plain, "keycache1.key_buffer_size:false"},
		{"SET @@session.a.b = 1", plain, "a.b:false"},
		{"SET STATEMENT a=1, b=2 FOR SELECT 1", plain, ""},
		{"SET STATEMENT a=1, b=DEFAULT FOR SET c = DEFAULT, @@global.d = 1, e = 4", plain, "c:true,e:false"},
		{"SET STATEMENT a=1 FOR SET SESSION sql_mode=''", plain, "sql_mode:false"},
		{"SET STATEMENT a=1 FOR SET STATEMENT b=2 FOR SET c=3", plain, "c:false"},
		{"SET PASSWORD = PASSWORD('x')", plain, ""},
		{"SET PASSWORD FOR u = 'x'", plain, ""},
		{"SET ROLE r", plain, ""},
		{"SET DEFAULT ROLE r FOR u", plain, ""},
		{"SET TRANSACTION READ ONLY", plain, ""},
		{"SET CHARACTER SET utf8", plain, ""},
		{`SET "sql_mode" = 'x'`, ansi, "sql_mode:false"},
		{`SET "sql_mode" = 'x'`, plain, ""},
		{"SET x = '\xbf\x5c', y = 1 -- '", gbk, "x:false,y:false"},
		{"SET x = '\xbf\x5c', y = 1 -- '", plain, "x:false"},
		{"SET x = 1 /*!99999 , y = 2 */", maria, "x:false"},
		{"SET x = 1 /*!99999 , y = 2 */", plain, "x:false,y:false"},
		{"SET @@x = DEFAULT", plain, "x:true"},
		{"SET @@", plain, ""},
		{"SET ``= 1", plain, ""},
		{"SELECT 1", plain, ""},
	}
	for _, c := range cases {
		var got []string
		sqlscan.SetTargetsMode([]byte(c.q), c.m, func(name []byte, isDefault bool) {
			if isDefault {
				got = append(got, string(name)+":true")
			} else {
				got = append(got, string(name)+":false")
			}
		})
		if strings.Join(got, ",") != c.want {
			t.Errorf("SetTargetsMode(%q, %s) = %q, want %q", c.q, modeName(c.m), strings.Join(got, ","), c.want)
		}
	}
}

func TestStatementVars(t *testing.T) {
	cases := []struct {
		q    string
		m    sqlscan.Mode
		want string
	}{
		{"SET STATEMENT max_statement_time=10, `sql_mode`='' FOR SELECT 1", plain, "max_statement_time,sql_mode"},
		{"set statement a = (SELECT 1, 2), b := 3 for select 1", plain, "a,b"},
		{"SET STATEMENT a=1 FOR SET STATEMENT b=2 FOR SELECT 1", plain, "a,b"},
		{"SET STATEMENT a=1 FOR SET b=2", plain, "a"},
		{"/*!SET STATEMENT a=1 FOR SELECT 1*/", plain, "a"},
		{"SET STATEMENT default.key_buffer_size=1 FOR SELECT 1", plain, "default.key_buffer_size"},
		{"SET STATEMENT a='x', b=2 FOR SELECT 1; SET STATEMENT c=1 FOR SELECT 1", plain, "a,b"},
		{"SET STATEMENT a='\xbf\x5c', b=2 -- ' FOR SELECT 1", gbk, "a,b"},
		{"SET STATEMENT a=1", plain, "a"},
		{"SET a=1", plain, ""},
		{"SELECT 1; SET STATEMENT a=1 FOR SELECT 1", plain, ""},
		{"SELECT 1", plain, ""},
	}
	for _, c := range cases {
		var got []string
		sqlscan.StatementVars([]byte(c.q), c.m, func(name []byte) { got = append(got, string(name)) })
		if strings.Join(got, ",") != c.want {
			t.Errorf("StatementVars(%q, %s) = %q, want %q", c.q, modeName(c.m), strings.Join(got, ","), c.want)
		}
	}
}

func TestMentions(t *testing.T) {
	cases := []struct {
		q    string
		m    sqlscan.Mode
		want string
	}{
		{"SELECT db.f(1), t.a FROM db.t JOIN u", plain, "SELECT db db.f t t.a FROM db db.t JOIN u"},
		{"a.b.c", plain, "a a.b b.c"},
		{"SELECT 'x', \"y\", @u, @@session.v, @@w, @'s', @`q`.r, x /* c */ -- d\n# e", plain, "SELECT r x"},
		{`SELECT "a"."b"`, ansi, "SELECT a a.b"},
		{`SELECT "a"."b"`, plain, "SELECT"},
		{"SELECT `my tab`.`col`, `a``b`", plain, "SELECT my tab my tab.col a``b"},
		{"SELECT 1a, t.1e5, 1e5, 0x1F, 0x1g, 1.5, .5", plain, "SELECT 1a t t.1e5 0x1g"},
		{"SELECT N'x', X'41', B'1', n, _utf8mb4'y'", plain, "SELECT n _utf8mb4"},
		{"SELECT /*!99999 hidden */ a /*!100000 b */ /*M!50700 c */ /*!50700 d */", maria, "SELECT a b c"},
		{"SELECT /*!99999 hidden */ a", plain, "SELECT hidden a"},
		{"call Proc(1); SELECT Get_Lock('a', 1)", plain, "call Proc SELECT Get_Lock"},
		{"SELECT a . /* c */ b", plain, "SELECT a a.b"},
		{"SELECT '\xbf\x5c', x -- '", gbk, "SELECT x"},
		{"SELECT `\xbf\x60`", gbk, "SELECT \xbf\x60"},
		{"SELECT\xa0x", latin1, "SELECT x"},
		{"", plain, ""},
	}
	for _, c := range cases {
		var got []string
		sqlscan.Mentions([]byte(c.q), c.m, func(qual, name []byte) bool {
			if qual != nil {
				got = append(got, string(qual)+"."+string(name))
			} else {
				got = append(got, string(name))
			}
			return false
		})
		if strings.Join(got, " ") != c.want {
			t.Errorf("Mentions(%q, %s) = %q, want %q", c.q, modeName(c.m), strings.Join(got, " "), c.want)
		}
	}

	// fn returning true stops the walk.
	n := 0
	sqlscan.Mentions([]byte("SELECT a, b, c"), plain, func(_, _ []byte) bool { n++; return n == 2 })
	if n != 2 {
		t.Errorf("Mentions went on after fn returned true: %d calls", n)
	}

	// Nothing is allocated; the slices cannot grow into the query.
	q := []byte("SELECT db.f(1), `t`.a FROM x /* y */ WHERE 'z'")
	var count int
	fn := func(qual, name []byte) bool {
		count++
		if cap(name) != len(name) || qual != nil && cap(qual) != len(qual) {
			t.Errorf("Mentions hands out slices with spare capacity: %q %q", qual, name)
		}
		return false
	}
	if a := testing.AllocsPerRun(10, func() { sqlscan.Mentions(q, plain, fn) }); a != 0 {
		t.Errorf("Mentions allocates %v times", a)
	}
	if count == 0 {
		t.Error("Mentions found nothing")
	}
}

func TestParseVersion(t *testing.T) {
	cases := []struct {
		s       string
		v       uint32
		mariadb bool
	}{
		{"10.11.19-MariaDB-0+deb12u1", 101119, true},
		{"8.0.36", 80036, false},
		{"8.4.3-log", 80403, false},
		{"5.5.5-10.11.19-MariaDB", 101119, true},
		{"5.5.5-10.6.3", 100603, true},
		{"5.5.5-", 50505, false},
		{"11.4.2-MariaDB-log", 110402, true},
		{"5.7.44-0ubuntu0.18.04.1", 50744, false},
		{"8.0", 80000, false},
		{"9.1.0-commercial", 90100, false},
		{"10.5.8-mariadb", 100508, true},
		{"", 0, false},
		{"garbage", 0, false},
		{"MariaDB", 0, false},
		{"8", 0, false},
		{"8.", 0, false},
		{".8.0", 0, false},
		{"8.100.1", 0, false},
		{"8.0.100", 0, false},
		{"12345.0.1", 0, false},
		{"8.0.36.5", 80036, false},
	}
	for _, c := range cases {
		v, mariadb := sqlscan.ParseVersion(c.s)
		if v != c.v || mariadb != c.mariadb {
			t.Errorf("ParseVersion(%q) = %d, %v; want %d, %v", c.s, v, mariadb, c.v, c.mariadb)
		}
	}
}

func TestMBCharsetOf(t *testing.T) {
	cases := map[string]sqlscan.MBCharset{
		"big5": sqlscan.MBBig5, "BIG5": sqlscan.MBBig5,
		"gbk": sqlscan.MBGBK, "GBK": sqlscan.MBGBK, "gb18030": sqlscan.MBGBK,
		"sjis": sqlscan.MBSJIS, "cp932": sqlscan.MBSJIS, "CP932": sqlscan.MBSJIS,
		"latin1": sqlscan.SBSpaceA0, "Latin2": sqlscan.SBSpaceA0, "cp1250": sqlscan.SBSpaceA0,
		"cp852": sqlscan.SBSpaceFF, "keybcs2": sqlscan.SBSpaceFF,
		"utf8mb4": sqlscan.MBNone, "utf8": sqlscan.MBNone, "utf8mb3": sqlscan.MBNone,
		"binary": sqlscan.MBNone, "ujis": sqlscan.MBNone, "euckr": sqlscan.MBNone,
		"gb2312": sqlscan.MBNone, "cp1251": sqlscan.MBNone, "": sqlscan.MBNone, "gbkx": sqlscan.MBNone,
	}
	for name, want := range cases {
		if got := sqlscan.MBCharsetOf(name); got != want {
			t.Errorf("MBCharsetOf(%q) = %v; want %v", name, got, want)
		}
	}
	if s := sqlscan.MBCharset(77).String(); s != "charset(77)" {
		t.Errorf("MBCharset(77) = %q", s)
	}
}

func TestInnerKind(t *testing.T) {
	for q, want := range map[string]sqlscan.Kind{
		"SET STATEMENT max_statement_time=1 FOR SELECT 1":            sqlscan.KindSelect,
		"SET STATEMENT a=1, b=2 FOR INSERT INTO t VALUES (1)":        sqlscan.KindInsert,
		"SET STATEMENT a=1 FOR SET STATEMENT b=2 FOR REPLACE INTO t": sqlscan.KindReplace,
		"SET STATEMENT a=1 FOR START TRANSACTION":                    sqlscan.KindBegin,
		"SET x = 1": sqlscan.KindOther,
		"SELECT 1; SET STATEMENT a=1 FOR INSERT INTO t VALUES (1)": sqlscan.KindOther,
	} {
		info := sqlscan.Scan([]byte(q))
		if info.Inner != want {
			t.Errorf("%q: Inner = %v, want %v", q, info.Inner, want)
		}
	}
}
