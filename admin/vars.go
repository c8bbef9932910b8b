package admin

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tpproxy/tpproxy/internal/config"
	"github.com/tpproxy/tpproxy/scheduler"
)

// Identity of the admin port, as @@version and @@version_comment.
const (
	serverVersion  = "8.0.11-tpproxy-admin"
	versionComment = "tpproxy admin"
)

// setting is a variable SET GLOBAL changes: a Settable row of the
// settings table, which lives in scheduler.Config.
type setting struct {
	// get reads the variable's value (int64 or string) from a config.
	get func(scheduler.Config) any
	// set parses v and stores it in c. Its errors are errWrongValue or
	// errWrongType without a message; the caller names the variable.
	set func(c *scheduler.Config, v literal) error
}

// sysVar is a variable of the admin port. Read-only variables have no
// setting and read their value from the running components.
type sysVar struct {
	name    string
	setting *setting
	value   func(*Server) any
}

// Limits of the admin port's numbers where a setting has no upper bound:
// the servers' variables are 32 bits wide (a signed INT for counts, an
// unsigned one for milli- and seconds).
const (
	maxInt32  = math.MaxInt32
	maxUint32 = math.MaxUint32
)

// sysVars are the admin port's variables, in name order: the settings
// table's rows the admin port shows, and its own identity.
var sysVars = adminVars()

func adminVars() []sysVar {
	vars := []sysVar{
		{name: "version", value: func(*Server) any { return serverVersion }},
		{name: "version_comment", value: func(*Server) any { return versionComment }},
	}
	for _, s := range config.Settings() {
		switch s.Admin {
		case config.Settable:
			vars = append(vars, sysVar{name: s.Name, setting: settable(s)})
		case config.ReadOnly:
			vars = append(vars, sysVar{name: s.Name, value: func(a *Server) any { return a.current(s) }})
		}
	}
	slices.SortFunc(vars, func(a, b sysVar) int { return strings.Compare(a.name, b.name) })
	return vars
}

// lookupVar finds a variable by its lower-case name.
func lookupVar(name string) *sysVar {
	i, ok := slices.BinarySearchFunc(sysVars, name, func(v sysVar, n string) int { return strings.Compare(v.name, n) })
	if !ok {
		return nil
	}
	return &sysVars[i]
}

// read returns v's value now; cfg is the scheduler's config.
func (v *sysVar) read(a *Server, cfg scheduler.Config) any {
	if v.setting != nil {
		return v.setting.get(cfg)
	}
	return v.value(a)
}

// current reads a read-only setting from the component running it: the
// pool's size after reloads and the prepared-statement cap it resolved
// (0, automatic, in the file), or the scheduler's config.
func (a *Server) current(s config.Setting) any {
	switch s.Applies {
	case config.Pool:
		c := a.pool.Config()
		c.MaxPreparedPerConn = a.pool.PreparedLimit()
		return shown(s, s.Get(&c))
	case config.Scheduler:
		c := a.sched.Config()
		return shown(s, s.Get(&c))
	}
	panic("admin: no running value for " + s.Key)
}

// shown is a setting's value as the admin port shows it: a word, or an
// integer (a duration in its unit).
func shown(s config.Setting, v int64) any {
	switch s.Kind {
	case config.KindEnum:
		if v < 0 || v >= int64(len(s.Words)) {
			return v // not validated: the scheduler refuses such a config
		}
		return s.Words[v]
	case config.KindDuration:
		return v / int64(s.Unit)
	}
	return v
}

// bounds are the integers SET accepts for s: the table's bounds in the
// variable's unit (0 only where Min allows it: the file's "0 means
// automatic" is no value to SET), capped at the variables' width.
func bounds(s config.Setting) (lo, hi int64) {
	switch s.Kind {
	case config.KindEnum:
		return 0, int64(len(s.Words) - 1)
	case config.KindDuration:
		unit := int64(s.Unit)
		lo, hi = (s.Min+unit-1)/unit, maxUint32
		if s.Max != 0 {
			hi = min(s.Max/unit, hi)
		}
		return lo, hi
	}
	lo, hi = s.Min, maxInt32
	if s.Max != 0 {
		hi = s.Max
	}
	return lo, hi
}

// isDefault reports whether v is the keyword DEFAULT.
func (v literal) isDefault() bool { return v.kind == tokWord && strings.EqualFold(v.text, "default") }

// integer reads v as an integer in [lo, hi].
func (v literal) integer(lo, hi int64) (int64, error) {
	if v.kind != tokNumber || strings.ContainsAny(v.text, ".eE") {
		return 0, errWrongType
	}
	n, err := strconv.ParseInt(v.text, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, errWrongValue
	}
	return n, nil
}

