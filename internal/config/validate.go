package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Validate checks every value and returns all problems at once, joined with
// errors.Join; each is a *FieldError naming its key. Use Errors to list them.
// It reads the TLS files it names, so a missing file is reported here rather
// than at the first connection.
func (c *Config) Validate() error {
	var v validator

	v.addr("listen", c.Listen, 0)
	if c.MaxConnectErrors < 0 {
		v.addf("max_connect_errors", "must be 0 (off) or greater, got %d", c.MaxConnectErrors)
	}
	if c.MaxClientConnections < 1 {
		v.addf("max_client_connections", "must be at least 1, got %d", c.MaxClientConnections)
	}
	if c.MaxAllowedPacket != 0 && (c.MaxAllowedPacket < MinAllowedPacket || c.MaxAllowedPacket > MaxAllowedPacket) {
		v.addf("max_allowed_packet", "must be 0 (the backend's) or between %s and %s, got %s",
			MinAllowedPacket, MaxAllowedPacket, c.MaxAllowedPacket)
	}
	if strings.IndexByte(c.ServerVersion, 0) >= 0 {
		// The handshake carries the version NUL-terminated.
		v.addf("server_version", "must not contain a NUL byte")
	}
	switch c.AuthPlugin {
	case AuthNativePassword, AuthCachingSHA2Password:
	default:
		v.addf("auth_plugin", "must be %s or %s, got %q", AuthNativePassword, AuthCachingSHA2Password, c.AuthPlugin)
	}
	v.users(c.Users, c.Backend.Identity)
	v.backend(&c.Backend)
	v.threadPool(&c.ThreadPool)
	v.admin(&c.Admin)
	if c.ThreadPool.ExtraPort != 0 {
		if _, port, err := net.SplitHostPort(c.Listen); err == nil && port == strconv.Itoa(c.ThreadPool.ExtraPort) {
			v.addf("thread_pool.extra_port", "must differ from the port of listen (%s)", c.Listen)
		}
	}
	if _, err := c.TLS.Load(); err != nil {
		v.add(err)
	}
	if c.AuthLookup.User != "" {
		if strings.Count(c.AuthLookup.Query, "?") != 1 {
			v.addf("auth_lookup.query", "must have exactly one '?' (the user name), got %q", c.AuthLookup.Query)
		}
		if c.AuthLookup.TTL <= 0 {
			v.addf("auth_lookup.ttl", "must be positive, got %s", c.AuthLookup.TTL)
		}
	}
	if c.RequireSecureTransport && c.TLS.Cert == "" {
		v.addf("require_secure_transport", "needs tls.cert and tls.key: clients cannot switch to TLS without them")
	}
	switch c.Log.Level {
	case LogLevelDebug, LogLevelInfo, LogLevelWarn, LogLevelError:
	default:
		v.addf("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	switch c.Log.Format {
	case LogFormatText, LogFormatJSON:
	default:
		v.addf("log.format", "must be text or json, got %q", c.Log.Format)
	}
	if c.Log.SlowQueue < 0 {
		v.addf("log.slow_queue", "must be 0 (off) or greater, got %s", c.Log.SlowQueue)
	}
	if c.CatalogTTL < 0 {
		v.addf("catalog_ttl", "must be 0 (read the catalog every time) or greater, got %s", c.CatalogTTL)
	}
	if c.ShutdownTimeout < 0 {
		v.addf("shutdown_timeout", "must be 0 (close at once) or greater, got %s", c.ShutdownTimeout)
	}
	return errors.Join(v.errs...)
}

// MaxThreadGroups bounds thread_pool.size.
const MaxThreadGroups = 100000

func (v *validator) threadPool(t *ThreadPool) {
	switch t.Algorithm {
	case "generic", "enterprise":
	default:
		v.addf("thread_pool.algorithm", "must be generic or enterprise, got %q", t.Algorithm)
	}
	if t.Size < 0 || t.Size > MaxThreadGroups {
		v.addf("thread_pool.size", "must be 0 (number of CPUs) to %d, got %d", MaxThreadGroups, t.Size)
	}
	if t.StallLimit < time.Millisecond {
		v.addf("thread_pool.stall_limit", "must be at least 1ms, got %s", t.StallLimit)
	}
	if t.Oversubscribe < 0 || t.Oversubscribe > 1000 {
		v.addf("thread_pool.oversubscribe", "must be 0 to 1000, got %d", t.Oversubscribe)
	}
	if t.QueryThreadsPerGroup < 1 || t.QueryThreadsPerGroup > 4096 {
		v.addf("thread_pool.query_threads_per_group", "must be 1 to 4096, got %d", t.QueryThreadsPerGroup)
	}
	if t.MaxThreads < 1 {
		v.addf("thread_pool.max_threads", "must be at least 1, got %d", t.MaxThreads)
	}
	v.positive("thread_pool.idle_timeout", t.IdleTimeout)
	if t.PrioKickupTimer < 0 {
		v.addf("thread_pool.prio_kickup_timer", "must be 0 or greater, got %s", t.PrioKickupTimer)
	}
	switch t.HighPrioMode {
	case "transactions", "statements", "none":
	default:
		v.addf("thread_pool.high_prio_mode", "must be transactions, statements or none, got %q", t.HighPrioMode)
	}
	v.positive("thread_pool.queue_timeout", t.QueueTimeout)
	if t.ExtraPort < 0 || t.ExtraPort > 65535 {
		v.addf("thread_pool.extra_port", "must be 0 (none) or a port 1..65535, got %d", t.ExtraPort)
	}
	if t.ExtraMaxConnections < 1 || t.ExtraMaxConnections > 100 {
		v.addf("thread_pool.extra_max_connections", "must be 1 to 100, got %d", t.ExtraMaxConnections)
	}
}

func (v *validator) admin(a *Admin) {
	if a.HTTPListen != "" {
		v.addr("admin.http_listen", a.HTTPListen, 0)
		if a.HTTPListen == a.Listen {
			v.addf("admin.http_listen", "must differ from admin.listen (%s)", a.Listen)
		}
	}
	if a.PprofListen != "" {
		v.addr("admin.pprof_listen", a.PprofListen, 0)
		if a.PprofListen == a.HTTPListen || a.PprofListen == a.Listen {
			v.addf("admin.pprof_listen", "must differ from admin.listen and admin.http_listen (pprof_on_http_listen serves it there)")
		}
	}
	if a.PprofOnHTTPListen && a.HTTPListen == "" {
		v.addf("admin.pprof_on_http_listen", "needs admin.http_listen")
	}
	if a.Listen == "" {
		return
	}
	v.addr("admin.listen", a.Listen, 0)
	if a.User == "" {
		v.addf("admin.user", "must not be empty")
	}
	if a.Password == DefaultAdminPassword && !loopbackListen(a.Listen) {
		v.addf("admin.password", "is the default %q while admin.listen %s is not a loopback address: set admin.password (or TPPROXY_ADMIN_PASSWORD), or listen on 127.0.0.1", DefaultAdminPassword, a.Listen)
	}
}

// DefaultAdminPassword is admin.password's default, refused beyond loopback.
const DefaultAdminPassword = "admin"

// loopbackListen reports whether a listen address is on loopback only: a
// loopback IP or "localhost" (an empty host listens everywhere).
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validator collects problems in the order they are found.
type validator struct {
	errs []error
}

// add appends err, flattening joined errors so the result is one flat list.
func (v *validator) add(err error) { v.errs = append(v.errs, Errors(err)...) }

func (v *validator) addf(key, format string, args ...any) {
	v.errs = append(v.errs, fieldErr(key, fmt.Errorf(format, args...)))
}

// addr checks a numeric host:port with a port of at least minPort.
func (v *validator) addr(key, addr string, minPort int) {
	if addr == "" {
		v.addf(key, "must be set (host:port)")
		return
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.addf(key, "%q is not host:port", addr)
		return
	}
	if p, err := strconv.Atoi(port); err != nil || p < minPort || p > 65535 {
		v.addf(key, "%q has an invalid port (want a number %d..65535)", addr, minPort)
	}
}

func (v *validator) positive(key string, d time.Duration) {
	if d <= 0 {
		v.addf(key, "must be greater than 0, got %s", d)
	}
}

func (v *validator) users(users []User, identity string) {
	if len(users) == 0 {
		v.add(fieldErr("users", ErrNoUsers))
		return
	}
	seen := make(map[string]int, len(users))
	for i, u := range users {
		key := fmt.Sprintf("users[%d]", i)
		switch first, dup := seen[u.User]; {
		case u.User == "":
			v.addf(key+".user", "must not be empty")
		case dup:
			v.addf(key+".user", "duplicate user %q (also users[%d])", u.User, first)
		default:
			seen[u.User] = i
		}
		if _, err := u.NativeHash(); err != nil {
			v.add(fieldErr(key+".password", err))
		}
		if identity == IdentityService {
			if u.BackendUser != "" {
				v.addf(key+".backend_user", "has no effect with backend.identity service (every user runs as backend.user)")
			}
			if u.BackendPassword != "" {
				v.addf(key+".backend_password", "has no effect with backend.identity service (every user runs as backend.user)")
			}
		}
		if strings.HasPrefix(u.BackendPassword, "*") && len(u.BackendPassword) == nativeHashLen {
			v.addf(key+".backend_password", "must be the server account's password in clear, not its hash: the proxy logs in with it")
		}
	}
}

func (v *validator) backend(b *Backend) {
	if strings.HasPrefix(b.Addr, "/") {
		// A unix socket path: the usual way to a server on the same host.
	} else {
		v.addr("backend.addr", b.Addr, 1)
	}
	switch b.Identity {
	case IdentityPassthrough, IdentityService:
	default:
		v.addf("backend.identity", "must be passthrough or service, got %q", b.Identity)
	}
	if b.User == "" {
		v.addf("backend.user", "must not be empty")
	}
	if b.PoolSize < 1 || b.PoolSize > MaxPoolSize {
		v.addf("backend.pool_size", "must be between 1 and %d, got %d", MaxPoolSize, b.PoolSize)
	}
	v.positive("backend.acquire_timeout", b.AcquireTimeout)
	v.positive("backend.connect_timeout", b.ConnectTimeout)
	v.positive("backend.health_interval", b.HealthInterval)
	if b.MaxLifetime < 0 {
		v.addf("backend.max_lifetime", "must be 0 (unlimited) or greater, got %s", b.MaxLifetime)
	}
	if b.MaxPreparedPerConnection < 0 {
		v.addf("backend.max_prepared_per_connection", "must be 0 (automatic) or greater, got %d", b.MaxPreparedPerConnection)
	}
	if !isCollationName(b.Collation) {
		v.addf("backend.collation", "%q is not a collation name (e.g. utf8mb4_general_ci)", b.Collation)
	}
	switch b.TLS.Mode {
	case TLSDisabled:
		if (b.TLS.Cert == "") != (b.TLS.Key == "") {
			v.add(fieldErr("backend.tls", ErrCertKeyPair))
		}
	case TLSPreferred, TLSRequired:
		if _, err := b.TLS.Load(); err != nil {
			v.add(err)
		}
	default:
		v.addf("backend.tls.mode", "must be disabled, preferred or required, got %q", b.TLS.Mode)
	}
}

// isCollationName accepts the shape of MySQL collation names; whether the
// server knows the collation is only learnt when connecting.
func isCollationName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}
