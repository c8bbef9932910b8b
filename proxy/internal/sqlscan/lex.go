package sqlscan

import "bytes"

// tokKind is the lexical class of a token.
type tokKind uint8

const (
	tokEOF         tokKind = iota
	tokWord                // unquoted identifier or keyword, including one that starts with digits (1a, 0x1g)
	tokQuotedIdent         // `...`, or "..." under ANSI_QUOTES
	tokString              // '...', "..." (without ANSI_QUOTES), N'...', X'...', B'...'
	tokNumber              // 12, 1.5, .5, 1e-3, 0x1F, 0b101
	tokUserVar             // '@' (not "@@") and the name after it: @x, @a.b, @'x', @"x", @`x`
	tokSysVar              // @@[scope.][component.]name
	tokPunct               // any other single byte
)

// tag is what the scanner remembers of a token once it has passed.
type tag struct {
	kind tokKind
	b    byte // the byte of a tokPunct
	// kw is the keyword of the name of a word, a quoted identifier or a system
	// variable (the name after the scope of @@scope.name).
	kw keyword
}

func (t tag) isPunct(b byte) bool { return t.kind == tokPunct && t.b == b }

// isWord reports whether t is the unquoted keyword kw; quoted identifiers never are.
func (t tag) isWord(kw keyword) bool { return t.kind == tokWord && t.kw == kw }

// isName reports whether t is an identifier, quoted or not.
func (t tag) isName() bool { return t.kind == tokWord || t.kind == tokQuotedIdent }

// token is one lexeme of q, kept small because it is passed around by value for
// every lexeme. Positions index q; nothing is copied.
type token struct {
	tag
	attr       uint8 // tokTrack, tokQualified
	start, end int
}

// token attributes. (A token keeps to four fields, so that the compiler can keep it
// in registers.)
const (
	// tokTrack: the name (as for kw) starts with "session_track_".
	tokTrack uint8 = 1 << iota
	// tokQualified: a system variable written with a scope or a component
	// (@@session.x, @@keycache.x), not as plain @@x.
	tokQualified
)

func (t token) track() bool     { return t.attr&tokTrack != 0 }
func (t token) qualified() bool { return t.attr&tokQualified != 0 }

// lexer splits q into tokens the way the server does for a session in a given Mode,
// skipping whitespace and comments, and treating the body of executed executable
// comments (/*! */, /*!NNNNN */, /*M! */, /*M!NNNNNN */) as code. It is a single
// forward pass: every byte is looked at a bounded number of times, whatever the input.
type lexer struct {
	q    []byte
	pos  int
	exec bool // inside an executed executable comment, whose "*/" is whitespace
	cls  *[256]uint8
	// The parts of the Mode the lexer needs.
	version uint32
	mariadb bool
	nbe     bool // NO_BACKSLASH_ESCAPES
	ansi    bool // ANSI_QUOTES
	mb      bool // the character set has two-byte characters with ASCII trail bytes
	// wordEnd is where the last unquoted identifier ended. A '.' right there followed
	// by an identifier byte separates two parts of a qualified name, and the part
	// after it (at identAt) is an identifier even if it starts with digits.
	wordEnd, identAt int
}

func newLexer(q []byte, m Mode) lexer {
	var l lexer
	l.init(q, m)
	return l
}

