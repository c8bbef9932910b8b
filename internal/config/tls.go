package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
)

// Load builds the server-side TLS configuration offered to clients. It
// returns nil, nil when neither cert nor key is set.
// tlsVersions maps tls.min_version values.
var tlsVersions = map[string]uint16{"1.0": tls.VersionTLS10, "1.1": tls.VersionTLS11, "1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}

func (t TLS) Load() (*tls.Config, error) {
	minVersion := uint16(tls.VersionTLS12)
	if t.MinVersion != "" {
		v, ok := tlsVersions[t.MinVersion]
		if !ok {
			return nil, fieldErr("tls.min_version", fmt.Errorf("must be 1.0, 1.1, 1.2 or 1.3, got %q", t.MinVersion))
		}
		minVersion = v
	}
	if t.Cert == "" && t.Key == "" {
		return nil, nil
	}
	cert, err := loadKeyPair("tls", t.Cert, t.Key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: minVersion}, nil
}

// Load builds the client-side TLS configuration for backend connections. It
// returns nil, nil when the mode is disabled. ServerName is left empty when
// not configured; Backend.TLSConfig fills it from the address.
func (b BackendTLS) Load() (*tls.Config, error) {
	if b.Mode == TLSDisabled || b.Mode == "" {
		return nil, nil
	}
	c := &tls.Config{
		ServerName:         b.ServerName,
		InsecureSkipVerify: b.InsecureSkipVerify,
	}
	var errs []error
	if b.CA != "" {
		pem, err := os.ReadFile(b.CA)
		if err != nil {
			errs = append(errs, fieldErr("backend.tls.ca", err))
		} else {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				errs = append(errs, fieldErr("backend.tls.ca", fmt.Errorf("no PEM certificate in %s", b.CA)))
			}
			c.RootCAs = pool
		}
	}
	if b.Cert != "" || b.Key != "" {
		cert, err := loadKeyPair("backend.tls", b.Cert, b.Key)
		if err != nil {
			errs = append(errs, err)
		} else {
			c.Certificates = []tls.Certificate{cert}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// TLSConfig is TLS.Load with ServerName defaulting to the host of Addr, which
// tls.Client (unlike tls.Dial) needs to verify the server certificate.
func (b Backend) TLSConfig() (*tls.Config, error) {
	c, err := b.TLS.Load()
	if c == nil || err != nil {
		return c, err
	}
	if c.ServerName == "" {
		if host, _, err := net.SplitHostPort(b.Addr); err == nil {
			c.ServerName = host
		}
	}
	return c, nil
}

// loadKeyPair reads a PEM certificate and key, naming prefix+".cert" or
// prefix+".key" in errors about either file.
func loadKeyPair(prefix, certFile, keyFile string) (tls.Certificate, error) {
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, fieldErr(prefix, ErrCertKeyPair)
	}
	certPEM, certErr := os.ReadFile(certFile)
	keyPEM, keyErr := os.ReadFile(keyFile)
	if certErr != nil || keyErr != nil {
		var errs []error
		if certErr != nil {
			errs = append(errs, fieldErr(prefix+".cert", certErr))
		}
		if keyErr != nil {
			errs = append(errs, fieldErr(prefix+".key", keyErr))
		}
		return tls.Certificate{}, errors.Join(errs...)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fieldErr(prefix, fmt.Errorf("cert %s and key %s: %w", certFile, keyFile, err))
	}
	return cert, nil
}
