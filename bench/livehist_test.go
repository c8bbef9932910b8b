package bench

import (
	"math"
	"testing"
	"time"
)

func TestLiveIndexBounds(t *testing.T) {
	prev := -1
	for _, us := range []uint64{0, 1, 31, 32, 33, 63, 64, 65, 100, 1000, 12345, 1 << 20, 1<<40 + 7, math.MaxUint64} {
		i := liveIndex(us)
		if i < prev {
			t.Fatalf("index of %d = %d, below the previous %d", us, i, prev)
		}
		prev = i
		if up := liveUpper(i); up < us && i != liveMaxIndex {
			t.Errorf("%d µs: bucket %d upper bound %d is below it", us, i, up)
		}
		if i > 0 && i != liveMaxIndex {
			if low := liveUpper(i - 1); low >= us {
				t.Errorf("%d µs: previous bucket's upper bound %d is not below it", us, low)
			}
		}
		if us >= 32 && us < 1<<50 {
			if up := liveUpper(i); float64(up-us) > 0.035*float64(us) {
				t.Errorf("%d µs: bucket upper bound %d is more than 3.5 %% off", us, up)
			}
		}
	}
}

func TestLiveQuantilesOfInterval(t *testing.T) {
	var h liveHist
	var s0, s1, s2 liveSnap
	for range 100 {
		h.record(10 * time.Second) // before the interval: must not count
	}
	h.snapshot(&s0)
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Millisecond)
	}
	h.snapshot(&s1)
	q, n := quantiles(&s1, &s0, 0.5, 0.9, 0.99)
	if n != 1000 {
		t.Fatalf("count %d, want 1000", n)
	}
	for k, want := range []float64{500, 900, 990} {
		if math.Abs(q[k]-want)/want > 0.035 {
			t.Errorf("quantile %d: %.1f ms, want %.0f ± 3.5 %%", k, q[k], want)
		}
	}
	h.snapshot(&s2)
	if q, n := quantiles(&s2, &s1, 0.9); n != 0 || !math.IsNaN(q[0]) {
		t.Errorf("empty interval: %v, %d", q, n)
	}
}
