package bench

import (
	"encoding/csv"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSteps(t *testing.T) {
	for _, c := range []struct {
		threads   string
		step, max int
		want      []int
	}{
		{"8,64,512", 0, 0, []int{8, 64, 512}},
		{"40", 40, 200, []int{40, 80, 120, 160, 200}},
		{"40", 40, 190, []int{40, 80, 120, 160}},
		{"16", 0, 0, []int{16}},
	} {
		got, err := ParseSteps(c.threads, c.step, c.max)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseSteps(%q, %d, %d) = %v, %v; want %v", c.threads, c.step, c.max, got, err, c.want)
		}
	}
	for _, c := range []struct {
		threads   string
		step, max int
	}{
		{"", 0, 0}, {"0", 0, 0}, {"8,x", 0, 0}, {"8,16", 8, 64}, {"40", 40, 20}, {"40", 0, 100}, {"8", -1, 0},
	} {
		if _, err := ParseSteps(c.threads, c.step, c.max); !errors.Is(err, ErrBadRamp) {
			t.Errorf("ParseSteps(%q, %d, %d): err = %v, want ErrBadRamp", c.threads, c.step, c.max, err)
		}
	}
}

func TestStopConditions(t *testing.T) {
	r := StepResult{Transactions: 100, SuccessPct: 99.5, Latency: Latency{P90: 120, P99: 300}}
	for _, c := range []struct {
		stop StopConditions
		want string // substring; "" passes
	}{
		{StopConditions{}, ""},
		{StopConditions{P90: 100 * time.Millisecond}, "p90"},
		{StopConditions{P90: 200 * time.Millisecond}, ""},
		{StopConditions{P99: 250 * time.Millisecond}, "p99"},
		{StopConditions{MinSuccess: 99.99}, "success"},
		{StopConditions{MinSuccess: 99}, ""},
	} {
		got := c.stop.Check(r)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%+v: Check = %q, want %q", c.stop, got, c.want)
		}
	}
	if (StopConditions{}).Check(StepResult{}) == "" {
		t.Error("a step without a single transaction passed")
	}
}

// TestRampDirectAndProxy runs a two-step ramp on the sandbox directly and
// through an in-process tpproxy: every step runs on both, interleaved, and
// the report pairs them; a stop condition ends each target's ramp.
func TestRampDirectAndProxy(t *testing.T) {
	srv := server(t)
	ctx := t.Context()
	dsn := srv.DSN(testUser, testPassword, testDB)
	db, err := OpenDB(dsn, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := Schema{Tables: 1, TableSize: 1000}
	if err := Prepare(ctx, db, schema.Tables, schema.TableSize); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = Cleanup(ctx, db, schema.Tables) }()
	px, err := startLocalProxy(ctx, srv.Addr, testUser, testPassword, 4, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = px.close() }()
	targets := []Target{{Name: "direct", DSN: dsn}, {Name: "proxy", DSN: strings.Replace(dsn, srv.Addr, px.Addr, 1)}}

	var out strings.Builder
	rep, err := Ramp(ctx, RampConfig{Targets: targets, Workload: "oltp_point_select", Schema: schema,
		Steps: []int{2, 4}, Warmup: 0, StepDuration: 500 * time.Millisecond, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, s := range rep.Steps {
		order = append(order, s.Target+"/"+stepLabel(s.Workload, s.Threads))
	}
	want := []string{"direct/oltp_point_select/2", "proxy/oltp_point_select/2", "direct/oltp_point_select/4", "proxy/oltp_point_select/4"}
	if !slices.Equal(order, want) {
		t.Fatalf("steps ran in order %v, want %v", order, want)
	}
	if len(rep.Comparisons) != 2 || rep.Comparisons[1].Threads != 4 {
		t.Fatalf("comparisons %+v", rep.Comparisons)
	}
	for _, s := range rep.Steps {
		if s.Transactions == 0 || s.ErrorTotal != 0 {
			t.Errorf("%s/%d: %d transactions, %d errors", s.Target, s.Threads, s.Transactions, s.ErrorTotal)
		}
	}
	dir := t.TempDir()
	results, summary, err := rep.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{results, summary} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 || filepath.Dir(p) != dir {
			t.Errorf("%s: %v", p, err)
		}
	}
	f, err := os.Open(filepath.Join(dir, CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) != 1+len(rep.Steps) || recs[0][0] != "target" || recs[2][0] != "proxy" || recs[2][2] != "2" {
		t.Fatalf("results.csv: %v, %q", err, recs)
	}

	// An impossible success bar stops both targets after the first step.
	rep, err = Ramp(ctx, RampConfig{Targets: targets, Workload: "oltp_point_select", Schema: schema,
		Steps: []int{2, 4}, Warmup: 0, StepDuration: 300 * time.Millisecond, Stop: StopConditions{MinSuccess: 100.5}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Steps) != 2 || len(rep.Notes) != 2 || !strings.Contains(rep.Notes[0], "stopped at 2 clients") {
		t.Fatalf("with a stop condition: %d steps, notes %q", len(rep.Steps), rep.Notes)
	}
}

func TestRampBadConfig(t *testing.T) {
	for _, cfg := range []RampConfig{
		{},
		{Targets: []Target{{Name: "a", DSN: "x"}}, StepDuration: time.Second},
		{Targets: []Target{{Name: "a", DSN: "x"}, {Name: "a", DSN: "y"}}, Steps: []int{1}, StepDuration: time.Second},
		{Targets: []Target{{Name: "a", DSN: "x"}}, Steps: []int{1}},
	} {
		if _, err := Ramp(t.Context(), cfg); !errors.Is(err, ErrBadRamp) {
			t.Errorf("%+v: err = %v", cfg, err)
		}
	}
}
