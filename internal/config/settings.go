package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/scheduler"
)

// Kind is the type of a setting's value.
type Kind int

const (
	// KindInt is an integer.
	KindInt Kind = iota + 1
	// KindDuration is a time.Duration, in nanoseconds: "500ms" in the file,
	// an integer count of Setting.Unit on the admin port.
	KindDuration
	// KindBytes is a ByteSize, in bytes.
	KindBytes
	// KindEnum is one of Setting.Words; its value is the word's index.
	KindEnum
	// KindList is a list (users). It has no value, bounds or accessors:
	// Validate checks it, reloads compare it as a whole.
	KindList
)

// Component is the part of tpproxy a setting configures.
type Component int

const (
	// Scheduler is the thread groups (scheduler.Config, the thread_pool
	// section).
	Scheduler Component = iota + 1
	// Pool is the backend connections (pool.Config, the backend section).
	Pool
	// Proxy is the client front end; cmd/tpproxy builds proxy.Config from
	// these keys.
	Proxy
	// Process is the process itself: its logger and its shutdown.
	Process
)

func (c Component) String() string {
	switch c {
	case Scheduler:
		return "scheduler"
	case Pool:
		return "pool"
	case Proxy:
		return "proxy"
	case Process:
		return "process"
	}
	return "Component(" + strconv.Itoa(int(c)) + ")"
}

// Access is what the admin port offers of a setting.
type Access int

const (
	// Hidden: not an admin port variable.
	Hidden Access = iota
	// ReadOnly: shown by SHOW VARIABLES and SELECT @@name; SET GLOBAL is
	// refused as for a read-only server variable
	// (ER_INCORRECT_GLOBAL_LOCAL_VAR).
	ReadOnly
	// Settable: also changed by SET GLOBAL, which reconfigures the
	// running scheduler. Only Dynamic scheduler settings are settable.
	Settable
)

// Setting is one row of the settings table: a configuration key with its
// type, bounds, default, whether it changes at runtime and where it
// applies. Validate, check-config, the admin port's variables and hot
// reload all read these rows.
type Setting struct {
	// Key is the dotted key in the configuration file, e.g.
	// "thread_pool.size"; its environment variable is TPPROXY_ followed by
	// the key in upper case with '.' replaced by '_'.
	Key string
	// Name is the admin port's variable name: Key with '.' replaced by '_'
	// (thread_pool_size) unless the row says otherwise.
	Name string
	// Kind is the value's type.
	Kind Kind
	// Applies is the component the setting configures.
	Applies Component
	// Dynamic settings change while tpproxy runs: a reload applies them at
	// once (and Settable ones also SET GLOBAL). A reload reports a change
	// to any other key as needing a restart.
	Dynamic bool
	// Admin is what the admin port offers.
	Admin Access
	// Min and Max bound the value, inclusive, in its Kind's unit
	// (nanoseconds, bytes); Max 0 means no upper bound. Enums are bounded
	// by their Words instead.
	Min, Max int64
	// Zero, when set, says what 0 means (e.g. "number of CPUs"): the file
	// may also write 0, below Min. SET GLOBAL may not.
	Zero string
	// Unit is what a duration counts on the admin port: time.Millisecond
	// or time.Second, as the servers' variables do.
	Unit time.Duration
	// Words are an enum's values, in the order of their indexes.
	Words []string

	// want replaces the generated description of the allowed values in
	// messages, where the file's messages always said it differently.
	want  string
	field accessor
}

// accessor reaches a setting's field in the struct that owns it.
type accessor struct {
	// typ is the field's Go type.
	typ reflect.Type
	// part returns the owning struct inside a whole Config.
	part func(*Config) any
	// get and set read and write numbers (and enums held as numbers).
	get func(owner any) int64
	set func(owner any, v int64)
	// getText and setText replace get and set for enums held as strings.
	getText func(owner any) string
	setText func(owner any, w string)
}

// The allowed values of the string enums.
var (
	authPlugins    = []string{string(AuthNativePassword), string(AuthCachingSHA2Password)}
	identities     = []string{IdentityPassthrough, IdentityService}
	backendTLSMode = []string{string(TLSDisabled), string(TLSPreferred), string(TLSRequired)}
	logLevels      = []string{LogLevelDebug, LogLevelInfo, LogLevelWarn, LogLevelError}
	logFormats     = []string{LogFormatText, LogFormatJSON}
)

