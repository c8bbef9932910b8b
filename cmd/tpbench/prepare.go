package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpproxy/tpproxy/bench"
)

// tableFlags name the sysbench tables of prepare and cleanup.
type tableFlags struct {
	dsn       string
	tables    int
	tableSize int
}

func (f *tableFlags) register(cmd *cobra.Command, withSize bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.dsn, "dsn", "", "go-sql-driver DSN of the database to hold the tables, e.g. 'root@tcp(127.0.0.1:3306)/sbtest' (required)")
	fl.IntVar(&f.tables, "tables", 4, "tables sbtest1..N")
	if withSize {
		fl.IntVar(&f.tableSize, "table-size", 10000, "rows per table")
	}
}

func (f *tableFlags) check() error {
	switch {
	case f.dsn == "":
		return errors.New("--dsn is required")
	case f.tables < 1:
		return fmt.Errorf("--tables %d: want at least 1", f.tables)
	}
	return nil
}

func newPrepareCmd(a *app) *cobra.Command {
	var f tableFlags
	cmd := &cobra.Command{
		Use:   "prepare --dsn DSN [--tables N] [--table-size N]",
		Short: "Create and load the sysbench tables (as sysbench prepare does)",
		Long: `Drop and create tables sbtest1..N with sysbench's layout and load them with
multi-row INSERTs, one connection per table in parallel; the secondary index
is built after the load.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			if f.tableSize < 1 {
				return fmt.Errorf("--table-size %d: want at least 1", f.tableSize)
			}
			db, err := bench.OpenDB(f.dsn, f.tables)
			if err != nil {
				return err
			}
			defer db.Close()
			start := time.Now()
			if err := bench.Prepare(cmd.Context(), db, f.tables, f.tableSize); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "prepared %d tables × %d rows in %s\n", f.tables, f.tableSize, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	f.register(cmd, true)
	return cmd
}

func newCleanupCmd(a *app) *cobra.Command {
	var f tableFlags
	cmd := &cobra.Command{
		Use:   "cleanup --dsn DSN [--tables N]",
		Short: "Drop the sysbench tables (as sysbench cleanup does)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			db, err := bench.OpenDB(f.dsn, 1)
			if err != nil {
				return err
			}
			defer db.Close()
			if err := bench.Cleanup(cmd.Context(), db, f.tables); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "dropped sbtest1..%d\n", f.tables)
			return nil
		},
	}
	f.register(cmd, false)
	return cmd
}
