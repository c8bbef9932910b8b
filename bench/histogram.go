package bench

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range: microsecond resolution from 1 µs to 60 s with three
// significant digits (0.1% error). Longer latencies are recorded as 60 s.
const (
	histMinMicros = 1
	histMaxMicros = 60_000_000
	histSigFigs   = 3
)

// Histogram records latencies. It is not safe for concurrent use: each
// driver worker has its own and Run merges them at the end.
type Histogram struct {
	h *hdrhistogram.Histogram
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)}
}

// Record adds one latency, clamped to the histogram's range.
func (h *Histogram) Record(d time.Duration) {
	us := min(max(d.Microseconds(), histMinMicros), histMaxMicros)
	// In range by construction, so RecordValue cannot fail.
	_ = h.h.RecordValue(us)
}

// Merge adds all of o's values to h.
func (h *Histogram) Merge(o *Histogram) {
	// Same range on both sides: nothing is dropped.
	h.h.Merge(o.h)
}

// Count is the number of recorded values.
func (h *Histogram) Count() int64 { return h.h.TotalCount() }

// Percentile is the latency at or below which p percent (0–100) of the
// values lie; 0 for an empty histogram.
func (h *Histogram) Percentile(p float64) time.Duration {
	if h.h.TotalCount() == 0 {
		return 0
	}
	// For a p below one value's share, the library answers 0 instead
	// of the smallest value.
	return time.Duration(max(h.h.ValueAtQuantile(p), h.h.Min())) * time.Microsecond
}

// Max is the largest recorded value (to the histogram's precision).
func (h *Histogram) Max() time.Duration {
	return time.Duration(h.h.Max()) * time.Microsecond
}

// Mean is the average of the recorded values.
func (h *Histogram) Mean() time.Duration {
	return time.Duration(h.h.Mean() * float64(time.Microsecond))
}

// Summary returns the figures a StepResult reports.
func (h *Histogram) Summary() Latency {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	if h.Count() == 0 {
		return Latency{}
	}
	return Latency{
		Count: h.Count(),
		Mean:  ms(h.Mean()),
		P50:   ms(h.Percentile(50)),
		P90:   ms(h.Percentile(90)),
		P95:   ms(h.Percentile(95)),
		P99:   ms(h.Percentile(99)),
		P999:  ms(h.Percentile(99.9)),
		Max:   ms(h.Max()),
	}
}

// Latency summarises a histogram of transaction latencies, in
// milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
}
