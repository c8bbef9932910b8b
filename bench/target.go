package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/mysqlclient"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// Target is an endpoint the driver measures: the database itself or
// tpproxy in front of it.
type Target struct {
	// Name labels the target in results, e.g. "direct" or "proxy".
	Name string
	// DSN is a go-sql-driver DSN (user, password, address, database,
	// tls, timeout). Whether statements go out as text or prepared is the
	// workload's Schema.Prepared, the same for every target.
	DSN string
	// ServerDSN, when set, reaches the server behind this target when it
	// is not the ramp's server (RampConfig.ServerDSN): a second server
	// compared with the first, such as MariaDB with its own thread pool.
	// Its SHOW GLOBAL STATUS and its process (role = Name, kind server)
	// are then this target's.
	ServerDSN string
}

// dialTimeout bounds a connection's dial when the DSN sets no timeout.
const dialTimeout = 10 * time.Second

// driverConfig parses dsn for the database/sql connections tpbench keeps
// besides the load (prepare, cleanup, status sampling, the admin port):
// client-side interpolation and a dial timeout.
func driverConfig(dsn string, log *slog.Logger) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: DSN: %w", err)
	}
	cfg.InterpolateParams = true
	if cfg.Timeout == 0 {
		cfg.Timeout = dialTimeout
	}
	if log != nil {
		cfg.Logger = driverLogger{log: log}
	}
	return cfg, nil
}

// openDB returns a handle for dsn that keeps at most maxConns connections
// and never closes them on its own.
func openDB(dsn string, maxConns int, log *slog.Logger) (*sql.DB, error) {
	cfg, err := driverConfig(dsn, log)
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

// dialer opens a target's benchmark connections with the lean client of
// internal/mysqlclient (database/sql's per-statement overhead would be a
// measurable share of a point select).
type dialer struct {
	cfg      mysqlclient.Config
	dbs      []string
	prepared bool
}

func newDialer(t Target, s Schema) (*dialer, error) {
	cfg, err := mysqlclient.FromDSN(t.DSN)
	if err != nil {
		return nil, fmt.Errorf("bench: target %s: %w", t.Name, err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = dialTimeout
	}
	return &dialer{cfg: cfg, dbs: s.Databases(cfg.DBName), prepared: s.Prepared}, nil
}

// session opens client i's connection, to its database.
func (d *dialer) session(ctx context.Context, i int) (*Session, error) {
	cfg := d.cfg
	cfg.DBName = d.dbs[i%len(d.dbs)]
	c, err := mysqlclient.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return newSession(c, d.prepared), nil
}

// check opens and closes one connection to every database.
func (d *dialer) check(ctx context.Context) error {
	for i := range d.dbs {
		s, err := d.session(ctx, i)
		if err != nil {
			return err
		}
		s.conn.Close()
	}
	return nil
}

// ErrMissingData means a target lacks the workload's tables.
var ErrMissingData = errors.New("bench: the workload's tables are missing")

// probeQuery returns a cheap statement that fails when wl's data is
// missing.
func probeQuery(wl Workload) string {
	if wl.Name() == AbilityAttr {
		return "SELECT 1 FROM ability_attr LIMIT 1"
	}
	return "SELECT 1 FROM " + tableName(wl.Options().Tables) + " LIMIT 1"
}

// CheckTarget connects to every database of t that wl uses and checks
// that its tables exist, so that a ramp fails at once with one clear
// message instead of measuring errors.
func CheckTarget(ctx context.Context, t Target, wl Workload) error {
	d, err := newDialer(t, wl.Options())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	for i, db := range d.dbs {
		s, err := d.session(ctx, i)
		var we *mysqlwire.Error
		if err != nil && !(errors.As(err, &we) && we.Code == 1049) {
			return fmt.Errorf("%w: target %s (%s): %w", ErrConnect, t.Name, d.cfg.Addr, err)
		}
		if err == nil {
			_, err = s.conn.ExecString(probeQuery(wl))
			s.conn.Close()
		}
		if errors.As(err, &we) && (we.Code == 1146 || we.Code == 1049) {
			return fmt.Errorf("%w: target %s, database %s: %s (run tpbench prepare with the same --tables/--schemas, or pick the right database)",
				ErrMissingData, t.Name, db, we.Message)
		}
		if err != nil {
			return fmt.Errorf("bench: target %s: %w", t.Name, err)
		}
	}
	return nil
}
