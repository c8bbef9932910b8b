package scheduler

import (
	"fmt"
	"runtime"
	"time"

	"github.com/tpproxy/tpproxy/internal/codel"
)

// Algorithm selects how stalls are judged.
type Algorithm int

const (
	// Generic is the MariaDB/Percona thread pool: a group with queued work
	// that admitted nothing during a stall_limit tick is stalled and gets
	// one more execution slot.
	Generic Algorithm = iota
	// Enterprise is the MySQL Enterprise thread pool: a statement running
	// longer than stall_limit stops counting against its group's cap of
	// query_threads_per_group.
	Enterprise
)

func (a Algorithm) String() string {
	if a == Enterprise {
		return "enterprise"
	}
	return "generic"
}

// ParseAlgorithm reads "generic" or "enterprise".
func ParseAlgorithm(s string) (Algorithm, error) {
	switch s {
	case "generic":
		return Generic, nil
	case "enterprise":
		return Enterprise, nil
	}
	return 0, fmt.Errorf("%w: algorithm %q (want generic or enterprise)", ErrBadConfig, s)
}

// HighPrioMode says which statements use a group's high-priority queue.
type HighPrioMode int

const (
	// PrioTransactions: statements of sessions holding a backend connection
	// of their own (transaction, LOCK TABLES, GET_LOCK...), while the
	// session has tickets left.
	PrioTransactions HighPrioMode = iota
	// PrioStatements: every statement.
	PrioStatements
	// PrioNone: none.
	PrioNone
)

func (m HighPrioMode) String() string {
	switch m {
	case PrioStatements:
		return "statements"
	case PrioNone:
		return "none"
	}
	return "transactions"
}

// ParseHighPrioMode reads transactions, statements or none.
func ParseHighPrioMode(s string) (HighPrioMode, error) {
	switch s {
	case "transactions":
		return PrioTransactions, nil
	case "statements":
		return PrioStatements, nil
	case "none":
		return PrioNone, nil
	}
	return 0, fmt.Errorf("%w: high_prio_mode %q (want transactions, statements or none)", ErrBadConfig, s)
}

// Limits Validate enforces; internal/config's settings table states them
// to the configuration file and the admin port.
const (
	// MaxSize bounds the number of thread groups, as MariaDB does (MAX_THREAD_GROUPS).
	MaxSize = 100000
	// MinStallLimit is the shortest stall detection tick.
	MinStallLimit = time.Millisecond
	// MaxOversubscribe bounds Oversubscribe.
	MaxOversubscribe = 1000
	// MaxQueryThreadsPerGroup bounds QueryThreadsPerGroup.
	MaxQueryThreadsPerGroup = 4096
)

