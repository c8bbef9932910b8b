package sqlscan

import "bytes"

// tokKind is the lexical class of a token.
type tokKind uint8

const (
	tokEOF         tokKind = iota
	tokWord                // unquoted identifier or keyword
	tokQuotedIdent         // `...`
	tokString              // '...' or "..."
	tokNumber              // starts with a digit; runs over identifier bytes and '.'
	tokUserVar             // '@' (not "@@") and the unquoted name after it, if any
	tokSysVar              // @@[scope.]name
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

// token is one lexeme of q, kept small because it is passed around by value for
// every lexeme. Positions index q; nothing is copied.
type token struct {
	tag
	// track: the name (as for kw) starts with "session_track_".
	track      bool
	start, end int
}

// lexer splits q into tokens, skipping whitespace and comments, and treating the body
// of executable comments (/*! */, /*!NNNNN */, /*M! */, /*M!NNNNNN */) as code, the way
// the server does. It is a single forward pass: every byte is looked at a bounded
// number of times, whatever the input.
type lexer struct {
	q    []byte
	pos  int
	exec bool // inside an executable comment, whose "*/" is whitespace
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

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
	t := token{start: p}
	switch {
	case c == '\'' || c == '"':
		t.kind = tokString
		t.end = stringEnd(q, p, c)
	case c == '`':
		t.kind = tokQuotedIdent
		var content int
		t.end, content = backtickEnd(q, p)
		t.setName(q[p+1 : content])
	case c == '@' && p+1 < len(q) && q[p+1] == '@':
		t = l.sysVar(p)
	case c == '@':
		// The server accepts '.' in unquoted user variable names.
		t.kind = tokUserVar
		t.end = p + 1
		for t.end < len(q) && (isIdent(q[t.end]) || q[t.end] == '.') {
			t.end++
		}
	case isDigit(c):
		// Numbers, hex literals and identifiers that start with a digit alike; only
		// KILL looks at the text, and it wants plain digits.
		t.kind = tokNumber
		t.end = p + 1
		for t.end < len(q) && (isIdent(q[t.end]) || q[t.end] == '.') {
			t.end++
		}
	case isIdent(c):
		t.kind = tokWord
		t.end = identEnd(q, p)
		t.setName(q[p:t.end])
	default:
		t.kind = tokPunct
		t.b = c
		t.end = p + 1
	}
	l.pos = t.end
	return t
}

// sysVar lexes @@name, @@scope.name, with either part optionally backquoted. Its
// name is the part after the scope, so that @@session.insert_id and @@insert_id look
// alike to the scanner.
func (l *lexer) sysVar(p int) token {
	q := l.q
	t := token{tag: tag{kind: tokSysVar}, start: p}
	n0, n1, end := namePart(q, p+2)
	if end < len(q) && q[end] == '.' && isScope(lookup(q[n0:n1])) {
		n0, n1, end = namePart(q, end+1)
	}
	t.end = end
	t.setName(q[n0:n1])
	return t
}

// setName records what the scanner needs to know of a name.
func (t *token) setName(name []byte) {
	t.kw = lookup(name)
	t.track = len(name) > len(trackPrefix) && hasPrefixFold(name, trackPrefix)
}

// trackPrefix starts the names of the variables that configure session tracking.
const trackPrefix = "session_track_"

// namePart lexes one part of a system variable name at i: identifier bytes or a
// backquoted identifier. It returns the bounds of the name and the end of the part.
func namePart(q []byte, i int) (n0, n1, end int) {
	if i < len(q) && q[i] == '`' {
		end, n1 = backtickEnd(q, i)
		return i + 1, n1, end
	}
	end = identEnd(q, i)
	return i, end, end
}

func identEnd(q []byte, i int) int {
	for i < len(q) && isIdent(q[i]) {
		i++
	}
	return i
}

// skip moves past whitespace, comments and the delimiters of executable comments.
func (l *lexer) skip() {
	q, p := l.q, l.pos
	for p < len(q) {
		c := q[p]
		switch {
		case isSpace(c):
			p++
		case c == '#':
			p = lineEnd(q, p)
		case c == '-' && p+1 < len(q) && q[p+1] == '-' && (p+2 == len(q) || isCommentSpace(q[p+2])):
			p = lineEnd(q, p)
		case c == '/' && p+1 < len(q) && q[p+1] == '*':
			if !l.exec {
				if body := execBody(q, p); body > 0 {
					l.exec = true
					p = body
					continue
				}
			}
			// A plain comment, also inside an executable one: comments do not nest,
			// so its "*/" ends only itself.
			p = blockEnd(q, p+2)
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

// execBody returns where the body of an executable comment opening at p starts (after
// "/*!" or "/*M!" and any version digits), or 0 if the comment at p is a plain one.
func execBody(q []byte, p int) int {
	i := p + 2
	switch {
	case i < len(q) && q[i] == '!':
		i++
	case i+1 < len(q) && q[i] == 'M' && q[i+1] == '!':
		i += 2
	default:
		return 0
	}
	for i < len(q) && isDigit(q[i]) {
		i++
	}
	return i
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

// backtickEnd returns the end of the quoted identifier that opens at p and the end of
// its content; a doubled backquote inside stands for one.
func backtickEnd(q []byte, p int) (end, content int) {
	i := p + 1
	for {
		j := bytes.IndexByte(q[i:], '`')
		if j < 0 {
			return len(q), len(q)
		}
		i += j + 1
		if i < len(q) && q[i] == '`' {
			i++
			continue
		}
		return i, i - 1
	}
}