// maxUint32 is the largest high_prio_tickets, as on the servers.
const maxUint32 = math.MaxUint32

// table is the settings table, in the order of the file's sections; it is
// also the order Validate reports problems in. Rows are never modified
// after init.
//
// A new tunable is a field with a mapstructure tag in the struct of the
// component that uses it (scheduler.Config, pool.Config, or Config for the
// front end and the process) and one row here. Validation, reloads and —
// for Admin rows — the admin port's SHOW VARIABLES and SET GLOBAL then
// follow; a dynamic key still needs its component to take the new value
// (the reloader applies scheduler rows key by key, pool rows through
// pool.Dynamic, front-end and process rows through their setters).
var table = named([]Setting{
	{Key: "max_client_connections", Kind: KindInt, Applies: Proxy, Dynamic: true, Min: 1,
		field: number(func(c *Config) *int { return &c.MaxClientConnections })},
	{Key: "max_connect_errors", Kind: KindInt, Applies: Proxy, Dynamic: true, Zero: "off", Min: 1,
		field: number(func(c *Config) *int { return &c.MaxConnectErrors })},
	{Key: "max_allowed_packet", Kind: KindBytes, Applies: Proxy, Zero: "the backend's",
		Min: int64(MinAllowedPacket), Max: int64(MaxAllowedPacket),
		want:  fmt.Sprintf("0 (the backend's) or between %s and %s", MinAllowedPacket, MaxAllowedPacket),
		field: number(func(c *Config) *ByteSize { return &c.MaxAllowedPacket })},
	{Key: "max_buffer_memory", Kind: KindBytes, Applies: Proxy, Dynamic: true, Zero: "no bound",
		Min:   int64(MinBufferMemory),
		want:  fmt.Sprintf("0 (no bound) or at least %s", MinBufferMemory),
		field: number(func(c *Config) *ByteSize { return &c.MaxBufferMemory })},
	{Key: "max_pinned_connections", Kind: KindInt, Applies: Proxy, Dynamic: true, Zero: "automatic", Min: 1,
		field: number(func(c *Config) *int { return &c.MaxPinnedConnections })},
	{Key: "max_pinned_per_account", Kind: KindInt, Applies: Proxy, Dynamic: true, Zero: "automatic", Min: 1,
		field: number(func(c *Config) *int { return &c.MaxPinnedPerAccount })},
	{Key: "max_sticky_pinned", Kind: KindInt, Applies: Proxy, Dynamic: true, Zero: "automatic", Min: 1,
		field: number(func(c *Config) *int { return &c.MaxStickyPinned })},
	{Key: "auth_plugin", Kind: KindEnum, Applies: Proxy, Words: authPlugins,
		field: text(func(c *Config) *AuthPlugin { return &c.AuthPlugin })},
	{Key: "users", Kind: KindList, Applies: Proxy, Dynamic: true},

	{Key: "backend.identity", Kind: KindEnum, Applies: Proxy, Words: identities,
		field: text(func(c *Config) *string { return &c.Backend.Identity })},
	{Key: "backend.pool_size", Kind: KindInt, Applies: Pool, Dynamic: true, Admin: ReadOnly, Zero: "auto",
		Min: 1, Max: MaxPoolSize, want: fmt.Sprintf("between 1 and %d, or auto", MaxPoolSize),
		field: number(func(c *pool.Config) *int { return &c.Size })},
	{Key: "backend.pool_size_min", Kind: KindInt, Applies: Pool, Dynamic: true, Admin: Hidden, Min: 1, Max: MaxPoolSize,
		field: number(func(c *Config) *int { return &c.Backend.PoolSizeMin })},
	{Key: "backend.pool_size_max", Kind: KindInt, Applies: Pool, Dynamic: true, Admin: Hidden, Min: 1, Max: MaxPoolSize,
		field: number(func(c *Config) *int { return &c.Backend.PoolSizeMax })},
	{Key: "backend.acquire_timeout", Kind: KindDuration, Applies: Pool, Dynamic: true, Min: 1,
		field: number(func(c *pool.Config) *time.Duration { return &c.AcquireTimeout })},
	{Key: "backend.connect_timeout", Kind: KindDuration, Applies: Pool, Dynamic: true, Min: 1,
		field: number(func(c *pool.Config) *time.Duration { return &c.ConnectTimeout })},
	{Key: "backend.health_interval", Kind: KindDuration, Applies: Pool, Dynamic: true, Min: 1,
		field: number(func(c *pool.Config) *time.Duration { return &c.HealthInterval })},
	{Key: "backend.max_lifetime", Kind: KindDuration, Applies: Pool, Dynamic: true, Zero: "unlimited", Min: 1,
		field: number(func(c *pool.Config) *time.Duration { return &c.MaxLifetime })},
	{Key: "backend.max_prepared_per_connection", Name: "backend_prepared_per_connection", Kind: KindInt,
		Applies: Pool, Admin: ReadOnly, Zero: "automatic", Min: 1,
		field: number(func(c *pool.Config) *int { return &c.MaxPreparedPerConn })},
	{Key: "backend.tls.mode", Kind: KindEnum, Applies: Pool, Words: backendTLSMode,
		field: text(func(c *Config) *TLSMode { return &c.Backend.TLS.Mode })},

	{Key: "thread_pool.algorithm", Kind: KindEnum, Applies: Scheduler, Dynamic: true, Admin: Settable,
		Words: []string{scheduler.Generic.String(), scheduler.Enterprise.String()},
		field: number(func(c *scheduler.Config) *scheduler.Algorithm { return &c.Algorithm })},
	{Key: "thread_pool.size", Kind: KindInt, Applies: Scheduler, Dynamic: true, Admin: Settable,
		Zero: "number of CPUs", Min: 1, Max: scheduler.MaxSize,
		field: number(func(c *scheduler.Config) *int { return &c.Size })},
	{Key: "thread_pool.stall_limit", Kind: KindDuration, Applies: Scheduler, Dynamic: true, Admin: Settable,
		Min: int64(scheduler.MinStallLimit), Unit: time.Millisecond,
		field: number(func(c *scheduler.Config) *time.Duration { return &c.StallLimit })},
	{Key: "thread_pool.oversubscribe", Kind: KindInt, Applies: Scheduler, Dynamic: true, Admin: Settable,
		Min: 0, Max: scheduler.MaxOversubscribe,
		field: number(func(c *scheduler.Config) *int { return &c.Oversubscribe })},
	{Key: "thread_pool.query_threads_per_group", Kind: KindInt, Applies: Scheduler, Dynamic: true, Admin: Settable,
		Min: 1, Max: scheduler.MaxQueryThreadsPerGroup,
		field: number(func(c *scheduler.Config) *int { return &c.QueryThreadsPerGroup })},
	{Key: "thread_pool.max_threads", Kind: KindInt, Applies: Scheduler, Dynamic: true, Admin: Settable, Min: 1,
		field: number(func(c *scheduler.Config) *int { return &c.MaxThreads })},
	{Key: "thread_pool.idle_timeout", Kind: KindDuration, Applies: Scheduler, Dynamic: true, Admin: Settable,
		Min: 1, Unit: time.Second,
		field: number(func(c *scheduler.Config) *time.Duration { return &c.IdleTimeout })},
	{Key: "thread_pool.prio_kickup_timer", Kind: KindDuration, Applies: Scheduler, Dynamic: true, Admin: Settable,
		Min: 0, Unit: time.Millisecond,
		field: number(func(c *scheduler.Config) *time.Duration { return &c.PrioKickupTimer })},
	{Key: "thread_pool.high_prio_mode", Kind: KindEnum, Applies: Scheduler, Dynamic: true, Admin: Settable,
		Words: []string{scheduler.PrioTransactions.String(), scheduler.PrioStatements.String(), scheduler.PrioNone.String()},
		field: number(func(c *scheduler.Config) *scheduler.HighPrioMode { return &c.HighPrioMode })},
	{Key: "thread_pool.high_prio_tickets", Kind: KindInt, Applies: Scheduler, Dynamic: true, Admin: Settable,
		Min: 0, Max: maxUint32,
		field: number(func(c *scheduler.Config) *uint32 { return &c.HighPrioTickets })},
	{Key: "thread_pool.queue_timeout", Kind: KindDuration, Applies: Scheduler, Dynamic: true, Admin: Settable,
		Min: 1, Unit: time.Millisecond,
		field: number(func(c *scheduler.Config) *time.Duration { return &c.QueueTimeout })},
	{Key: "thread_pool.codel_target", Kind: KindDuration, Applies: Scheduler, Dynamic: true, Admin: Settable,
		Zero: "off", Unit: time.Millisecond,
		field: number(func(c *scheduler.Config) *time.Duration { return &c.CodelTarget })},
	{Key: "thread_pool.codel_interval", Kind: KindDuration, Applies: Scheduler, Dynamic: true, Admin: Settable,
		Min: 1, Unit: time.Millisecond,
		field: number(func(c *scheduler.Config) *time.Duration { return &c.CodelInterval })},
	{Key: "thread_pool.extra_port", Kind: KindInt, Applies: Proxy, Zero: "none", Min: 1, Max: 65535,
		want:  "0 (none) or a port 1..65535",
		field: number(func(c *Config) *int { return &c.ThreadPool.ExtraPort })},
	{Key: "thread_pool.extra_max_connections", Kind: KindInt, Applies: Proxy, Min: 1, Max: 100,
		field: number(func(c *Config) *int { return &c.ThreadPool.ExtraMaxConnections })},

	{Key: "log.level", Kind: KindEnum, Applies: Process, Dynamic: true, Words: logLevels,
		field: text(func(c *Config) *string { return &c.Log.Level })},
	{Key: "log.format", Kind: KindEnum, Applies: Process, Words: logFormats,
		field: text(func(c *Config) *string { return &c.Log.Format })},
	{Key: "log.slow_queue", Kind: KindDuration, Applies: Proxy, Dynamic: true, Zero: "off", Min: 1,
		field: number(func(c *Config) *time.Duration { return &c.Log.SlowQueue })},
	{Key: "catalog_ttl", Kind: KindDuration, Applies: Proxy, Zero: "read the catalog every time", Min: 1,
		field: number(func(c *Config) *time.Duration { return &c.CatalogTTL })},
	{Key: "gc_headroom", Kind: KindBytes, Applies: Process, Dynamic: true, Zero: "GOGC alone",
		field: number(func(c *Config) *ByteSize { return &c.GCHeadroom })},
	{Key: "shutdown_timeout", Kind: KindDuration, Applies: Process, Dynamic: true, Zero: "close at once", Min: 1,
		field: number(func(c *Config) *time.Duration { return &c.ShutdownTimeout })},
})