// settable is the SET GLOBAL side of a scheduler setting. An enum is given
// as a word, a string or the word's 0-based number, as MySQL allows;
// DEFAULT is the setting's default in the file.
func settable(s config.Setting) *setting {
	if s.Applies != config.Scheduler {
		panic("admin: SET GLOBAL reconfigures the scheduler only, not " + s.Key)
	}
	lo, hi := bounds(s)
	return &setting{
		get: func(c scheduler.Config) any { return shown(s, s.Get(&c)) },
		set: func(c *scheduler.Config, v literal) error {
			if v.isDefault() {
				s.Set(c, s.Default())
				return nil
			}
			if s.Kind == config.KindEnum && v.kind != tokNumber {
				i := slices.Index(s.Words, strings.ToLower(v.text))
				if i < 0 {
					return errWrongValue
				}
				s.Set(c, int64(i))
				return nil
			}
			n, err := v.integer(lo, hi)
			if err != nil {
				return err
			}
			if s.Kind == config.KindDuration {
				n *= int64(s.Unit)
			}
			s.Set(c, n)
			return nil
		},
	}
}

// showVariables answers SHOW VARIABLES.
func (a *Server) showVariables(st showVariables) *mysql.Result {
	return nameValues(a.variables(), st.like)
}

// variables are the admin port's variables and their values, in name
// order.
func (a *Server) variables() []nameValue {
	cfg := a.sched.Config()
	rows := make([]nameValue, 0, len(sysVars))
	for i := range sysVars {
		v := &sysVars[i]
		rows = append(rows, nameValue{v.name, v.read(a, cfg)})
	}
	return rows
}

// selectVars answers SELECT @@x, ...: one row, typed values.
func (a *Server) selectVars(st selectVars) (*mysql.Result, error) {
	cfg := a.sched.Config()
	cols := make([]column, len(st.items))
	row := make([]any, len(st.items))
	for i, it := range st.items {
		var err error
		if row[i], err = a.sysVarValue(cfg, it.scope, it.name); err != nil {
			return nil, err
		}
		cols[i] = column{name: it.header, typ: colString}
		if _, ok := row[i].(int64); ok {
			cols[i].typ = colInt
		}
	}
	return resultSet(cols, st.limit.apply([][]any{row})), nil
}

// sysVarValue reads @@[scope.]name; cfg is the scheduler's config.
func (a *Server) sysVarValue(cfg scheduler.Config, sc scope, name string) (any, error) {
	v := lookupVar(name)
	if v == nil {
		return nil, unknownVariable(name)
	}
	if sc == scopeSession {
		return nil, notSession(name)
	}
	return v.read(a, cfg), nil
}

// ignoredSession reports whether name is a session variable that client
// libraries set at connect; the admin port accepts and ignores them.
func ignoredSession(name string) bool {
	switch name {
	case "autocommit", "sql_mode", "time_zone":
		return true
	}
	for _, prefix := range []string{"session_track_", "character_set_", "collation_"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// change is one resolved assignment to a thread_pool_* variable.
type change struct {
	v     *sysVar
	value literal
}

// set runs SET: all thread_pool_* assignments of the statement are checked
// first and then applied together by one Reconfigure, or none is.
func (a *Server) set(st setStmt) error {
	var changes []change
	for _, as := range st.assigns {
		if as.charset {
			continue
		}
		v := lookupVar(as.name)
		switch {
		case v == nil && ignoredSession(as.name) && as.scope != scopeGlobal:
			continue
		case v == nil:
			return unknownVariable(as.name)
		case v.setting == nil:
			return readOnly(v.name)
		case as.scope != scopeGlobal:
			return globalOnly(v.name)
		}
		changes = append(changes, change{v, as.value})
	}
	if len(changes) == 0 {
		return nil
	}
	// One Update: concurrent SETs (and any other updater) never apply
	// their change to the same old config and lose each other's.
	var next scheduler.Config
	var rejected error // a change fn refused, already naming its variable
	err := a.sched.Update(func(cfg *scheduler.Config) error {
		cur := *cfg
		for _, ch := range changes {
			if err := ch.v.setting.set(cfg, ch.value); err != nil {
				rejected = assignError(ch, err)
				return rejected
			}
			// Validate each change alone so that a rejection names its variable.
			probe := cur
			_ = ch.v.setting.set(&probe, ch.value)
			if err := probe.Validate(); err != nil {
				rejected = assignError(ch, err)
				return rejected
			}
		}
		next = *cfg
		_ = next.Validate() // a copy, for the log: DEFAULT of size 0 is the number of CPUs
		return nil
	})
	switch {
	case err == nil:
	case rejected != nil:
		return rejected
	case errors.Is(err, scheduler.ErrBadConfig):
		return assignError(changes[0], err)
	default:
		return err
	}
	for _, ch := range changes {
		a.log.Info("admin: variable set", "name", ch.v.name, "value", ch.v.setting.get(next))
	}
	return nil
}

// assignError names the variable and value of a rejected assignment.
func assignError(ch change, err error) error {
	if errors.Is(err, errWrongType) {
		return wrongType(ch.v.name)
	}
	return wrongValue(ch.v.name, ch.value.text)
}
