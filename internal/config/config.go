// Package config defines tpproxy's configuration file schema: the typed
// Config, its documented defaults and Validate.
//
// The package only describes and checks values; reading YAML, environment
// variables and flags is the job of cmd/tpproxy. The mapstructure tags are the
// file's keys and form a fixed interface: renaming one breaks users' files.
// The thread_pool and backend sections embed the scheduler's and the pool's
// own Config structs, whose tags are keys too.
//
// Settings (settings.go) is the table of the tunable keys: type, bounds,
// default, whether a running tpproxy applies a change, and the component it
// configures. Validate checks every row; the admin port's variables and
// configuration reloads are driven by it.
package config

import (
	"time"

	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/scheduler"
)

// AuthPlugin names the authentication plugin announced to clients.
type AuthPlugin string

// Authentication plugins tpproxy can announce to clients.
const (
	AuthNativePassword      AuthPlugin = "mysql_native_password"
	AuthCachingSHA2Password AuthPlugin = "caching_sha2_password"
)

// TLSMode says whether backend connections use TLS.
type TLSMode string

// Backend TLS modes.
const (
	// TLSDisabled never uses TLS towards the backend.
	TLSDisabled TLSMode = "disabled"
	// TLSPreferred uses TLS when the backend offers it and plain TCP otherwise.
	TLSPreferred TLSMode = "preferred"
	// TLSRequired fails the connection when the backend does not offer TLS.
	TLSRequired TLSMode = "required"
)

// Log levels and formats accepted in Log.
const (
	LogLevelDebug = "debug"
	LogLevelInfo  = "info"
	LogLevelWarn  = "warn"
	LogLevelError = "error"

	LogFormatText = "text"
	LogFormatJSON = "json"
)

// Limits enforced by Validate.
const (
	MinAllowedPacket ByteSize = 1 * KiB
	MaxAllowedPacket ByteSize = 1 * GiB
	// MinBufferMemory is the least max_buffer_memory: a few packets.
	MinBufferMemory ByteSize = 1 * MiB
	// DefaultGCHeadroom is gc_headroom's default (see Config.GCHeadroom).
	DefaultGCHeadroom ByteSize = 8 * MiB
	MaxPoolSize                = 10000
	// DefaultPoolSizeMin and DefaultPoolSizeMax bound pool_size: auto.
	DefaultPoolSizeMin = 4
	DefaultPoolSizeMax = 64
)

