package sqlscan

import "bytes"

// BodySetsSession reports whether the body of a stored routine or trigger, lexed per m,
// has a SET statement that changes its connection's session: a session system variable
// assigned (@@x, @@session.x, SESSION x, LOCAL x, or a plain name that is neither one
// of the body's DECLAREd variables nor one of params, the routine's parameter names), or
// SET NAMES / SET CHARACTER SET. The server keeps such a change after the routine
// returns and reports none of it for the @@x form. Not counted: user variables, NEW.col
// and OLD.col, SET TRANSACTION and SET ROLE (other flags cover them), SET PASSWORD, and
// the SET of UPDATE and INSERT, which assigns columns.
//
// Inside a compound body a statement starts at the beginning, after ';' and after BEGIN,
// THEN, ELSE, DO, LOOP, REPEAT, ATOMIC (BEGIN NOT ATOMIC), ROW (a trigger's FOR EACH
// ROW) and a label's ':'; a handler's statement follows its condition list (DECLARE ...
// HANDLER FOR ... SET). A name DECLAREd anywhere in the body counts as local everywhere
// in it, which a body that shadows a system variable in an inner block only defeats.
func BodySetsSession(body []byte, m Mode, params []string) bool {
	locals := declaredNames(body, m)
	for _, p := range params {
		locals = append(locals, bytes.ToLower([]byte(p)))
	}
	isLocal := func(name []byte) bool {
		for _, l := range locals {
			if bytes.EqualFold(l, name) {
				return true
			}
		}
		return false
	}
	lx := newLexer(body, m)
	atStart := true  // the next token starts a statement
	var first []byte // the first word of the current statement
	handler := false // the current statement is DECLARE ... HANDLER
	depth := 0       // parentheses in the current statement
	for {
		t := lx.next()
		if t.kind == tokEOF {
			return false
		}
		w := body[t.start:t.end]
		switch {
		case t.isPunct(';'):
			atStart, first, handler, depth = true, nil, false, 0
			continue
		case t.isPunct('('):
			depth++
		case t.isPunct(')'):
			if depth > 0 {
				depth--
			}
		}
		if t.kind == tokWord && equalFold(w, "set") && (atStart || handler && depth == 0) {
			if setsSession(body[t.start:], m, isLocal) {
				return true
			}
		}
		if atStart && t.kind == tokWord {
			first = w
		}
		if t.kind == tokWord && equalFold(first, "declare") && equalFold(w, "handler") {
			handler = true
		}
		atStart = t.isPunct(':') || t.kind == tokWord && isBodyStart(w)
		if atStart {
			first, handler, depth = nil, false, 0
		}
	}
}

// isBodyStart reports the words after which a compound body's next statement starts.
func isBodyStart(w []byte) bool {
	for _, k := range [...]string{"begin", "then", "else", "do", "loop", "repeat", "atomic", "row"} {
		if equalFold(w, k) {
			return true
		}
	}
	return false
}

// setsSession reports whether the SET statement at the start of q changes the session
// (see BodySetsSession).
func setsSession(q []byte, m Mode, isLocal func([]byte) bool) bool {
	found := false
	s := scanner{onAssign: func(a SetAssign) {
		switch {
		case a.Special:
			found = found || equalFold(a.Name, "names") || equalFold(a.Name, "character") || equalFold(a.Name, "charset")
		case bytes.IndexByte(a.Name, '.') >= 0:
			// NEW.col, OLD.col; a structured variable is global.
		case a.SysVar || a.Session || !isLocal(a.Name):
			found = true
		}
	}}
	s.lx.init(q, m)
	s.firstStatement()
	return found
}

// declaredNames lists, in lower case, the names every DECLARE of body introduces
// (variables, and conditions and cursors, which a SET cannot name anyway).
func declaredNames(body []byte, m Mode) [][]byte {
	var names [][]byte
	lx := newLexer(body, m)
	inList := false // after DECLARE or a ',' of its list: a name comes
	listed := false // the previous token was a listed name
	for {
		t := lx.next()
		if t.kind == tokEOF {
			return names
		}
		switch {
		case t.kind == tokWord && equalFold(body[t.start:t.end], "declare"):
			inList, listed = true, false
		case inList && t.isName():
			names = append(names, bytes.ToLower(lx.nameOf(t)))
			inList, listed = false, true
		case listed && t.isPunct(','):
			inList, listed = true, false
		default:
			inList, listed = false, false
		}
	}
}
