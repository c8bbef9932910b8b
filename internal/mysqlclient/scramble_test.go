package mysqlclient

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"testing"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// Vectors from go-sql-driver/mysql v1.10.1 auth_test.go.
func TestScrambleSHA2Vectors(t *testing.T) {
	salt := []byte{10, 47, 74, 111, 75, 73, 34, 48, 88, 76, 114, 74, 37, 13, 3, 80, 82, 2, 23, 21}
	for _, v := range []struct{ pass, out string }{
		{"secret", "f490e76f66d9d86665ce54d98c78d0acfe2fb0b08b423da807144873d30b312c"},
		{"secret2", "abc3934a012cf342e876071c8ee202de51785b430258a7a0138bc79c4d800bc6"},
	} {
		if got := hex.EncodeToString(scrambleSHA2(salt, v.pass)); got != v.out {
			t.Errorf("%q: %s, want %s", v.pass, got, v.out)
		}
	}
	// TestAuthFastCachingSHA256PasswordCached.
	salt = []byte{90, 105, 74, 126, 30, 48, 37, 56, 3, 23, 115, 127, 69, 22, 41, 84, 32, 123, 43, 118}
	want := []byte{102, 32, 5, 35, 143, 161, 140, 241, 171, 232, 56, 139, 43, 14, 107, 196, 249, 170,
		147, 60, 220, 204, 120, 178, 214, 15, 184, 150, 26, 61, 57, 235}
	if got := scrambleSHA2(salt, "secret"); !bytes.Equal(got, want) {
		t.Errorf("cached vector: %v, want %v", got, want)
	}
	if got := scrambleSHA2(salt, ""); got != nil {
		t.Errorf("empty password scrambled to %x", got)
	}
}

func TestScrambleNativeVector(t *testing.T) {
	// TestAuthFastNativePassword of go-sql-driver.
	salt := []byte{70, 114, 92, 94, 1, 38, 11, 116, 63, 114, 23, 101, 126, 103, 26, 95, 81, 17, 24, 21}
	want := []byte{53, 177, 140, 159, 251, 189, 127, 53, 109, 252, 172, 50, 211, 192, 240, 164, 26, 48, 207, 45}
	if got := scrambleNative(salt, "secret"); !bytes.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// Only the first 20 bytes of the salt count (greetings carry a NUL).
	if got := scrambleNative(append(salt, 0), "secret"); !bytes.Equal(got, want) {
		t.Errorf("with a trailing NUL: got %v, want %v", got, want)
	}
	if got := scrambleNative(salt, ""); got != nil {
		t.Errorf("empty password scrambled to %x", got)
	}
}

func TestEncryptPassword(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	salt := []byte("0123456789abcdefghij")
	password := "a password longer than the twenty-byte salt"
	enc, err := encryptPassword(password, salt, pemKey)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := rsa.DecryptOAEP(sha1.New(), nil, key, enc, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range plain {
		plain[i] ^= salt[i%len(salt)]
	}
	if string(plain) != password+"\x00" {
		t.Errorf("decrypted %q", plain)
	}
	if _, err := encryptPassword(password, salt, []byte("not a key")); !errors.Is(err, ErrAuth) {
		t.Errorf("garbage key: got %v, want ErrAuth", err)
	}
}

func TestParseGreeting(t *testing.T) {
	// A MariaDB 10.11 greeting.
	p := []byte("\x0a5.5.5-10.11.14-MariaDB\x00\x2a\x00\x00\x00" +
		"ABCDEFGH\x00\xfe\xf7\x2d\x02\x00\xff\x81\x15\x00\x00\x00\x00\x00\x00\x1d\x00\x00\x00" +
		"IJKLMNOPQRST\x00mysql_native_password\x00")
	g, err := parseGreeting(p)
	if err != nil {
		t.Fatal(err)
	}
	if g.Version != "5.5.5-10.11.14-MariaDB" || g.ConnID != 42 || string(g.Salt) != "ABCDEFGHIJKLMNOPQRST" ||
		g.Plugin != pluginNative || g.Caps&mysqlwire.ClientProtocol41 == 0 || g.Caps&mysqlwire.ClientPluginAuth == 0 ||
		g.ExtCaps != 0x1d || g.Collation != 45 {
		t.Errorf("parsed %+v", g)
	}
	if g.Caps&mysqlwire.ClientSSL != 0 {
		t.Error("capabilities 0xf7fe taken to include CLIENT_SSL")
	}
	withTLS := []byte(string(p))
	withTLS[len("\x0a5.5.5-10.11.14-MariaDB\x00")+4+8+2] = 0xff
	if g, err := parseGreeting(withTLS); err != nil || g.Caps&mysqlwire.ClientSSL == 0 {
		t.Errorf("capabilities 0xfffe taken to lack CLIENT_SSL (%v)", err)
	}
	for i := range p {
		// Truncated greetings must not panic; most are errors.
		_, _ = parseGreeting(p[:i])
	}
}
