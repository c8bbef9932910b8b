package pool

import (
	"bytes"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// The scramble from SHA1(password) is the one clients compute from the
// password itself, which is what lets passthrough log in with a hash the
// proxy learnt at a client's login.
func TestNativeScramble(t *testing.T) {
	salt := []byte("0123456789abcdefghij")
	for _, pw := range []string{"secret", "idp_ro-pw", "ünïcode", "x"} {
		want := gomysql.CalcNativePassword(salt, []byte(pw))
		if got := nativeScramble(salt, NativeStage1(pw)); !bytes.Equal(got, want) {
			t.Errorf("%q: scramble %x, want %x", pw, got, want)
		}
	}
	if got := nativeScramble(salt, NativeStage1("")); len(got) != 0 {
		t.Errorf("empty password: scramble %x, want none", got)
	}
}

func TestSameAccount(t *testing.T) {
	p := &Pool{cfg: Config{User: "svc"}}
	a1, a2, b, svc := &Account{User: "a"}, &Account{User: "a", Stage1: []byte{1}}, &Account{User: "b"}, &Account{User: "svc"}
	for _, tt := range []struct {
		x, y *Account
		want bool
	}{{nil, nil, true}, {a1, a2, true}, {a1, b, false}, {nil, a1, false}, {a1, nil, false}, {nil, svc, true}, {svc, nil, true}} {
		if got := p.sameAccount(tt.x, tt.y); got != tt.want {
			t.Errorf("sameAccount(%v, %v) = %v", tt.x, tt.y, got)
		}
	}
}