// Config configures a Scheduler. Names follow the servers' thread_pool_*
// variables; the mapstructure tags are the keys of the configuration
// file's thread_pool section (internal/config embeds Config there), so
// renaming one breaks users' files.
type Config struct {
	// Algorithm is Generic (default) or Enterprise.
	Algorithm Algorithm `mapstructure:"algorithm"`
	// Size is the number of thread groups (thread_pool_size). Default: the
	// number of CPUs.
	Size int `mapstructure:"size"`
	// StallLimit is the stall detection tick (thread_pool_stall_limit).
	// Default 500ms.
	StallLimit time.Duration `mapstructure:"stall_limit"`
	// Oversubscribe: a group executes at most 1+Oversubscribe statements
	// at once unless stalled (generic). Default 3.
	Oversubscribe int `mapstructure:"oversubscribe"`
	// QueryThreadsPerGroup is the enterprise algorithm's cap of statements
	// executing per group. Default 1.
	QueryThreadsPerGroup int `mapstructure:"query_threads_per_group"`
	// MaxThreads caps executing statements over all groups
	// (thread_pool_max_threads). Default 256; it may not be 0.
	MaxThreads int `mapstructure:"max_threads"`
	// IdleTimeout: capacity a stall granted is given back once the group
	// has not needed it for this long (thread_pool_idle_timeout). Default 60s.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
	// PrioKickupTimer: a low-priority statement queued longer than this
	// moves to the high-priority queue. Default 1s.
	PrioKickupTimer time.Duration `mapstructure:"prio_kickup_timer"`
	// HighPrioMode and HighPrioTickets (thread_pool_high_prio_mode,
	// _tickets): in transactions mode a session gets HighPrioTickets
	// high-priority admissions per stretch of holding a backend. Default
	// transactions, 4294967295.
	HighPrioMode    HighPrioMode `mapstructure:"high_prio_mode"`
	HighPrioTickets uint32       `mapstructure:"high_prio_tickets"`
	// QueueTimeout bounds a statement's wait in a queue. Default 30s.
	QueueTimeout time.Duration `mapstructure:"queue_timeout"`
	// CodelTarget and CodelInterval turn on admission by queue delay
	// (internal/codel): a group whose shortest queue wait stayed above
	// CodelTarget for a whole CodelInterval is overloaded; while it is,
	// its low-priority queue is served newest first and a statement of a
	// session holding no backend that has waited longer than
	// 2×CodelTarget gets ErrShed at once. CodelTarget 0 (the default)
	// keeps plain FIFO queues bounded by QueueTimeout. Interval default
	// 100ms.
	CodelTarget   time.Duration `mapstructure:"codel_target"`
	CodelInterval time.Duration `mapstructure:"codel_interval"`

	// Now is the clock; tests inject their own. Default time.Now.
	Now func() time.Time `mapstructure:"-"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Algorithm:            Generic,
		Size:                 runtime.NumCPU(),
		StallLimit:           500 * time.Millisecond,
		Oversubscribe:        3,
		QueryThreadsPerGroup: 1,
		MaxThreads:           256,
		IdleTimeout:          60 * time.Second,
		PrioKickupTimer:      time.Second,
		HighPrioMode:         PrioTransactions,
		HighPrioTickets:      4294967295,
		QueueTimeout:         30 * time.Second,
		CodelInterval:        100 * time.Millisecond,
	}
}

// Validate checks c and fills zero values with defaults (Oversubscribe 0
// is a valid setting, so it has no default here: DefaultConfig has it).
func (c *Config) Validate() error {
	d := DefaultConfig()
	switch {
	case c.Size == 0:
		c.Size = d.Size
	case c.Size < 0 || c.Size > MaxSize:
		return fmt.Errorf("%w: size %d (1..%d)", ErrBadConfig, c.Size, MaxSize)
	}
	if c.StallLimit == 0 {
		c.StallLimit = d.StallLimit
	}
	if c.StallLimit < MinStallLimit {
		return fmt.Errorf("%w: stall_limit %s (at least 1ms)", ErrBadConfig, c.StallLimit)
	}
	if c.Oversubscribe < 0 || c.Oversubscribe > MaxOversubscribe {
		return fmt.Errorf("%w: oversubscribe %d (0..%d)", ErrBadConfig, c.Oversubscribe, MaxOversubscribe)
	}
	if c.QueryThreadsPerGroup == 0 {
		c.QueryThreadsPerGroup = d.QueryThreadsPerGroup
	}
	if c.QueryThreadsPerGroup < 0 || c.QueryThreadsPerGroup > MaxQueryThreadsPerGroup {
		return fmt.Errorf("%w: query_threads_per_group %d (1..%d)", ErrBadConfig, c.QueryThreadsPerGroup, MaxQueryThreadsPerGroup)
	}
	if c.MaxThreads == 0 {
		c.MaxThreads = d.MaxThreads
	}
	if c.MaxThreads < 1 {
		return fmt.Errorf("%w: max_threads %d (at least 1)", ErrBadConfig, c.MaxThreads)
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.IdleTimeout < 0 {
		return fmt.Errorf("%w: idle_timeout %s", ErrBadConfig, c.IdleTimeout)
	}
	if c.PrioKickupTimer < 0 {
		return fmt.Errorf("%w: prio_kickup_timer %s", ErrBadConfig, c.PrioKickupTimer)
	}
	if c.HighPrioMode < PrioTransactions || c.HighPrioMode > PrioNone {
		return fmt.Errorf("%w: high_prio_mode %d", ErrBadConfig, c.HighPrioMode)
	}
	if c.Algorithm != Generic && c.Algorithm != Enterprise {
		return fmt.Errorf("%w: algorithm %d", ErrBadConfig, c.Algorithm)
	}
	if c.QueueTimeout == 0 {
		c.QueueTimeout = d.QueueTimeout
	}
	if c.QueueTimeout < 0 {
		return fmt.Errorf("%w: queue_timeout %s", ErrBadConfig, c.QueueTimeout)
	}
	if c.CodelInterval == 0 {
		c.CodelInterval = d.CodelInterval
	}
	if c.CodelTarget < 0 || c.CodelInterval < 0 {
		return fmt.Errorf("%w: codel_target %s, codel_interval %s (neither may be negative)", ErrBadConfig, c.CodelTarget, c.CodelInterval)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// codel is the queue-delay configuration of c.
func (c Config) codel() codel.Config {
	return codel.Config{Target: c.CodelTarget, Interval: c.CodelInterval}
}
