package sandbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// MySQL error numbers that end a readiness wait at once: the server is up
// but will not let root in, and waiting will not change that.
const (
	erAccessDenied       = mysqlwire.ErAccessDenied
	erAccessDeniedNoPass = mysqlwire.ErAccessDeniedNoPassword
)

// readyPollInterval is the readiness ticker period. Starting takes a few
// hundred milliseconds, so a short period matters more than its cost.
const readyPollInterval = 25 * time.Millisecond

// driverLogger routes go-sql-driver's own complaints (failed handshakes
// while the server starts) to the sandbox logger at debug level instead of
// stderr.
type driverLogger struct{ log *slog.Logger }

// Print implements mysql.Logger.
func (l driverLogger) Print(v ...any) { l.log.Debug("mysql driver", "msg", fmt.Sprint(v...)) }

// config is a go-sql-driver config for this server over TCP.
func (s *Server) config(user, password, db string) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User = user
	cfg.Passwd = password
	cfg.Net = "tcp"
	cfg.Addr = s.Addr
	cfg.DBName = db
	return cfg
}

// open returns a handle for cfg without connecting.
func (s *Server) open(cfg *mysql.Config) (*sql.DB, error) {
	log := s.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = driverLogger{log: log}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return sql.OpenDB(c), nil
}

// DSN is a go-sql-driver DSN for user over TCP. Each param is one
// "key=value" of the DSN query string, already URL-encoded, e.g.
// "parseTime=true" or "interpolateParams=true".
func (s *Server) DSN(user, password, db string, params ...string) string {
	dsn := s.config(user, password, db).FormatDSN()
	if len(params) == 0 {
		return dsn
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + strings.Join(params, "&")
}

// RootDSN is the DSN of root@127.0.0.1 for database db (may be empty).
func (s *Server) RootDSN(db string) string {
	return s.DSN("root", s.rootPassword, db)
}

// DB returns a pinged root handle; the caller closes it.
func (s *Server) DB(ctx context.Context) (*sql.DB, error) {
	db, err := s.open(s.config("root", s.rootPassword, ""))
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sandbox: connect to %s: %w", s.Addr, err)
	}
	return db, nil
}

// Exec runs stmts in order as root on one connection, so `USE db` carries
// over to later statements.
func (s *Server) Exec(ctx context.Context, stmts ...string) error {
	return s.execRoot(ctx, stmts, true)
}

// execAll runs stmts on conn. Errors quote the statement only if showSQL:
// account statements carry passwords.
func execAll(ctx context.Context, conn *sql.Conn, stmts []string, showSQL bool) error {
	for i, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			if !showSQL {
				return fmt.Errorf("sandbox: statement %d: %w", i+1, err)
			}
			return fmt.Errorf("sandbox: statement %d (%s): %w", i+1, abbreviate(q, 80), err)
		}
	}
	return nil
}

// execRoot runs stmts as root on one connection.
func (s *Server) execRoot(ctx context.Context, stmts []string, showSQL bool) error {
	db, err := s.DB(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	defer conn.Close()
	return execAll(ctx, conn, stmts, showSQL)
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// CreateUser creates (or updates the password of) user@'%' and
// user@'localhost' with all privileges WITH GRANT OPTION. On MySQL before
// 9.0 the accounts use mysql_native_password, so clients and the proxy need
// neither TLS nor RSA key exchange; MariaDB uses it by default.
func (s *Server) CreateUser(ctx context.Context, user, password string) error {
	if user == "" {
		return fmt.Errorf("%w: empty user name", ErrInvalidOptions)
	}
	ident := "IDENTIFIED BY " + quoteString(password)
	if s.Flavor == MySQL && !parseVersion(s.Version).atLeast(9, 0) {
		ident = "IDENTIFIED WITH mysql_native_password BY " + quoteString(password)
	}
	var stmts []string
	for _, host := range []string{"%", "localhost"} {
		account := quoteString(user) + "@" + quoteString(host)
		stmts = append(stmts,
			"CREATE USER IF NOT EXISTS "+account+" "+ident,
			"ALTER USER "+account+" "+ident,
			"GRANT ALL PRIVILEGES ON *.* TO "+account+" WITH GRANT OPTION",
		)
	}
	if err := s.execRoot(ctx, stmts, false); err != nil {
		return fmt.Errorf("sandbox: create user %s: %w", user, err)
	}
	return nil
}

// CreateDatabase creates database name if it does not exist.
func (s *Server) CreateDatabase(ctx context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty database name", ErrInvalidOptions)
	}
	return s.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(name))
}

// quoteString quotes a string literal for the default sql_mode (backslash
// escapes on).
func quoteString(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`).Replace(v) + "'"
}

// quoteIdent quotes an identifier with backticks.
func quoteIdent(v string) string {
	return "`" + strings.ReplaceAll(v, "`", "``") + "`"
}

