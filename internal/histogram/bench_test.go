package histogram

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkObserveVsClientGolang compares this histogram with client_golang's, which
// the collector could register directly: the reason to keep this one is
// what one observation costs on the statement path, from every core.
func BenchmarkObserveVsClientGolang(b *testing.B) {
	b.Run("internal", func(b *testing.B) {
		h := New(nil)
		b.RunParallel(func(pb *testing.PB) {
			d := 700 * time.Microsecond
			for pb.Next() {
				h.Observe(d)
			}
		})
	})
	b.Run("client_golang", func(b *testing.B) {
		buckets := make([]float64, len(LatencyBuckets))
		for i, d := range LatencyBuckets {
			buckets[i] = d.Seconds()
		}
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x", Buckets: buckets})
		b.RunParallel(func(pb *testing.PB) {
			d := 700 * time.Microsecond
			for pb.Next() {
				h.Observe(d.Seconds())
			}
		})
	})
}
