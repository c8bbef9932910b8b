package admin

import (
	"strconv"
	"strings"
)

// A SELECT over the admin views is written in MariaDB's dialect and run by
// SQLite (engine.go). translate rewrites the few places where the two read
// the same text differently, token by token, so that the answer is the one
// MariaDB would give:
//
//   - strings: MariaDB unescapes backslashes and takes "text" as a string;
//     SQLite has no escapes and takes "text" as a name. Every string is
//     written again as a plain SQLite literal; a LIKE pattern with a
//     backslash gets ESCAPE '\', MariaDB's default escape.
//   - a / b is a fraction in MariaDB (7/2 = 3.5) and integer division in
//     SQLite: it becomes a*1.0/b. DIV and MOD become / and %.
//   - || and && are OR and AND to MariaDB (without PIPES_AS_CONCAT), ! is
//     NOT, <=> is IS.
//   - GROUP_CONCAT(x SEPARATOR ';') becomes group_concat(x, ';').
//   - FROM DUAL is dropped.
//   - @@variables, NOW(), CONNECTION_ID(), DATABASE(), USER(), VERSION()
//     and the like are replaced by their value as a literal: they are
//     constants of the statement in MariaDB too.
//
// Anything else reaches SQLite as written, between the same whitespace, so
// that SQLite names an unaliased result column after its text as MariaDB
// does. Where a rewrite changed that text, the column keeps the name of the
// original (translation.headers).

// translateEnv is what translate needs of the connection.
type translateEnv struct {
	// sysVar reads @@[scope.]name.
	sysVar func(sc scope, name string) (any, error)
	// connID, user and version answer CONNECTION_ID(), USER() and
	// VERSION().
	connID  uint32
	user    string
	version string
	// now is NOW()'s value, in the proxy's local time.
	now func() string
	// unix is UNIX_TIMESTAMP()'s value.
	unix func() int64
}

// translation is a statement ready for SQLite.
type translation struct {
	sql string
	// headers are the names of the outermost select list's columns as
	// MariaDB gives them, or nil where SQLite's own names stand (a * in
	// the list).
	headers []string
	// toks are the tokens written, with where each came from in the
	// original: error messages point into the original.
	toks []emitted
}

// emitted is a piece of the SQLite text: where it starts there and the
// offset in the original query of the token it came from.
type emitted struct {
	text string
	at   int
	pos  int
}

// order is the order in which the tokens are written: as they come, but
// for GROUP_CONCAT(x ORDER BY y SEPARATOR s), which SQLite writes
// group_concat(x, s ORDER BY y).
func order(toks []token) []int {
	out := make([]int, len(toks))
	for i := range out {
		out[i] = i
	}
	for i := 0; i+1 < len(toks); i++ {
		if !toks[i].isWord("group_concat") || !toks[i+1].is("(") {
			continue
		}
		depth, ord, sep := 0, -1, -1
		for k := i + 1; k < len(toks); k++ {
			switch t := toks[k]; {
			case t.is("("):
				depth++
			case t.is(")"):
				depth--
			case depth == 1 && t.isWord("order") && ord < 0:
				ord = k
			case depth == 1 && t.isWord("separator"):
				sep = k
			}
			if depth == 0 {
				if ord >= 0 && sep > ord && k == sep+2 {
					// ... ORDER BY y SEPARATOR s ) -> ... SEPARATOR s ORDER BY y )
					moved := append([]int{sep, sep + 1}, out[ord:sep]...)
					copy(out[ord:sep+2], moved)
				}
				break
			}
		}
	}
	return out
}

