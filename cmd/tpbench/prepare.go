package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tpproxy/tpproxy/bench"
)

// dataFlags name the data set of prepare and cleanup.
type dataFlags struct {
	dsn       string
	workload  string
	tables    int
	tableSize int
	schemas   int
	scale     float64
}

func (f *dataFlags) register(cmd *cobra.Command, withSize bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.dsn, "dsn", "", "go-sql-driver DSN of the database to hold the data, e.g. 'root@tcp(127.0.0.1:3306)/sbtest' (required)")
	fl.StringVar(&f.workload, "workload", "oltp_read_write", "whose data: any sysbench workload (the sbtest tables) or ability_attr; known: "+strings.Join(bench.WorkloadNames(), ", "))
	fl.IntVar(&f.tables, "tables", 4, "tables sbtest1..N")
	fl.IntVar(&f.schemas, "schemas", 1, "databases (N > 1: <db>_1..<db>_N, created by prepare and dropped by cleanup)")
	if withSize {
		fl.IntVar(&f.tableSize, "table-size", 10000, "rows per table")
		fl.Float64Var(&f.scale, "scale", 1, "ability_attr scale (1: 200k client_app, 300k app_ability, 1.2M ability_attr, 10k conf_attr rows)")
	}
}

func (f *dataFlags) check(withSize bool) (bench.Schema, error) {
	s := bench.Schema{Tables: f.tables, TableSize: f.tableSize, Schemas: f.schemas, Scale: f.scale}
	if !withSize {
		s.TableSize, s.Scale = 1, 1
	}
	switch {
	case f.dsn == "":
		return s, errors.New("--dsn is required")
	case f.tables < 1:
		return s, fmt.Errorf("--tables %d: want at least 1", f.tables)
	case s.TableSize < 1:
		return s, fmt.Errorf("--table-size %d: want at least 1", f.tableSize)
	case f.schemas < 1:
		return s, fmt.Errorf("--schemas %d: want at least 1", f.schemas)
	case s.Scale <= 0:
		return s, fmt.Errorf("--scale %g: want a positive number", f.scale)
	}
	_, err := bench.NewWorkload(f.workload, s)
	return s, err
}

func newPrepareCmd(*app) *cobra.Command {
	var f dataFlags
	cmd := &cobra.Command{
		Use:   "prepare --dsn DSN [--workload W] [--tables N] [--table-size N] [--schemas N] [--scale X]",
		Short: "Create and load a workload's tables (as sysbench prepare does)",
		Long: `Drop and create the tables of the workload and load them with multi-row
INSERTs over several connections in parallel: sbtest1..N with sysbench's
layout (secondary index built after the load), or the four ability_attr
tables. With --schemas N the data goes into databases <db>_1..<db>_N.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := f.check(true)
			if err != nil {
				return err
			}
			start := time.Now()
			if err := bench.PrepareData(cmd.Context(), f.dsn, f.workload, s); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "prepared the %s data in %d database(s) in %s\n", f.workload, f.schemas, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	f.register(cmd, true)
	return cmd
}

func newCleanupCmd(*app) *cobra.Command {
	var f dataFlags
	cmd := &cobra.Command{
		Use:   "cleanup --dsn DSN [--workload W] [--tables N] [--schemas N]",
		Short: "Drop what prepare created (as sysbench cleanup does)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := f.check(false)
			if err != nil {
				return err
			}
			if err := bench.CleanupData(cmd.Context(), f.dsn, f.workload, s); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "dropped the %s data\n", f.workload)
			return nil
		},
	}
	f.register(cmd, false)
	return cmd
}
