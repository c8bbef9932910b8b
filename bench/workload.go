package bench

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
)

// Workload is a kind of transaction the driver runs back to back on every
// connection of a step.
type Workload interface {
	// Name is the sysbench name, e.g. "oltp_point_select".
	Name() string
	// NewClient returns the per-connection part of the workload: its
	// random source and statement buffers. Each driver connection gets its
	// own, so a Client needs no locking.
	NewClient(seed uint64) Client
}

// Client runs one workload's transactions on one connection.
type Client interface {
	// Tx runs one transaction on conn and returns the number of statements
	// it sent, including a failed one. On error a transaction may still
	// be open: the driver rolls it back (or replaces the connection).
	Tx(ctx context.Context, conn *sql.Conn) (queries int, err error)
}

// Schema is the sysbench table set a workload runs on: tables sbtest1 to
// sbtest<Tables>, each with TableSize rows whose ids are 1..TableSize.
type Schema struct {
	Tables    int
	TableSize int
	// Prepared runs every statement as a server-side prepared statement,
	// prepared once per connection, as sysbench's default
	// --db-ps-mode=auto does; otherwise statements are sent as text with
	// their arguments interpolated (--db-ps-mode=disable).
	Prepared bool
}

// preparedWorkload is a workload that may use server-side prepared
// statements; Run then leaves them to the driver (no interpolation).
type preparedWorkload interface {
	PreparedStatements() bool
}

func (s Schema) validate() error {
	if s.Tables < 1 || s.TableSize < 1 {
		return fmt.Errorf("%w: schema of %d tables × %d rows", ErrBadStep, s.Tables, s.TableSize)
	}
	return nil
}

// workloads maps names to constructors; the later tpbench workloads
// (ability_attr, ...) join here.
var workloads = func() map[string]func(Schema) Workload {
	m := make(map[string]func(Schema) Workload)
	for name, tx := range sysbenchTx {
		m[name] = func(s Schema) Workload { return sysbenchWorkload{name: name, schema: s, tx: tx} }
	}
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
	if err := s.validate(); err != nil {
		return nil, err
	}
	return mk(s), nil
}

// drain runs a query and reads its rows without keeping them. It reads
// into RawBytes so that a transaction's reads allocate little.
func drain(ctx context.Context, conn *sql.Conn, q string, args ...any) error {
	return drainRows(conn.QueryContext(ctx, q, args...))
}

// drainRows reads and discards a query's rows.
func drainRows(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	cols, err := rows.Columns()
	if err != nil {
		rows.Close()
		return err
	}
	dest := make([]any, len(cols))
	raw := make([]sql.RawBytes, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return err
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	return rows.Err()
}
