package pool

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync"
)

// Var is a session system variable whose value differs from (or was set
// explicitly over) the server's global default.
type Var struct {
	Name  string // lower case, as reported by session tracking
	Value string
}

// State is the part of a MySQL session that tpproxy tracks and can replay
// onto any backend connection: the default schema, session system variables
// set away from their global values, the multi-statement option, and the
// CLIENT_FOUND_ROWS capability (fixed when a connection is dialed).
//
// A session and every backend connection each own a State; the connection
// that runs a session's statement is first brought to the session's State.
// The zero value is a fresh connection with no schema.
type State struct {
	// Schema is the default schema as the server names it in session
	// tracking (utf8), or, when SchemaRaw, the bytes a client sent in its
	// character set (COM_INIT_DB, the handshake), which the next Sync gives
	// the server in the session's character set and replaces with the
	// server's name for it.
	Schema string
	// Vars is sorted by Name; a variable appears at most once.
	Vars []Var
	// ResultsCollation is the collation of character_set_results as the
	// server holds it, which is what result column definitions declare:
	// SET NAMES cs COLLATE x (and a login with collation x) gives x, plain
	// SET NAMES cs the character set's default; the variable itself shows
	// only the character set. "" when not known (NULL results).
	ResultsCollation string
	// Role is the argument of the SET ROLE that gives a connection the
	// session's active roles ("NONE", a quoted role name, or MySQL's
	// quoted role list), in utf8mb4; "" when the session never set a role,
	// so it has the account's default roles, as every fresh or reset
	// connection does.
	Role string
	// MultiStatementsOff records COM_SET_OPTION(MYSQL_OPTION_MULTI_STATEMENTS_OFF);
	// connections are dialed with multi-statements on.
	MultiStatementsOff bool
	FoundRows          bool
	// SchemaRaw: Schema is a client's bytes, not yet the server's name.
	SchemaRaw bool
	// ExtMetadata: the connection sends MariaDB's extended column
	// metadata (MARIADB_CLIENT_EXTENDED_METADATA), fixed when dialed like
	// FoundRows, for clients that asked for it.
	ExtMetadata bool
	// sharedVars: Vars is a slice other states share (SetCharsetVars),
	// copied before it changes.
	sharedVars bool

	// Account is the server account the session's statements run as
	// (nil: the pool's own). It is not part of the fingerprint: Acquire
	// prefers a connection already logged in as it and switches another
	// one otherwise.
	Account *Account

	// Owner identifies the session holding this state (0: none). It is not
	// part of the state: Acquire uses it to give a session the connection it
	// used last when that one is free.
	Owner uint64

	sum uint64
}

var stateSeed = maphash.MakeSeed()

// rehash recomputes the fingerprint used to find matching connections fast.
func (s *State) rehash() {
	var h maphash.Hash
	h.SetSeed(stateSeed)
	h.WriteString(s.Schema)
	h.WriteByte(0)
	h.WriteString(s.Role)
	h.WriteByte(0)
	h.WriteString(s.ResultsCollation)
	h.WriteByte(0)
	for _, v := range s.Vars {
		h.WriteString(v.Name)
		h.WriteByte('=')
		h.WriteString(v.Value)
		h.WriteByte(0)
	}
	var flags byte
	if s.MultiStatementsOff {
		flags |= 1
	}
	if s.FoundRows {
		flags |= 2
	}
	if s.ExtMetadata {
		flags |= 4
	}
	if s.SchemaRaw {
		flags |= 8
	}
	h.WriteByte(flags)
	s.sum = h.Sum64()
}

// Sum is a fingerprint of the state: equal states have equal sums.
func (s *State) Sum() uint64 {
	if s.sum == 0 {
		s.rehash()
	}
	return s.sum
}

// Equal reports whether two states are the same.
func (s *State) Equal(o *State) bool {
	return s.Sum() == o.Sum() && s.Schema == o.Schema && s.SchemaRaw == o.SchemaRaw && s.Role == o.Role && s.ResultsCollation == o.ResultsCollation &&
		s.MultiStatementsOff == o.MultiStatementsOff && s.FoundRows == o.FoundRows && s.ExtMetadata == o.ExtMetadata &&
		slices.Equal(s.Vars, o.Vars)
}

