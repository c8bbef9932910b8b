package clients

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/proxy"
)

// selfSigned makes a certificate for 127.0.0.1 and localhost and returns
// it with a pool that trusts it and its PEM files.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "tpproxy e2e"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, caFile
}

// registerTLS registers a go-sql-driver TLS config for the test's life.
func registerTLS(t testing.TB, cfg *tls.Config) string {
	t.Helper()
	name := "e2e-" + strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := mysql.RegisterTLSConfig(name, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mysql.DeregisterTLSConfig(name) })
	return name
}

func TestTLS(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 60*time.Second)
	cert, roots, caFile := selfSigned(t)
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Proxy.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	})

	// A client config that records what it negotiated.
	var mu sync.Mutex
	var states []tls.ConnectionState
	record := registerTLS(t, &tls.Config{
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			mu.Lock()
			states = append(states, cs)
			mu.Unlock()
			return nil
		},
	})
	goSQLOverTLS := func() error {
		db := px.Open(t, "tls="+record)
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT LENGTH(?)", strings.Repeat("t", 3<<20)).Scan(&n); err != nil || n != 3<<20 {
			return fmt.Errorf("3 MiB over TLS: %d, %w", n, err)
		}
		var s string
		if err := conn.QueryRowContext(ctx, "SELECT REPEAT('u', 5 << 20)").Scan(&s); err != nil || len(s) != 5<<20 {
			return fmt.Errorf("5 MiB back over TLS: %d, %w", len(s), err)
		}
		return nil
	}
	if err := goSQLOverTLS(); err != nil {
		t.Errorf("go-sql-driver over TLS: %v", err)
	} else {
		mu.Lock()
		got := append([]tls.ConnectionState(nil), states...)
		mu.Unlock()
		if len(got) != 1 {
			t.Errorf("%d TLS handshakes recorded, want 1", len(got))
		} else if cs := got[0]; cs.Version < tls.VersionTLS12 ||
			len(cs.PeerCertificates) == 0 || !cs.PeerCertificates[0].Equal(cert.Leaf) {
			t.Errorf("TLS state: version=%#x certs=%d; want the proxy's certificate over TLS 1.2+",
				cs.Version, len(cs.PeerCertificates))
		}
	}

	// Full verification against the test CA, by IP and by name.
	for _, host := range []string{"127.0.0.1", "localhost"} {
		name := registerTLS(t, &tls.Config{RootCAs: roots, ServerName: host})
		if err := pingErr(ctx, px.DSN("tls="+name)); err != nil {
			t.Errorf("verified TLS as %s: %v", host, err)
		}
	}
	if err := pingErr(ctx, px.DSN("tls=skip-verify")); err != nil {
		t.Errorf("tls=skip-verify: %v", err)
	}
	// Plain connections still work on a proxy that offers TLS.
	if err := pingErr(ctx, px.DSN()); err != nil {
		t.Errorf("without TLS: %v", err)
	}
	// A proxy without TLS says so in its greeting.
	plain := env.StartProxy(t)
	if err := pingErr(ctx, plain.DSN("tls=skip-verify")); !errors.Is(err, mysql.ErrNoTLS) {
		t.Errorf("TLS to a proxy without TLS: %v; want %v", err, mysql.ErrNoTLS)
	}

	// The raw client sees a *tls.Conn and a working session, whether the
	// TLS ClientHello follows the SSLRequest in a later segment or in the
	// same one: the proxy must not lose bytes it read ahead.
	for _, same := range []bool{false, true} {
		rc, err := rawConnect(ctx, px.Addr, rawOptions{User: "app", Password: "secret", DB: proxytest.DB,
			TLS: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}, TLSSameWrite: same})
		if err != nil {
			t.Errorf("raw TLS login (SSLRequest and ClientHello in one write: %v): %v", same, err)
			continue
		}
		if _, ok := rc.nc.(*tls.Conn); !ok {
			t.Errorf("raw client connection is %T", rc.nc)
		}
		if got := rc.scalar(t, "SELECT 'over tls'"); got != "over tls" {
			t.Errorf("raw TLS query = %q", got)
		}
		rc.close()
	}

	// The mariadb client reports the cipher of its own connection.
	if bin, err := exec.LookPath("mariadb"); err == nil {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(cctx, bin, "--no-defaults", "--protocol=tcp", "-h127.0.0.1",
			"-P"+strconv.Itoa(px.Port), "-uapp", "-psecret", "--ssl", "--ssl-ca="+caFile,
			"--ssl-verify-server-cert", "-e", `\s`).CombinedOutput()
		if err != nil {
			t.Errorf("mariadb --ssl: %v\n%s", err, out)
		} else if !strings.Contains(string(out), "Cipher in use is") {
			t.Errorf("mariadb --ssl status shows no cipher:\n%s", out)
		}
	} else if inCI() {
		t.Errorf("mariadb client missing: %v", err)
	}
}

// nativeHash is SHA1(SHA1(password)), the form a proxy user may be
// configured with when the password itself is not known.
func nativeHash(pw string) []byte {
	s1 := sha1.Sum([]byte(pw))
	s2 := sha1.Sum(s1[:])
	return s2[:]
}

