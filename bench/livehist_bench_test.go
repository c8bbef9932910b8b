package bench

import (
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// BenchmarkLiveRecord compares the live histogram every worker of a step
// records into with one HDR histogram behind a mutex, the library's way
// to share one: the reason to keep liveHist is the cost of a record from
// many workers at once (the exact figures still come from HDR histograms,
// one per worker).
func BenchmarkLiveRecord(b *testing.B) {
	b.Run("liveHist", func(b *testing.B) {
		var h liveHist
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h.record(700 * time.Microsecond)
			}
		})
	})
	b.Run("hdr+mutex", func(b *testing.B) {
		var mu sync.Mutex
		h := hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				mu.Lock()
				_ = h.RecordValue(700)
				mu.Unlock()
			}
		})
	})
}
