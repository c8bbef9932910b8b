package bench

import (
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseParam(t *testing.T) {
	p, err := ParseParam("Thread_Pool_Size=1, 2,4")
	if err != nil || p.Name != "thread_pool_size" || !slices.Equal(p.Values, []string{"1", "2", "4"}) {
		t.Fatalf("%+v %v", p, err)
	}
	for _, bad := range []string{"", "thread_pool_size", "=1", "x=", "x=1,,2", "x=1;DROP", "x y=1", "x=1'"} {
		if _, err := ParseParam(bad); !errors.Is(err, ErrBadSweep) {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
}

func TestCombinations(t *testing.T) {
	params := []SweepParam{{"a", []string{"1", "2"}}, {"b", []string{"x", "y", "z"}}}
	cs := combinations(params)
	var labels []string
	for _, c := range cs {
		labels = append(labels, comboLabel(params, c))
	}
	want := []string{"a=1 b=x", "a=1 b=y", "a=1 b=z", "a=2 b=x", "a=2 b=y", "a=2 b=z"}
	if !slices.Equal(labels, want) {
		t.Errorf("combinations %v, want %v", labels, want)
	}
}

// TestRecommend: the widest plateau wins; among equals the highest TPS;
// ties keep the first; nothing passing gives -1.
func TestRecommend(t *testing.T) {
	run := func(passed int, tps float64) SweepRun {
		return SweepRun{Capacity: Capacity{PassedSteps: passed}, MaxTPS: tps}
	}
	for _, c := range []struct {
		runs []SweepRun
		want int
	}{
		{nil, -1},
		{[]SweepRun{run(0, 0), run(0, 0)}, -1},
		{[]SweepRun{run(2, 900), run(4, 500), run(3, 2000)}, 1},
		{[]SweepRun{run(4, 500), run(4, 700), run(4, 600)}, 1},
		{[]SweepRun{run(4, 700), run(4, 700)}, 0},
		{[]SweepRun{run(0, 0), run(1, 10)}, 1},
	} {
		if got := Recommend(c.runs); got != c.want {
			t.Errorf("%+v: got %d, want %d", c.runs, got, c.want)
		}
	}
}

func TestSoakFlags(t *testing.T) {
	mk := func(n int, f func(i int) SoakSample) []SoakSample {
		out := make([]SoakSample, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	steady := mk(20, func(int) SoakSample { return SoakSample{TPS: 1000, ServerRSS: 500e6, ProxyRSS: 50e6} })
	if f := soakFlags(steady); len(f) != 0 {
		t.Errorf("steady soak flagged: %q", f)
	}
	decay := mk(20, func(i int) SoakSample { return SoakSample{TPS: 1000 - float64(i)*20, ServerRSS: 500e6} })
	if f := soakFlags(decay); len(f) != 1 || !strings.Contains(f[0], "TPS decay") {
		t.Errorf("decay: %q", f)
	}
	errs := mk(20, func(i int) SoakSample { return SoakSample{TPS: 1000, ErrorPct: float64(i) / 10} })
	if f := soakFlags(errs); len(f) != 1 || !strings.Contains(f[0], "error rate") {
		t.Errorf("errors: %q", f)
	}
	leak := mk(20, func(i int) SoakSample { return SoakSample{TPS: 1000, ProxyRSS: uint64(50e6 + i*5e6), ServerRSS: 500e6} })
	if f := soakFlags(leak); len(f) != 1 || !strings.Contains(f[0], "proxy memory") {
		t.Errorf("leak: %q", f)
	}
	// The spike's own samples do not count as decay or errors.
	spiky := mk(20, func(i int) SoakSample {
		if i >= 16 {
			return SoakSample{TPS: 100, ErrorPct: 5, Spike: true}
		}
		return SoakSample{TPS: 1000}
	})
	if f := soakFlags(spiky); len(f) != 0 {
		t.Errorf("spike flagged: %q", f)
	}
	if f := soakFlags(steady[:5]); len(f) != 1 || !strings.Contains(f[0], "too few") {
		t.Errorf("short soak: %q", f)
	}
}

func TestDistributions(t *testing.T) {
	const n, draws = 10000, 200000
	r := rand.New(rand.NewPCG(1, 2))
	for _, d := range Distributions {
		counts := make([]int, n+1)
		for range draws {
			id := d.pick(r, n)
			if id < 1 || id > n {
				t.Fatalf("%s: id %d out of 1..%d", d, id, n)
			}
			counts[id]++
		}
		share := func(lo, hi int) float64 {
			s := 0
			for i := lo; i <= hi; i++ {
				s += counts[i]
			}
			return float64(s) / draws
		}
		switch d {
		case DistUniform:
			if s := share(1, n/10); math.Abs(s-0.1) > 0.01 {
				t.Errorf("uniform: first 10%% of ids got %.3f", s)
			}
		case DistSpecial:
			// 75 % of draws in the middle 1 % (plus the gaussian part's share).
			if s := share(n/2-n/200, n/2+n/200); s < 0.75 || s > 0.8 {
				t.Errorf("special: middle 1%% got %.3f", s)
			}
		case DistPareto:
			if s := share(1, n/5); s < 0.75 {
				t.Errorf("pareto: first 20%% of ids got %.3f", s)
			}
		case DistGaussian:
			if s := share(n*4/10, n*6/10); s < 0.6 {
				t.Errorf("gaussian: middle 20%% got %.3f", s)
			}
		}
	}
	if _, err := ParseDistribution("zipf"); err == nil {
		t.Error("unknown distribution accepted")
	}
	if d, err := ParseDistribution(""); err != nil || d != DistSpecial {
		t.Errorf("default distribution %q %v", d, err)
	}
}

func TestAppendText(t *testing.T) {
	st := newStmt("UPDATE t SET c=? WHERE id=? AND x=?")
	got := string(st.appendText(nil, []arg{bytesArg([]byte("it's \\ \x00\n")), intArg(-42), bytesArg(nil)}))
	want := `UPDATE t SET c='it\'s \\ \0\n' WHERE id=-42 AND x=''`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestSweepAndSoakOnProxy runs a two-combination sweep through an
// in-process tpproxy's admin port and a short soak with a spike, and
// checks their outputs.
func TestSweepAndSoakOnProxy(t *testing.T) {
	srv := server(t)
	ctx := t.Context()
	dsn := srv.DSN(testUser, testPassword, testDB)
	if err := PrepareData(ctx, dsn, "oltp_point_select", Schema{Tables: 1, TableSize: 500}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = CleanupData(ctx, dsn, "oltp_point_select", Schema{Tables: 1}) }()
	px, err := startLocalProxy(ctx, srv.Addr, testUser, testPassword, 4, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = px.close() }()
	proxyDSN := strings.Replace(dsn, srv.Addr, px.Addr, 1)
	before := px.stack.Scheduler.Config().Oversubscribe

	rep, err := Sweep(ctx, SweepConfig{
		Ramp: RampConfig{Targets: []Target{{Name: "proxy", DSN: proxyDSN}}, Workload: "oltp_point_select",
			Schema: Schema{Tables: 1, TableSize: 500}, Steps: []int{1, 2}, StepDuration: 300 * time.Millisecond,
			Stop: StopConditions{P90: time.Minute}},
		AdminDSN: px.AdminDSN,
		Params:   []SweepParam{{Name: "thread_pool_size", Values: []string{"1", "2"}}, {Name: "thread_pool_oversubscribe", Values: []string{"7"}}},
		Baseline: &Target{Name: "direct", DSN: dsn},
	})
	if err != nil {
		t.Fatal(err)
	}
	sw := rep.Sweep
	if sw == nil || len(sw.Runs) != 2 || sw.Best < 0 || sw.Recommendation == "" {
		t.Fatalf("sweep outcome %+v", sw)
	}
	if sw.Runs[1].Label != "thread_pool_size=2 thread_pool_oversubscribe=7" || sw.Runs[1].Capacity.PassedSteps != 2 {
		t.Errorf("run %+v", sw.Runs[1])
	}
	if len(rep.Steps) != 6 || rep.Steps[0].Target != "direct" || rep.Steps[2].Params["thread_pool_size"] != "1" || rep.Steps[2].Proxy == nil {
		t.Errorf("steps %+v", rep.Steps)
	}
	if len(rep.Comparisons) != 4 {
		t.Errorf("%d comparisons with the baseline, want 4", len(rep.Comparisons))
	}
	if got := px.stack.Scheduler.Config(); got.Oversubscribe != before {
		t.Errorf("settings not restored: %+v", got)
	}

	var out strings.Builder
	rep, err = Soak(ctx, SoakConfig{Target: Target{Name: "proxy", DSN: proxyDSN}, Workload: "oltp_point_select",
		Schema: Schema{Tables: 1, TableSize: 500}, Threads: 2, Duration: 2 * time.Second, Sample: 200 * time.Millisecond,
		SpikeAt: 800 * time.Millisecond, SpikeThreads: 4, SpikeDuration: 400 * time.Millisecond, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	so := rep.Soak
	if so == nil || len(so.Samples) < 8 || so.Spike == nil || so.Spike.Threads != 4 || so.Spike.Transactions == 0 {
		t.Fatalf("soak %+v", so)
	}
	var spiked int
	for _, s := range so.Samples {
		if s.Spike {
			spiked++
		}
		if s.TPS <= 0 || s.P90 <= 0 {
			t.Errorf("sample %+v", s)
		}
	}
	if spiked == 0 || spiked > len(so.Samples)/2 {
		t.Errorf("%d of %d samples marked as spike", spiked, len(so.Samples))
	}
	dir := t.TempDir()
	if _, _, err := rep.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	csv, err := os.ReadFile(filepath.Join(dir, SoakCSVFile))
	if err != nil || strings.Count(string(csv), "\n") != len(so.Samples)+1 {
		t.Errorf("soak.csv: %v\n%s", err, csv)
	}
	html, _ := os.ReadFile(filepath.Join(dir, HTMLFile))
	if !strings.Contains(string(html), `data-chart="soak-tps"`) {
		t.Error("report.html lacks the soak charts")
	}
}
