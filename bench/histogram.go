package bench

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
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

// histogramJSON is a Histogram in results.json: the library's Snapshot
// (Export/Import) with its counts array run-length encoded in one string,
// since the array has some 17,000 entries and most are zero. Counts reads
// "c c -k c ...": a count as it is, -k for a run of k zero counts;
// trailing zeros are left out.
type histogramJSON struct {
	LowestUs  int64  `json:"lowest_us"`
	HighestUs int64  `json:"highest_us"`
	SigFigs   int64  `json:"significant_figures"`
	Counts    string `json:"counts"`
}

// MarshalJSON writes the histogram's raw counts, so that shards' results
// can be merged exactly (tpbench merge).
func (h *Histogram) MarshalJSON() ([]byte, error) {
	s := h.h.Export()
	counts := s.Counts
	for len(counts) > 0 && counts[len(counts)-1] == 0 {
		counts = counts[:len(counts)-1]
	}
	var b []byte
	for i := 0; i < len(counts); {
		if len(b) > 0 {
			b = append(b, ' ')
		}
		if counts[i] != 0 {
			b = strconv.AppendInt(b, counts[i], 10)
			i++
			continue
		}
		j := i
		for j < len(counts) && counts[j] == 0 {
			j++
		}
		b = strconv.AppendInt(b, -int64(j-i), 10)
		i = j
	}
	return json.Marshal(histogramJSON{LowestUs: s.LowestTrackableValue, HighestUs: s.HighestTrackableValue,
		SigFigs: s.SignificantFigures, Counts: string(b)})
}

// UnmarshalJSON reads what MarshalJSON wrote. It refuses another range or
// precision than NewHistogram's (merging would drop values) and counts
// that do not fit.
func (h *Histogram) UnmarshalJSON(data []byte) error {
	var j histogramJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return fmt.Errorf("bench: histogram: %w", err)
	}
	if j.LowestUs != histMinMicros || j.HighestUs != histMaxMicros || j.SigFigs != histSigFigs {
		return fmt.Errorf("bench: histogram range %d..%d µs, %d digits: want %d..%d µs, %d digits",
			j.LowestUs, j.HighestUs, j.SigFigs, histMinMicros, histMaxMicros, histSigFigs)
	}
	s := NewHistogram().h.Export()
	i := 0
	for _, f := range strings.Fields(j.Counts) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return fmt.Errorf("bench: histogram counts: %w", err)
		}
		switch {
		case n < 0 && -n <= int64(len(s.Counts)-i):
			i += int(-n)
		case n >= 0 && i < len(s.Counts):
			s.Counts[i] = n
			i++
		default:
			return fmt.Errorf("bench: histogram counts: more than the %d buckets of its range", len(s.Counts))
		}
	}
	h.h = hdrhistogram.Import(s)
	return nil
}