// Config is the whole tpproxy configuration file.
type Config struct {
	// Listen is the client port, host:port. Port 0 picks a free port.
	Listen string `mapstructure:"listen"`
	// MaxClientConnections caps concurrent client sessions; the next client
	// gets ERR 1040 (08004) Too many connections.
	MaxClientConnections int `mapstructure:"max_client_connections"`
	// MaxConnectErrors is how many failed logins a client address may
	// have since its last successful one before its new connections get
	// ERR 1129 until FLUSH HOSTS on the admin port (like the server's
	// max_connect_errors); 0 turns it off.
	MaxConnectErrors int `mapstructure:"max_connect_errors"`
	// MaxAllowedPacket is the largest client packet accepted; 0 (the
	// default) takes the backend's @@global.max_allowed_packet, which is
	// also what clients read from @@max_allowed_packet.
	MaxAllowedPacket ByteSize `mapstructure:"max_allowed_packet"`
	// MaxBufferMemory bounds the memory all client packet buffers hold
	// together beyond each session's resident one; past it, reads of
	// large packets wait. 0: no bound.
	MaxBufferMemory ByteSize `mapstructure:"max_buffer_memory"`
	// MaxPinnedConnections bounds the backend connections pinned sessions
	// (a transaction, a user variable, a temporary table, ...) hold in
	// all; MaxPinnedPerAccount those of one account's sessions;
	// MaxStickyPinned those of sessions pinned for good by state tpproxy
	// cannot replay (user variables, temporary tables, GET_LOCK, ...),
	// which keep their connections while idle. A statement that would pin
	// past one waits up to backend.acquire_timeout, then gets ERR 1226
	// naming the limit. 0 is automatic: every backend connection but a
	// reserve of min(thread_pool.size, backend.pool_size - 1) kept for
	// unpinned work, which is also the most any may be; per account, the
	// same as in all; for good, half of that (at least 1).
	MaxPinnedConnections int `mapstructure:"max_pinned_connections"`
	MaxPinnedPerAccount  int `mapstructure:"max_pinned_per_account"`
	MaxStickyPinned      int `mapstructure:"max_sticky_pinned"`
	// ServerVersion is the version string announced to clients; empty means
	// the backend's own.
	ServerVersion string `mapstructure:"server_version"`
	// AuthPlugin is the default authentication plugin announced to clients.
	AuthPlugin AuthPlugin `mapstructure:"auth_plugin"`
	// LoadDataLocal relays LOAD DATA LOCAL INFILE between client and server.
	// Off by default because it lets the server read client files.
	LoadDataLocal bool `mapstructure:"load_data_local"`
	// Users are the accounts clients may log in with.
	Users []User `mapstructure:"users"`
	// Backend is the MySQL or MariaDB server behind the proxy.
	Backend Backend `mapstructure:"backend"`
	// ThreadPool is the thread-group scheduler in front of the backend.
	ThreadPool ThreadPool `mapstructure:"thread_pool"`
	// Admin is the admin port.
	Admin Admin `mapstructure:"admin"`
	// TLS is the client-side TLS; when set, clients may use SSL.
	TLS TLS `mapstructure:"tls"`
	// AuthLookup finds users that Users does not list on the server.
	AuthLookup AuthLookup `mapstructure:"auth_lookup"`
	// UpgradeSocket is a unix socket path where the running process hands
	// its listening sockets to a new one started with --takeover
	// (zero-downtime upgrade); "" turns it off.
	UpgradeSocket string `mapstructure:"upgrade_socket"`
	// RequireSecureTransport refuses client logins over TCP without TLS
	// (the server's require_secure_transport); needs tls.cert and tls.key.
	RequireSecureTransport bool `mapstructure:"require_secure_transport"`
	// Log configures the process logger.
	Log Log `mapstructure:"log"`
	// ShutdownTimeout is how long, after SIGTERM or SIGINT, in-flight
	// statements and open transactions get to finish before the remaining
	// sessions are closed.
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout"`
	// WatchConfig reloads the file when it changes on disk, as SIGHUP does.
	WatchConfig bool `mapstructure:"watch_config"`
	// CatalogTTL is how long tpproxy trusts what it read from the server's
	// catalog: which stored routines, triggers, views and column defaults
	// may leave session state, and which prepared statements the server
	// accepts. DDL through tpproxy invalidates it at once; DDL made on the
	// server directly is seen after at most this long. 0 reads it again for
	// every statement that needs it.
	CatalogTTL time.Duration `mapstructure:"catalog_ttl"`
	// GCHeadroom bounds how far the Go heap may grow past what was live
	// after a collection before the next one starts, in bytes rather than
	// GOGC's percentage: a proxy's live heap is mostly its sessions, which
	// stay, so GOGC=100 would double what thousands of idle sessions cost.
	// GOGC (100 unless the environment says otherwise) stays the upper
	// bound, 10% the lower one, and a second's worth of allocation the
	// least headroom (internal/gctune). 0: GOGC alone.
	GCHeadroom ByteSize `mapstructure:"gc_headroom"`
}

// ThreadPool is the file's thread_pool section: the scheduler's own Config
// (its keys are scheduler.Config's mapstructure tags: algorithm, size,
// stall_limit, oversubscribe, ...), with the meaning of the servers'
// thread_pool_* variables, plus the extra port. In the file, size 0 means
// the number of CPUs.
type ThreadPool struct {
	scheduler.Config `mapstructure:",squash"`
	// ExtraPort is a second client port on listen's host (0 = none) whose
	// sessions bypass the thread pool and run on reserved backend
	// connections, so an operator can always get in.
	ExtraPort int `mapstructure:"extra_port"`
	// ExtraMaxConnections caps sessions on the extra port; it is also the
	// number of backend connections reserved for them.
	ExtraMaxConnections int `mapstructure:"extra_max_connections"`
}

