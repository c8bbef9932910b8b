package bench

import (
	"math"
	"testing"
	"time"
)

// within reports whether got is within 0.2% of want (HDR with three
// significant digits is accurate to 0.1%).
func within(got, want time.Duration) bool {
	return math.Abs(float64(got-want)) <= float64(want)*0.002
}

func TestHistogramPercentiles(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	if h.Count() != 1000 {
		t.Fatalf("count %d", h.Count())
	}
	for p, want := range map[float64]time.Duration{50: 500 * time.Millisecond, 90: 900 * time.Millisecond, 99: 990 * time.Millisecond, 100: time.Second} {
		if got := h.Percentile(p); !within(got, want) {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if !within(h.Max(), time.Second) || !within(h.Mean(), 500500*time.Microsecond) {
		t.Errorf("max %v mean %v", h.Max(), h.Mean())
	}
	s := h.Summary()
	if s.Count != 1000 || math.Abs(s.P95-950) > 2 || math.Abs(s.P999-999) > 2 || s.P50 > s.P90 || s.P90 > s.P95 || s.P99 > s.P999 || s.P999 > s.Max {
		t.Errorf("summary %+v", s)
	}
}

func TestHistogramMerge(t *testing.T) {
	all, a, b := NewHistogram(), NewHistogram(), NewHistogram()
	for i := 1; i <= 2000; i++ {
		d := time.Duration(i*i) * time.Microsecond
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	merged := NewHistogram()
	merged.Merge(a)
	merged.Merge(b)
	if merged.Count() != all.Count() || merged.Summary() != all.Summary() {
		t.Errorf("merged %+v, want %+v", merged.Summary(), all.Summary())
	}
}

func TestHistogramRange(t *testing.T) {
	h := NewHistogram()
	if h.Summary() != (Latency{}) || h.Percentile(99) != 0 {
		t.Errorf("empty histogram: %+v", h.Summary())
	}
	h.Record(0)                // below 1 µs: counted as 1 µs
	h.Record(10 * time.Minute) // beyond the range: counted as 60 s
	if h.Count() != 2 {
		t.Fatalf("count %d", h.Count())
	}
	if got := h.Percentile(1); got != time.Microsecond {
		t.Errorf("min clamp: %v", got)
	}
	if got := h.Max(); !within(got, time.Minute) {
		t.Errorf("max clamp: %v", got)
	}
}
