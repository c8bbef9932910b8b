// Package testcert makes throwaway TLS certificates for tests: a CA and a
// server certificate for 127.0.0.1, as PEM files a test server can load.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Write creates a CA and a server certificate for 127.0.0.1 signed by it,
// writes ca.pem, server.pem and server-key.pem into dir, and returns a pool
// that trusts the CA with the three paths.
func Write(dir string) (cas *x509.CertPool, caFile, certFile, keyFile string, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", "", "", err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "tpproxy test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, "", "", "", err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, "", "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, "", "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, "", "", "", err
	}
	write := func(name, typ string, b []byte) (string, error) {
		p := filepath.Join(dir, name)
		return p, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600)
	}
	if caFile, err = write("ca.pem", "CERTIFICATE", caDER); err != nil {
		return nil, "", "", "", err
	}
	if certFile, err = write("server.pem", "CERTIFICATE", der); err != nil {
		return nil, "", "", "", err
	}
	if keyFile, err = write("server-key.pem", "EC PRIVATE KEY", keyDER); err != nil {
		return nil, "", "", "", err
	}
	cas = x509.NewCertPool()
	cas.AddCert(ca)
	return cas, caFile, certFile, keyFile, nil
}
