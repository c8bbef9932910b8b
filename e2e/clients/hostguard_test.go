package clients

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// TestFailedLoginLimit: a client address that keeps failing to log in is
// turned away with ERR 1129 before any handshake once it reaches
// max_connect_errors, quickly; other addresses still log in; a successful
// login resets the count; FLUSH HOSTS unblocks it.
func TestFailedLoginLimit(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 60*time.Second)
	const limit = 5
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Proxy.MaxConnectErrors = limit })
	const attacker = "127.0.0.2"
	wrong := rawOptions{User: proxytest.User, Password: "guess", LocalIP: attacker}
	right := rawOptions{User: proxytest.User, Password: proxytest.Password, LocalIP: attacker}
	fail := func(n int) {
		t.Helper()
		for i := range n {
			_, err := rawConnect(ctx, px.Addr, wrong)
			if err == nil || !strings.Contains(err.Error(), "1045") {
				t.Fatalf("wrong password %d: %v, want ERROR 1045", i+1, err)
			}
		}
	}

	// limit-1 failures, then a success: the count starts over.
	fail(limit - 1)
	c, err := rawConnect(ctx, px.Addr, right)
	if err != nil {
		t.Fatalf("right password after %d failures: %v", limit-1, err)
	}
	c.close()
	fail(limit)
	start := time.Now()
	_, err = rawConnect(ctx, px.Addr, right)
	if err == nil || !strings.Contains(err.Error(), "1129") || !strings.Contains(err.Error(), "Host '"+attacker+"' is blocked") {
		t.Fatalf("login after %d failures: %v, want ERROR 1129", limit, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the blocked host waited %v for its refusal", d)
	}
	// Another address is not affected.
	other, err := rawConnect(ctx, px.Addr, rawOptions{User: proxytest.User, Password: proxytest.Password})
	if err != nil {
		t.Fatalf("login from 127.0.0.1 while %s is blocked: %v", attacker, err)
	}
	if got := other.scalar(t, "SELECT 1"); got != "1" {
		t.Errorf("SELECT 1 = %q", got)
	}
	other.close()
	if n := px.Server.FlushHosts(); n != 1 {
		t.Errorf("FLUSH HOSTS unblocked %d hosts, want 1", n)
	}
	c, err = rawConnect(ctx, px.Addr, right)
	if err != nil {
		t.Fatalf("login after FLUSH HOSTS: %v", err)
	}
	c.close()
}

// TestRequireSecureTransport: with require_secure_transport a login
// without TLS gets what the server answers (MariaDB: ERR 1045; MySQL:
// 3159), one with TLS logs in.
func TestRequireSecureTransport(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 60*time.Second)
	cert, roots, _ := selfSigned(t)
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Proxy.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		o.Proxy.RequireSecureTransport = true
	})
	_, err := rawConnect(ctx, px.Addr, rawOptions{User: proxytest.User, Password: proxytest.Password})
	want := "1045"
	if !strings.Contains(px.Pool.ServerVersion(), "MariaDB") {
		want = "3159"
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("login without TLS: %v, want ERROR %s", err, want)
	}
	c, err := rawConnect(ctx, px.Addr, rawOptions{User: proxytest.User, Password: proxytest.Password,
		TLS: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}})
	if err != nil {
		t.Fatalf("login over TLS: %v", err)
	}
	defer c.close()
	if got := c.scalar(t, "SELECT 1"); got != "1" {
		t.Errorf("SELECT 1 over TLS = %q", got)
	}
}