// Admin is the MySQL-protocol admin port.
type Admin struct {
	// Listen is host:port; "" turns the admin port off.
	Listen string `mapstructure:"listen"`
	// User and Password are the admin credentials (not the users list).
	User     string `mapstructure:"user"`
	Password string `mapstructure:"password"`
	// HTTPListen is the HTTP endpoint for /metrics, /healthz and /readyz,
	// host:port; "" turns it off.
	HTTPListen string `mapstructure:"http_listen"`
	// PprofListen serves Go's /debug/pprof/ on a listener of its own,
	// host:port; "" (default) turns it off.
	PprofListen string `mapstructure:"pprof_listen"`
	// PprofOnHTTPListen also serves /debug/pprof/ on HTTPListen, next to
	// /metrics (off by default: scrapers are often reachable).
	PprofOnHTTPListen bool `mapstructure:"pprof_on_http_listen"`
}

// User is one account clients may log in with.
type User struct {
	// User is the login name.
	User string `mapstructure:"user"`
	// Password is either the plain password or its mysql_native_password
	// hash "*" followed by 40 hex digits, as in mysql.user.authentication_string.
	// A plain password therefore cannot start with '*'. With a hash,
	// caching_sha2_password clients go through full authentication (the
	// password sent over TLS or RSA-encrypted, checked against the hash)
	// until the proxy has cached what the fast path needs.
	Password string `mapstructure:"password"`
	// BackendUser is the server account this user's statements run as
	// with backend.identity passthrough; empty: the account of the same
	// name. Not allowed with identity service.
	BackendUser string `mapstructure:"backend_user"`
	// BackendPassword is that account's password, in clear (the proxy logs
	// in with it). Empty: the user's own password — which, when given as a
	// hash, the proxy learns from the user's first login.
	BackendPassword string `mapstructure:"backend_password"`
}

// AuthLookup is PgBouncer's auth_query for MySQL: a user that users does
// not list may log in with its server account's own password, which the
// proxy reads (its mysql_native_password hash) through a lookup account,
// and caches for TTL.
type AuthLookup struct {
	// User and Password are the lookup account's (SELECT on mysql.user,
	// or on a view of it); User "" turns the lookup off.
	User     string `mapstructure:"user"`
	Password string `mapstructure:"password"`
	// Query returns one row whose first column is the user's
	// authentication string, given the user name for its one '?'.
	Query string `mapstructure:"query"`
	// TTL is how long an answer is trusted: a password changed on the
	// server takes effect after at most this long.
	TTL time.Duration `mapstructure:"ttl"`
}

// DefaultAuthLookupQuery reads a mysql_native_password account's hash,
// preferring the account for any host.
const DefaultAuthLookupQuery = "SELECT authentication_string FROM mysql.user WHERE User = ? AND plugin = 'mysql_native_password' ORDER BY Host = '%' DESC, Host LIMIT 1"

// Identity modes (backend.identity).
const (
	IdentityPassthrough = "passthrough"
	IdentityService     = "service"
)

// Backend describes the server behind the proxy and the fixed pool of
// connections to it: the pool's own Config (its keys are pool.Config's
// mapstructure tags: addr, user, password, pool_size, acquire_timeout,
// connect_timeout, health_interval, max_lifetime, collation,
// max_prepared_per_connection), plus identity and TLS.
//
// Addr is the server's host:port, or the path of its unix socket (starting
// with /). User is the proxy's own account: it dials every backend
// connection (which passthrough then logs in as a session's account), runs
// KILL and reads the server's globals; with identity service, every
// statement runs as it. Password has no default value: a built-in
// credential would only hide a missing setting. Size (pool_size) is the
// fixed number of server connections, 1..MaxPoolSize, or 0 (the file
// writes auto): sized while it runs between PoolSizeMin and PoolSizeMax
// (internal/autosize).
// MaxPreparedPerConn (max_prepared_per_connection) 0 is automatic: half the
// server's max_prepared_stmt_count shared by pool_size connections, at most
// 1024.
type Backend struct {
	pool.Config `mapstructure:",squash"`
	// Identity says which server account clients' statements run as:
	// passthrough (default) — each user's own (users[].backend_user or the
	// same name), so every client keeps its privileges; service — User's,
	// for every client.
	Identity string `mapstructure:"identity"`
	// PoolSizeMin and PoolSizeMax bound the pool while pool_size is auto:
	// it starts at PoolSizeMin. Both are ignored for a fixed pool_size.
	PoolSizeMin int `mapstructure:"pool_size_min"`
	PoolSizeMax int `mapstructure:"pool_size_max"`
	// TLS configures TLS towards the backend; it shadows pool.Config.TLS,
	// which cmd/tpproxy builds from it (see TLSConfig).
	TLS BackendTLS `mapstructure:"tls"`
}

