package admin

import (
	"strconv"
	"strings"
)

// scope is the scope a variable is named with.
type scope uint8

const (
	scopeNone    scope = iota // no modifier: @@x, or x in SET
	scopeGlobal               // GLOBAL, @@global.
	scopeSession              // SESSION, LOCAL, @@session., @@local.
)

// literal is a value in a statement.
type literal struct {
	kind tokKind // tokNumber, tokString or tokWord
	text string  // as written for numbers (with sign) and words; unescaped for strings
}

// statement is one parsed admin statement.
type statement interface{ stmt() }

// showVariables is SHOW [GLOBAL|SESSION] VARIABLES [LIKE 'p'].
type showVariables struct{ like *string }

// showStatus is SHOW [GLOBAL|SESSION] STATUS [LIKE 'p'].
type showStatus struct{ like *string }

// showTables is SHOW [FULL] TABLES [FROM|IN db] [LIKE 'p']: the views.
type showTables struct {
	db   string // "" when not named
	like *string
}

// showColumns is SHOW [FULL] COLUMNS|FIELDS FROM|IN t [FROM|IN db]
// [LIKE 'p'], DESCRIBE t and DESC t.
type showColumns struct {
	db, table string
	like      *string
}

// showProcesslist is SHOW [FULL] PROCESSLIST.
type showProcesslist struct{ full bool }

// selectVars is SELECT @@x [AS a], ... [LIMIT ...].
type selectVars struct {
	items []varItem
	limit limit
}

// varItem is one @@[scope.]name in a select list.
type varItem struct {
	scope  scope
	name   string
	header string // the column name: the alias, or the expression as written
}

// setStmt is SET with one or more assignments.
type setStmt struct{ assigns []assignment }

// assignment is one name = value of a SET.
type assignment struct {
	scope scope
	name  string // lower case
	value literal
	// charset marks SET NAMES and SET CHARACTER SET, which have no name.
	charset bool
}

// selectSQL is any other SELECT (or WITH ... SELECT): the SQL engine
// answers it over the views.
type selectSQL struct{ q string }

// limit is LIMIT count [OFFSET offset]; count < 0 means no limit.
type limit struct{ count, offset int64 }

var noLimit = limit{count: -1}

// apply cuts rows to the limit.
func (l limit) apply(rows [][]any) [][]any {
	if l.offset >= int64(len(rows)) {
		return nil
	}
	rows = rows[l.offset:]
	if l.count >= 0 && l.count < int64(len(rows)) {
		rows = rows[:l.count]
	}
	return rows
}

// flushStats is FLUSH THREAD_POOL_STATS.
type flushStats struct{}

// flushHosts is FLUSH HOSTS: unblock the client addresses
// max_connect_errors blocked.
type flushHosts struct{}

// kill is KILL [CONNECTION|QUERY] id.
type kill struct {
	query bool
	id    string // as written: it may not fit a session id
}

func (showVariables) stmt()   {}
func (showStatus) stmt()      {}
func (showProcesslist) stmt() {}
func (showTables) stmt()      {}
func (showColumns) stmt()     {}
func (selectVars) stmt()      {}
func (setStmt) stmt()         {}
func (selectSQL) stmt()       {}
func (flushStats) stmt()      {}
func (flushHosts) stmt()      {}
func (kill) stmt()            {}

// parser reads one statement from its tokens.
type parser struct {
	q    string
	toks []token
	i    int
}

// parse parses one admin statement with an optional trailing semicolon.
func parse(q string) (statement, error) {
	toks, err := lex(q)
	if err != nil {
		return nil, err
	}
	p := &parser{q: q, toks: toks}
	for p.peek().is(";") {
		p.i++
	}
	if p.peek().kind == tokEOF {
		return nil, newErr(errEmpty, "Query was empty")
	}
	var st statement
	switch t := p.next(); {
	case t.isWord("show"):
		st, err = p.show()
	case t.isWord("set"):
		st, err = p.set()
	case t.isWord("select") && p.peek().is("@@"):
		// SELECT @@x, ... [LIMIT n] is answered here; anything more
		// (SELECT @@x + 1, SELECT @@x, COUNT(*) FROM ...) by the engine.
		if st, err = p.selectVars(); err != nil || !(p.peek().is(";") || p.peek().kind == tokEOF) {
			return selectSQL{q: q}, nil
		}
	case t.isWord("select") || t.isWord("with"):
		return selectSQL{q: q}, nil
	case t.isWord("flush"):
		switch {
		case p.word("thread_pool_stats"):
			st = flushStats{}
		case p.word("hosts"):
			st = flushHosts{}
		default:
			return nil, unsupported()
		}
	case t.isWord("kill"):
		st, err = p.kill()
	case t.isWord("describe") || t.isWord("desc") || t.isWord("explain") && !p.peek().isWord("select"):
		var sc showColumns
		if sc.db, sc.table, err = p.tableName(); err == nil {
			st = sc
		}
	default:
		return nil, unsupported()
	}
	if err != nil {
		return nil, err
	}
	for p.peek().is(";") {
		p.i++
	}
	if p.peek().kind != tokEOF {
		return nil, p.errHere()
	}
	return st, nil
}

