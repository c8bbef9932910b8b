package bench

import (
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Target is an endpoint the driver measures: the database itself or
// tpproxy in front of it.
type Target struct {
	// Name labels the target in results, e.g. "direct" or "proxy".
	Name string
	// DSN is a go-sql-driver DSN. interpolateParams is set by the
	// workload's Schema.Prepared (false: the text protocol, like sysbench
	// --db-ps-mode=disable), so that every target gets the same protocol.
	DSN string
}

// dialTimeout bounds a connection's dial when the DSN sets no timeout.
const dialTimeout = 10 * time.Second

// driverConfig parses dsn and applies what every benchmark connection
// uses: client-side interpolation and a dial timeout.
func driverConfig(dsn string, log *slog.Logger) (*mysql.Config, error) {
	return driverConfigPS(dsn, false, log)
}

// driverConfigPS is driverConfig for workloads that use server-side
// prepared statements when prepared is set (no interpolation then).
func driverConfigPS(dsn string, prepared bool, log *slog.Logger) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: DSN: %w", err)
	}
	cfg.InterpolateParams = !prepared
	if cfg.Timeout == 0 {
		cfg.Timeout = dialTimeout
	}
	if log != nil {
		cfg.Logger = driverLogger{log: log}
	}
	return cfg, nil
}

// openDB returns a handle for dsn that keeps at most maxConns connections
// and never closes them on its own, so that a step holds exactly the
// connections it opened.
func openDB(dsn string, maxConns int, log *slog.Logger) (*sql.DB, error) {
	return openDBPS(dsn, maxConns, false, log)
}

// openDBPS is openDB for a workload using prepared statements or not.
func openDBPS(dsn string, maxConns int, prepared bool, log *slog.Logger) (*sql.DB, error) {
	cfg, err := driverConfigPS(dsn, prepared, log)
	if err != nil {
		return nil, err
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

// OpenDB opens a handle for dsn with the driver settings of Run (for
// Prepare, Cleanup and checks). The caller closes it.
func OpenDB(dsn string, maxConns int) (*sql.DB, error) {
	return openDB(dsn, maxConns, nil)
}

// driverLogger sends go-sql-driver's complaints (broken connections) to
// the step's logger at debug level instead of stderr: lost connections
// are counted in the results.
type driverLogger struct{ log *slog.Logger }

// Print implements mysql.Logger.
func (l driverLogger) Print(v ...any) { l.log.Debug("mysql driver", "msg", fmt.Sprint(v...)) }
