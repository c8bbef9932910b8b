package mysqlclient

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	"filippo.io/edwards25519"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// Authentication plugins the client speaks.
const (
	pluginNative    = mysqlwire.AuthNativePassword
	pluginSHA2      = mysqlwire.AuthCachingSHA2Password
	pluginSHA256    = mysqlwire.AuthSHA256Password
	pluginClearText = mysqlwire.AuthClearPassword
	pluginEd25519   = mysqlwire.AuthEd25519
)

// speaks reports whether the client can answer plugin's challenge.
func speaks(plugin string) bool {
	switch plugin {
	case pluginNative, pluginSHA2, pluginSHA256, pluginClearText, pluginEd25519:
		return true
	}
	return false
}

// nativeScrambleBytes is the length of a mysql_native_password scramble.
const nativeScrambleBytes = 20

// scrambleNative is mysql_native_password's answer to the salt:
// SHA1(password) XOR SHA1(salt + SHA1(SHA1(password))). An empty password
// is answered with nothing, as the server expects.
func scrambleNative(salt []byte, password string) []byte {
	if password == "" {
		return nil
	}
	salt = salt[:min(len(salt), nativeScrambleBytes)]
	stage1 := sha1.Sum([]byte(password))
	stage2 := sha1.Sum(stage1[:])
	h := sha1.New()
	h.Write(salt)
	h.Write(stage2[:])
	out := h.Sum(nil)
	for i := range out {
		out[i] ^= stage1[i]
	}
	return out
}

// scrambleSHA2 is caching_sha2_password's fast-path answer:
// SHA256(password) XOR SHA256(SHA256(SHA256(password)) + salt).
func scrambleSHA2(salt []byte, password string) []byte {
	if password == "" {
		return nil
	}
	m1 := sha256.Sum256([]byte(password))
	m1h := sha256.Sum256(m1[:])
	h := sha256.New()
	h.Write(m1h[:])
	h.Write(salt)
	out := h.Sum(nil)
	for i := range out {
		out[i] ^= m1[i]
	}
	return out
}

// ed25519ScrambleBytes is the length of client_ed25519's challenge.
const ed25519ScrambleBytes = 32

// scrambleEd25519 is MariaDB's client_ed25519 answer: the Ed25519
// signature of the scramble with SHA-512(password) as the expanded private
// key (the plugin's ref10 sign.c; for a 32-byte password it is the
// standard signature with the password as seed).
func scrambleEd25519(scramble []byte, password string) ([]byte, error) {
	if len(scramble) != ed25519ScrambleBytes {
		return nil, fmt.Errorf("%w: client_ed25519 scramble of %d bytes", ErrAuth, len(scramble))
	}
	h := sha512.Sum512([]byte(password))
	s, err := edwards25519.NewScalar().SetBytesWithClamping(h[:32])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuth, err)
	}
	pub := new(edwards25519.Point).ScalarBaseMult(s).Bytes()
	rh := sha512.New()
	rh.Write(h[32:])
	rh.Write(scramble)
	r, err := edwards25519.NewScalar().SetUniformBytes(rh.Sum(nil))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuth, err)
	}
	sig := new(edwards25519.Point).ScalarBaseMult(r).Bytes()
	kh := sha512.New()
	kh.Write(sig)
	kh.Write(pub)
	kh.Write(scramble)
	k, err := edwards25519.NewScalar().SetUniformBytes(kh.Sum(nil))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuth, err)
	}
	return append(sig, k.MultiplyAdd(k, s, r).Bytes()...), nil
}

// encryptPassword is caching_sha2_password's (and sha256_password's) full
// authentication over an insecure channel: RSA-OAEP (SHA-1) of (password NUL) XOR the salt, with
// the key the server sent in PEM form.
func encryptPassword(password string, salt, pemKey []byte) ([]byte, error) {
	block, _ := pem.Decode(pemKey)
	if block == nil {
		return nil, fmt.Errorf("%w: server's public key is not PEM", ErrAuth)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: server's public key: %w", ErrAuth, err)
	}
	rk, ok := pub.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%w: server's public key is %T, not RSA", ErrAuth, pub)
	}
	if len(salt) == 0 {
		return nil, fmt.Errorf("%w: empty salt", ErrAuth)
	}
	plain := make([]byte, len(password)+1)
	copy(plain, password)
	for i := range plain {
		plain[i] ^= salt[i%len(salt)]
	}
	enc, err := rsa.EncryptOAEP(sha1.New(), rand.Reader, rk, plain, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuth, err)
	}
	return enc, nil
}

// authResponse is the first answer to a plugin's challenge; secure: the
// channel is TLS or a Unix socket. Plugins the client does not speak get a
// native scramble, as go-sql-driver does: the server then either accepts
// it or asks for a switch to the account's plugin.
func authResponse(plugin string, salt []byte, cfg *Config, secure bool) (string, []byte, error) {
	switch plugin {
	case pluginSHA2:
		return plugin, scrambleSHA2(salt, cfg.Passwd), nil
	case pluginSHA256:
		// The password itself over a secure channel; otherwise a request
		// (1) for the server's RSA key, to encrypt it with (authLoop).
		switch {
		case cfg.Passwd == "":
			return plugin, []byte{0}, nil
		case secure:
			return plugin, append([]byte(cfg.Passwd), 0), nil
		}
		return plugin, []byte{1}, nil
	case pluginClearText:
		if !cfg.AllowCleartextPasswords {
			return plugin, nil, fmt.Errorf("%w: server asks for %s, not allowed by config", ErrAuth, plugin)
		}
		return plugin, append([]byte(cfg.Passwd), 0), nil
	case pluginEd25519:
		auth, err := scrambleEd25519(salt, cfg.Passwd)
		return plugin, auth, err
	case pluginNative:
		return plugin, scrambleNative(salt, cfg.Passwd), nil
	}
	return pluginNative, scrambleNative(salt, cfg.Passwd), nil
}
