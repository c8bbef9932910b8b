package bench

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMergeHistogramJSON: a histogram survives results.json exactly (every
// bucket), an empty one too, and foreign ranges or overlong counts are
// refused.
func TestMergeHistogramJSON(t *testing.T) {
	h := NewHistogram()
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		h.Record(time.Duration(r.ExpFloat64()*3e6) + time.Microsecond)
	}
	h.Record(2 * time.Minute) // clamped to the top bucket
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var got Histogram
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !got.h.Equals(h.h) || got.Count() != h.Count() || got.Summary() != h.Summary() {
		t.Errorf("round trip changed the histogram: %+v vs %+v", got.Summary(), h.Summary())
	}
	t.Logf("%d values in %d bytes of JSON", h.Count(), len(b))

	b, _ = json.Marshal(NewHistogram())
	if err := json.Unmarshal(b, &got); err != nil || got.Count() != 0 {
		t.Errorf("empty: %s → %d values, %v", b, got.Count(), err)
	}
	for _, bad := range []string{
		`{"lowest_us":1,"highest_us":3600000000,"significant_figures":3,"counts":"1"}`,
		`{"lowest_us":1,"highest_us":60000000,"significant_figures":3,"counts":"-99999999 1"}`,
		`{"lowest_us":1,"highest_us":60000000,"significant_figures":3,"counts":"1 x"}`,
	} {
		if err := json.Unmarshal([]byte(bad), &got); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// shardParts builds the results.json of a 3-shard run of two steps on one
// target, written and read back as tpbench merge reads them. Shard i's
// latencies are drawn around a different mean, so that averaging the
// shards' percentiles would give other figures than the merged
// histogram.
func shardParts(t *testing.T) (parts []*Report, raw [][]*Histogram) {
	t.Helper()
	const n = 3
	steps := []int{8, 24}
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(7, 8))
	raw = make([][]*Histogram, len(steps))
	for i := range n {
		rep := &Report{Title: "tpbench compare", Started: t0, Finished: t0.Add(time.Minute),
			Environment: Environment{Workload: "oltp_point_select", Tables: 1, TableSize: 1000, PSMode: "auto", DurationSec: 3},
			Shard:       &ShardInfo{Index: i, Count: n, Steps: steps, Stop: StopConditions{P99: 40 * time.Millisecond}}}
		for j, total := range steps {
			h := NewHistogram()
			for range 1000 * (i + 1) {
				h.Record(time.Duration((r.NormFloat64()*0.2 + 1) * float64(i+1) * float64(time.Millisecond) * float64(j*10+1)))
			}
			raw[j] = append(raw[j], h)
			// Shards start 1 ms apart and hold 3 s.
			rep.Steps = append(rep.Steps, StepResult{Target: "direct", Workload: "oltp_point_select",
				Threads: ShardShare(total, i, n), Started: t0.Add(time.Duration(j)*time.Minute + time.Duration(i)*time.Millisecond),
				DurationSec: 3, Transactions: uint64(h.Count()), Queries: uint64(h.Count()),
				Errors: map[string]uint64{"1040": uint64(i)}, ErrorTotal: uint64(i),
				ClientCPU: ClientCPU{Pct: 10, Cores: 2}, Host: &HostUsage{CPUBusyPct: float64(10 * (i + 1)), Source: "local"},
				Latency: h.Summary(), Histogram: h})
		}
		dir := t.TempDir()
		if _, _, err := rep.WriteFiles(dir); err != nil {
			t.Fatal(err)
		}
		back, err := ReadReport(filepath.Join(dir, ResultsFile))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, back)
	}
	// Any order.
	parts[0], parts[2] = parts[2], parts[0]
	return parts, raw
}