// SetSchema records a new default schema, named as the server names it.
func (s *State) SetSchema(name string) { s.SetSchemaIn(name, "") }

// SetSchemaIn records a new default schema whose name a client sent in
// character set cs ("" or a name in ASCII: as the server names it).
func (s *State) SetSchemaIn(name, cs string) {
	s.SetSchemaAs(name, !isASCII(name) && cs != "" && !isUTF8Charset(cs))
}

// SetSchemaAs records a schema with its SchemaRaw (to put back one saved).
func (s *State) SetSchemaAs(name string, raw bool) {
	if s.Schema != name || s.SchemaRaw != raw {
		s.Schema, s.SchemaRaw = name, raw
		s.sum = 0
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// isUTF8Charset reports the character sets whose bytes are the server's
// own names (utf8mb3, utf8mb4, and their alias utf8).
func isUTF8Charset(cs string) bool {
	return cs == "utf8mb4" || cs == "utf8mb3" || cs == "utf8"
}

// SetVar records the value of a session variable.
func (s *State) SetVar(name, value string) {
	name = strings.ToLower(name)
	i, found := slices.BinarySearchFunc(s.Vars, name, func(v Var, n string) int { return strings.Compare(v.Name, n) })
	if found && s.Vars[i].Value == value {
		return
	}
	s.ownVars()
	if found {
		s.Vars[i].Value = value
	} else {
		s.Vars = slices.Insert(s.Vars, i, Var{Name: name, Value: value})
	}
	s.sum = 0
}

// DeleteVar forgets a session variable: the session has its global value
// again (SET x = DEFAULT).
func (s *State) DeleteVar(name string) {
	name = strings.ToLower(name)
	i, found := slices.BinarySearchFunc(s.Vars, name, func(v Var, n string) int { return strings.Compare(v.Name, n) })
	if found {
		s.ownVars()
		s.Vars = slices.Delete(s.Vars, i, i+1)
		s.sum = 0
	}
}

// SetResultsCollation records the collation of character_set_results.
func (s *State) SetResultsCollation(name string) {
	if s.ResultsCollation != name {
		s.ResultsCollation = name
		s.sum = 0
	}
}

// SetRole records the session's active roles as the argument SET ROLE
// takes to restore them.
func (s *State) SetRole(arg string) {
	if s.Role != arg {
		s.Role = arg
		s.sum = 0
	}
}

// Var returns the recorded value of a session variable.
func (s *State) Var(name string) (string, bool) {
	i, found := slices.BinarySearchFunc(s.Vars, name, func(v Var, n string) int { return strings.Compare(v.Name, n) })
	if !found {
		return "", false
	}
	return s.Vars[i].Value, true
}

// SetMultiStatements records the multi-statement option.
func (s *State) SetMultiStatements(on bool) {
	if s.MultiStatementsOff == on {
		s.MultiStatementsOff = !on
		s.sum = 0
	}
}

// ownVars gives s a Vars of its own before it changes one.
func (s *State) ownVars() {
	if s.sharedVars {
		s.Vars, s.sharedVars = slices.Clone(s.Vars), false
	}
}

// SetCharsetVars makes Vars those of SET NAMES charset COLLATE collation,
// as a slice shared with every other state set so (copied when one of
// them changes a variable): thousands of sessions that log in with the
// same collation and change nothing hold one copy.
func (s *State) SetCharsetVars(charset, collation string) {
	key := charsetKey{charset, collation}
	v, ok := charsetVarsCache.Load(key)
	if !ok {
		v, _ = charsetVarsCache.LoadOrStore(key, slices.Clip(CharsetVars(charset, collation)))
	}
	s.Vars, s.sharedVars, s.sum = v.([]Var), true, 0
}

type charsetKey struct{ charset, collation string }

// charsetVarsCache holds the shared slices of SetCharsetVars; there is one
// per collation clients log in with, a few hundred at most.
var charsetVarsCache sync.Map

// CharsetVars are the session variables SET NAMES charset COLLATE
// collation establishes, sorted as State keeps them.
func CharsetVars(charset, collation string) []Var {
	return []Var{
		{Name: "character_set_client", Value: charset},
		{Name: "character_set_connection", Value: charset},
		{Name: "character_set_results", Value: charset},
		{Name: "collation_connection", Value: collation},
	}
}

// CharsetOf derives the character set from a collation name.
func CharsetOf(collation string) string {
	if collation == "binary" {
		return collation
	}
	if i := strings.IndexByte(collation, '_'); i > 0 {
		return collation[:i]
	}
	return collation
}

// nullable lists variables whose empty tracked value means NULL.
func nullable(name string) bool { return name == "character_set_results" }

// varOrder puts character set variables before collations so that a SET
// that changes both ends with the collation asked for: setting
// character_set_connection resets collation_connection to the charset's
// default.
func varOrder(name string) int {
	switch {
	case strings.HasPrefix(name, "character_set_"):
		return 0
	case strings.HasPrefix(name, "collation_"):
		return 1
	}
	return 2
}

// setStatement returns the SET statement that brings a connection in state
// have to the variables of want, or "" when they already agree. Variables
// that want does not override go back to their global value.
func setStatement(have, want *State) string {
	type assign struct {
		name, value string
		def         bool
	}
	var todo []assign
	var names string
	if want.ResultsCollation != "" && want.ResultsCollation != have.ResultsCollation {
		// Only SET NAMES ... COLLATE gives character_set_results a
		// collation other than its character set's default; it sets the
		// client and connection character sets and collation_connection
		// too, which the assignments after it put right.
		cs := CharsetOf(want.ResultsCollation)
		names = "NAMES " + quoteValue(cs) + " COLLATE " + quoteValue(want.ResultsCollation)
		h := *have
		h.Vars = slices.Clone(have.Vars)
		for _, v := range CharsetVars(cs, want.ResultsCollation) {
			h.SetVar(v.Name, v.Value)
		}
		have = &h
	}
	// A connection whose results collation is not the default one of
	// its character set gets the variable assigned again, which sets the
	// default; "" in want means just that.
	resetResults := want.ResultsCollation == "" && have.ResultsCollation != ""
	for _, v := range want.Vars {
		if hv, ok := have.Var(v.Name); !ok || hv != v.Value || resetResults && v.Name == "character_set_results" {
			todo = append(todo, assign{name: v.Name, value: v.Value})
		}
	}
	for _, v := range have.Vars {
		if _, ok := want.Var(v.Name); !ok {
			todo = append(todo, assign{name: v.Name, def: true})
		}
	}
	if len(todo) == 0 && names == "" {
		return ""
	}
	slices.SortStableFunc(todo, func(a, b assign) int { return varOrder(a.name) - varOrder(b.name) })
	var b strings.Builder
	b.WriteString("SET ")
	b.WriteString(names)
	for i, a := range todo {
		if i > 0 || names != "" {
			b.WriteString(", ")
		}
		b.WriteString("SESSION ")
		b.WriteString(quoteIdent(a.name))
		b.WriteString(" = ")
		if a.def {
			b.WriteString("DEFAULT")
		} else if a.value == "" && nullable(a.name) {
			b.WriteString("NULL")
		} else {
			b.WriteString(quoteValue(a.value))
		}
	}
	return b.String()
}

// quoteIdent quotes a variable or schema name with backticks.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// quoteValue renders a tracked variable value as a SQL literal. Numbers go
// unquoted (numeric variables reject strings); simple words are quoted;
// anything else is a hex literal, which reads the same whatever sql_mode
// (NO_BACKSLASH_ESCAPES, ANSI_QUOTES) is in force.
func quoteValue(v string) string {
	if isNumber(v) {
		return v
	}
	simple := true
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == ',' || c == '.' || c == ':' || c == '+' || c == '-' || c == '/' || c == ' ') {
			simple = false
			break
		}
	}
	if simple {
		return "'" + v + "'"
	}
	const hexdigits = "0123456789abcdef"
	b := make([]byte, 0, 3+2*len(v))
	b = append(b, "X'"...)
	for i := 0; i < len(v); i++ {
		b = append(b, hexdigits[v[i]>>4], hexdigits[v[i]&15])
	}
	b = append(b, '\'')
	return string(b)
}

func isNumber(v string) bool {
	if v == "" {
		return false
	}
	i := 0
	if v[0] == '-' {
		i = 1
	}
	if i == len(v) {
		return false
	}
	dot := false
	for ; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return v[len(v)-1] != '.'
}
