package histogram

import (
	"sync"
	"testing"
	"time"
)

func TestObserveBuckets(t *testing.T) {
	h := New([]time.Duration{time.Millisecond, 10 * time.Millisecond})
	for _, d := range []time.Duration{-time.Second, 0, time.Millisecond, time.Millisecond + 1, 10 * time.Millisecond, time.Second} {
		h.Observe(d)
	}
	s := h.Snapshot()
	want := []uint64{3, 2, 1} // ≤1ms: -1s→0, 0, 1ms; ≤10ms: 1ms+1ns, 10ms; +Inf: 1s
	for i := range want {
		if s.Counts[i] != want[i] {
			t.Fatalf("counts = %v, want %v", s.Counts, want)
		}
	}
	if s.Count != 6 {
		t.Fatalf("count = %d", s.Count)
	}
	if wantSum := 2*time.Millisecond + 1 + 10*time.Millisecond + time.Second; s.Sum != wantSum {
		t.Fatalf("sum = %s, want %s", s.Sum, wantSum)
	}
	cum := s.Cumulative()
	if cum[0.001] != 3 || cum[0.01] != 5 || len(cum) != 2 {
		t.Fatalf("cumulative = %v", cum)
	}
}

func TestQuantile(t *testing.T) {
	h := New([]time.Duration{10 * time.Millisecond, 20 * time.Millisecond})
	if q := h.Snapshot().Quantile(0.5); q != 0 {
		t.Fatalf("empty quantile = %s", q)
	}
	for range 50 {
		h.Observe(5 * time.Millisecond)
	}
	for range 50 {
		h.Observe(15 * time.Millisecond)
	}
	s := h.Snapshot()
	if q := s.Quantile(0.5); q != 10*time.Millisecond {
		t.Fatalf("p50 = %s, want 10ms", q)
	}
	if q := s.Quantile(0.75); q != 15*time.Millisecond {
		t.Fatalf("p75 = %s, want 15ms", q)
	}
	h.Observe(time.Hour)
	if q := h.Snapshot().Quantile(1); q != 20*time.Millisecond {
		t.Fatalf("p100 with +Inf = %s, want the largest bound", q)
	}
}

func TestConcurrent(t *testing.T) {
	h := New(nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 1000 {
				h.Observe(time.Duration(i) * time.Microsecond)
			}
		})
	}
	wg.Wait()
	if s := h.Snapshot(); s.Count != 8000 {
		t.Fatalf("count = %d, want 8000", s.Count)
	}
}

func TestBoundsMustAscend(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for descending bounds")
		}
	}()
	New([]time.Duration{2, 1})
}

func BenchmarkObserve(b *testing.B) {
	h := New(nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.Observe(3 * time.Millisecond)
		}
	})
}
