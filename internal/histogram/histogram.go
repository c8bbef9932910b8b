// Package histogram is a lock-free latency histogram with fixed bucket
// bounds, cheap enough for the statement hot path (one atomic add per
// observation plus the sum), read by the Prometheus collector as a
// cumulative snapshot. Packages that count keep one of these in their Stats;
// none of them depends on client_golang.
package histogram

import (
	"sync/atomic"
	"time"
)

// LatencyBuckets are the default upper bounds: 100 µs to 30 s, dense
// enough around the millisecond statements of OLTP and wide enough for
// queue waits under overload.
var LatencyBuckets = []time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
	30 * time.Second,
}

// Histogram counts durations into buckets. The zero value is not usable;
// use New. Safe for concurrent use.
type Histogram struct {
	bounds []time.Duration
	counts []atomic.Uint64 // len(bounds)+1; the last is +Inf
	sum    atomic.Int64    // nanoseconds
}

// New returns a histogram with the given ascending upper bounds (nil means
// LatencyBuckets). The slice is copied.
func New(bounds []time.Duration) *Histogram {
	if bounds == nil {
		bounds = LatencyBuckets
	}
	for i := 1; i < len(bounds); i++ {
		if bounds[i] <= bounds[i-1] {
			panic("histogram: bounds must be ascending")
		}
	}
	return &Histogram{
		bounds: append([]time.Duration(nil), bounds...),
		counts: make([]atomic.Uint64, len(bounds)+1),
	}
}

// Observe records one duration; a negative one counts as zero.
func (h *Histogram) Observe(d time.Duration) {
	d = max(d, 0)
	i := 0
	for i < len(h.bounds) && d > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// Snapshot is a histogram's state at one moment.
type Snapshot struct {
	// Bounds are the buckets' upper bounds (inclusive).
	Bounds []time.Duration
	// Counts holds the observations per bucket, not cumulative; the last
	// entry counts those above the largest bound.
	Counts []uint64
	// Count is the sum of Counts.
	Count uint64
	// Sum is the sum of all observations.
	Sum time.Duration
}

// Snapshot reads the histogram. Concurrent observations may or may not be
// included; Count always equals the sum of Counts.
func (h *Histogram) Snapshot() Snapshot {
	s := Snapshot{Bounds: h.bounds, Counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
		s.Count += s.Counts[i]
	}
	s.Sum = time.Duration(h.sum.Load())
	return s
}

// Cumulative returns the cumulative count at every bound, keyed by the
// bound in seconds, the form prometheus.NewConstHistogram takes.
func (s Snapshot) Cumulative() map[float64]uint64 {
	m := make(map[float64]uint64, len(s.Bounds))
	var c uint64
	for i, b := range s.Bounds {
		c += s.Counts[i]
		m[b.Seconds()] = c
	}
	return m
}

// Quantile estimates the q-quantile (0..1) by linear interpolation inside
// the bucket that holds it, as Prometheus' histogram_quantile does; 0 for
// an empty snapshot, the largest bound for ranks in the +Inf bucket.
func (s Snapshot) Quantile(q float64) time.Duration {
	if s.Count == 0 {
		return 0
	}
	rank := q * float64(s.Count)
	var c uint64
	for i, b := range s.Bounds {
		prev := c
		c += s.Counts[i]
		if float64(c) >= rank {
			var lo time.Duration
			if i > 0 {
				lo = s.Bounds[i-1]
			}
			if s.Counts[i] == 0 {
				return b
			}
			frac := (rank - float64(prev)) / float64(s.Counts[i])
			return lo + time.Duration(frac*float64(b-lo))
		}
	}
	return s.Bounds[len(s.Bounds)-1]
}
