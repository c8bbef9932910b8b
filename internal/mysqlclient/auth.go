package mysqlclient

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// Authentication plugins the client speaks.
const (
	pluginNative    = "mysql_native_password"
	pluginSHA2      = "caching_sha2_password"
	pluginClearText = "mysql_clear_password"
)

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

// encryptPassword is caching_sha2_password's full authentication over an
// insecure channel: RSA-OAEP (SHA-1) of (password NUL) XOR the salt, with
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

// authResponse is the first answer to a plugin's challenge. Plugins the
// client does not speak get a native scramble, as go-sql-driver does: the
// server then either accepts it or asks for a switch to the account's
// plugin.
func authResponse(plugin string, salt []byte, cfg *Config) (string, []byte, error) {
	switch plugin {
	case pluginSHA2:
		return plugin, scrambleSHA2(salt, cfg.Passwd), nil
	case pluginClearText:
		if !cfg.AllowCleartextPasswords {
			return plugin, nil, fmt.Errorf("%w: server asks for %s, not allowed by config", ErrAuth, plugin)
		}
		return plugin, append([]byte(cfg.Passwd), 0), nil
	case pluginNative:
		return plugin, scrambleNative(salt, cfg.Passwd), nil
	}
	return pluginNative, scrambleNative(salt, cfg.Passwd), nil
}
