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

	// An impossible latency bar stops both targets after the first step;
	// --confirm then has nothing to confirm.
	rep, err = Ramp(ctx, RampConfig{Targets: targets, Workload: "oltp_point_select", Schema: schema,
		Steps: []int{2, 4}, Warmup: 0, StepDuration: 300 * time.Millisecond, Stop: StopConditions{P90: time.Nanosecond},
		Confirm: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Steps) != 2 || len(rep.Notes) != 2 || !strings.Contains(rep.Notes[0], "stopped at 2 clients") {
		t.Fatalf("with a stop condition: %d steps, notes %q", len(rep.Steps), rep.Notes)
	}
	if c := rep.Capacity; len(c) != 2 || c[0].PassedSteps != 0 || c[0].ConfirmNote == "" || !strings.HasPrefix(c[1].StoppedBy, "p90") {
		t.Fatalf("capacity %+v", c)
	}

	// A passing ramp with --confirm reruns the last step of each target,
	// and the proxy's admin port adds its figures.
	rep, err = Ramp(ctx, RampConfig{Targets: targets, Workload: "oltp_point_select", Schema: schema,
		Steps: []int{1, 2}, StepDuration: 300 * time.Millisecond, Stop: StopConditions{P90: time.Minute},
		Confirm: 400 * time.Millisecond, Monitor: MonitorConfig{ProxyAdmin: map[string]string{"proxy": px.AdminDSN}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Steps) != 6 || !rep.Steps[4].Confirm || !rep.Steps[5].Confirm || rep.Steps[5].Threads != 2 {
		t.Fatalf("confirm: steps %+v", rep.Steps)
	}
	if c := rep.Capacity; len(c) != 2 || !c[0].Confirmed || !c[1].Confirmed || c[1].Clients != 2 || c[1].PassedSteps != 2 {
		t.Fatalf("capacity %+v", c)
	}
	if len(rep.Comparisons) != 2 {
		t.Errorf("confirmation runs were paired: %d comparisons", len(rep.Comparisons))
	}
	for _, s := range rep.Steps {
		if (s.Proxy != nil) != (s.Target == "proxy") {
			t.Errorf("%s/%d: proxy figures %+v", s.Target, s.Threads, s.Proxy)
		}
		if s.Proxy != nil && (s.Proxy.Statements < int64(s.Transactions) || s.Proxy.PoolSize != 4) {
			t.Errorf("proxy figures %+v for %d transactions", *s.Proxy, s.Transactions)
		}
		if s.Host == nil || s.Host.CPUBusyPct <= 0 || s.Host.Source != "local" {
			t.Errorf("%s/%d: host figures %+v", s.Target, s.Threads, s.Host)
		}
	}
	roles := map[string]bool{}
	for _, p := range rep.Steps[0].Processes {
		roles[p.Role] = p.PID > 0 && p.RSSBytes > 0
	}
	if !roles["server"] || !roles["proxy"] {
		t.Errorf("processes watched: %+v", rep.Steps[0].Processes)
	}
}

// TestRampMissingTables: a target without the workload's tables stops the
// ramp before it measures anything, with one clear error.
func TestRampMissingTables(t *testing.T) {
	srv := server(t)
	dsn := srv.DSN(testUser, testPassword, testDB)
	_, err := Ramp(t.Context(), RampConfig{Targets: []Target{{Name: "direct", DSN: dsn}}, Workload: "oltp_point_select",
		Schema: Schema{Tables: 77, TableSize: 10}, Steps: []int{1}, StepDuration: time.Second})
	if !errors.Is(err, ErrMissingData) || !strings.Contains(err.Error(), "sbtest77") {
		t.Errorf("missing table: %v", err)
	}
	_, err = Ramp(t.Context(), RampConfig{Targets: []Target{{Name: "direct", DSN: dsn}}, Workload: "oltp_point_select",
		Schema: Schema{Tables: 1, TableSize: 10, Schemas: 2}, Steps: []int{1}, StepDuration: time.Second})
	if !errors.Is(err, ErrMissingData) || !strings.Contains(err.Error(), testDB+"_1") {
		t.Errorf("missing database: %v", err)
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