// named fills in the derived admin names.
func named(rows []Setting) []Setting {
	for i := range rows {
		if rows[i].Name == "" {
			rows[i].Name = strings.ReplaceAll(rows[i].Key, ".", "_")
		}
	}
	return rows
}

// Settings returns the settings table, in the file's order.
func Settings() []Setting { return slices.Clone(table) }

// Lookup finds the setting of a file key.
func Lookup(key string) (Setting, bool) {
	i := slices.IndexFunc(table, func(s Setting) bool { return s.Key == key })
	if i < 0 {
		return Setting{}, false
	}
	return table[i], true
}

// owner is a struct that holds settings.
type owner interface {
	scheduler.Config | pool.Config | Config
}

// partOf returns the struct of type S inside c.
func partOf[S owner](c *Config) *S {
	var p any
	switch any((*S)(nil)).(type) {
	case *scheduler.Config:
		p = &c.ThreadPool.Config
	case *pool.Config:
		p = &c.Backend.Config
	default:
		p = c
	}
	return p.(*S)
}

// owned asserts that o is the struct a setting lives in: passing another
// is a programming error.
func owned[S owner](o any) *S {
	p, ok := o.(*S)
	if !ok {
		panic(fmt.Sprintf("config: a setting of %T read or written in %T", (*S)(nil), o))
	}
	return p
}

