package pool_test

import (
	"testing"

	"github.com/tpproxy/tpproxy/pool"
)

// BenchmarkAcquireRelease is the fast path: an idle connection is there,
// nobody waits. It must not allocate.
func BenchmarkAcquireRelease(b *testing.B) {
	p := newPool(b, func(c *pool.Config) { c.Size = 1 })
	ctx := ctxT(b)
	b.ReportAllocs()
	for b.Loop() {
		c, err := p.Acquire(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		p.Release(c)
	}
}
