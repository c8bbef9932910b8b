package sqlscan

// Mentions calls fn for every unquoted word and quoted identifier in code (not inside strings or
// comments; not user-variable or system-variable names; keywords included, the caller filters by
// its own name set), in order. qual is the identifier right before a '.' that precedes the name
// (`db.f(` gives qual "db", name "f"; `a.b.c` gives (nil,a), (a,b), (b,c)), nil when unqualified.
// Backquotes (and ANSI double quotes) are stripped; letter case is left as typed. fn returns true
// to stop. It allocates nothing itself.
//
// Both slices are sub-slices of q, so a doubled quote inside a quoted identifier
// stays doubled. Identifiers that start with digits (1a, t.1e5) are names too, as for
// the server; the letters of N'..', X'..' and B'..' literals are not.
func Mentions(q []byte, m Mode, fn func(qual, name []byte) bool) {
	lx := newLexer(q, m)
	var prev1, prev2 token
	for {
		t := lx.next()
		if t.kind == tokEOF {
			return
		}
		if t.isName() {
			var qual []byte
			if prev1.isPunct('.') && prev2.isName() {
				qual = lx.nameOf(prev2)
			}
			if fn(qual, lx.nameOf(t)) {
				return
			}
		}
		prev2, prev1 = prev1, t
	}
}

// nameOf returns the name of a word or quoted identifier token, without quotes.
func (l *lexer) nameOf(t token) []byte {
	if t.kind == tokQuotedIdent {
		_, content := l.quotedEnd(t.start, l.q[t.start])
		return l.q[t.start+1 : content : content]
	}
	return l.q[t.start:t.end:t.end]
}