// StatusInfo is a snapshot of a running server.
type StatusInfo struct {
	// PID, Addr, DataDir and Flavor repeat the Server's.
	PID     int
	Addr    string
	DataDir string
	Flavor  Flavor
	// Version is VERSION().
	Version string
	// Uptime is SHOW GLOBAL STATUS Uptime.
	Uptime time.Duration
	// ThreadsConnected is SHOW GLOBAL STATUS Threads_connected (this query's
	// own connection included).
	ThreadsConnected int
	// MaxConnections is @@max_connections.
	MaxConnections int
}

// Status queries the server. It returns an error wrapping ErrNotRunning
// when the process is gone.
func (s *Server) Status(ctx context.Context) (StatusInfo, error) {
	info := StatusInfo{PID: s.PID, Addr: s.Addr, DataDir: s.DataDir, Flavor: s.Flavor}
	if !s.Alive() {
		return info, fmt.Errorf("%w (pid %d, datadir %s)", ErrNotRunning, s.PID, s.DataDir)
	}
	db, err := s.DB(ctx)
	if err != nil {
		return info, err
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, "SELECT VERSION(), @@max_connections").Scan(&info.Version, &info.MaxConnections); err != nil {
		return info, fmt.Errorf("sandbox: status: %w", err)
	}
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Uptime', 'Threads_connected')")
	if err != nil {
		return info, fmt.Errorf("sandbox: status: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return info, fmt.Errorf("sandbox: status: %w", err)
		}
		n, err := strconv.Atoi(value)
		if err != nil {
			return info, fmt.Errorf("sandbox: status %s=%q: %w", name, value, err)
		}
		switch strings.ToLower(name) {
		case "uptime":
			info.Uptime = time.Duration(n) * time.Second
		case "threads_connected":
			info.ThreadsConnected = n
		}
	}
	if err := rows.Err(); err != nil {
		return info, fmt.Errorf("sandbox: status: %w", err)
	}
	return info, nil
}

// waitReady pings root over the Unix socket until the server answers, the
// process exits, or ctx ends. A fresh datadir's root has no password yet
// and only root@localhost exists, which a TCP login from 127.0.0.1 does not
// match under skip-name-resolve; bootstrap fixes both. Then root over TCP
// must work, and VERSION() is read.
func (s *Server) waitReady(ctx context.Context, fresh bool) error {
	pw := s.rootPassword
	if fresh {
		pw = ""
	}
	cfg := s.config("root", pw, "")
	cfg.Net = "unix"
	cfg.Addr = s.Socket
	db, err := s.open(cfg)
	if err != nil {
		return err
	}
	defer db.Close()

	begin := time.Now()
	tick := time.NewTicker(readyPollInterval)
	defer tick.Stop()
	for attempts := 1; ; attempts++ {
		err := db.PingContext(ctx)
		if err == nil {
			s.log.Debug("server answers", "attempts", attempts, "elapsed", time.Since(begin).Round(time.Millisecond))
			break
		}
		var me *mysql.MySQLError
		if errors.As(err, &me) && (me.Number == erAccessDenied || me.Number == erAccessDeniedNoPass) {
			return fmt.Errorf("sandbox: server is up but refuses root (wrong RootPassword for a reused datadir?): %w", err)
		}
		select {
		case <-s.exited:
			return s.exitError()
		case <-ctx.Done():
			return fmt.Errorf("%w after %v: %w (last ping error: %v)", ErrNotReady,
				time.Since(begin).Round(time.Millisecond), context.Cause(ctx), err)
		case <-tick.C:
		}
	}

	if fresh {
		if err := s.bootstrap(ctx, db); err != nil {
			return err
		}
	}
	tcp, err := s.DB(ctx)
	if err != nil {
		return err
	}
	defer tcp.Close()
	if err := tcp.QueryRowContext(ctx, "SELECT VERSION()").Scan(&s.Version); err != nil {
		return fmt.Errorf("sandbox: read version: %w", err)
	}
	return nil
}

// bootstrap gives root a TCP account on RootHost (127.0.0.1 by default)
// and sets RootPassword.
func (s *Server) bootstrap(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sandbox: bootstrap: %w", err)
	}
	defer conn.Close()
	tcpRoot := "'root'@" + quoteString(s.rootHost)
	stmts := []string{
		"CREATE USER IF NOT EXISTS " + tcpRoot,
		"GRANT ALL PRIVILEGES ON *.* TO " + tcpRoot + " WITH GRANT OPTION",
	}
	if s.rootPassword != "" {
		for _, acct := range []string{"'root'@'localhost'", tcpRoot} {
			stmts = append(stmts, "ALTER USER "+acct+" IDENTIFIED BY "+quoteString(s.rootPassword))
		}
	}
	if err := execAll(ctx, conn, stmts, false); err != nil {
		return fmt.Errorf("sandbox: bootstrap: %w", err)
	}
	return nil
}
