package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Validate checks every value and returns all problems at once, joined with
// errors.Join; each is a *FieldError naming its key. Use Errors to list them.
// It reads the TLS files it names, so a missing file is reported here rather
// than at the first connection.
func (c *Config) Validate() error {
	var v validator

	v.addr("listen", c.Listen, 0)
	if strings.IndexByte(c.ServerVersion, 0) >= 0 {
		// The handshake carries the version NUL-terminated.
		v.addf("server_version", "must not contain a NUL byte")
	}
	v.users(c.Users, c.Backend.Identity)
	v.backend(&c.Backend)
	// Every setting of the table within its bounds, in the table's order.
	for _, s := range table {
		if err := s.Check(s.Of(c)); err != nil {
			v.add(fieldErr(s.Key, err))
		}
	}
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
	return errors.Join(v.errs...)
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
	if b.User == "" {
		v.addf("backend.user", "must not be empty")
	}
	if b.Size == 0 && b.PoolSizeMin > b.PoolSizeMax {
		v.addf("backend.pool_size_max", "must be at least backend.pool_size_min (%d) while pool_size is auto, got %d",
			b.PoolSizeMin, b.PoolSizeMax)
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
		// The settings table reports an unknown mode.
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
