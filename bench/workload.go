package bench

import (
	"fmt"
	"sort"
	"strconv"
)

// Workload is a kind of transaction the driver runs back to back on every
// connection of a step.
type Workload interface {
	// Name is the sysbench name, e.g. "oltp_point_select".
	Name() string
	// Options are the data set and settings the workload runs with.
	Options() Schema
	// NewClient returns the per-connection part of the workload: its
	// random source and statement buffers. Each driver connection gets its
	// own, so a Client needs no locking.
	NewClient(seed uint64) Client
}

// Client runs one workload's transactions.
type Client interface {
	// Tx runs one transaction on s. On error a transaction may still be
	// open: the driver rolls it back (or replaces the connection).
	Tx(s *Session) error
}

// Schema is the data set a workload runs on and how it runs: for the
// sysbench workloads tables sbtest1 to sbtest<Tables>, each with TableSize
// rows whose ids are 1..TableSize; for ability_attr its four tables at
// Scale.
type Schema struct {
	Tables    int
	TableSize int
	// Schemas > 1 spreads the data over that many databases, named after
	// the target's database with a suffix _1.._N (the multi-schema
	// scenario); client i uses database (i mod Schemas)+1. 0 or 1: the
	// DSN's database only.
	Schemas int
	// Scale shrinks or grows the ability_attr tables (1: the report's
	// 200k/300k/1.2M/10k rows). 0 means 1.
	Scale float64
	// Prepared runs every statement as a server-side prepared statement,
	// prepared once per connection, as sysbench's default
	// --db-ps-mode=auto does; otherwise statements are sent as text with
	// their arguments filled in (--db-ps-mode=disable).
	Prepared bool
	// Dist picks row ids; "" is DistSpecial, sysbench's default.
	Dist Distribution
}

func (s Schema) validate() error {
	if s.Tables < 1 || s.TableSize < 1 {
		return fmt.Errorf("%w: schema of %d tables × %d rows", ErrBadStep, s.Tables, s.TableSize)
	}
	return s.validateCommon()
}

func (s Schema) validateCommon() error {
	if s.Schemas < 0 || s.Scale < 0 {
		return fmt.Errorf("%w: --schemas and --scale must not be negative", ErrBadStep)
	}
	if _, err := ParseDistribution(string(s.Dist)); err != nil {
		return err
	}
	return nil
}

// Databases returns the databases the data lives in, given the target's
// database base: base itself, or base_1..base_N with Schemas > 1.
func (s Schema) Databases(base string) []string {
	if s.Schemas <= 1 {
		return []string{base}
	}
	out := make([]string, s.Schemas)
	for i := range out {
		out[i] = base + "_" + strconv.Itoa(i+1)
	}
	return out
}

// workloads maps names to constructors.
var workloads = func() map[string]func(Schema) (Workload, error) {
	m := make(map[string]func(Schema) (Workload, error))
	for name, tx := range sysbenchTx {
		m[name] = func(s Schema) (Workload, error) {
			if err := s.validate(); err != nil {
				return nil, err
			}
			return sysbenchWorkload{name: name, schema: s, tx: tx}, nil
		}
	}
	m[AbilityAttr] = newAbilityWorkload
	return m
}()

// WorkloadNames lists the workloads NewWorkload knows, sorted.
func WorkloadNames() []string {
	names := make([]string, 0, len(workloads))
	for n := range workloads {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewWorkload returns the named workload on schema s with sysbench's
// default options.
func NewWorkload(name string, s Schema) (Workload, error) {
	mk, ok := workloads[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownWorkload, name, WorkloadNames())
	}
	if s.Dist == "" {
		s.Dist = DistSpecial
	}
	return mk(s)
}