// number is the accessor of an integer, duration, byte size or enum field.
func number[S owner, T ~int | ~int64 | ~uint32 | ~uint64](f func(*S) *T) accessor {
	return accessor{
		typ:  reflect.TypeFor[T](),
		part: func(c *Config) any { return partOf[S](c) },
		get:  func(o any) int64 { return int64(*f(owned[S](o))) },
		set:  func(o any, v int64) { *f(owned[S](o)) = T(v) },
	}
}

// text is the accessor of an enum held as a string.
func text[S owner, T ~string](f func(*S) *T) accessor {
	return accessor{
		typ:     reflect.TypeFor[T](),
		part:    func(c *Config) any { return partOf[S](c) },
		getText: func(o any) string { return string(*f(owned[S](o))) },
		setText: func(o any, w string) { *f(owned[S](o)) = T(w) },
	}
}

// Of returns the struct inside c that holds s — *scheduler.Config,
// *pool.Config or c itself — for Get, Set and Check. It is nil for a list.
func (s Setting) Of(c *Config) any {
	if s.field.part == nil {
		return nil
	}
	return s.field.part(c)
}

// FieldType is the Go type of the setting's field, e.g. scheduler.Algorithm
// (nil for a list).
func (s Setting) FieldType() reflect.Type { return s.field.typ }

