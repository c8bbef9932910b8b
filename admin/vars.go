package admin

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tpproxy/tpproxy/scheduler"
)

// Identity of the admin port, as @@version and @@version_comment.
const (
	serverVersion  = "8.0.11-tpproxy-admin"
	versionComment = "tpproxy admin"
)

// setting is a thread_pool_* variable: one field of scheduler.Config.
type setting struct {
	// get reads the variable's value (int64 or string) from a config.
	get func(scheduler.Config) any
	// set parses v and stores it in c. Its errors are errWrongValue or
	// errWrongType without a message; the caller names the variable.
	set func(c *scheduler.Config, v literal) error
}

// sysVar is a variable of the admin port. Read-only variables have no
// setting and read their value from the server.
type sysVar struct {
	name    string
	setting *setting
	value   func(*Server) any
}

// maxUint32 bounds the millisecond and second variables as MariaDB does.
const maxUint32 = math.MaxUint32

// sysVars are the admin port's variables, in name order.
var sysVars = []sysVar{
	{name: "backend_pool_size", value: func(a *Server) any { return int64(a.pool.Stats().Size) }},
	{name: "backend_prepared_per_connection", value: func(a *Server) any { return int64(a.pool.Stats().PreparedLimit) }},
	{name: "thread_pool_algorithm", setting: enumField(func(c *scheduler.Config) *scheduler.Algorithm { return &c.Algorithm },
		scheduler.ParseAlgorithm, 2)},
	{name: "thread_pool_high_prio_mode", setting: enumField(func(c *scheduler.Config) *scheduler.HighPrioMode { return &c.HighPrioMode },
		scheduler.ParseHighPrioMode, 3)},
	{name: "thread_pool_high_prio_tickets", setting: intField(func(c *scheduler.Config) *uint32 { return &c.HighPrioTickets }, 0, maxUint32)},
	{name: "thread_pool_idle_timeout", setting: durField(func(c *scheduler.Config) *time.Duration { return &c.IdleTimeout }, time.Second, 1, maxUint32)},
	{name: "thread_pool_max_threads", setting: intField(func(c *scheduler.Config) *int { return &c.MaxThreads }, 1, math.MaxInt32)},
	{name: "thread_pool_oversubscribe", setting: intField(func(c *scheduler.Config) *int { return &c.Oversubscribe }, 0, 1000)},
	{name: "thread_pool_prio_kickup_timer", setting: durField(func(c *scheduler.Config) *time.Duration { return &c.PrioKickupTimer }, time.Millisecond, 0, maxUint32)},
	{name: "thread_pool_query_threads_per_group", setting: intField(func(c *scheduler.Config) *int { return &c.QueryThreadsPerGroup }, 1, 4096)},
	{name: "thread_pool_queue_timeout", setting: durField(func(c *scheduler.Config) *time.Duration { return &c.QueueTimeout }, time.Millisecond, 1, maxUint32)},
	{name: "thread_pool_size", setting: intField(func(c *scheduler.Config) *int { return &c.Size }, 1, scheduler.MaxSize)},
	{name: "thread_pool_stall_limit", setting: durField(func(c *scheduler.Config) *time.Duration { return &c.StallLimit }, time.Millisecond, 1, maxUint32)},
	{name: "version", value: func(*Server) any { return serverVersion }},
	{name: "version_comment", value: func(*Server) any { return versionComment }},
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

// intField is an integer setting in [lo, hi].
func intField[T int | uint32](field func(*scheduler.Config) *T, lo, hi int64) *setting {
	return &setting{
		get: func(c scheduler.Config) any { return int64(*field(&c)) },
		set: func(c *scheduler.Config, v literal) error {
			if v.isDefault() {
				d := scheduler.DefaultConfig()
				*field(c) = *field(&d)
				return nil
			}
			n, err := v.integer(lo, hi)
			if err != nil {
				return err
			}
			*field(c) = T(n)
			return nil
		},
	}
}

// durField is a duration setting counted in unit, in [lo, hi] units.
func durField(field func(*scheduler.Config) *time.Duration, unit time.Duration, lo, hi int64) *setting {
	return &setting{
		get: func(c scheduler.Config) any { return int64(*field(&c) / unit) },
		set: func(c *scheduler.Config, v literal) error {
			if v.isDefault() {
				d := scheduler.DefaultConfig()
				*field(c) = *field(&d)
				return nil
			}
			n, err := v.integer(lo, hi)
			if err != nil {
				return err
			}
			*field(c) = time.Duration(n) * unit
			return nil
		},
	}
}

// enum is a scheduler enumeration: values 0..n-1 with names.
type enum interface {
	~int
	String() string
}

// enumField is a setting of one of n words, given as a word, a string or
// the word's 0-based number as MySQL allows.
func enumField[T enum](field func(*scheduler.Config) *T, parse func(string) (T, error), n int) *setting {
	return &setting{
		get: func(c scheduler.Config) any { return (*field(&c)).String() },
		set: func(c *scheduler.Config, v literal) error {
			if v.isDefault() {
				d := scheduler.DefaultConfig()
				*field(c) = *field(&d)
				return nil
			}
			switch v.kind {
			case tokNumber:
				i, err := v.integer(0, int64(n-1))
				if err != nil {
					return err
				}
				*field(c) = T(i)
			default:
				x, err := parse(strings.ToLower(v.text))
				if err != nil {
					return errWrongValue
				}
				*field(c) = x
			}
			return nil
		},
	}
}

// showVariables answers SHOW VARIABLES.
func (a *Server) showVariables(st showVariables) *mysql.Result {
	cfg := a.sched.Config()
	rows := make([]nameValue, 0, len(sysVars))
	for i := range sysVars {
		v := &sysVars[i]
		rows = append(rows, nameValue{v.name, v.read(a, cfg)})
	}
	return nameValues(rows, st.like)
}

// selectVars answers SELECT @@x, ...: one row, typed values.
func (a *Server) selectVars(st selectVars) (*mysql.Result, error) {
	cfg := a.sched.Config()
	cols := make([]column, len(st.items))
	row := make([]any, len(st.items))
	for i, it := range st.items {
		v := lookupVar(it.name)
		if v == nil {
			return nil, unknownVariable(it.name)
		}
		if it.scope == scopeSession {
			return nil, notSession(it.name)
		}
		row[i] = v.read(a, cfg)
		cols[i] = column{name: it.header, typ: colString}
		if _, ok := row[i].(int64); ok {
			cols[i].typ = colInt
		}
	}
	return resultSet(cols, st.limit.apply([][]any{row})), nil
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