func (p *parser) peek() token { return p.toks[p.i] }

// next consumes a token; at the end it keeps returning tokEOF.
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

// word consumes the keyword kw if it comes next.
func (p *parser) word(kw string) bool {
	if p.peek().isWord(kw) {
		p.i++
		return true
	}
	return false
}

// punct consumes the operator op if it comes next.
func (p *parser) punct(op string) bool {
	if p.peek().is(op) {
		p.i++
		return true
	}
	return false
}

// errHere is a syntax error at the next token.
func (p *parser) errHere() error { return syntaxError(p.q, p.peek().pos) }

// ident reads an identifier, quoted or not.
func (p *parser) ident() (string, error) {
	t := p.peek()
	if t.kind != tokWord && t.kind != tokQuoted {
		return "", p.errHere()
	}
	p.i++
	return t.text, nil
}

// pattern reads LIKE 'pattern' if it comes next.
func (p *parser) pattern() (*string, error) {
	if !p.word("like") {
		return nil, nil
	}
	t := p.next()
	if t.kind != tokString {
		return nil, syntaxError(p.q, t.pos)
	}
	return &t.text, nil
}

func (p *parser) show() (statement, error) {
	full := p.word("full")
	switch {
	case p.word("tables"):
		var st showTables
		if p.word("from") || p.word("in") {
			db, err := p.ident()
			if err != nil {
				return nil, err
			}
			st.db = db
		}
		var err error
		st.like, err = p.pattern()
		return st, err
	case p.word("columns") || p.word("fields"):
		if !p.word("from") && !p.word("in") {
			return nil, p.errHere()
		}
		var st showColumns
		var err error
		if st.db, st.table, err = p.tableName(); err != nil {
			return nil, err
		}
		if p.word("from") || p.word("in") {
			if st.db, err = p.ident(); err != nil {
				return nil, err
			}
		}
		st.like, err = p.pattern()
		return st, err
	}
	if full {
		if !p.word("processlist") {
			return nil, unsupported()
		}
		return showProcesslist{full: true}, nil
	}
	if p.word("processlist") {
		return showProcesslist{}, nil
	}
	_ = p.word("global") || p.word("session") || p.word("local")
	switch {
	case p.word("variables"):
		like, err := p.pattern()
		return showVariables{like: like}, err
	case p.word("status"):
		like, err := p.pattern()
		return showStatus{like: like}, err
	}
	return nil, unsupported()
}

// tableName reads [db.]table.
func (p *parser) tableName() (db, table string, err error) {
	if table, err = p.ident(); err != nil {
		return "", "", err
	}
	if p.punct(".") {
		db = table
		table, err = p.ident()
	}
	return db, table, err
}

func (p *parser) kill() (statement, error) {
	var k kill
	if p.word("query") {
		k.query = true
	} else {
		_ = p.word("connection")
	}
	t := p.next()
	if t.kind != tokNumber || strings.ContainsAny(t.text, ".eE") {
		return nil, syntaxError(p.q, t.pos)
	}
	k.id = t.text
	return k, nil
}

// sysVar reads [scope.]name after @@.
func (p *parser) sysVar() (scope, string, error) {
	name, err := p.ident()
	if err != nil {
		return 0, "", err
	}
	if !p.peek().is(".") {
		return scopeNone, name, nil
	}
	var sc scope
	switch strings.ToLower(name) {
	case "global":
		sc = scopeGlobal
	case "session", "local":
		sc = scopeSession
	default:
		return 0, "", p.errHere()
	}
	p.i++
	name, err = p.ident()
	return sc, name, err
}

