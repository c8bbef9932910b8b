package proxy

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tpproxy/tpproxy/pool"
)

// Auth plugin names.
const (
	pluginNative      = "mysql_native_password"
	pluginCachingSHA2 = "caching_sha2_password"
)

// User is an account clients may log in with.
type User struct {
	Name string
	// Plain is the password when it is known in clear; empty when only the
	// hash is configured.
	Plain string
	// NativeHash is SHA1(SHA1(password)), nil for an empty password.
	NativeHash []byte
	// BackendUser is the server account the user's statements run as with
	// IdentityPassthrough; "" means the server account of the same name.
	BackendUser string
	// BackendPassword is that account's password in clear; "" means the
	// user's own password (the proxy learns it at the user's first
	// mysql_native_password or caching_sha2_password login when only its
	// hash is configured).
	BackendPassword string
}

// Identity says which server account a session's statements run as.
type Identity int

const (
	// IdentityPassthrough: each user's own server account (User.BackendUser
	// or the same name); backend connections are switched to it with
	// COM_CHANGE_USER and shared only between sessions of that account.
	IdentityPassthrough Identity = iota
	// IdentityService: every session runs as the pool's account
	// (backend.user). Every client has that account's privileges.
	IdentityService
)

func (i Identity) String() string {
	if i == IdentityService {
		return "service"
	}
	return "passthrough"
}

// ParseIdentity reads "passthrough" or "service" ("" is passthrough).
func ParseIdentity(s string) (Identity, error) {
	switch s {
	case "", "passthrough":
		return IdentityPassthrough, nil
	case "service":
		return IdentityService, nil
	}
	return 0, fmt.Errorf("identity %q: want passthrough or service", s)
}

// account is a configured user with the caching_sha2_password hash learnt
// from the first full authentication (or computed from a plain password).
type account struct {
	name   string
	stage2 []byte // SHA1(SHA1(password)); nil for an empty password
	empty  bool
	// sha2 holds SHA256(SHA256(password)) once known; it lets
	// caching_sha2_password clients take the fast path.
	sha2 atomic.Pointer[[32]byte]
	// backend is the server account sessions of this user run as with
	// IdentityPassthrough; nil with IdentityService, and until the first
	// login when only the hash of the user's own password is configured
	// (backendUser then names the account).
	backend     atomic.Pointer[pool.Account]
	backendUser string
	passthrough bool
}

// learn records SHA1(password), found at a successful login, as the
// backend account's credential when the configuration left it to the
// user's own password and gave only its hash.
func (a *account) learn(stage1 []byte) {
	if a.passthrough && a.backend.Load() == nil {
		a.backend.Store(&pool.Account{User: a.backendUser, Stage1: append([]byte(nil), stage1...)})
	}
}

// userStore answers "who may log in"; it is replaced whole on reload.
type userStore struct {
	accounts map[string]*account
}

func newUserStore(users []User, id Identity) *userStore {
	s := &userStore{accounts: make(map[string]*account, len(users))}
	for _, u := range users {
		s.accounts[u.Name] = newAccount(u, id)
	}
	return s
}

// newAccount is the account of a configured (or looked-up) user.
func newAccount(u User, id Identity) *account {
	a := &account{name: u.Name, stage2: u.NativeHash, empty: len(u.NativeHash) == 0 && u.Plain == ""}
	if u.Plain != "" {
		a.stage2 = nativeStage2([]byte(u.Plain))
		h := sha2Double([]byte(u.Plain))
		a.sha2.Store(&h)
	}
	if id == IdentityPassthrough {
		a.passthrough = true
		a.backendUser = u.Name
		if u.BackendUser != "" {
			a.backendUser = u.BackendUser
		}
		switch {
		case u.BackendPassword != "":
			a.backend.Store(&pool.Account{User: a.backendUser, Stage1: pool.NativeStage1(u.BackendPassword)})
		case u.Plain != "" || a.empty:
			a.backend.Store(&pool.Account{User: a.backendUser, Stage1: pool.NativeStage1(u.Plain)})
		}
	}
	return a
}

