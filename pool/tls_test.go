package pool_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
	"github.com/tpproxy/tpproxy/internal/testcert"
	"github.com/tpproxy/tpproxy/pool"
)

// TestBackendTLS runs a second server with TLS and checks that the pool's
// connections to it are encrypted and verified, that "required" refuses a
// server without TLS, and that "preferred" falls back to a clear connection.
func TestBackendTLS(t *testing.T) {
	dir := t.TempDir()
	caPool, caFile, certFile, keyFile, err := testcert.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := sandbox.Start(ctx, sandbox.Options{ServerOptions: []string{
		"ssl_ca=" + caFile, "ssl_cert=" + certFile, "ssl_key=" + keyFile,
	}})
	proxytest.CheckStart(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Stop(ctx)
	})
	if err := srv.CreateUser(ctx, proxytest.User, proxytest.Password); err != nil {
		t.Fatal(err)
	}

	t.Run("required and verified", func(t *testing.T) {
		p := newPool(t, func(c *pool.Config) {
			c.Addr = srv.Addr
			c.TLSMode = pool.TLSRequired
			c.TLS = &tls.Config{RootCAs: caPool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
		})
		c, err := p.Acquire(ctxT(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release(c)
		if cipher := statusValue(t, c, "Ssl_cipher"); cipher == "" {
			t.Fatal("the backend connection is not encrypted (empty Ssl_cipher)")
		}
		if _, ok := c.NetConn().(*tls.Conn); !ok {
			t.Fatalf("backend connection is a %T, want *tls.Conn", c.NetConn())
		}
		// MariaDB's extended capabilities go in the encrypted response.
		if ext := p.ExtCaps(); ext&pool.ExtBulk == 0 {
			t.Errorf("ExtCaps %#x over TLS, want bulk operations", ext)
		}
	})
	t.Run("required with an unknown CA", func(t *testing.T) {
		p := newPool(t, func(c *pool.Config) {
			c.Addr = srv.Addr
			c.TLSMode = pool.TLSRequired
			c.TLS = &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
		})
		if _, err := p.Acquire(ctxT(t), nil); !errors.Is(err, pool.ErrBackendUnavailable) {
			t.Fatalf("got %v, want the certificate refused", err)
		}
	})
	t.Run("required against a server without TLS", func(t *testing.T) {
		p := newPool(t, func(c *pool.Config) {
			c.TLSMode = pool.TLSRequired
			c.TLS = &tls.Config{InsecureSkipVerify: true}
		})
		if _, err := p.Acquire(ctxT(t), nil); !errors.Is(err, pool.ErrBackendUnavailable) {
			t.Fatalf("got %v, want a refusal", err)
		}
	})
	t.Run("preferred against a server without TLS", func(t *testing.T) {
		p := newPool(t, func(c *pool.Config) {
			c.TLSMode = pool.TLSPreferred
			c.TLS = &tls.Config{InsecureSkipVerify: true}
		})
		c, err := p.Acquire(ctxT(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release(c)
		if cipher := statusValue(t, c, "Ssl_cipher"); cipher != "" {
			t.Fatalf("Ssl_cipher %q on a server without TLS", cipher)
		}
	})
}

// statusValue reads one session status variable.
func statusValue(t *testing.T, c *pool.Conn, name string) string {
	t.Helper()
	var v string
	err := c.Query(ctxT(t), "SHOW SESSION STATUS LIKE '"+name+"'", func(row []byte) error {
		_, n, err := mysqlwire.LenEncString(row)
		if err != nil {
			return err
		}
		b, _, err := mysqlwire.LenEncString(row[n:])
		v = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}
