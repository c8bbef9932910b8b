package config_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/config"
	"github.com/tpproxy/tpproxy/scheduler"
)

// valid returns the defaults plus one user: the smallest valid config.
func valid() config.Config {
	c := config.Default()
	c.Users = []config.User{{User: "app", Password: "secret"}}
	return c
}

func TestDefaultValidatesOnceAUserIsAdded(t *testing.T) {
	c := valid()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults + one user: %v", err)
	}
	d := config.Default()
	errs := config.Errors(d.Validate())
	if len(errs) != 1 || errs[0].Error() != "users: at least one user is required" {
		t.Fatalf("defaults without users: got %q, want only the missing-users problem", errs)
	}
	if !errors.Is(errs[0], config.ErrNoUsers) {
		t.Fatalf("missing users is not ErrNoUsers: %v", errs[0])
	}
}

func TestDefaultValues(t *testing.T) {
	d := config.Default()
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", d.Listen, "127.0.0.1:6033"},
		{"max_client_connections", d.MaxClientConnections, 10000},
		{"max_allowed_packet", d.MaxAllowedPacket, config.ByteSize(0)},
		{"auth_plugin", d.AuthPlugin, config.AuthNativePassword},
		{"backend.addr", d.Backend.Addr, "127.0.0.1:3306"},
		{"backend.pool_size", d.Backend.Size, 16},
		{"backend.acquire_timeout", d.Backend.AcquireTimeout, 10 * time.Second},
		{"backend.connect_timeout", d.Backend.ConnectTimeout, 5 * time.Second},
		{"backend.health_interval", d.Backend.HealthInterval, 10 * time.Second},
		{"backend.max_lifetime", d.Backend.MaxLifetime, time.Hour},
		{"backend.collation", d.Backend.Collation, "utf8mb4_general_ci"},
		{"backend.max_prepared_per_connection", d.Backend.MaxPreparedPerConn, 0},
		{"backend.tls.mode", d.Backend.TLS.Mode, config.TLSDisabled},
		{"thread_pool.algorithm", d.ThreadPool.Algorithm, scheduler.Generic},
		{"thread_pool.size", d.ThreadPool.Size, 0},
		{"thread_pool.stall_limit", d.ThreadPool.StallLimit, 500 * time.Millisecond},
		{"thread_pool.oversubscribe", d.ThreadPool.Oversubscribe, 3},
		{"thread_pool.max_threads", d.ThreadPool.MaxThreads, 256},
		{"thread_pool.idle_timeout", d.ThreadPool.IdleTimeout, time.Minute},
		{"thread_pool.prio_kickup_timer", d.ThreadPool.PrioKickupTimer, time.Second},
		{"thread_pool.high_prio_mode", d.ThreadPool.HighPrioMode, scheduler.PrioTransactions},
		{"thread_pool.high_prio_tickets", d.ThreadPool.HighPrioTickets, uint32(4294967295)},
		{"thread_pool.queue_timeout", d.ThreadPool.QueueTimeout, 30 * time.Second},
		{"log.level", d.Log.Level, "info"},
		{"log.format", d.Log.Format, "text"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if len(d.Users) != 0 {
		t.Errorf("users = %v, want none", d.Users)
	}
}

func TestValidateMessages(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeCert(t, dir, "a")
	_, otherKey := writeCert(t, dir, "b")
	missing := filepath.Join(dir, "missing.pem")
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		mutate func(*config.Config)
		key    string
		want   string // the whole message
	}{
		{"listen not host:port", func(c *config.Config) { c.Listen = "foo" },
			"listen", `listen: "foo" is not host:port`},
		{"listen bad port", func(c *config.Config) { c.Listen = "127.0.0.1:99999" },
			"listen", `listen: "127.0.0.1:99999" has an invalid port (want a number 0..65535)`},
		{"listen empty", func(c *config.Config) { c.Listen = "" },
			"listen", `listen: must be set (host:port)`},
		{"max_client_connections", func(c *config.Config) { c.MaxClientConnections = 0 },
			"max_client_connections", `max_client_connections: must be at least 1, got 0`},
		{"max_allowed_packet small", func(c *config.Config) { c.MaxAllowedPacket = 1023 },
			"max_allowed_packet", `max_allowed_packet: must be 0 (the backend's) or between 1KiB and 1GiB, got 1023`},
		{"max_allowed_packet large", func(c *config.Config) { c.MaxAllowedPacket = 2 * config.GiB },
			"max_allowed_packet", `max_allowed_packet: must be 0 (the backend's) or between 1KiB and 1GiB, got 2GiB`},
		{"server_version NUL", func(c *config.Config) { c.ServerVersion = "8.0\x00x" },
			"server_version", `server_version: must not contain a NUL byte`},
		{"auth_plugin", func(c *config.Config) { c.AuthPlugin = "sha256_password" },
			"auth_plugin", `auth_plugin: must be mysql_native_password or caching_sha2_password, got "sha256_password"`},
		{"no users", func(c *config.Config) { c.Users = nil },
			"users", `users: at least one user is required`},
		{"empty user", func(c *config.Config) { c.Users = append(c.Users, config.User{Password: "x"}) },
			"users[1].user", `users[1].user: must not be empty`},
		{"duplicate user", func(c *config.Config) {
			c.Users = append(c.Users, config.User{User: "b"}, config.User{User: "app"})
		}, "users[2].user", `users[2].user: duplicate user "app" (also users[0])`},
		{"bad hash", func(c *config.Config) { c.Users = append(c.Users, config.User{User: "b", Password: "*ABC"}) },
			"users[1].password", `users[1].password: "*ABC" is not a mysql_native_password hash ('*' followed by 40 hex digits)`},
		{"hash not hex", func(c *config.Config) {
			c.Users[0].Password = "*" + strings.Repeat("Z", 40)
		}, "users[0].password", `users[0].password: "*ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ" is not a mysql_native_password hash ('*' followed by 40 hex digits)`},
		{"backend.addr", func(c *config.Config) { c.Backend.Addr = "db" },
			"backend.addr", `backend.addr: "db" is not host:port`},
		{"backend.addr port 0", func(c *config.Config) { c.Backend.Addr = "db:0" },
			"backend.addr", `backend.addr: "db:0" has an invalid port (want a number 1..65535)`},
		{"admin default password beyond loopback", func(c *config.Config) { c.Admin.Listen = "0.0.0.0:6032" },
			"admin.password", `admin.password: is the default "admin" while admin.listen 0.0.0.0:6032 is not a loopback address: set admin.password (or TPPROXY_ADMIN_PASSWORD), or listen on 127.0.0.1`},
		{"admin default password on all interfaces", func(c *config.Config) { c.Admin.Listen = ":6032" },
			"admin.password", `admin.password: is the default "admin" while admin.listen :6032 is not a loopback address: set admin.password (or TPPROXY_ADMIN_PASSWORD), or listen on 127.0.0.1`},
		{"pprof on http without http", func(c *config.Config) { c.Admin.HTTPListen, c.Admin.PprofOnHTTPListen = "", true },
			"admin.pprof_on_http_listen", `admin.pprof_on_http_listen: needs admin.http_listen`},
		{"pprof_listen same as http", func(c *config.Config) { c.Admin.PprofListen = c.Admin.HTTPListen },
			"admin.pprof_listen", `admin.pprof_listen: must differ from admin.listen and admin.http_listen (pprof_on_http_listen serves it there)`},
		{"max_connect_errors", func(c *config.Config) { c.MaxConnectErrors = -1 },
			"max_connect_errors", `max_connect_errors: must be 0 (off) or greater, got -1`},
		{"backend.identity", func(c *config.Config) { c.Backend.Identity = "proxy" },
			"backend.identity", `backend.identity: must be passthrough or service, got "proxy"`},
		{"backend_user with service", func(c *config.Config) {
			c.Backend.Identity = config.IdentityService
			c.Users[0].BackendUser = "ro"
		}, "users[0].backend_user", `users[0].backend_user: has no effect with backend.identity service (every user runs as backend.user)`},
		{"backend_password with service", func(c *config.Config) {
			c.Backend.Identity = config.IdentityService
			c.Users[0].BackendPassword = "pw"
		}, "users[0].backend_password", `users[0].backend_password: has no effect with backend.identity service (every user runs as backend.user)`},
		{"backend_password hash", func(c *config.Config) {
			c.Users[0].BackendPassword = "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7"
		}, "users[0].backend_password", `users[0].backend_password: must be the server account's password in clear, not its hash: the proxy logs in with it`},
		{"backend.user", func(c *config.Config) { c.Backend.User = "" },
			"backend.user", `backend.user: must not be empty`},
		{"pool_size negative", func(c *config.Config) { c.Backend.Size = -1 },
			"backend.pool_size", `backend.pool_size: must be between 1 and 10000, or auto, got -1`},
		{"pool_size too big", func(c *config.Config) { c.Backend.Size = 10001 },
			"backend.pool_size", `backend.pool_size: must be between 1 and 10000, or auto, got 10001`},
		{"auto bounds crossed", func(c *config.Config) { c.Backend.Size, c.Backend.PoolSizeMin, c.Backend.PoolSizeMax = 0, 8, 4 },
			"backend.pool_size_max", `backend.pool_size_max: must be at least backend.pool_size_min (8) while pool_size is auto, got 4`},
		{"pool_size_min 0", func(c *config.Config) { c.Backend.PoolSizeMin = 0 },
			"backend.pool_size_min", `backend.pool_size_min: must be 1 to 10000, got 0`},
		{"acquire_timeout", func(c *config.Config) { c.Backend.AcquireTimeout = 0 },
			"backend.acquire_timeout", `backend.acquire_timeout: must be greater than 0, got 0s`},
		{"connect_timeout", func(c *config.Config) { c.Backend.ConnectTimeout = -time.Second },
			"backend.connect_timeout", `backend.connect_timeout: must be greater than 0, got -1s`},
		{"health_interval", func(c *config.Config) { c.Backend.HealthInterval = 0 },
			"backend.health_interval", `backend.health_interval: must be greater than 0, got 0s`},
		{"max_lifetime", func(c *config.Config) { c.Backend.MaxLifetime = -time.Minute },
			"backend.max_lifetime", `backend.max_lifetime: must be 0 (unlimited) or greater, got -1m0s`},
		{"max_prepared_per_connection", func(c *config.Config) { c.Backend.MaxPreparedPerConn = -1 },
			"backend.max_prepared_per_connection", `backend.max_prepared_per_connection: must be 0 (automatic) or greater, got -1`},
		// The file's words ("fast") are refused when the file is read
		// (cmd/tpproxy TestLoadProblems); a number reaches Validate only
		// from code.
		{"thread_pool.algorithm", func(c *config.Config) { c.ThreadPool.Algorithm = 7 },
			"thread_pool.algorithm", `thread_pool.algorithm: must be generic or enterprise, got 7`},
		{"thread_pool.stall_limit", func(c *config.Config) { c.ThreadPool.StallLimit = 0 },
			"thread_pool.stall_limit", `thread_pool.stall_limit: must be at least 1ms, got 0s`},
		{"thread_pool.oversubscribe", func(c *config.Config) { c.ThreadPool.Oversubscribe = -1 },
			"thread_pool.oversubscribe", `thread_pool.oversubscribe: must be 0 to 1000, got -1`},
		{"thread_pool.max_threads", func(c *config.Config) { c.ThreadPool.MaxThreads = 0 },
			"thread_pool.max_threads", `thread_pool.max_threads: must be at least 1, got 0`},
		{"thread_pool.high_prio_mode", func(c *config.Config) { c.ThreadPool.HighPrioMode = 3 },
			"thread_pool.high_prio_mode", `thread_pool.high_prio_mode: must be transactions, statements or none, got 3`},
		{"thread_pool.queue_timeout", func(c *config.Config) { c.ThreadPool.QueueTimeout = 0 },
			"thread_pool.queue_timeout", `thread_pool.queue_timeout: must be greater than 0, got 0s`},
		{"collation", func(c *config.Config) { c.Backend.Collation = "utf8 mb4" },
			"backend.collation", `backend.collation: "utf8 mb4" is not a collation name (e.g. utf8mb4_general_ci)`},
		{"backend.tls.mode", func(c *config.Config) { c.Backend.TLS.Mode = "x" },
			"backend.tls.mode", `backend.tls.mode: must be disabled, preferred or required, got "x"`},
		{"backend.tls cert without key", func(c *config.Config) { c.Backend.TLS.Cert = certFile },
			"backend.tls", `backend.tls: cert and key must be set together`},
		{"backend.tls.ca missing", func(c *config.Config) {
			c.Backend.TLS = config.BackendTLS{Mode: config.TLSRequired, CA: missing}
		}, "backend.tls.ca", `backend.tls.ca: open ` + missing + `: no such file or directory`},
		{"backend.tls.ca junk", func(c *config.Config) {
			c.Backend.TLS = config.BackendTLS{Mode: config.TLSPreferred, CA: junk}
		}, "backend.tls.ca", `backend.tls.ca: no PEM certificate in ` + junk},
		{"backend.tls.key missing", func(c *config.Config) {
			c.Backend.TLS = config.BackendTLS{Mode: config.TLSRequired, Cert: certFile, Key: missing}
		}, "backend.tls.key", `backend.tls.key: open ` + missing + `: no such file or directory`},
		{"tls cert without key", func(c *config.Config) { c.TLS.Cert = certFile },
			"tls", `tls: cert and key must be set together`},
		{"tls key without cert", func(c *config.Config) { c.TLS.Key = keyFile },
			"tls", `tls: cert and key must be set together`},
		{"tls.cert missing", func(c *config.Config) { c.TLS = config.TLS{Cert: missing, Key: keyFile} },
			"tls.cert", `tls.cert: open ` + missing + `: no such file or directory`},
		{"tls pair mismatch", func(c *config.Config) { c.TLS = config.TLS{Cert: certFile, Key: otherKey} },
			"tls", `tls: cert ` + certFile + ` and key ` + otherKey + `: tls: private key does not match public key`},
		{"log.level", func(c *config.Config) { c.Log.Level = "verbose" },
			"log.level", `log.level: must be debug, info, warn or error, got "verbose"`},
		{"log.format", func(c *config.Config) { c.Log.Format = "xml" },
			"log.format", `log.format: must be text or json, got "xml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.mutate(&c)
			errs := config.Errors(c.Validate())
			if len(errs) != 1 {
				t.Fatalf("got %d problems %q, want exactly one", len(errs), errs)
			}
			if errs[0].Error() != tt.want {
				t.Errorf("message\n got: %s\nwant: %s", errs[0], tt.want)
			}
			var fe *config.FieldError
			if !errors.As(errs[0], &fe) || fe.Key != tt.key {
				t.Errorf("key: got %+v, want FieldError for %q", fe, tt.key)
			}
		})
	}
}

func TestValidateReportsAllProblemsAtOnce(t *testing.T) {
	c := valid()
	c.Listen = "foo"
	c.Backend.Size = -1
	c.Users = append(c.Users, config.User{User: "app"})
	c.Log.Level = "loud"
	c.Backend.MaxLifetime = 0 // allowed: unlimited
	got := config.Errors(c.Validate())
	want := []string{
		`listen: "foo" is not host:port`,
		`users[1].user: duplicate user "app" (also users[0])`,
		`backend.pool_size: must be between 1 and 10000, or auto, got -1`,
		`log.level: must be debug, info, warn or error, got "loud"`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems %q, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i].Error() != want[i] {
			t.Errorf("problem %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

func TestValidTLSConfigs(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeCert(t, dir, "a")
	c := valid()
	c.TLS = config.TLS{Cert: certFile, Key: keyFile}
	c.Backend.TLS = config.BackendTLS{Mode: config.TLSRequired, CA: certFile, Cert: certFile, Key: keyFile}
	if err := c.Validate(); err != nil {
		t.Fatalf("valid TLS files: %v", err)
	}
}

func TestTLSLoad(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeCert(t, dir, "a")

	if got, err := (config.TLS{}).Load(); got != nil || err != nil {
		t.Fatalf("unset TLS: got %v, %v; want nil, nil", got, err)
	}
	got, err := config.TLS{Cert: certFile, Key: keyFile}.Load()
	if err != nil || got == nil || len(got.Certificates) != 1 {
		t.Fatalf("server TLS: got %v, %v; want one certificate", got, err)
	}
	if got.MinVersion != tls.VersionTLS12 {
		t.Errorf("default MinVersion %x, want TLS 1.2", got.MinVersion)
	}
	got, err = config.TLS{Cert: certFile, Key: keyFile, MinVersion: "1.3"}.Load()
	if err != nil || got.MinVersion != tls.VersionTLS13 {
		t.Errorf("min_version 1.3: %v, %v", got, err)
	}
	if _, err := (config.TLS{Cert: certFile, Key: keyFile, MinVersion: "1.4"}).Load(); err == nil ||
		err.Error() != `tls.min_version: must be 1.0, 1.1, 1.2 or 1.3, got "1.4"` {
		t.Errorf("min_version 1.4: %v", err)
	}
	c := valid()
	c.RequireSecureTransport = true
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "require_secure_transport: needs tls.cert and tls.key") {
		t.Errorf("require_secure_transport without a certificate: %v", err)
	}
}

func TestBackendTLSLoad(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeCert(t, dir, "a")

	for _, mode := range []config.TLSMode{config.TLSDisabled, ""} {
		if got, err := (config.BackendTLS{Mode: mode, CA: certFile}).Load(); got != nil || err != nil {
			t.Fatalf("mode %q: got %v, %v; want nil, nil", mode, got, err)
		}
	}

	b := config.Default().Backend
	b.Addr = "db.example:3306"
	b.TLS = config.BackendTLS{Mode: config.TLSRequired, CA: certFile, Cert: certFile, Key: keyFile}
	got, err := b.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if got.RootCAs == nil || len(got.Certificates) != 1 || got.InsecureSkipVerify {
		t.Fatalf("backend TLS: RootCAs=%v certs=%d insecure=%v", got.RootCAs, len(got.Certificates), got.InsecureSkipVerify)
	}
	if got.ServerName != "db.example" {
		t.Errorf("ServerName = %q, want host of addr", got.ServerName)
	}

	b.TLS = config.BackendTLS{Mode: config.TLSPreferred, ServerName: "mysql.internal", InsecureSkipVerify: true}
	got, err = b.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if got.ServerName != "mysql.internal" || !got.InsecureSkipVerify || got.RootCAs != nil {
		t.Errorf("explicit settings not kept: ServerName=%q insecure=%v RootCAs=%v", got.ServerName, got.InsecureSkipVerify, got.RootCAs)
	}
}

func TestNativeHash(t *testing.T) {
	// MySQL: SELECT PASSWORD('secret') = '*14E65567ABDB5135D0CFD9A70B3032C179A49EE7'.
	const hashed = "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7"
	want, _ := hex.DecodeString(hashed[1:])

	for _, pw := range []string{"secret", hashed, strings.ToLower(hashed)} {
		got, err := config.User{User: "u", Password: pw}.NativeHash()
		if err != nil {
			t.Fatalf("%q: %v", pw, err)
		}
		if len(got) != 20 || string(got) != string(want) {
			t.Errorf("%q: hash %X, want %s", pw, got, hashed[1:])
		}
	}

	if got, err := (config.User{User: "u"}).NativeHash(); got != nil || err != nil {
		t.Errorf("empty password: got %X, %v; want nil, nil", got, err)
	}
	for _, pw := range []string{"*", "*ABC", "*" + strings.Repeat("G", 40), hashed + "0"} {
		if _, err := (config.User{Password: pw}).NativeHash(); !errors.Is(err, config.ErrPasswordHash) {
			t.Errorf("%q: err %v, want ErrPasswordHash", pw, err)
		}
	}
}

func TestPlain(t *testing.T) {
	tests := []struct {
		pw     string
		want   string
		wantOK bool
	}{
		{"secret", "secret", true},
		{"", "", true},
		{"*14E65567ABDB5135D0CFD9A70B3032C179A49EE7", "", false},
	}
	for _, tt := range tests {
		got, ok := config.User{Password: tt.pw}.Plain()
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Plain(%q) = %q, %v; want %q, %v", tt.pw, got, ok, tt.want, tt.wantOK)
		}
	}
}

// writeCert writes a self-signed ECDSA certificate and key to dir and
// returns their paths.
func writeCert(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		DNSNames:              []string{"localhost"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = filepath.Join(dir, name+".crt")
	keyFile = filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