func nativeStage2(pw []byte) []byte {
	s1 := sha1.Sum(pw)
	s2 := sha1.Sum(s1[:])
	return s2[:]
}

func sha2Double(pw []byte) [32]byte {
	s1 := sha256.Sum256(pw)
	return sha256.Sum256(s1[:])
}

// dummyAccount stands in for an unknown user so that a login attempt costs
// the same whether or not the user exists.
var dummyAccount = &account{name: "", stage2: make([]byte, 20)}

// isEmptyAuth reports an empty password answer: clients send nothing or a
// single NUL.
func isEmptyAuth(resp []byte) bool { return len(resp) == 0 || (len(resp) == 1 && resp[0] == 0) }

// checkNative verifies a mysql_native_password scramble.
func (a *account) checkNative(salt, resp []byte) bool {
	if isEmptyAuth(resp) {
		return a.empty
	}
	if a.empty || len(resp) != sha1.Size || len(a.stage2) != sha1.Size {
		return false
	}
	// stage1 = resp XOR SHA1(salt + stage2); valid when SHA1(stage1) == stage2.
	h := sha1.New()
	h.Write(salt)
	h.Write(a.stage2)
	x := h.Sum(nil)
	for i := range x {
		x[i] ^= resp[i]
	}
	got := sha1.Sum(x)
	if subtle.ConstantTimeCompare(got[:], a.stage2) != 1 {
		return false
	}
	a.learn(x)
	return true
}

// checkSHA2Fast verifies a caching_sha2_password scramble against the
// cached hash. ok is false when no hash is cached (full auth needed).
func (a *account) checkSHA2Fast(salt, resp []byte) (match, cached bool) {
	c := a.sha2.Load()
	if c == nil {
		return false, false
	}
	if len(resp) != sha256.Size {
		return false, true
	}
	// SHA256(pw) = resp XOR SHA256(SHA256(SHA256(pw)) + salt)
	h := sha256.New()
	h.Write(c[:])
	h.Write(salt)
	x := h.Sum(nil)
	for i := range x {
		x[i] ^= resp[i]
	}
	got := sha256.Sum256(x)
	return subtle.ConstantTimeCompare(got[:], c[:]) == 1, true
}

// checkPlain verifies a password received in clear (caching_sha2_password
// full authentication over TLS or RSA) and caches its SHA-2 hash.
func (a *account) checkPlain(pw []byte) bool {
	if len(pw) == 0 {
		return a.empty
	}
	if a.empty || subtle.ConstantTimeCompare(nativeStage2(pw), a.stage2) != 1 {
		return false
	}
	h := sha2Double(pw)
	a.sha2.Store(&h)
	s1 := sha1.Sum(pw)
	a.learn(s1[:])
	return true
}

// rsaKeys is the key pair caching_sha2_password clients use to send their
// password over a connection without TLS. It is generated on first use.
type rsaKeys struct {
	once   sync.Once
	key    *rsa.PrivateKey
	pubPEM []byte
	err    error
}

func (k *rsaKeys) get() (*rsa.PrivateKey, []byte, error) {
	k.once.Do(func() {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			k.err = fmt.Errorf("generate RSA key: %w", err)
			return
		}
		der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			k.err = fmt.Errorf("encode RSA key: %w", err)
			return
		}
		k.key = key
		k.pubPEM = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	})
	return k.key, k.pubPEM, k.err
}

// decryptPassword undoes the client's RSA-OAEP(password XOR salt).
func (k *rsaKeys) decryptPassword(salt, enc []byte) ([]byte, error) {
	key, _, err := k.get()
	if err != nil {
		return nil, err
	}
	plain, err := rsa.DecryptOAEP(sha1.New(), rand.Reader, key, enc, nil)
	if err != nil {
		return nil, err
	}
	for i := range plain {
		plain[i] ^= salt[i%len(salt)]
	}
	if n := len(plain); n > 0 && plain[n-1] == 0 {
		plain = plain[:n-1]
	}
	return plain, nil
}