// set reads the assignments of SET. A GLOBAL or SESSION keyword applies to
// the assignments after it that have no scope of their own, as in MySQL.
func (p *parser) set() (statement, error) {
	var st setStmt
	sticky := scopeNone
	for {
		a := assignment{}
		switch {
		case p.word("names"):
			a.charset = true
			if err := p.charsetValue(true); err != nil {
				return nil, err
			}
		case p.word("charset"):
			a.charset = true
			if err := p.charsetValue(false); err != nil {
				return nil, err
			}
		case p.peek().isWord("character") && p.toks[p.i+1].isWord("set"):
			p.i += 2
			a.charset = true
			if err := p.charsetValue(false); err != nil {
				return nil, err
			}
		default:
			if err := p.assignment(&a, &sticky); err != nil {
				return nil, err
			}
		}
		st.assigns = append(st.assigns, a)
		if !p.punct(",") {
			return st, nil
		}
	}
}

// assignment reads [GLOBAL|SESSION|LOCAL] name = value or
// @@[scope.]name = value.
func (p *parser) assignment(a *assignment, sticky *scope) error {
	switch {
	case p.punct("@@"):
		sc, name, err := p.sysVar()
		if err != nil {
			return err
		}
		a.scope, a.name = sc, name
	case p.peek().is("@"):
		return unsupported() // user variables
	default:
		switch {
		case p.word("global"):
			*sticky = scopeGlobal
		case p.word("session"), p.word("local"):
			*sticky = scopeSession
		}
		if p.punct("@@") {
			sc, name, err := p.sysVar()
			if err != nil {
				return err
			}
			a.scope, a.name = sc, name
		} else {
			name, err := p.ident()
			if err != nil {
				return err
			}
			a.name = name
		}
	}
	if a.scope == scopeNone {
		a.scope = *sticky
	}
	a.name = strings.ToLower(a.name)
	if !p.punct("=") && !p.punct(":=") {
		return p.errHere()
	}
	v, err := p.value()
	if err != nil {
		return err
	}
	a.value = v
	return nil
}

// charsetValue reads the charset of SET NAMES / CHARACTER SET and, for
// NAMES, an optional COLLATE. The admin port ignores both.
func (p *parser) charsetValue(collate bool) error {
	if _, err := p.value(); err != nil {
		return err
	}
	if collate && p.word("collate") {
		if _, err := p.value(); err != nil {
			return err
		}
	}
	return nil
}

// value reads a number (with an optional sign), a string or a word.
func (p *parser) value() (literal, error) {
	sign := ""
	if p.peek().is("-") || p.peek().is("+") {
		sign = p.next().text
		if p.peek().kind != tokNumber {
			return literal{}, p.errHere()
		}
	}
	t := p.next()
	switch t.kind {
	case tokNumber:
		return literal{kind: tokNumber, text: sign + t.text}, nil
	case tokString:
		return literal{kind: tokString, text: t.text}, nil
	case tokWord, tokQuoted:
		return literal{kind: tokWord, text: t.text}, nil
	}
	return literal{}, syntaxError(p.q, t.pos)
}

// alias reads [AS] alias, where a bare word other than stop is an alias.
func (p *parser) alias(stop string) (string, error) {
	if p.word("as") {
		return p.ident()
	}
	t := p.peek()
	if (t.kind == tokWord && !t.isWord(stop) && !t.isWord("limit")) || t.kind == tokQuoted {
		p.i++
		return t.text, nil
	}
	return "", nil
}

func (p *parser) selectVars() (statement, error) {
	var st selectVars
	for {
		start := p.peek().pos
		if !p.punct("@@") {
			return nil, unsupported()
		}
		sc, name, err := p.sysVar()
		if err != nil {
			return nil, err
		}
		header := p.q[start:p.toks[p.i-1].end]
		alias, err := p.alias("from")
		if err != nil {
			return nil, err
		}
		if alias != "" {
			header = alias
		}
		st.items = append(st.items, varItem{scope: sc, name: strings.ToLower(name), header: header})
		if !p.punct(",") {
			break
		}
	}
	if p.peek().isWord("from") {
		return nil, unsupported()
	}
	var err error
	st.limit, err = p.limit()
	return st, err
}

// limit reads [LIMIT n [OFFSET m] | LIMIT m, n].
func (p *parser) limit() (limit, error) {
	if !p.word("limit") {
		return noLimit, nil
	}
	n, err := p.count()
	if err != nil {
		return limit{}, err
	}
	switch {
	case p.punct(","):
		m, err := p.count()
		return limit{count: m, offset: n}, err
	case p.word("offset"):
		m, err := p.count()
		return limit{count: n, offset: m}, err
	}
	return limit{count: n}, nil
}

// count reads a non-negative integer.
func (p *parser) count() (int64, error) {
	t := p.peek()
	if t.kind != tokNumber {
		return 0, p.errHere()
	}
	n, err := strconv.ParseInt(t.text, 10, 64)
	if err != nil {
		return 0, p.errHere()
	}
	p.i++
	return n, nil
}