// translate rewrites the SELECT q for SQLite. It refuses more than one
// statement, as the server does without CLIENT_MULTI_STATEMENTS.
func translate(q string, env translateEnv) (translation, error) {
	toks, err := lex(q)
	if err != nil {
		return translation{}, err
	}
	// One statement, with optional trailing semicolons.
	last := len(toks) - 1 // the tokEOF
	for last > 0 && toks[last-1].is(";") {
		last--
	}
	toks = toks[:last]
	for _, t := range toks {
		if t.is(";") {
			return translation{}, syntaxError(q, t.pos)
		}
	}

	// text is what each token becomes; skip marks one dropped.
	text := make([]string, len(toks))
	skip := make([]bool, len(toks))
	// changed marks, per original token, that what is written differs
	// from its text.
	changed := make([]bool, len(toks))
	set := func(i int, s string) {
		text[i] = s
		changed[i] = s != q[toks[i].pos:toks[i].end]
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		src := q[t.pos:t.end]
		text[i] = src
		switch t.kind {
		case tokString:
			s := sqliteString(t.text)
			if i > 0 && toks[i-1].isWord("like") && strings.Contains(t.text, `\`) &&
				!(i+1 < len(toks) && toks[i+1].isWord("escape")) {
				s += ` ESCAPE '\'`
			}
			set(i, s)
		case tokQuoted:
			set(i, "`"+strings.ReplaceAll(t.text, "`", "``")+"`")
		case tokWord:
			switch {
			case t.isWord("div"):
				set(i, "/")
			case t.isWord("mod"):
				set(i, "%")
			case t.isWord("separator"):
				set(i, ",")
			case t.isWord("from") && i+1 < len(toks) && toks[i+1].isWord("dual"):
				skip[i], skip[i+1] = true, true // SQLite selects without FROM
				i++
			case i+2 < len(toks) && toks[i+1].is("(") && toks[i+2].is(")") && constFunc(t.text) != "":
				v, err := env.constFunc(t.text)
				if err != nil {
					return translation{}, err
				}
				set(i, v)
				skip[i+1], skip[i+2] = true, true
				i += 2
			}
		case tokPunct:
			switch t.text {
			case "/":
				set(i, "*1.0/")
			case "||":
				set(i, " OR ")
			case "&&":
				set(i, " AND ")
			case "!":
				set(i, " NOT ")
			case "<=>":
				set(i, " IS ")
			case "@@":
				v, n, err := readSysVar(q, toks[i+1:], env)
				if err != nil {
					return translation{}, err
				}
				set(i, v)
				for k := 1; k <= n; k++ {
					skip[i+k] = true
				}
				i += n
			case "@", ":=":
				// User variables: the admin port has none.
				return translation{}, unsupported()
			}
		}
	}

	var tr translation
	var b strings.Builder
	prev := -1
	for _, i := range order(toks) {
		if skip[i] {
			continue
		}
		switch {
		case prev >= 0 && i > prev:
			b.WriteString(gap(q[toks[i-1].end:toks[i].pos]))
		case prev >= 0:
			b.WriteByte(' ') // moved back
		}
		tr.toks = append(tr.toks, emitted{text: text[i], pos: toks[i].pos, at: b.Len()})
		b.WriteString(text[i])
		prev = i
	}
	tr.sql = b.String()
	tr.headers = headers(q, toks, changed)
	return tr, nil
}

// gap is the text between two tokens as SQLite gets it: whitespace as
// written, a comment as one space.
func gap(s string) string {
	for i := 0; i < len(s); i++ {
		if !isSpace(s[i]) {
			return " "
		}
	}
	return s
}

// sqliteString quotes s as an SQLite string literal.
func sqliteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sqliteValue writes v (int64, string or nil) as an SQLite literal.
func sqliteValue(v any) string {
	switch v := v.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return sqliteString(v)
	}
	return "NULL"
}

// constFunc is the canonical name of a MariaDB function without
// arguments that translate replaces by its value, or "".
func constFunc(name string) string {
	switch n := strings.ToLower(name); n {
	case "now", "current_timestamp", "localtime", "localtimestamp", "sysdate",
		"unix_timestamp", "connection_id", "database", "schema",
		"user", "current_user", "session_user", "system_user", "version":
		return n
	}
	return ""
}

// constFunc is the value of the function name() as an SQLite literal.
func (env translateEnv) constFunc(name string) (string, error) {
	switch constFunc(name) {
	case "now", "current_timestamp", "localtime", "localtimestamp", "sysdate":
		return sqliteString(env.now()), nil
	case "unix_timestamp":
		return strconv.FormatInt(env.unix(), 10), nil
	case "connection_id":
		return strconv.FormatUint(uint64(env.connID), 10), nil
	case "database", "schema":
		return "NULL", nil
	case "user", "current_user", "session_user", "system_user":
		return sqliteString(env.user), nil
	case "version":
		return sqliteString(env.version), nil
	}
	return "", unsupported()
}

