package bench

import (
	"context"
	"fmt"
	"strings"

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
	return eachDatabase(ctx, dsn, s, func(dbDSN string) error {
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
		return eachOnServer(ctx, cfg, "DROP DATABASE IF EXISTS ", s.Databases(cfg.DBName))
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
// them first when there are several.
func eachDatabase(ctx context.Context, dsn string, s Schema, fn func(dsn string) error) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("bench: DSN: %w", err)
	}
	if cfg.DBName == "" {
		return fmt.Errorf("bench: DSN %q names no database", dsn)
	}
	names := s.Databases(cfg.DBName)
	if len(names) > 1 {
		if err := eachOnServer(ctx, cfg, "CREATE DATABASE IF NOT EXISTS ", names); err != nil {
			return err
		}
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

// eachOnServer runs stmt followed by each quoted database name, on a
// connection of cfg's server without a default database.
func eachOnServer(ctx context.Context, cfg *mysql.Config, stmt string, names []string) error {
	root := cfg.Clone()
	root.DBName = ""
	db, err := OpenDB(root.FormatDSN(), 1)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, name := range names {
		if _, err := db.ExecContext(ctx, stmt+quoteIdent(name)); err != nil {
			return fmt.Errorf("bench: %s%s: %w", stmt, name, err)
		}
	}
	return nil
}

// quoteIdent quotes a database name for SQL.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
