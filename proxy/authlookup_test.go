package proxy

import (
	"context"
	"crypto/sha1"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLookupCache(t *testing.T) {
	s1 := sha1.Sum([]byte("pw"))
	hash := sha1.Sum(s1[:])
	var calls atomic.Int64
	var fail atomic.Bool
	release := make(chan struct{})
	fn := func(ctx context.Context, user string) ([]byte, bool, error) {
		calls.Add(1)
		<-release
		if fail.Load() {
			return nil, false, errors.New("server down")
		}
		if user == "nobody" {
			return nil, false, nil
		}
		return hash[:], true, nil
	}
	c := newLookupCache(fn, 50*time.Millisecond, IdentityPassthrough)
	ctx := context.Background()

	// Logins of one user at once ask the server once.
	var wg sync.WaitGroup
	accts := make([]*account, 8)
	for i := range accts {
		wg.Go(func() { accts[i], _ = c.get(ctx, "u") })
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("%d lookups for 8 concurrent logins, want 1", n)
	}
	for _, a := range accts {
		if a == nil || a != accts[0] || !a.passthrough || string(a.stage2) != string(hash[:]) {
			t.Fatalf("account %+v", a)
		}
	}
	// Within the TTL: from the cache.
	if a, _ := c.get(ctx, "u"); a != accts[0] || calls.Load() != 1 {
		t.Errorf("second login asked again (%d lookups)", calls.Load())
	}
	// After it: asked again; the same hash keeps the account (and what
	// logins learnt about it).
	time.Sleep(60 * time.Millisecond)
	if a, _ := c.get(ctx, "u"); a != accts[0] || calls.Load() != 2 {
		t.Errorf("after the TTL: same account %v, %d lookups", a == accts[0], calls.Load())
	}
	if a, err := c.get(ctx, "nobody"); a != nil || err != nil {
		t.Errorf("unknown user: %v, %v", a, err)
	}
	// A failed lookup refuses the login and is not cached.
	time.Sleep(60 * time.Millisecond)
	fail.Store(true)
	if a, err := c.get(ctx, "u"); a != nil || err == nil {
		t.Errorf("failed lookup: %v, %v", a, err)
	}
	fail.Store(false)
	if a, err := c.get(ctx, "u"); a == nil || err != nil {
		t.Errorf("lookup after a failure: %v, %v", a, err)
	}
}
