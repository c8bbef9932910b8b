package pool

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"
)

// TLSMode says whether backend connections use TLS.
type TLSMode int

const (
	// TLSDisabled never uses TLS.
	TLSDisabled TLSMode = iota
	// TLSPreferred uses TLS when the server offers it.
	TLSPreferred
	// TLSRequired fails to connect when TLS cannot be established.
	TLSRequired
)

// Config configures a Pool. The mapstructure tags are the keys of the
// configuration file's backend section (internal/config embeds Config
// there), so renaming one breaks users' files; fields tagged "-" are not in
// the file, or cmd/tpproxy sets them from other keys.
type Config struct {
	// Addr is the backend's host:port (or a unix socket path).
	Addr string `mapstructure:"addr"`
	// User and Password are the service account every backend connection
	// logs in with.
	User     string `mapstructure:"user"`
	Password string `mapstructure:"password"`
	// Size is the number of backend connections the pool keeps open.
	// Default 16.
	Size int `mapstructure:"pool_size"`
	// AcquireTimeout bounds the wait for a free connection. Default 10s.
	AcquireTimeout time.Duration `mapstructure:"acquire_timeout"`
	// ConnectTimeout bounds dialing plus the MySQL handshake. Default 5s.
	ConnectTimeout time.Duration `mapstructure:"connect_timeout"`
	// HealthInterval is how often idle connections are checked. Default 10s.
	HealthInterval time.Duration `mapstructure:"health_interval"`
	// MaxLifetime is how long a connection lives, minus up to 10% jitter so
	// that connections do not all expire together; 0 means forever.
	MaxLifetime time.Duration `mapstructure:"max_lifetime"`
	// Collation is set on every backend connection; the server's fallback for
	// unknown ids (latin1 on MariaDB) is never relied on. Default
	// utf8mb4_general_ci, which MySQL and MariaDB both know.
	Collation string `mapstructure:"collation"`
	// TLS and TLSMode configure TLS to the backend.
	TLS     *tls.Config `mapstructure:"-"`
	TLSMode TLSMode     `mapstructure:"-"`
	// MaxPreparedPerConn caps the statements prepared on one backend
	// connection; the least recently used is closed to make room. 0
	// (default) derives it from the server: half its
	// max_prepared_stmt_count shared by Size connections, at most 1024.
	MaxPreparedPerConn int `mapstructure:"max_prepared_per_connection"`
	// GlobalsInterval is how often the server's global variables are read,
	// so that new client sessions start from the current ones (a SET
	// GLOBAL through tpproxy is seen at once). Default 2s; negative: only
	// at start and after SET GLOBAL through tpproxy.
	GlobalsInterval time.Duration `mapstructure:"-"`
	// LocalInfile lets backend connections accept LOAD DATA LOCAL requests.
	LocalInfile bool `mapstructure:"-"`
	// Logger receives pool events. Default slog.Default().
	Logger *slog.Logger `mapstructure:"-"`
	// Dial opens the transport of a backend connection to addr (Addr;
	// network is "tcp", or "unix" for a socket path) before the MySQL
	// handshake; ctx carries the connect timeout. nil: a net.Dialer. Tests
	// use it to talk to a fake server without a network.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error) `mapstructure:"-"`
}

// DefaultConfig returns a Config with the documented defaults; Addr, User
// and Password must still be set.
func DefaultConfig() Config {
	return Config{
		Size:           16,
		AcquireTimeout: 10 * time.Second,
		ConnectTimeout: 5 * time.Second,
		HealthInterval: 10 * time.Second,
		MaxLifetime:    time.Hour,
		Collation:      "utf8mb4_general_ci",
	}
}

// Validate checks a Config and fills in defaults for zero values.
func (c *Config) Validate() error {
	d := DefaultConfig()
	if c.Addr == "" {
		return fmt.Errorf("%w: addr is empty", ErrBadConfig)
	}
	if c.Size == 0 {
		c.Size = d.Size
	}
	if c.Size < 0 {
		return fmt.Errorf("%w: size %d", ErrBadConfig, c.Size)
	}
	if c.AcquireTimeout <= 0 {
		c.AcquireTimeout = d.AcquireTimeout
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = d.ConnectTimeout
	}
	if c.HealthInterval <= 0 {
		c.HealthInterval = d.HealthInterval
	}
	if c.GlobalsInterval == 0 {
		c.GlobalsInterval = DefaultGlobalsInterval
	}
	if c.MaxLifetime < 0 {
		return fmt.Errorf("%w: max_lifetime %s", ErrBadConfig, c.MaxLifetime)
	}
	if c.MaxPreparedPerConn < 0 {
		return fmt.Errorf("%w: max_prepared_per_connection %d", ErrBadConfig, c.MaxPreparedPerConn)
	}
	if c.Collation == "" {
		c.Collation = d.Collation
	}
	if c.TLSMode != TLSDisabled && c.TLS == nil {
		c.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Dynamic are the settings Reconfigure can change while the pool runs.
// Unlike Config, zero values are not replaced by defaults: a reload passes
// the complete set it wants in force (Config.Dynamic of a validated Config).
type Dynamic struct {
	// Size is the number of backend connections, at least 1.
	Size int
	// AcquireTimeout bounds the wait for a free connection; it applies to
	// Acquire calls that start waiting after Reconfigure.
	AcquireTimeout time.Duration
	// ConnectTimeout bounds dialing plus the handshake of dials that start
	// after Reconfigure.
	ConnectTimeout time.Duration
	// HealthInterval is how often idle connections are checked; a change
	// restarts the check ticker.
	HealthInterval time.Duration
	// MaxLifetime applies to connections dialed after Reconfigure; those
	// already open keep the expiry they were given when dialed. 0 means
	// unlimited.
	MaxLifetime time.Duration // 0 = unlimited
}

// Dynamic returns the part of c that Reconfigure can change.
func (c Config) Dynamic() Dynamic {
	return Dynamic{
		Size:           c.Size,
		AcquireTimeout: c.AcquireTimeout,
		ConnectTimeout: c.ConnectTimeout,
		HealthInterval: c.HealthInterval,
		MaxLifetime:    c.MaxLifetime,
	}
}

// Validate checks the bounds Config.Validate enforces; zero sizes and
// timeouts are errors here because there is no default to fall back to.
func (d Dynamic) Validate() error {
	switch {
	case d.Size < 1:
		return fmt.Errorf("%w: size %d", ErrBadConfig, d.Size)
	case d.AcquireTimeout <= 0:
		return fmt.Errorf("%w: acquire_timeout %s", ErrBadConfig, d.AcquireTimeout)
	case d.ConnectTimeout <= 0:
		return fmt.Errorf("%w: connect_timeout %s", ErrBadConfig, d.ConnectTimeout)
	case d.HealthInterval <= 0:
		return fmt.Errorf("%w: health_interval %s", ErrBadConfig, d.HealthInterval)
	case d.MaxLifetime < 0:
		return fmt.Errorf("%w: max_lifetime %s", ErrBadConfig, d.MaxLifetime)
	}
	return nil
}