// Get reads s from o, the struct that holds it (see Of). An enum reads as
// its word's index, -1 for a string that is none of Words.
func (s Setting) Get(o any) int64 {
	switch {
	case s.field.getText != nil:
		return int64(slices.Index(s.Words, s.field.getText(o)))
	case s.field.get != nil:
		return s.field.get(o)
	}
	return 0
}

// Set writes v into o, the struct that holds s (see Of). It does not check
// bounds: Check and Allows do.
func (s Setting) Set(o any, v int64) {
	switch {
	case s.field.setText != nil:
		w := strconv.FormatInt(v, 10) // not a word: Check reports it
		if v >= 0 && v < int64(len(s.Words)) {
			w = s.Words[v]
		}
		s.field.setText(o, w)
	case s.field.set != nil:
		s.field.set(o, v)
	}
}

// Default is the value of s in Default().
func (s Setting) Default() int64 {
	d := Default()
	return s.Get(s.Of(&d))
}

// Allows reports whether v is within the bounds of s.
func (s Setting) Allows(v int64) bool {
	switch s.Kind {
	case KindList:
		return true
	case KindEnum:
		return v >= 0 && v < int64(len(s.Words))
	}
	if v == 0 && s.Zero != "" {
		return true
	}
	return v >= s.Min && (s.Max == 0 || v <= s.Max)
}

// Check returns a *BoundsError when the value of s in o is out of bounds.
func (s Setting) Check(o any) error {
	if s.Kind == KindList || s.Allows(s.Get(o)) {
		return nil
	}
	got := s.Format(s.Get(o))
	if s.field.getText != nil {
		got = strconv.Quote(s.field.getText(o))
	}
	return &BoundsError{Want: s.Want(), Got: got}
}

// ParseWord reads an enum's word as written in the file.
func (s Setting) ParseWord(w string) (int64, error) {
	i := slices.Index(s.Words, w)
	if i < 0 {
		return 0, &BoundsError{Want: s.Want(), Got: strconv.Quote(w)}
	}
	return int64(i), nil
}

// Want describes the values s allows, as messages say it:
// "0 (number of CPUs) to 100000", "at least 1ms", "text or json".
func (s Setting) Want() string {
	switch {
	case s.want != "":
		return s.want
	case s.Kind == KindEnum:
		return orList(s.Words)
	case s.Zero != "" && s.Max != 0:
		return fmt.Sprintf("0 (%s) to %s", s.Zero, s.Format(s.Max))
	case s.Zero != "":
		return fmt.Sprintf("0 (%s) or greater", s.Zero)
	case s.Max != 0:
		return s.Format(s.Min) + " to " + s.Format(s.Max)
	case s.Min == 0:
		return "0 or greater"
	case s.Kind == KindDuration && s.Min == 1:
		return "greater than 0"
	}
	return "at least " + s.Format(s.Min)
}

// Format writes a value of s as the file would: 42, 500ms, 16MiB, "generic".
func (s Setting) Format(v int64) string {
	switch s.Kind {
	case KindDuration:
		return time.Duration(v).String()
	case KindBytes:
		return ByteSize(v).String()
	case KindEnum:
		if v >= 0 && v < int64(len(s.Words)) {
			return strconv.Quote(s.Words[v])
		}
	}
	return strconv.FormatInt(v, 10)
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// BoundsError is a value outside a setting's bounds. Validate returns it
// inside a FieldError that names the key.
type BoundsError struct {
	// Want describes the allowed values (Setting.Want).
	Want string
	// Got is the value, as the file writes it.
	Got string
}

func (e *BoundsError) Error() string { return "must be " + e.Want + ", got " + e.Got }
