package sqlscan

// SetTargets calls fn with the name of every session system variable the first
// statement of q assigns when it is a SET: "sql_mode" for SET sql_mode = ...,
// SET SESSION sql_mode = ... and SET @@session.sql_mode = .... Global and
// persisted assignments, user variables and the special forms (SET NAMES,
// SET CHARACTER SET, SET PASSWORD, SET TRANSACTION, SET ROLE, SET STATEMENT)
// are not reported. The name is a sub-slice of q, without backquotes. Unlike
// Scan it is meant for the rare SET whose effect the server did not fully
// report, so it may be called with a closure that allocates.
func SetTargets(q []byte, fn func(name []byte)) {
	s := scanner{lx: lexer{q: q}, onSetVar: fn}
	for s.nstmt == 0 {
		t := s.lx.next()
		if t.kind == tokEOF {
			break
		}
		s.token(t)
	}
}

// reportSetVar hands an assigned variable to onSetVar unless it is global or
// one of SET's special forms.
func (s *scanner) reportSetVar(t token) {
	q := s.lx.q
	var name []byte
	global := s.st.global
	switch t.kind {
	case tokWord:
		name = q[t.start:t.end]
		for _, special := range []string{"names", "character", "charset", "password", "transaction", "role", "default", "statement"} {
			if equalFold(name, special) {
				return
			}
		}
	case tokQuotedIdent:
		name = q[t.start+1 : t.end-1]
	case tokSysVar:
		// @@name or @@scope.name: the scope in the token wins.
		n0, n1, end := namePart(q, t.start+2)
		if end < len(q) && q[end] == '.' {
			scope := lookup(q[n0:n1])
			if isScope(scope) {
				global = scope != kwSession && scope != kwLocal
				n0, n1, _ = namePart(q, end+1)
			}
		} else {
			global = false
		}
		name = q[n0:n1]
	default:
		return
	}
	if !global && len(name) > 0 {
		s.onSetVar(name)
	}
}
