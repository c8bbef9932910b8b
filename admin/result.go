package admin

import (
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// colType is a result column's type, narrowest first. Values are int64,
// float64, string or nil (NULL).
type colType uint8

const (
	colInt colType = iota
	colFloat
	colString
	// colValue is text the SQL engine compares as a number where it is
	// one, as MariaDB compares a string with a number: the value of a
	// variable or a status counter.
	colValue
)

// column is a result column.
type column struct {
	name string
	typ  colType
}

// charsetBinary and charsetUTF8MB4 are the collation ids of result columns.
const (
	charsetBinary  = 63
	charsetUTF8MB4 = 45 // utf8mb4_general_ci
)

// resultSet encodes rows as a text-protocol result set. go-mysql's
// BuildSimpleTextResultset derives column types from the first row, which
// leaves empty results and NULL-led columns without one; here every column
// has its declared type.
func resultSet(cols []column, rows [][]any) *mysql.Result {
	rs := &mysql.Resultset{Fields: make([]*mysql.Field, len(cols))}
	for i, c := range cols {
		f := &mysql.Field{Name: []byte(c.name), OrgName: []byte(c.name)}
		switch c.typ {
		case colInt:
			f.Type, f.Charset, f.Flag, f.ColumnLength = mysql.MYSQL_TYPE_LONGLONG, charsetBinary, mysql.BINARY_FLAG, 21
		case colFloat:
			// Decimals 31: a floating-point value, digits as needed.
			f.Type, f.Charset, f.Flag, f.ColumnLength, f.Decimal = mysql.MYSQL_TYPE_DOUBLE, charsetBinary, mysql.BINARY_FLAG, 22, 31
		default:
			f.Type, f.Charset, f.ColumnLength = mysql.MYSQL_TYPE_VAR_STRING, charsetUTF8MB4, 4096
		}
		rs.Fields[i] = f
	}
	var buf []byte
	for _, row := range rows {
		buf = buf[:0]
		for _, v := range row {
			switch v := v.(type) {
			case nil:
				buf = append(buf, 0xfb)
			case int64:
				buf = appendLenEnc(buf, strconv.FormatInt(v, 10))
			case float64:
				buf = appendLenEnc(buf, formatFloat(v))
			case string:
				buf = appendLenEnc(buf, v)
			}
		}
		rs.RowDatas = append(rs.RowDatas, mysql.RowData(append([]byte(nil), buf...)))
	}
	return mysql.NewResult(rs)
}

func appendLenEnc(b []byte, s string) []byte {
	b = append(b, mysql.PutLengthEncodedInt(uint64(len(s)))...)
	return append(b, s...)
}

// nameValue is one row of a Variable_name, Value listing.
type nameValue struct {
	name  string
	value any // int64 or string
}

// nameValues lists the rows whose name matches like (nil: all) as SHOW
// VARIABLES and SHOW STATUS do.
func nameValues(rows []nameValue, like *string) *mysql.Result {
	var out [][]any
	for _, r := range rows {
		if like != nil && !likeMatch(r.name, *like) {
			continue
		}
		out = append(out, []any{r.name, textValue(r.value)})
	}
	return resultSet([]column{{"Variable_name", colString}, {"Value", colString}}, out)
}

// textValue is v (int64 or string) as text.
func textValue(v any) any {
	if n, ok := v.(int64); ok {
		return strconv.FormatInt(n, 10)
	}
	return v
}

// likeElem is one element of a LIKE pattern.
type likeElem struct {
	r    rune
	kind uint8 // 0 a character, 1 '_', 2 '%'
}

// likeMatch reports whether s matches the SQL LIKE pattern, ignoring case:
// % stands for any run of characters, _ for one, and a backslash makes the
// next character literal. Backtracking only to the last %, it takes at most
// len(s)*len(pattern) steps.
func likeMatch(s, pattern string) bool {
	var p []likeElem
	for i := 0; i < len(pattern); {
		r, n := utf8.DecodeRuneInString(pattern[i:])
		i += n
		switch {
		case r == '\\' && i < len(pattern):
			r, n = utf8.DecodeRuneInString(pattern[i:])
			i += n
			p = append(p, likeElem{r: foldRune(r)})
		case r == '_':
			p = append(p, likeElem{kind: 1})
		case r == '%':
			p = append(p, likeElem{kind: 2})
		default:
			p = append(p, likeElem{r: foldRune(r)})
		}
	}
	str := []rune(s)
	for k, r := range str {
		str[k] = unicode.ToLower(r)
	}
	i, j := 0, 0
	star, mark := -1, 0
	for i < len(str) {
		switch {
		case j < len(p) && (p[j].kind == 1 || (p[j].kind == 0 && p[j].r == str[i])):
			i++
			j++
		case j < len(p) && p[j].kind == 2:
			star, mark = j, i
			j++
		case star >= 0:
			mark++
			i, j = mark, star+1
		default:
			return false
		}
	}
	for j < len(p) && p[j].kind == 2 {
		j++
	}
	return j == len(p)
}

func foldRune(r rune) rune { return unicode.ToLower(r) }
