package sqlscan

// SetTargets calls fn with the name of every session system variable the first
// statement of q assigns when it is a SET: "sql_mode" for SET sql_mode = ...,
// SET SESSION sql_mode = ... and SET @@session.sql_mode = .... Global and
// persisted assignments, user variables and the special forms (SET NAMES,
// SET CHARACTER SET, SET PASSWORD, SET TRANSACTION, SET ROLE, SET DEFAULT ROLE)
// are not reported, nor are the variables of SET STATEMENT ... FOR, which last for
// that statement only; if that statement is itself a SET, its targets are reported.
// The name is a sub-slice of q, without backquotes; a structured variable
// (SET keycache.key_buffer_size, SET @@component.name) is reported as typed after
// the scope. Unlike Scan it is meant for the rare SET whose effect the server did not
// fully report, so it may be called with a closure that allocates. It is
// SetTargetsMode for the zero Mode.
func SetTargets(q []byte, fn func(name []byte)) {
	SetTargetsMode(q, Mode{}, func(name []byte, _ bool) { fn(name) })
}

// SetTargetsMode is SetTargets lexed per m, and it also tells whether each target is assigned
// exactly the keyword DEFAULT (`SET x = DEFAULT`, `SET @@session.x := default`), or
// timestamp the number 0, which also gives it its default (the clock runs). For
// `SET STATEMENT a=1, b=2 FOR <stmt>` the scoped a and b are NOT reported; if <stmt> is itself a
// SET, its targets are reported (they last beyond the statement). Everything else SetTargets
// documents (global/persisted targets, user variables and special forms not reported) holds.
func SetTargetsMode(q []byte, m Mode, fn func(name []byte, isDefault bool)) {
	s := scanner{onSetVar: fn}
	s.lx.init(q, m)
	s.firstStatement()
}

// StatementVars calls fn with each variable of a first-statement `SET STATEMENT v1=..., v2=... FOR ...`
// (names without @@/scope/backquotes), and nothing for other statements. The variables
// of a SET STATEMENT nested in the FOR part are reported too, as they are scoped alike.
func StatementVars(q []byte, m Mode, fn func(name []byte)) {
	s := scanner{onStmtVar: fn}
	s.lx.init(q, m)
	s.firstStatement()
}

// firstStatement runs the scanner over the first statement of its text only.
func (s *scanner) firstStatement() {
	for s.nstmt == 0 {
		t := s.lx.next()
		if t.kind == tokEOF {
			s.endStmt()
			return
		}
		s.token(t)
	}
}

// isSpecialSetWord reports whether a SET target is one of SET's special forms rather
// than a variable.
func isSpecialSetWord(name []byte) bool {
	for _, special := range []string{"names", "character", "charset", "password", "transaction", "role", "default", "statement"} {
		if equalFold(name, special) {
			return true
		}
	}
	return false
}

// SetAssign is one assignment of a SET statement that outlasts the statement: a session
// system variable, or one of SET's special forms.
type SetAssign struct {
	// Name is the variable as SetTargets reports it (a sub-slice of the query); for a
	// special form, its keyword as typed: NAMES, CHARACTER, CHARSET, PASSWORD,
	// TRANSACTION, ROLE or DEFAULT (SET DEFAULT ROLE).
	Name []byte
	// Special: Name is the keyword of a special form.
	Special bool
	// Default: the variable is assigned exactly DEFAULT (or timestamp 0), see
	// SetTargetsMode.
	Default bool
	// Session: the scope was written SESSION or LOCAL (SET SESSION x, @@local.x, SET
	// SESSION TRANSACTION); false when no scope was written.
	Session bool
	// SysVar: the target was written @@name, so that it cannot be a stored program's
	// local variable.
	SysVar bool
}

// SetAssignments calls fn for every lasting assignment of every SET statement of q, lexed
// per m: what SetTargetsMode reports, but for all statements of a multi-statement query,
// and the special forms (SET NAMES, SET SESSION TRANSACTION, SET ROLE, ...) as well. Global
// and persisted assignments, user variables and the scoped list of SET STATEMENT ... FOR are
// not reported. It is meant for statements whose effect must be read back from the server,
// so fn may allocate.
func SetAssignments(q []byte, m Mode, fn func(SetAssign)) {
	s := scanner{onAssign: fn}
	s.lx.init(q, m)
	s.all()
}
