package config

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ErrPasswordHash is returned (wrapped) for a password that starts with '*'
// but is not a mysql_native_password hash.
var ErrPasswordHash = errors.New("is not a mysql_native_password hash ('*' followed by 40 hex digits)")

// nativeHashLen is the length of "*" + hex(SHA1(SHA1(password))).
const nativeHashLen = 1 + 2*sha1.Size

// isHash reports whether the password is meant as a hash; it may still be
// malformed.
func (u User) isHash() bool { return strings.HasPrefix(u.Password, "*") }

// Plain returns the plain password, or false when the file holds a hash.
func (u User) Plain() (string, bool) {
	if u.isHash() {
		return "", false
	}
	return u.Password, true
}

// NativeHash returns the 20-byte mysql_native_password stage-2 hash
// SHA1(SHA1(password)), decoded from "*HEX" or computed from the plain
// password. An empty password yields nil, as MySQL stores it, because
// clients answer an empty password with an empty auth response.
func (u User) NativeHash() ([]byte, error) {
	if !u.isHash() {
		if u.Password == "" {
			return nil, nil
		}
		stage1 := sha1.Sum([]byte(u.Password))
		stage2 := sha1.Sum(stage1[:])
		return stage2[:], nil
	}
	if len(u.Password) != nativeHashLen {
		return nil, fmt.Errorf("%q %w", u.Password, ErrPasswordHash)
	}
	h, err := hex.DecodeString(u.Password[1:])
	if err != nil {
		return nil, fmt.Errorf("%q %w", u.Password, ErrPasswordHash)
	}
	return h, nil
}
