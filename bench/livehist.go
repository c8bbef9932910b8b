package bench

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// liveHist is a latency histogram all of a step's workers record into at
// once (one atomic add per transaction), read while the step runs: the
// progress line's p90 and a soak's per-interval percentiles. Buckets are
// log-linear over microseconds, 32 per power of two (about 3 %
// resolution); the step's final figures come from the exact per-worker
// HDR histograms instead.
type liveHist struct {
	counts [liveBuckets]atomic.Uint64
}

const (
	liveSubBits  = 5
	liveSub      = 1 << liveSubBits
	liveBuckets  = (64 - liveSubBits + 1) * liveSub
	liveMaxIndex = liveBuckets - 1
)

// liveIndex maps a latency in µs to its bucket.
func liveIndex(us uint64) int {
	if us < liveSub {
		return int(us)
	}
	exp := bits.Len64(us) - liveSubBits // ≥ 1
	sub := us >> (exp - 1) & (liveSub - 1)
	return min(exp*liveSub+int(sub), liveMaxIndex)
}

// liveUpper is the largest latency in µs that falls in bucket i.
func liveUpper(i int) uint64 {
	if i < liveSub {
		return uint64(i)
	}
	exp, sub := i/liveSub, uint64(i%liveSub)
	lo := (liveSub + sub) << (exp - 1)
	return lo + 1<<(exp-1) - 1
}

func (h *liveHist) record(d time.Duration) {
	us := d.Microseconds()
	if us < 0 {
		us = 0
	}
	h.counts[liveIndex(uint64(us))].Add(1)
}

// liveSnap is a copy of a liveHist's counts; the difference of two
// snapshots is the histogram of an interval.
type liveSnap [liveBuckets]uint64

func (h *liveHist) snapshot(dst *liveSnap) {
	for i := range h.counts {
		dst[i] = h.counts[i].Load()
	}
}

// quantiles returns the latencies in ms at the quantiles qs (0..1) of the
// interval cur-prev, and its count; NaN when the interval is empty.
func quantiles(cur, prev *liveSnap, qs ...float64) (out []float64, n uint64) {
	for i := range cur {
		n += cur[i] - prev[i]
	}
	out = make([]float64, len(qs))
	if n == 0 {
		for i := range out {
			out[i] = math.NaN()
		}
		return out, 0
	}
	for k, q := range qs {
		rank := uint64(math.Ceil(q * float64(n)))
		rank = max(rank, 1)
		var seen uint64
		for i := range cur {
			seen += cur[i] - prev[i]
			if seen >= rank {
				out[k] = float64(liveUpper(i)) / 1000
				break
			}
		}
	}
	return out, n
}
