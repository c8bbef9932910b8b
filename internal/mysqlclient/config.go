package mysqlclient

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// Defaults applied by Connect to zero Config fields.
const (
	// DefaultTimeout bounds dialing plus the handshake.
	DefaultTimeout = 10 * time.Second
	// DefaultCollation is sent in the handshake; it is what go-sql-driver
	// uses too, so the two drivers measure the same server work.
	DefaultCollation = "utf8mb4_general_ci"
	// DefaultMaxAllowedPacket bounds the logical packets accepted from the
	// server (go-sql-driver's default), so a corrupt length cannot make the
	// client allocate without limit.
	DefaultMaxAllowedPacket = 64 << 20
)

// Config of a connection. The zero value plus Addr and User connects over
// TCP with the defaults above.
type Config struct {
	// Net is "tcp" (also "tcp4", "tcp6") or "unix". Default "tcp".
	Net string
	// Addr is host:port, or the socket path for "unix".
	Addr string
	// Dial opens the transport to Addr; ctx carries the timeout. nil: a
	// net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// User and Passwd are the account; DBName, if set, is the default
	// schema chosen at login.
	User, Passwd, DBName string
	// TLS, when set, switches the connection to TLS with an SSLRequest
	// before authenticating. nil: no TLS.
	TLS *tls.Config
	// AllowFallbackToPlaintext lets a TLS connection continue in the clear
	// when the server does not offer TLS (DSN tls=preferred); otherwise
	// that is ErrNoTLS.
	AllowFallbackToPlaintext bool
	// AllowCleartextPasswords permits the mysql_clear_password plugin,
	// which sends the password as is.
	AllowCleartextPasswords bool
	// Timeout bounds dialing plus the handshake. Default DefaultTimeout.
	Timeout time.Duration
	// Collation is the connection's collation, sent in the handshake.
	// Default DefaultCollation (id 45). Only collations with an id below
	// 256 fit in the handshake; Validate rejects others.
	Collation string
	// CollationID, when not 0, is sent in place of Collation's id, for a
	// caller that knows more collations than mysqlclient. Its low byte
	// goes in the handshake, as go-mysql sends it: an id above 255 does not
	// fit, and the caller sets that collation with SET NAMES after login.
	CollationID uint16
	// MultiStatements lets one COM_QUERY carry several statements
	// (CLIENT_MULTI_STATEMENTS); Exec reads all their results.
	MultiStatements bool
	// ClientFoundRows makes affected-row counts report matched rows.
	ClientFoundRows bool
	// ConnectAttrs are connection attributes (performance_schema's
	// session_connect_attrs), sent with CLIENT_CONNECT_ATTRS.
	ConnectAttrs map[string]string
	// MaxAllowedPacket bounds the logical packets read from the server.
	// Default DefaultMaxAllowedPacket.
	MaxAllowedPacket int
	// Params are session system variables set after login, one
	// "SET name=value" each, values taken verbatim (DSN parameters that
	// go-sql-driver does not know itself, which it treats the same way).
	Params map[string]string
	// BufferPool lends the large buffers a connection needs while a packet
	// does not fit its small resident one. Share one pool between many
	// connections; nil gives each connection a pool of its own.
	BufferPool *mysqlwire.BufferPool

	// initialPlugin, when set, replaces the greeting's auth plugin in the
	// handshake response: tests use it to make a server ask for a switch.
	initialPlugin string
}

// FromDSN fills a Config from a go-sql-driver DSN
// ("user:pass@tcp(host:port)/db?tls=skip-verify&timeout=5s"), so that
// tpbench can accept the DSNs its database/sql path accepts. Parameters
// that only concern database/sql value handling (parseTime, loc,
// interpolateParams, ...) are ignored.
func FromDSN(dsn string) (Config, error) {
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrBadDSN, err)
	}
	cfg := Config{
		Net:                      mc.Net,
		Addr:                     mc.Addr,
		User:                     mc.User,
		Passwd:                   mc.Passwd,
		DBName:                   mc.DBName,
		TLS:                      mc.TLS,
		AllowFallbackToPlaintext: mc.AllowFallbackToPlaintext,
		AllowCleartextPasswords:  mc.AllowCleartextPasswords,
		Timeout:                  mc.Timeout,
		Collation:                mc.Collation,
		MultiStatements:          mc.MultiStatements,
		ClientFoundRows:          mc.ClientFoundRows,
		MaxAllowedPacket:         mc.MaxAllowedPacket,
		Params:                   mc.Params,
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrBadDSN, err)
	}
	return cfg, nil
}

// Validate reports settings Connect cannot work with. Zero fields that
// have defaults are fine.
func (cfg *Config) Validate() error {
	switch cfg.Net {
	case "", "tcp", "tcp4", "tcp6", "unix":
	default:
		return fmt.Errorf("%w: network %q (want tcp or unix)", ErrBadConfig, cfg.Net)
	}
	if cfg.Addr == "" {
		return fmt.Errorf("%w: empty address", ErrBadConfig)
	}
	if cfg.Collation != "" && cfg.CollationID == 0 {
		if _, ok := collationIDs[cfg.Collation]; !ok {
			return fmt.Errorf("%w: collation %q unknown to mysqlclient", ErrBadConfig, cfg.Collation)
		}
	}
	if cfg.Timeout < 0 || cfg.MaxAllowedPacket < 0 {
		return fmt.Errorf("%w: negative timeout or max allowed packet", ErrBadConfig)
	}
	return nil
}

// withDefaults returns cfg with zero fields defaulted and the TLS config
// completed, without changing the caller's copy of the TLS config.
func (cfg Config) withDefaults() Config {
	if cfg.Net == "" {
		cfg.Net = "tcp"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Collation == "" {
		cfg.Collation = DefaultCollation
	}
	if cfg.MaxAllowedPacket == 0 {
		cfg.MaxAllowedPacket = DefaultMaxAllowedPacket
	}
	if cfg.TLS != nil && cfg.TLS.ServerName == "" && !cfg.TLS.InsecureSkipVerify {
		// crypto/tls refuses to verify without a name; the address's host
		// is what go-sql-driver uses as well.
		if host, _, err := net.SplitHostPort(cfg.Addr); err == nil {
			cfg.TLS = cfg.TLS.Clone()
			cfg.TLS.ServerName = host
		}
	}
	return cfg
}

// collationIDs maps the collations a benchmark plausibly asks for to their
// handshake ids. The handshake has one byte for it, so ids above 255 (and
// MariaDB's uca1400 family) cannot be chosen there.
var collationIDs = map[string]byte{
	"big5_chinese_ci":        1,
	"latin1_swedish_ci":      8,
	"ascii_general_ci":       11,
	"gbk_chinese_ci":         28,
	"utf8_general_ci":        33,
	"utf8mb3_general_ci":     33,
	"utf8mb4_general_ci":     45,
	"utf8mb4_bin":            46,
	"latin1_bin":             47,
	"latin1_general_ci":      48,
	"binary":                 63,
	"ascii_bin":              65,
	"utf8_bin":               83,
	"utf8mb3_bin":            83,
	"gbk_bin":                87,
	"utf8_unicode_ci":        192,
	"utf8mb3_unicode_ci":     192,
	"utf8mb4_unicode_ci":     224,
	"utf8mb4_unicode_520_ci": 246,
	"utf8mb4_0900_ai_ci":     255,
}
