package sqlscan

import "bytes"

// Insert is an INSERT or REPLACE read up to the '(' of its column list:
// the table it writes, as written (qualifier and name without quotes;
// Schema nil when unqualified), and where reading goes on.
type Insert struct {
	Schema, Table []byte
	lx            lexer
}

// ParseInsert reads INSERT [LOW_PRIORITY | DELAYED | HIGH_PRIORITY]
// [IGNORE] [INTO] tbl [PARTITION (...)] ( — or REPLACE likewise. ok is
// false for any other statement, including INSERT ... SET and an INSERT
// without a column list.
func ParseInsert(q []byte, m Mode) (Insert, bool) {
	var ins Insert
	if !ins.header(q, m) {
		return Insert{}, false
	}
	return ins, true
}

// Fixes reports whether the statement gives column col (matched without
// regard to letter case) a non-zero integer literal in every row of its
// VALUES, as in INSERT INTO t (id, k) VALUES (7, 1), (8, 2). Such a
// statement generates no AUTO_INCREMENT value in col: whatever else it
// does, LAST_INSERT_ID() stays as it was, although its OK packet reports
// the last row's id. Anything the check cannot follow (an expression, a
// placeholder, DEFAULT, NULL, 0, a quoted number, INSERT ... SELECT, more
// than one statement) gives false. It reads on from where ParseInsert
// stopped, so it is called once.
func (ins *Insert) Fixes(col string) bool {
	q := ins.lx.q
	lx := &ins.lx
	// The column list.
	idx, n := -1, 0
	for {
		t := lx.next()
		if !t.isName() {
			return false
		}
		if bytes.EqualFold(lx.nameOf(t), []byte(col)) {
			if idx >= 0 {
				return false
			}
			idx = n
		}
		n++
		t = lx.next()
		if t.isPunct(')') {
			break
		}
		if !t.isPunct(',') {
			return false
		}
	}
	if idx < 0 {
		return false
	}
	t := lx.next()
	if t.kind != tokWord || !t.isWord(kwValues) && !t.isWord(kwValue) {
		return false
	}
	// The rows.
	for {
		if t = lx.next(); !t.isPunct('(') {
			return false
		}
		for i := 0; i < n; i++ {
			if i == idx {
				t = lx.next()
				if t.kind != tokNumber || !nonZeroDigits(q[t.start:t.end]) {
					return false
				}
				t = lx.next()
			} else if t = skipValue(lx); t.kind == tokEOF {
				return false
			}
			want := byte(',')
			if i == n-1 {
				want = ')'
			}
			if !t.isPunct(want) {
				return false
			}
		}
		t = lx.next()
		if !t.isPunct(',') {
			break
		}
	}
	// What may follow the rows: the end, ON DUPLICATE KEY UPDATE (whose
	// LAST_INSERT_ID(expr) the scanner flags on its own), RETURNING, or
	// "AS alias". A second statement is not followed.
	for ; t.kind != tokEOF; t = lx.next() {
		if t.isPunct(';') {
			for t = lx.next(); t.isPunct(';'); t = lx.next() {
			}
			return t.kind == tokEOF
		}
	}
	return true
}

// header is ParseInsert's work: it leaves the lexer after the '('.
func (p *Insert) header(q []byte, m Mode) bool {
	p.lx.init(q, m)
	lx := &p.lx
	t := lx.next()
	if !t.isWord(kwInsert) && !t.isWord(kwReplace) {
		return false
	}
	t = lx.next()
	for t.kind == tokWord && (t.isWord(kwLowPriority) || wordIs(lx, t, "delayed") || wordIs(lx, t, "high_priority") || wordIs(lx, t, "ignore")) {
		t = lx.next()
	}
	if t.kind == tokWord && wordIs(lx, t, "into") {
		t = lx.next()
	}
	if !t.isName() {
		return false
	}
	p.Table = lx.nameOf(t)
	t = lx.next()
	if t.isPunct('.') {
		if t = lx.next(); !t.isName() {
			return false
		}
		p.Schema, p.Table = p.Table, lx.nameOf(t)
		t = lx.next()
	}
	if t.kind == tokWord && wordIs(lx, t, "partition") {
		if t = lx.next(); !t.isPunct('(') {
			return false
		}
		for t = skipValue(lx); t.isPunct(','); t = skipValue(lx) {
		}
		if !t.isPunct(')') {
			return false
		}
		t = lx.next()
	}
	return t.isPunct('(')
}

// wordIs reports whether the unquoted word t is w (given in lower case).
func wordIs(lx *lexer, t token, w string) bool {
	return t.kind == tokWord && len(w) == t.end-t.start && hasPrefixFold(lx.q[t.start:t.end], w)
}

// skipValue skips one value of a row (anything up to a ',' or ')' outside
// parentheses) and returns the token that ended it (EOF if none did).
func skipValue(lx *lexer) token {
	depth := 0
	for {
		t := lx.next()
		switch {
		case t.kind == tokEOF:
			return t
		case t.isPunct('('):
			depth++
		case t.isPunct(')'):
			if depth == 0 {
				return t
			}
			depth--
		case t.isPunct(',') && depth == 0:
			return t
		case t.isPunct(';') && depth == 0:
			return token{tag: tag{kind: tokEOF}}
		}
	}
}

// nonZeroDigits reports whether b is a decimal integer literal other than
// zero.
func nonZeroDigits(b []byte) bool {
	nonZero := false
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
		if c != '0' {
			nonZero = true
		}
	}
	return nonZero
}
