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

// A released connection goes to the first waiter unless that one wants
// another account and a waiter of its own account is among the next few;
// nobody is passed more than maxOvertaken times.
func TestNextWaiter(t *testing.T) {
	p := &Pool{cfg: Config{User: "svc"}}
	push := func(accounts ...string) []*waiter {
		var ws []*waiter
		for _, a := range accounts {
			w := &waiter{account: a}
			p.waiters.push(w)
			ws = append(ws, w)
		}
		return ws
	}
	connA := &Conn{p: p, account: &Account{User: "a"}}
	connSvc := &Conn{p: p}

	ws := push("b", "a", "svc", "a")
	if got := p.nextWaiter(connA); got != ws[1] {
		t.Fatalf("a's connection went to %q, want the first a waiter", got.account)
	}
	if ws[0].overtaken != 1 {
		t.Errorf("the b waiter was overtaken %d times", ws[0].overtaken)
	}
	if got := p.nextWaiter(connSvc); got != ws[2] {
		t.Fatalf("the pool's own connection went to %q", got.account)
	}
	// b has now been passed twice; two more passes, then it is served
	// whatever the connection.
	push("a", "a", "a")
	for i := range 2 {
		if got := p.nextWaiter(connA); got.account != "a" {
			t.Fatalf("pass %d: %q", i, got.account)
		}
	}
	if ws[0].overtaken != maxOvertaken {
		t.Fatalf("b overtaken %d times", ws[0].overtaken)
	}
	if got := p.nextWaiter(connA); got != ws[0] {
		t.Fatalf("after %d passes the b waiter still waits (got %q)", maxOvertaken, got.account)
	}
	// Nothing of a's account: first come, first served.
	p.waiters = waitQueue{}
	ws = push("c", "d")
	if got := p.nextWaiter(connA); got != ws[0] {
		t.Fatalf("got %q, want the first waiter", got.account)
	}
	if p.nextWaiter(connA) != ws[1] || p.nextWaiter(connA) != nil {
		t.Fatal("queue order")
	}
}
