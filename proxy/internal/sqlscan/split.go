package sqlscan

// Split calls fn with the bounds of each top-level statement of q, lexed per m, as the
// server's parser delimits the statements of a multi-statement query: a ';' ends a
// statement unless it is inside a compound statement's body. A stored program's
// definition (CREATE ... PROCEDURE, FUNCTION, TRIGGER, EVENT, PACKAGE) and MariaDB's
// compound statements outside programs (BEGIN NOT ATOMIC, IF, CASE, LOOP, WHILE,
// REPEAT, FOR, a labelled block) are one statement, body included. q[start:end] is the
// statement from its first token to its last, without the ';'; empty statements (";;")
// are skipped.
//
// Inside a compound statement, blocks open with BEGIN and CASE (a CASE expression's
// END closes it as well), LOOP and WHILE, and with IF, REPEAT and FOR where a statement
// starts; each END closes one (END IF, END LOOP and the like are one END). After THEN or
// ELSE of a CASE expression, IF( and REPEAT( are the functions: an IF statement reaches
// its THEN before any WHEN, ELSE, END or ';', and a REPEAT statement does not go on
// with '('.
func Split(q []byte, m Mode, fn func(start, end int)) {
	lx := newLexer(q, m)
	start, end := -1, 0 // the current statement's first and last token; start -1: none yet
	depth := 0          // blocks open in a compound statement
	compound := false   // the current statement has a body
	atStmt := true      // the next token starts a (top-level or inner) statement
	afterEnd := false   // the previous token was END
	n := 0              // tokens of the current top-level statement
	for {
		t := lx.next()
		if t.kind == tokEOF {
			break
		}
		if t.isPunct(';') && depth == 0 {
			if start >= 0 {
				fn(start, end)
			}
			start, compound, atStmt, afterEnd, n = -1, false, true, false, 0
			continue
		}
		if start < 0 {
			start = t.start
		}
		end = t.end
		w := q[t.start:t.end]
		word := t.kind == tokWord
		if n == 0 && word {
			switch {
			case equalFold(w, "begin"):
				compound = nextWord(lx, "not") // BEGIN NOT ATOMIC, not BEGIN [WORK]
			case equalFold(w, "if"), equalFold(w, "case"), equalFold(w, "loop"), equalFold(w, "while"),
				equalFold(w, "repeat"), equalFold(w, "for"), nextIsLabel(lx, t):
				compound = true
			}
		}
		if n > 0 && word && !compound && equalFold(q[start:min(start+6, len(q))], "create") &&
			(equalFold(w, "procedure") || equalFold(w, "function") || equalFold(w, "trigger") ||
				equalFold(w, "event") || equalFold(w, "package")) {
			compound = true
		}
		if compound && word {
			switch {
			case equalFold(w, "end"):
				if depth > 0 {
					depth--
				}
			case afterEnd:
				// END IF, END CASE, END LOOP ...: closed by the END.
			case equalFold(w, "begin"), equalFold(w, "case"), equalFold(w, "loop"), equalFold(w, "while"):
				depth++
			case atStmt && equalFold(w, "if") && ifStatement(lx),
				atStmt && equalFold(w, "repeat") && !lx.next().isPunct('('),
				atStmt && equalFold(w, "for"):
				depth++
			}
		}
		afterEnd = word && equalFold(w, "end")
		atStmt = t.isPunct(';') || t.isPunct(':') || word && isBodyStart(w)
		n++
	}
	if start >= 0 {
		fn(start, end)
	}
}

// nextWord reports whether the token after the current one is the word w.
func nextWord(lx lexer, w string) bool {
	t := lx.next()
	return t.kind == tokWord && equalFold(lx.q[t.start:t.end], w)
}

// nextIsLabel reports whether the word t is followed by ':' (a label).
func nextIsLabel(lx lexer, t token) bool {
	return t.isName() && lx.next().isPunct(':')
}

// ifStatement reports whether the IF just read starts an IF statement rather than a
// call of the IF() function: its THEN comes, outside parentheses, before a WHEN, ELSE,
// END or ';' (what follows the function where a CASE expression allows a statement
// keyword's place).
func ifStatement(lx lexer) bool {
	depth := 0
	for {
		t := lx.next()
		switch {
		case t.kind == tokEOF:
			return false
		case t.isPunct('('):
			depth++
		case t.isPunct(')'):
			depth--
		case depth > 0:
		case t.isPunct(';'):
			return false
		case t.kind == tokWord:
			w := lx.q[t.start:t.end]
			switch {
			case equalFold(w, "then"):
				return true
			case equalFold(w, "when"), equalFold(w, "else"), equalFold(w, "end"):
				return false
			}
		}
	}
}