// readSysVar reads [scope.]name after @@ and returns its value as a
// literal and how many tokens it took.
func readSysVar(q string, toks []token, env translateEnv) (string, int, error) {
	word := func(k int) bool { return k < len(toks) && (toks[k].kind == tokWord || toks[k].kind == tokQuoted) }
	if !word(0) {
		end := len(q)
		if len(toks) > 0 {
			end = toks[0].pos
		}
		return "", 0, syntaxError(q, end)
	}
	sc, name, n := scopeNone, toks[0].text, 1
	if len(toks) > 2 && toks[1].is(".") && word(2) {
		switch strings.ToLower(name) {
		case "global":
			sc = scopeGlobal
		case "session", "local":
			sc = scopeSession
		default:
			return "", 0, syntaxError(q, toks[1].pos)
		}
		name, n = toks[2].text, 3
	}
	v, err := env.sysVar(sc, strings.ToLower(name))
	if err != nil {
		return "", 0, err
	}
	return sqliteValue(v), n, nil
}

// headers names the columns of the outermost select list as MariaDB
// would: an alias; else a column reference's column as written; else the
// expression's text. It returns nil if the list has a * (SQLite's names
// stand then) or cannot be found.
func headers(q string, toks []token, changed []bool) []string {
	// The first SELECT at depth 0 (after a WITH's definitions).
	depth, start := 0, -1
	for i, t := range toks {
		switch {
		case t.is("("):
			depth++
		case t.is(")"):
			depth--
		case depth == 0 && t.isWord("select"):
			start = i + 1
		}
		if start >= 0 {
			break
		}
	}
	if start < 0 {
		return nil
	}
	for start < len(toks) && (toks[start].isWord("distinct") || toks[start].isWord("all") ||
		toks[start].isWord("distinctrow") || toks[start].isWord("straight_join") || toks[start].isWord("sql_no_cache")) {
		start++
	}
	var out []string
	item := start
	depth = 0
	for i := start; i <= len(toks); i++ {
		end := i == len(toks)
		if !end {
			t := toks[i]
			switch {
			case t.is("("):
				depth++
				continue
			case t.is(")"):
				depth--
				continue
			}
			if depth > 0 {
				continue
			}
			end = t.is(",") || t.isWord("from") || t.isWord("where") || t.isWord("group") ||
				t.isWord("having") || t.isWord("order") || t.isWord("limit") || t.isWord("union") ||
				t.isWord("window") || t.isWord("into") || t.isWord("except") || t.isWord("intersect")
		}
		if !end {
			continue
		}
		h, ok := header(q, toks[item:i], changed[item:i])
		if !ok {
			return nil
		}
		out = append(out, h)
		if i == len(toks) || !toks[i].is(",") {
			return out
		}
		item = i + 1
	}
	return out
}

// header is the MariaDB name of one select-list item, or "" where SQLite's
// name is already right; false for a * item.
func header(q string, it []token, changed []bool) (string, bool) {
	if len(it) == 0 {
		return "", false
	}
	if it[len(it)-1].is("*") {
		return "", false
	}
	if len(it) == 1 && it[0].kind == tokString {
		return it[0].text, true // MariaDB names 'text' text
	}
	// An alias: AS name, or a trailing name after an expression.
	if n := len(it); n >= 2 && (it[n-1].kind == tokWord || it[n-1].kind == tokQuoted || it[n-1].kind == tokString) {
		if it[n-2].isWord("as") || !(it[n-2].is(".")) && endsExpr(it[n-2]) {
			return "", true // SQLite uses the alias too
		}
	}
	// A column reference, maybe qualified: its column as written.
	if (len(it) == 1 || (len(it)%2 == 1 && it[len(it)-2].is("."))) && (it[len(it)-1].kind == tokWord || it[len(it)-1].kind == tokQuoted) {
		plain := true
		for k := 0; k < len(it); k += 2 {
			if it[k].kind != tokWord && it[k].kind != tokQuoted {
				plain = false
			}
		}
		if plain {
			return it[len(it)-1].text, true
		}
	}
	for _, c := range changed {
		if c {
			return q[it[0].pos:it[len(it)-1].end], true
		}
	}
	return "", true
}

// endsExpr reports whether t can end an expression, so that a name after
// it is an alias.
func endsExpr(t token) bool {
	switch t.kind {
	case tokWord, tokQuoted, tokString, tokNumber:
		return true
	}
	return t.is(")")
}
