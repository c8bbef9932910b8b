package bench

import (
	"context"
	"fmt"

	"github.com/go-sql-driver/mysql"
)

// dataParallel is the connections PrepareData loads one database with.
const dataParallel = 4

// PrepareData creates and loads the data set of workload (the sysbench
// tables, or the ability_attr tables) in the database of dsn, or with
// s.Schemas > 1 in each of its databases base_1..base_N, which it creates.
func PrepareData(ctx context.Context, dsn, workload string, s Schema) error {
	if _, err := NewWorkload(workload, s); err != nil {
		return err
	}
	return eachDatabase(ctx, dsn, s, true, func(dbDSN string) error {
		db, err := OpenDB(dbDSN, max(dataParallel, s.Tables))
		if err != nil {
			return err
		}
		defer db.Close()
		if workload == AbilityAttr {
			return PrepareAbilityAttr(ctx, db, s.Scale)
		}
		return Prepare(ctx, db, s.Tables, s.TableSize)
	})
}

// CleanupData drops what PrepareData created: the tables, and with
// s.Schemas > 1 the databases.
func CleanupData(ctx context.Context, dsn, workload string, s Schema) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("bench: DSN: %w", err)
	}
	if s.Schemas > 1 {
		root := cfg.Clone()
		root.DBName = ""
		db, err := OpenDB(root.FormatDSN(), 1)
		if err != nil {
			return err
		}
		defer db.Close()
		for _, name := range s.Databases(cfg.DBName) {
			if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+quoteIdent(name)); err != nil {
				return fmt.Errorf("bench: cleanup: %w", err)
			}
		}
		return nil
	}
	db, err := OpenDB(dsn, 1)
	if err != nil {
		return err
	}
	defer db.Close()
	if workload == AbilityAttr {
		return CleanupAbilityAttr(ctx, db)
	}
	return Cleanup(ctx, db, s.Tables)
}

// eachDatabase calls fn with a DSN for each of s's databases, creating
// them first when create is set and there are several.
func eachDatabase(ctx context.Context, dsn string, s Schema, create bool, fn func(dsn string) error) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("bench: DSN: %w", err)
	}
	if cfg.DBName == "" {
		return fmt.Errorf("bench: DSN %q names no database", dsn)
	}
	names := s.Databases(cfg.DBName)
	if create && len(names) > 1 {
		root := cfg.Clone()
		root.DBName = ""
		db, err := OpenDB(root.FormatDSN(), 1)
		if err != nil {
			return err
		}
		for _, name := range names {
			if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(name)); err != nil {
				db.Close()
				return fmt.Errorf("bench: create database %s: %w", name, err)
			}
		}
		db.Close()
	}
	for _, name := range names {
		c := cfg.Clone()
		c.DBName = name
		if err := fn(c.FormatDSN()); err != nil {
			return err
		}
	}
	return nil
}

// quoteIdent quotes a database name for SQL.
func quoteIdent(s string) string {
	out := []byte{'`'}
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			out = append(out, '`')
		}
		out = append(out, s[i])
	}
	return string(append(out, '`'))
}