func TestCachingSHA2Password(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 60*time.Second)
	cert, roots, _ := selfSigned(t)
	// Users configured by hash only: the proxy learns their SHA-2 hash on
	// the first full authentication and takes the fast path afterwards.
	hashed := []string{"rsa_raw", "tls_raw", "tls_gosql", "rsa_gosql", "rsa_gomysql"}
	// Their server accounts (backend.identity passthrough): the proxy logs
	// in to them with what it learns at each user's first login.
	for _, u := range hashed {
		serverExec(t, "CREATE USER IF NOT EXISTS '"+u+"'@'%' IDENTIFIED BY '"+u+"-pw'",
			"GRANT ALL ON "+proxytest.DB+".* TO '"+u+"'@'%'")
	}
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Proxy.AuthPlugin = "caching_sha2_password"
		o.Proxy.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		for _, u := range hashed {
			o.Proxy.Users = append(o.Proxy.Users, proxy.User{Name: u, NativeHash: nativeHash(u + "-pw")})
		}
	})
	tlsCfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	raw := func(user string, tc *tls.Config, plugin, pw string) (*rawConn, error) {
		c, err := rawConnect(ctx, px.Addr, rawOptions{User: user, Password: pw, DB: proxytest.DB, Plugin: plugin, TLS: tc})
		if err == nil {
			t.Cleanup(c.close)
			if c.greeting.Plugin != "caching_sha2_password" {
				t.Errorf("greeting announces %q", c.greeting.Plugin)
			}
		}
		return c, err
	}
	expectPath := func(what string, c *rawConn, err error, path string) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if c.authPath != path {
			t.Errorf("%s: authentication took path %q, want %q", what, c.authPath, path)
		}
		if got := c.scalar(t, "SELECT 'logged in'"); got != "logged in" {
			t.Errorf("%s: query = %q", what, got)
		}
	}

	c, err := raw("rsa_raw", nil, pluginSHA2, "rsa_raw-pw")
	expectPath("first login without TLS", c, err, "sha2-full-rsa")
	c, err = raw("rsa_raw", nil, pluginSHA2, "rsa_raw-pw")
	expectPath("second login", c, err, "sha2-fast")
	c, err = raw("tls_raw", tlsCfg, pluginSHA2, "tls_raw-pw")
	expectPath("first login over TLS", c, err, "sha2-full-tls")
	c, err = raw("tls_raw", nil, pluginSHA2, "tls_raw-pw")
	expectPath("second login, now without TLS", c, err, "sha2-fast")
	// mysql_native_password is accepted whatever is announced.
	c, err = raw("tls_raw", nil, pluginNative, "tls_raw-pw")
	expectPath("native password on a caching_sha2 proxy", c, err, "native")
	c, err = raw("app", nil, pluginSHA2, "secret")
	expectPath("user with a plain password (hash known)", c, err, "sha2-fast")

	// Wrong passwords, on the fast path and on the full one.
	for _, w := range []struct{ user, pw string }{{"rsa_raw", "nope"}, {"app", "nope"}, {"rsa_gomysql", "nope"}, {"nobody", "nope"}} {
		_, err := raw(w.user, nil, pluginSHA2, w.pw)
		want := "Access denied for user '" + w.user + "'@'127.0.0.1' (using password: YES)"
		if se := asServerError(err); se == nil || se.Code != 1045 || se.State != "28000" || se.Message != want {
			t.Errorf("%s with a wrong password: %v; want Error 1045 (28000): %s", w.user, err, want)
		}
	}

	// go-sql-driver: full authentication over TLS (password in clear),
	// then again (fast); and without TLS, where it asks for the public key.
	tlsName := registerTLS(t, tlsCfg)
	for i := range 2 {
		if err := pingErr(ctx, px.DSNFor("tls_gosql", "tls_gosql-pw", proxytest.DB, "tls="+tlsName)); err != nil {
			t.Errorf("go-sql-driver over TLS, login %d: %v", i+1, err)
		}
		if err := pingErr(ctx, px.DSNFor("rsa_gosql", "rsa_gosql-pw", proxytest.DB)); err != nil {
			t.Errorf("go-sql-driver with RSA key exchange, login %d: %v", i+1, err)
		}
	}
	err = pingErr(ctx, px.DSNFor("tls_gosql", "bad", proxytest.DB, "tls="+tlsName))
	if code, state, _ := mysqlErr(err); code != 1045 || state != "28000" {
		t.Errorf("go-sql-driver wrong password over TLS: %v; want 1045", err)
	}
	err = pingErr(ctx, px.DSNFor("rsa_gosql", "bad", proxytest.DB))
	if code, state, _ := mysqlErr(err); code != 1045 || state != "28000" {
		t.Errorf("go-sql-driver wrong password without TLS: %v; want 1045", err)
	}

	// go-mysql's client does the RSA exchange its own way.
	for i := range 2 {
		gc, err := client.ConnectWithContext(ctx, px.Addr, "rsa_gomysql", "rsa_gomysql-pw", proxytest.DB, 10*time.Second, readTimeouts)
		if err != nil {
			t.Errorf("go-mysql client login %d: %v", i+1, err)
			continue
		}
		if _, err := gc.Execute("SELECT 1"); err != nil {
			t.Errorf("go-mysql client query: %v", err)
		}
		_ = gc.Close()
	}
	_, err = client.ConnectWithContext(ctx, px.Addr, "rsa_gomysql", "bad", proxytest.DB, 10*time.Second, readTimeouts)
	var me *gomysql.MyError
	if !errors.As(err, &me) || me.Code != 1045 {
		t.Errorf("go-mysql client with a wrong password: %v; want 1045", err)
	}
	if st := px.Server.Stats(); st.AuthFailures < 7 {
		t.Errorf("AuthFailures = %d, want at least 7", st.AuthFailures)
	}
}