// init sets l up to lex q per m. (In place: a scanner holding the lexer is large
// enough that building it from a returned lexer costs copies.)
func (l *lexer) init(q []byte, m Mode) {
	cs := m.Charset
	if cs >= nCharsets {
		cs = MBNone
	}
	l.q = q
	l.cls = &charClasses[cs]
	l.version = m.Version
	l.mariadb = m.MariaDB
	l.nbe = m.NoBackslashEscapes
	l.ansi = m.AnsiQuotes
	l.mb = cs == MBBig5 || cs == MBGBK || cs == MBSJIS
	l.wordEnd, l.identAt = -1, -1
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// isIdent reports whether c may appear in an unquoted identifier; bytes of multi-byte
// UTF-8 characters all may.
func isIdent(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '$' || c >= 0x80
}

// next returns the next token, or a tokEOF token at the end of q.
func (l *lexer) next() token {
	l.skip()
	q, p := l.q, l.pos
	if p >= len(q) {
		return token{tag: tag{kind: tokEOF}, start: p, end: p}
	}
	c := q[p]
	var t token
	switch {
	case p == l.identAt:
		t = l.word(p)
	case c == '\'' || c == '"' && !l.ansi:
		t = token{tag: tag{kind: tokString}, start: p, end: l.stringEnd(p, c)}
	case c == '`' || c == '"':
		end, content := l.quotedEnd(p, c)
		t = token{tag: tag{kind: tokQuotedIdent}, start: p, end: end}
		if content < end { // an unterminated one, which the server rejects, gets no name
			t.setName(q[p+1 : content])
		}
	case c == '@':
		if p+1 < len(q) && q[p+1] == '@' {
			t = l.sysVar(p)
		} else {
			t = l.userVar(p)
		}
	case isDigit(c):
		t = l.number(p)
	case c == '.':
		t = l.dot(p)
	case l.cls[c]&cIdent != 0:
		end := p + 1
		if end < len(q) && q[end] == '\'' && (c|0x20 == 'n' || c|0x20 == 'x' || c|0x20 == 'b') {
			// N'national', X'hex', B'bits': one literal.
			t = token{tag: tag{kind: tokString}, start: p, end: l.stringEnd(end, '\'')}
			break
		}
		if l.mb {
			end = l.identEnd(p)
		} else {
			for cls := l.cls; end < len(q) && cls[q[end]]&cIdent != 0; end++ {
			}
		}
		l.wordEnd = end
		t = token{tag: tag{kind: tokWord}, start: p, end: end}
		t.setName(q[p:end])
	default:
		t = token{tag: tag{kind: tokPunct, b: c}, start: p, end: p + 1}
	}
	l.pos = t.end
	return t
}

// dot lexes a '.' at p: the separator of a qualified name, or the start of a number.
func (l *lexer) dot(p int) token {
	q := l.q
	switch {
	case p == l.wordEnd && p+1 < len(q) && l.cls[q[p+1]]&cIdent != 0:
		l.identAt = p + 1 // t.col: col is an identifier, even 1e5
	case p+1 < len(q) && isDigit(q[p+1]):
		return token{tag: tag{kind: tokNumber}, start: p, end: l.fraction(p)}
	}
	return token{tag: tag{kind: tokPunct, b: '.'}, start: p, end: p + 1}
}

// word lexes an unquoted identifier at p.
func (l *lexer) word(p int) token {
	end := l.identEnd(p)
	l.wordEnd = end
	t := token{tag: tag{kind: tokWord}, start: p, end: end}
	t.setName(l.q[p:end])
	return t
}

// number lexes what starts with a digit the way the server does: 0x1F and 0b101 hex
// and bit literals, 12, 1.5, 1e-3 numbers, and anything else that continues with
// identifier bytes (1a, 0x1g, 1e) an identifier.
func (l *lexer) number(p int) token {
	q := l.q
	t := token{tag: tag{kind: tokNumber}, start: p}
	i := p + 1
	if q[p] == '0' && i < len(q) && (q[i] == 'x' || q[i] == 'b') {
		j := i + 1
		if q[i] == 'x' {
			for j < len(q) && isHex(q[j]) {
				j++
			}
		} else {
			for j < len(q) && (q[j] == '0' || q[j] == '1') {
				j++
			}
		}
		if j > i+1 && (j == len(q) || l.cls[q[j]]&cIdent == 0) {
			t.end = j
			return t
		}
		return l.word(p)
	}
	for i < len(q) && isDigit(q[i]) {
		i++
	}
	if i < len(q) && l.cls[q[i]]&cIdent != 0 {
		if c := q[i]; c == 'e' || c == 'E' {
			j := i + 1
			if j+1 < len(q) && (q[j] == '+' || q[j] == '-') && isDigit(q[j+1]) {
				j++
			}
			if j < len(q) && isDigit(q[j]) {
				for j < len(q) && isDigit(q[j]) {
					j++
				}
				t.end = j
				return t
			}
		}
		return l.word(p)
	}
	if i < len(q) && q[i] == '.' && !(i+1 < len(q) && q[i+1] == '.') {
		i = l.fraction(i)
	}
	t.end = i
	return t
}

// fraction returns the end of the fractional part of a number whose '.' is at i,
// exponent included.
func (l *lexer) fraction(i int) int {
	q := l.q
	i++
	for i < len(q) && isDigit(q[i]) {
		i++
	}
	if i < len(q) && (q[i] == 'e' || q[i] == 'E') {
		j := i + 1
		if j < len(q) && (q[j] == '+' || q[j] == '-') {
			j++
		}
		if j < len(q) && isDigit(q[j]) {
			for j < len(q) && isDigit(q[j]) {
				j++
			}
			i = j
		}
	}
	return i
}

// userVar lexes a user variable: '@' and its name, which the server reads byte by
// byte (letters, digits, '.', '_', '$'), or a quoted name right after the '@'.
func (l *lexer) userVar(p int) token {
	q := l.q
	t := token{tag: tag{kind: tokUserVar}, start: p}
	e := p + 1
	if e < len(q) {
		switch c := q[e]; {
		case c == '\'' || c == '"' && !l.ansi:
			e = l.stringEnd(e, c)
		case c == '`' || c == '"':
			e, _ = l.quotedEnd(e, c)
		default:
			for e < len(q) && l.cls[q[e]]&cHost != 0 {
				e++
			}
		}
	}
	t.end = e
	return t
}

// sysVar lexes @@name, @@scope.name, @@component.name and @@scope.component.name, each
// part optionally backquoted. Its name is the last part, so that @@session.insert_id
// and @@insert_id look alike to the scanner.
func (l *lexer) sysVar(p int) token {
	v := l.sysVarParts(p)
	t := token{tag: tag{kind: tokSysVar}, start: p, end: v.end}
	t.setName(l.q[v.name0:v.name1])
	if v.parts > 1 {
		t.attr |= tokQualified
	}
	return t
}

// sysVarText is where the parts of a system variable are.
type sysVarText struct {
	scope        keyword // the scope, kwNone if none was written
	parts        int     // parts written, the scope included
	raw0         int     // where the name as typed starts after @@ and the scope (a component included)
	name0, name1 int     // the last part, without backquotes
	end          int     // the end of the token
}

// sysVarParts splits the system variable at p ("@@..."). The server reads the first
// part byte by byte (ident_map), the parts after a '.' as identifiers.
func (l *lexer) sysVarParts(p int) (v sysVarText) {
	q := l.q
	var raw, c0, c1 [3]int
	i := p + 2
	n := 0
	for {
		raw[n] = i
		switch {
		case i < len(q) && q[i] == '`':
			e, content := l.quotedEnd(i, '`')
			if content == e {
				content = i + 1 // unterminated, the server rejects it: no name
			}
			c0[n], c1[n], i = i+1, content, e
		case n == 0:
			e := i
			for e < len(q) && l.cls[q[e]]&cSys != 0 {
				e++
			}
			c0[n], c1[n], i = i, e, e
		default:
			e := l.identEnd(i)
			c0[n], c1[n], i = i, e, e
		}
		n++
		if n == len(raw) || i+1 >= len(q) || q[i] != '.' || l.cls[q[i+1]]&cIdent == 0 && q[i+1] != '`' {
			break
		}
		i++
	}
	v.end, v.parts = i, n
	first := 0
	if n > 1 {
		if kw := lookup(q[c0[0]:c1[0]]); isScope(kw) {
			v.scope, first = kw, 1
		}
	}
	v.raw0 = raw[first]
	v.name0, v.name1 = c0[n-1], c1[n-1]
	return v
}

// setName records what the scanner needs to know of a name.
func (t *token) setName(name []byte) {
	t.kw = lookup(name)
	if len(name) > len(trackPrefix) && hasPrefixFold(name, trackPrefix) {
		t.attr |= tokTrack
	}
}

// trackPrefix starts the names of the variables that configure session tracking.
const trackPrefix = "session_track_"

// identEnd returns the end of the unquoted identifier at i in the default mode.
func identEnd(q []byte, i int) int {
	for i < len(q) && isIdent(q[i]) {
		i++
	}
	return i
}

// identEnd returns the end of the unquoted identifier at i: a lead byte followed by
// a trail byte is one character, whatever the trail byte.
func (l *lexer) identEnd(i int) int {
	q, cls := l.q, l.cls
	if !l.mb {
		for i < len(q) && cls[q[i]]&cIdent != 0 {
			i++
		}
		return i
	}
	for i < len(q) && cls[q[i]]&cIdent != 0 {
		if cls[q[i]]&cLead != 0 && i+1 < len(q) && cls[q[i+1]]&cTrail != 0 {
			i += 2
		} else {
			i++
		}
	}
	return i
}

// skip moves past whitespace, comments and the delimiters of executable comments.
func (l *lexer) skip() {
	q, p, cls := l.q, l.pos, l.cls
	for p < len(q) {
		c := q[p]
		switch {
		case cls[c]&cSpace != 0:
			p++
		case c == '#':
			p = lineEnd(q, p)
		case c == '-' && p+1 < len(q) && q[p+1] == '-' &&
			(p+2 == len(q) || isCommentSpace(q[p+2]) || cls[q[p+2]]&cSpace != 0):
			p = lineEnd(q, p)
		case c == '/' && p+1 < len(q) && q[p+1] == '*':
			p = l.comment(p)
		case c == '*' && l.exec && p+1 < len(q) && q[p+1] == '/':
			l.exec = false
			p += 2
		default:
			l.pos = p
			return
		}
	}
	l.pos = p
}

// comment handles the comment that opens at p and returns where lexing resumes: after
// a plain or a skipped comment, or at the body of an executed one.
//
// The rules are the server's (MY_LEX_LONG_COMMENT): after "/*!" (or MariaDB's "/*M!")
// five digits, or six on MariaDB, are a version. A versioned comment runs if the
// server is at least that version (MariaDB leaves out /*!50700-/*!99999, written for
// MySQL 5.7 and later, but not /*M!); otherwise it is skipped, allowing one nested
// comment inside. Without five digits the comment is no versioned one and runs, the
// digits included. Inside a running comment another one may open; the first "*/"
// outside a plain comment ends them all. With an unknown version every executable
// comment runs and all its version digits are skipped.
func (l *lexer) comment(p int) int {
	q := l.q
	i := p + 2
	maria := false
	switch {
	case i < len(q) && q[i] == '!':
		i++
	case i+1 < len(q) && q[i] == 'M' && q[i+1] == '!' && (l.version == 0 || l.mariadb):
		i += 2
		maria = true
	default:
		// A plain comment, also inside an executable one: comments do not nest,
		// so its "*/" ends only itself.
		return blockEnd(q, p+2)
	}
	if l.version == 0 {
		for i < len(q) && isDigit(q[i]) {
			i++
		}
		l.exec = true
		return i
	}
	if i+5 > len(q) || !isDigit(q[i]) || !isDigit(q[i+1]) || !isDigit(q[i+2]) || !isDigit(q[i+3]) || !isDigit(q[i+4]) {
		l.exec = true // no version: the body, digits and all, is code
		return i
	}
	var v uint32
	n := 5
	if l.mariadb && i+5 < len(q) && isDigit(q[i+5]) {
		n = 6
	}
	for _, c := range q[i : i+n] {
		v = v*10 + uint32(c-'0')
	}
	run := v <= l.version
	if l.mariadb {
		run = run && (v < 50700 || v > 99999 || maria)
	}
	if run {
		l.exec = true
		return i + n
	}
	return skippedEnd(q, i+n)
}

// skippedEnd returns the end of a versioned comment that does not run, whose body
// starts at i: its first "*/", except that one "/*" inside opens a nested comment
// whose own "*/" does not count. Quotes mean nothing in there.
func skippedEnd(q []byte, i int) int {
	for i < len(q) {
		j := bytes.IndexAny(q[i:], "*/")
		if j < 0 {
			break
		}
		i += j
		switch {
		case q[i] == '/' && i+1 < len(q) && q[i+1] == '*':
			i = blockEnd(q, i+2)
		case q[i] == '*' && i+1 < len(q) && q[i+1] == '/':
			return i + 2
		default:
			i++
		}
	}
	return len(q)
}

// isCommentSpace reports whether c after "--" makes a comment: the server wants
// whitespace or a control character there, so "1--1" stays arithmetic.
func isCommentSpace(c byte) bool { return c <= ' ' || c == 0x7f }

// lineEnd returns where a '#' or "-- " comment starting at p ends: at the newline, or
// at a NUL byte, where the server's lexer stops too.
func lineEnd(q []byte, p int) int {
	rest := q[p:]
	e := bytes.IndexByte(rest, '\n')
	if e < 0 {
		e = len(rest)
	}
	if z := bytes.IndexByte(rest[:e], 0); z >= 0 {
		e = z
	}
	return p + e
}

// blockEnd returns the position after the "*/" that closes a comment whose body
// starts at i, or len(q) when it is unterminated.
func blockEnd(q []byte, i int) int {
	j := bytes.Index(q[i:], []byte("*/"))
	if j < 0 {
		return len(q)
	}
	return i + j + 2
}

// stringEnd returns the position after the string literal that opens with quote at
// p, per the mode; an unterminated string runs to the end.
func (l *lexer) stringEnd(p int, quote byte) int {
	switch {
	case l.mb:
		return l.mbStringEnd(p, quote)
	case l.nbe:
		end, _ := quotedEnd(l.q, p, quote)
		return end
	}
	return stringEnd(l.q, p, quote)
}

// quotedEnd returns the end of the quoted identifier that opens at p and the end of
// its content, per the mode.
func (l *lexer) quotedEnd(p int, quote byte) (end, content int) {
	if l.mb {
		return l.mbQuotedEnd(p, quote)
	}
	return quotedEnd(l.q, p, quote)
}

// stringEnd returns the position after the string literal that opens with quote at p,
// honouring backslash escapes and doubled quotes; an unterminated string runs to the
// end. The position of the next quote is remembered across escapes, so a long run of
// backslashes costs one pass, not one pass per backslash.
func stringEnd(q []byte, p int, quote byte) int {
	i := p + 1
	next := -1 // index of the first quote at or after i, valid while next >= i
	for {
		if next < i {
			j := bytes.IndexByte(q[i:], quote)
			if j < 0 {
				return len(q)
			}
			next = i + j
		}
		if k := bytes.IndexByte(q[i:next], '\\'); k >= 0 {
			i += k + 2 // the escaped byte is at most next, so i <= len(q)
			continue
		}
		i = next + 1
		if i < len(q) && q[i] == quote {
			i++
			continue
		}
		return i
	}
}

// quotedEnd returns the end of the text quoted with quote that opens at p and the end
// of its content, where only a doubled quote stands for one: a quoted identifier, or a
// string under NO_BACKSLASH_ESCAPES.
func quotedEnd(q []byte, p int, quote byte) (end, content int) {
	i := p + 1
	for {
		j := bytes.IndexByte(q[i:], quote)
		if j < 0 {
			return len(q), len(q)
		}
		i += j + 1
		if i < len(q) && q[i] == quote {
			i++
			continue
		}
		return i, i - 1
	}
}

// mbStringEnd is stringEnd for a character set with ASCII trail bytes: a lead byte
// and its trail are one character, so the trail is neither an escape nor a quote. A
// backslash escapes the next byte, whatever it is.
func (l *lexer) mbStringEnd(p int, quote byte) int {
	q, cls := l.q, l.cls
	for i := p + 1; i < len(q); {
		c := q[i]
		switch {
		case c < 0x80 && c != quote && c != '\\':
			i++
		case cls[c]&cLead != 0 && i+1 < len(q) && cls[q[i+1]]&cTrail != 0:
			i += 2
		case c == '\\' && !l.nbe:
			i += 2
		case c == quote:
			if i+1 < len(q) && q[i+1] == quote {
				i += 2
				continue
			}
			return i + 1
		default:
			i++
		}
	}
	return len(q)
}

// mbQuotedEnd is quotedEnd for a character set with ASCII trail bytes.
func (l *lexer) mbQuotedEnd(p int, quote byte) (end, content int) {
	q, cls := l.q, l.cls
	for i := p + 1; i < len(q); {
		c := q[i]
		switch {
		case cls[c]&cLead != 0 && i+1 < len(q) && cls[q[i+1]]&cTrail != 0:
			i += 2
		case c == quote:
			if i+1 < len(q) && q[i+1] == quote {
				i += 2
				continue
			}
			return i + 1, i
		default:
			i++
		}
	}
	return len(q), len(q)
}