// BackendTLS is TLS towards the backend, with crypto/tls semantics: the
// server certificate is verified (against CA, or the system roots when CA is
// empty) unless InsecureSkipVerify is set.
type BackendTLS struct {
	// Mode is disabled, preferred or required.
	Mode TLSMode `mapstructure:"mode"`
	// CA is a PEM file of certificate authorities to trust; empty means the
	// system roots.
	CA string `mapstructure:"ca"`
	// Cert and Key are a PEM client certificate and key, set together.
	Cert string `mapstructure:"cert"`
	Key  string `mapstructure:"key"`
	// ServerName is the name the server certificate must carry; empty means
	// the host of Backend.Addr (see Backend.TLSConfig).
	ServerName string `mapstructure:"server_name"`
	// InsecureSkipVerify accepts any server certificate.
	InsecureSkipVerify bool `mapstructure:"insecure_skip_verify"`
}

// TLS is the proxy's own certificate for clients that ask for SSL. Both
// empty means clients cannot use SSL.
type TLS struct {
	// Cert and Key are PEM files, set together.
	Cert string `mapstructure:"cert"`
	Key  string `mapstructure:"key"`
	// MinVersion is the oldest TLS version clients may use: "1.2"
	// (default) or "1.3"; "1.0" and "1.1" for old clients only.
	MinVersion string `mapstructure:"min_version"`
}

// Log configures the process logger.
type Log struct {
	// Level is debug, info, warn or error.
	Level string `mapstructure:"level"`
	// Format is text or json.
	Format string `mapstructure:"format"`
	// SlowQueue logs a "slow queue" line for every statement that waited
	// longer than this in a thread group queue; 0 turns it off.
	SlowQueue time.Duration `mapstructure:"slow_queue"`
}

// Default returns the documented defaults. It has no users, so it does not
// validate until at least one is added.
func Default() Config {
	return Config{
		Listen:               "127.0.0.1:6033",
		MaxClientConnections: 10000,
		MaxConnectErrors:     100,
		MaxAllowedPacket:     0,
		MaxBufferMemory:      256 * MiB,
		ServerVersion:        "",
		AuthPlugin:           AuthNativePassword,
		LoadDataLocal:        false,
		TLS:                  TLS{MinVersion: "1.2"},
		AuthLookup:           AuthLookup{Query: DefaultAuthLookupQuery, TTL: time.Minute},
		Backend: Backend{
			Config:      backendDefaults(),
			Identity:    IdentityPassthrough,
			PoolSizeMin: DefaultPoolSizeMin,
			PoolSizeMax: DefaultPoolSizeMax,
			TLS:         BackendTLS{Mode: TLSDisabled},
		},
		ThreadPool: ThreadPool{
			Config:              threadPoolDefaults(),
			ExtraPort:           0,
			ExtraMaxConnections: 1,
		},
		Admin:           Admin{Listen: "127.0.0.1:6032", User: "admin", Password: DefaultAdminPassword, HTTPListen: "127.0.0.1:6080"},
		Log:             Log{Level: LogLevelInfo, Format: LogFormatText, SlowQueue: time.Second},
		ShutdownTimeout: 30 * time.Second,
		WatchConfig:     true,
		CatalogTTL:      time.Second,
		GCHeadroom:      DefaultGCHeadroom,
	}
}

// backendDefaults are the pool's defaults with the file's address and
// service account.
func backendDefaults() pool.Config {
	c := pool.DefaultConfig()
	c.Addr = "127.0.0.1:3306"
	c.User = "app"
	return c
}

// threadPoolDefaults are the scheduler's defaults as the file writes them:
// size 0, the number of CPUs of whatever machine runs the file.
func threadPoolDefaults() scheduler.Config {
	c := scheduler.DefaultConfig()
	c.Size = 0
	return c
}