// TestMergePercentiles: the merged step's percentiles are exactly those
// of the shards' raw histograms merged (not an average of the shards'
// percentiles); counts are summed and TPS is over the union of the holds.
func TestMergePercentiles(t *testing.T) {
	parts, raw := shardParts(t)
	m, err := Merge(parts)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Steps) != 2 || m.Merged == nil || m.Merged.Shards != 3 || m.Shard != nil {
		t.Fatalf("merged %d steps, %+v", len(m.Steps), m.Merged)
	}
	for j, s := range m.Steps {
		all := NewHistogram()
		var p99sum float64
		for _, h := range raw[j] {
			all.Merge(h)
			p99sum += h.Summary().P99
		}
		if s.Latency != all.Summary() {
			t.Errorf("step %d: latency %+v, want the merged histogram's %+v", j, s.Latency, all.Summary())
		}
		if avg := p99sum / 3; math.Abs(avg-s.Latency.P99) < 0.01*s.Latency.P99 {
			t.Errorf("step %d: the test data cannot tell merged (%.3f) from averaged (%.3f) p99", j, s.Latency.P99, avg)
		}
		wantThreads := []int{8, 24}[j]
		if s.Threads != wantThreads || s.Transactions != 6000 || s.ErrorTotal != 3 || s.Errors["1040"] != 3 {
			t.Errorf("step %d: %d clients, %d tx, %d errors", j, s.Threads, s.Transactions, s.ErrorTotal)
		}
		// Union of the holds: 3 s plus the 2 ms skew.
		if math.Abs(s.DurationSec-3.002) > 1e-9 || math.Abs(s.TPS-6000/3.002) > 1e-6 || s.Shards.StartSkewMs != 2 {
			t.Errorf("step %d: %.4f s, %.2f TPS, skew %.1f ms", j, s.DurationSec, s.TPS, s.Shards.StartSkewMs)
		}
		if s.ClientCPU.Pct != 30 || s.ClientCPU.Cores != 6 || s.Host.CPUBusyPct != 30 {
			t.Errorf("step %d: client CPU %+v, host %+v", j, s.ClientCPU, s.Host)
		}
	}
	// p99 < 40 ms passes at 8 clients (about 5 ms) and fails at 24 (about 45 ms).
	if c := m.Capacity; len(c) != 1 || c[0].Clients != 8 || !strings.HasPrefix(c[0].StoppedBy, "p99") {
		t.Errorf("capacity %+v", c)
	}
	dir := t.TempDir()
	if _, _, err := m.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(filepath.Join(dir, ResultsFile))
	if err != nil || back.Steps[1].Latency != m.Steps[1].Latency || back.Steps[1].Histogram.Count() != 6000 {
		t.Errorf("merged results.json read back: %v", err)
	}
}

// TestMergeRefuses: parts that do not make one run are refused, each
// with a message that says why.
func TestMergeRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(p []*Report) []*Report
		want  string
	}{
		{"missing shard", func(p []*Report) []*Report { return p[:2] }, "3-shard run, but 2 parts"},
		{"duplicate index", func(p []*Report) []*Report { p[1].Shard.Index = p[0].Shard.Index; return p }, "given twice"},
		{"not a shard", func(p []*Report) []*Report { p[1].Shard = nil; return p }, "not a shard's result"},
		{"other workload", func(p []*Report) []*Report { p[1].Environment.Workload = "oltp_read_write"; return p }, "oltp_read_write"},
		{"other steps", func(p []*Report) []*Report { p[1].Shard.Steps = []int{8, 32}; return p }, "ran steps"},
		{"fewer steps", func(p []*Report) []*Report { p[1].Steps = p[1].Steps[:1]; return p }, "did one stop early"},
		{"other target", func(p []*Report) []*Report { p[1].Steps[1].Target = "proxy"; return p }, "on proxy"},
		{"other hold", func(p []*Report) []*Report { p[1].Environment.DurationSec = 5; return p }, "held steps"},
		{"wrong share", func(p []*Report) []*Report {
			for _, r := range p {
				if r.Shard.Index == 0 {
					r.Steps[0].Threads++
				}
			}
			return p
		}, "sums to 9 clients"},
		{"old results", func(p []*Report) []*Report { p[2].Steps[0].Histogram = nil; return p }, "no latency histogram"},
	} {
		parts, _ := shardParts(t)
		_, err := Merge(c.spoil(parts))
		if !errors.Is(err, ErrBadMerge) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
	if _, err := Merge(nil); !errors.Is(err, ErrBadMerge) {
		t.Errorf("no parts: %v", err)
	}
}

func TestShardShare(t *testing.T) {
	for _, c := range []struct{ total, n int }{{8, 3}, {24, 3}, {1000, 7}, {5, 5}, {9, 1}} {
		sum, first := 0, 0
		for i := range c.n {
			s := ShardShare(c.total, i, c.n)
			if s != c.total/c.n && s != c.total/c.n+1 {
				t.Errorf("%d over %d: shard %d gets %d", c.total, c.n, i, s)
			}
			if f := shardFirst(c.total, i, c.n); f != first {
				t.Errorf("%d over %d: shard %d starts at client %d, want %d", c.total, c.n, i, f, first)
			}
			sum += s
			first += s
		}
		if sum != c.total {
			t.Errorf("%d over %d: shares sum to %d", c.total, c.n, sum)
		}
	}
	if ShardShare(8, 0, 3) != 3 || ShardShare(8, 1, 3) != 3 || ShardShare(8, 2, 3) != 2 {
		t.Error("8 over 3 is not 3, 3, 2")
	}
	for _, bad := range []string{"3/3", "-1/3", "1", "a/b", "0/0"} {
		if _, err := ParseShard(bad); !errors.Is(err, ErrBadRamp) {
			t.Errorf("ParseShard(%q): %v", bad, err)
		}
	}
	if s, err := ParseShard("2/3"); err != nil || s.Index != 2 || s.Count != 3 || s.String() != "2/3" {
		t.Errorf("ParseShard(2/3) = %+v, %v", s, err)
	}
}
