package bench

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/report-ramp.json from fixtureReport")

const fixturePath = "testdata/report-ramp.json"

// fixtureReport is a two-workload ramp as the demo writes it: direct,
// tpproxy (a relay), haproxy (a relay, stopped before the last step) and
// mariadb-pool (its own server) on oltp_point_select, with a confirmation
// rerun; direct and tpproxy on ability_attr, where direct completed nothing
// at 1,000 clients. Processes and host figures are as the monitor records
// them.
func fixtureReport() *Report {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var steps []StepResult
	add := func(target, workload string, threads int, tps, p90, p99, clientPct, relayPct, serverPct, hostPct float64, errs uint64) *StepResult {
		s := StepResult{
			Target: target, Workload: workload, Threads: threads,
			Started: t0.Add(time.Duration(len(steps)) * 12 * time.Second), WarmupSec: 2, DurationSec: 10,
			Transactions: uint64(tps * 10), Queries: uint64(tps * 10), TPS: tps, QPS: tps,
			Latency:    Latency{Count: int64(tps * 10), Mean: p90 / 2, P50: p90 / 3, P90: p90, P95: (p90 + p99) / 2, P99: p99, P999: p99 * 1.5, Max: p99 * 3},
			ErrorTotal: errs, SuccessPct: 100,
			ClientCPU: ClientCPU{UserSec: clientPct / 10 * 0.7, SystemSec: clientPct / 10 * 0.3, Pct: clientPct, Cores: 2},
			Host:      &HostUsage{CPUBusyPct: hostPct, CtxSwitchesPerSec: 40000 + 30*float64(threads), MemUsedPct: 41, Source: "local"},
			Server:    &ServerStatus{Version: "10.11.14-MariaDB", ThreadsConnectedBase: 2, ThreadsConnectedMax: int64(threads + 2), ThreadsCreated: int64(threads)},
		}
		if errs > 0 {
			s.Errors = map[string]uint64{"1040": errs}
			s.SuccessPct = float64(s.Transactions) / float64(s.Transactions+errs) * 100
		}
		serverRole := "server"
		if target == "mariadb-pool" {
			serverRole = target
		}
		s.Processes = append(s.Processes, ProcessUsage{Role: serverRole, Kind: ProcServer, PID: 4100, Name: "mariadbd",
			CPUPct: serverPct, CPUSec: serverPct / 10, CtxSwitchesPerSec: 9000 + 10*float64(threads), RSSBytes: 512 << 20, Threads: threads + 8})
		if relayPct > 0 {
			s.Processes = append(s.Processes, ProcessUsage{Role: target, Kind: ProcRelay, PID: 4200, Name: target,
				CPUPct: relayPct, CPUSec: relayPct / 10, CtxSwitchesPerSec: 3000, RSSBytes: 64 << 20, Threads: 12})
		}
		s.setCPUPerStmt()
		if target == "tpproxy" {
			s.Proxy = &ProxyStep{Statements: int64(s.Queries), Queued: int64(s.Queries) / 4, QueueWaitAvgMs: p90 / 4, QueueWaitPerStmtMs: p90 / 16}
		}
		steps = append(steps, s)
		return &steps[len(steps)-1]
	}
	const ps, aa = "oltp_point_select", "ability_attr"
	//  target          workload threads  TPS     p90   p99   client relay server host
	add("direct", ps, 40, 21000, 2.5, 4.0, 30, 0, 120, 80, 0)
	add("tpproxy", ps, 40, 19000, 2.9, 4.8, 28, 35, 95, 85, 0)
	add("haproxy", ps, 40, 20000, 2.6, 4.4, 29, 20, 110, 84, 0)
	add("mariadb-pool", ps, 40, 21500, 2.4, 3.9, 30, 0, 118, 79, 0)
	add("direct", ps, 200, 15000, 8, 12, 25, 0, 140, 88, 0)
	add("tpproxy", ps, 200, 20000, 6, 9, 30, 38, 108, 92, 0)
	add("haproxy", ps, 200, 14100, 9, 13.2, 24, 22, 128, 90, 0)
	add("mariadb-pool", ps, 200, 19000, 6.5, 10, 29, 0, 135, 87, 0)
	add("direct", ps, 1000, 9000, 120, 250, 18, 0, 150, 90, 12)
	add("tpproxy", ps, 1000, 18900, 25, 40, 29, 40, 110, 94, 0)
	add("mariadb-pool", ps, 1000, 17000, 30, 50, 27, 0, 140, 91, 0)
	add("tpproxy", ps, 1000, 19500, 24, 38, 30, 41, 111, 95, 0).Confirm = true
	add("direct", aa, 100, 6000, 20, 30, 12, 0, 150, 85, 0)
	add("tpproxy", aa, 100, 6100, 19, 28, 12, 18, 145, 90, 0)
	add("direct", aa, 1000, 0, 0, 0, 4, 0, 60, 40, 5000)
	add("tpproxy", aa, 1000, 4321.6, 120, 180, 10, 20, 150, 93, 0)

	var comps []Comparison
	for _, t := range []string{"tpproxy", "haproxy", "mariadb-pool"} {
		comps = append(comps, Pair(steps, "direct", t)...)
	}
	return &Report{
		Title:    "tpbench demo",
		Started:  t0,
		Finished: t0.Add(time.Duration(len(steps)) * 12 * time.Second),
		Environment: Environment{OS: "linux", Arch: "amd64", CPUs: 2, GoVersion: "go1.26.8", ServerVersion: "10.11.14-MariaDB", Sandbox: true,
			Workload: ps, Tables: 4, TableSize: 100000, Distribution: "uniform", PSMode: "auto", WarmupSec: 2, DurationSec: 10, PoolSize: 16},
		Steps:       steps,
		Comparisons: comps,
		Capacity: []Capacity{
			{Target: "haproxy", Clients: 200, TPS: 14100, P90: 9, PassedSteps: 2, StoppedBy: "p90 120.0 ms > 100 ms"},
		},
		Notes: []string{"Everything ran on one 2-core machine; the client's CPU is taken from the server's."},
	}
}

// TestReportFixture keeps testdata/report-ramp.json what fixtureReport
// marshals to, so the fixture cannot drift from the result types: a renamed
// or removed field fails here (go test -run ReportFixture -update rewrites
// it).
func TestReportFixture(t *testing.T) {
	js, err := json.MarshalIndent(fixtureReport(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	js = append(js, '\n')
	if *update {
		if err := os.WriteFile(fixturePath, js, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, js) {
		t.Fatalf("%s differs from fixtureReport(); rerun with -update if the change is meant", fixturePath)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("%s does not decode strictly into Report: %v", fixturePath, err)
	}
}

func readFixture(t *testing.T) *Report {
	t.Helper()
	r, err := ReadReport(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestHeadlines: one sentence per workload from the fixture, at the step
// with the most clients; a target that stopped earlier is compared where
// it last ran with the baseline; a baseline without transactions is not
// divided by. A second sentence gives every target's TPS ratio at every
// client count (the demo's 8, 64, 256 and 1,000), skipping steps where the
// baseline completed nothing.
func TestHeadlines(t *testing.T) {
	ws := readFixture(t).byWorkload()
	var got []string
	for _, w := range ws {
		got = append(got, w.headline())
	}
	want := []string{
		"oltp_point_select at 1,000 clients: tpproxy 2.1× direct TPS, p99 0.16×; " +
			"haproxy (at 200 clients, its last step with direct) 0.94× direct TPS, p99 1.1×; " +
			"mariadb-pool 1.9× direct TPS, p99 0.20×; direct had 12 failed transactions. " +
			"TPS against direct by clients: tpproxy 0.90× at 40, 1.3× at 200, 2.1× at 1,000; " +
			"haproxy 0.95× at 40, 0.94× at 200; mariadb-pool 1.0× at 40, 1.3× at 200, 1.9× at 1,000.",
		"ability_attr at 1,000 clients: tpproxy 4,322 TPS, p99 180 ms where direct completed no transactions; direct had 5,000 failed transactions. " +
			"TPS against direct by clients: tpproxy 1.0× at 100.",
	}
	if !slices.Equal(got, want) {
		t.Errorf("headlines:\n got %q\nwant %q", got, want)
	}
}

func TestHeadlineEdgeCases(t *testing.T) {
	one := func(target string, threads int, tps, p99 float64, errs uint64) StepResult {
		return StepResult{Target: target, Workload: "w", Threads: threads, TPS: tps, Latency: Latency{P99: p99}, ErrorTotal: errs}
	}
	for _, tc := range []struct {
		name  string
		steps []StepResult
		comps []Comparison
		want  string
	}{
		{"only one target", []StepResult{one("direct", 8, 1234.4, 2.5, 0), one("direct", 16, 2000, 3, 1)}, nil,
			"w at 16 clients: only direct ran, 2,000 TPS, p99 3.00 ms, 1 failed transaction."},
		{"target without transactions", []StepResult{one("direct", 1, 100, 2, 0), one("proxy", 1, 0, 0, 7)}, nil,
			"w at 1 client: proxy completed no transactions, 7 failed transactions."},
		{"no common step", []StepResult{one("direct", 8, 100, 2, 0), one("proxy", 16, 100, 2, 0)}, nil,
			"w: no step ran on direct and another target, nothing to compare."},
		{"baseline p99 zero", []StepResult{one("direct", 8, 100, 0, 0), one("proxy", 8, 250, 2, 0)}, nil,
			"w at 8 clients: proxy 2.5× direct TPS."},
		{"baseline from the comparisons", []StepResult{one("proxy", 8, 250, 2, 0), one("direct", 8, 100, 4, 0)},
			[]Comparison{{Workload: "w", Direct: "direct", Proxy: "proxy"}},
			"w at 8 clients: proxy 2.5× direct TPS, p99 0.50×."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Steps: tc.steps, Comparisons: tc.comps}
			if got := r.byWorkload()[0].headline(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestFormatTimes(t *testing.T) {
	for _, tc := range []struct {
		r    float64
		want string
	}{
		{2.1, "2.1×"}, {2.149, "2.1×"}, {0.16, "0.16×"}, {0.1551, "0.16×"}, {1, "1.0×"}, {12.4, "12×"}, {123.4, "123×"},
		{9.96, "10×"}, {0.996, "1.0×"}, {0.0481, "0.048×"}, {0.0004, "<0.001×"}, {0, "0×"}, {math.Inf(1), "n/a"}, {math.NaN(), "n/a"},
	} {
		if got := formatTimes(tc.r); got != tc.want {
			t.Errorf("formatTimes(%v) = %q, want %q", tc.r, got, tc.want)
		}
	}
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 4321.6: "4,322", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := formatCount(v); got != want {
			t.Errorf("formatCount(%v) = %q, want %q", v, got, want)
		}
	}
}

// htmlOfFixture renders the fixture's report.html.
func htmlOfFixture(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	if err := readFixture(t).WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func figureOf(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `id="`+id+`" data-chart="`+id+`">`)
	if i < 0 {
		t.Fatalf("report.html has no chart %q", id)
	}
	return page[i : i+strings.Index(page[i:], "</figure>")]
}

// TestHTMLHeadlinesAndColours: the headlines lead the report and their
// workload's charts, and every target has one colour in all charts.
func TestHTMLHeadlinesAndColours(t *testing.T) {
	page := htmlOfFixture(t)
	h := readFixture(t).byWorkload()[0].headline()
	if n := strings.Count(page, `<p class="lead">`+h+`</p>`); n != 2 {
		t.Errorf("headline found %d times, want at the top and over its charts", n)
	}
	if i, j := strings.Index(page, "At a glance"), strings.Index(page, "<h2>Setup</h2>"); i < 0 || i > j {
		t.Error("the headlines do not come before the setup")
	}
	// A legend swatch's colour class per target, over all charts.
	classes := map[string]map[string]bool{}
	for _, m := range regexp.MustCompile(`<span class="swatch (?:band )?(c\d+)[^"]*"></span>([a-z-]+)`).FindAllStringSubmatch(page, -1) {
		if classes[m[2]] == nil {
			classes[m[2]] = map[string]bool{}
		}
		classes[m[2]][m[1]] = true
	}
	for target, want := range map[string]string{"direct": "c0", "tpproxy": "c1", "haproxy": "c2", "mariadb-pool": "c3"} {
		if len(classes[target]) != 1 || !classes[target][want] {
			t.Errorf("%s has legend colours %v, want only %s", target, classes[target], want)
		}
	}
	// p99 dashed, p90 solid, one colour per target.
	lat := figureOf(t, page, "latency-oltp_point_select")
	for _, want := range []string{`<span class="swatch c1"></span>tpproxy p90`, `<span class="swatch c1 dash"></span>tpproxy p99`} {
		if !strings.Contains(lat, want) {
			t.Errorf("latency legend lacks %s", want)
		}
	}
	if n := strings.Count(lat, "stroke-dasharray"); n != 4 {
		t.Errorf("latency chart has %d dashed lines, want 4 (one p99 per target)", n)
	}
	for _, bad := range []string{"http://", "https://", "<script", "<link", "url(", "@import", "<img"} {
		if strings.Contains(strings.ToLower(page), bad) {
			t.Errorf("report.html contains %q: not self-contained", bad)
		}
	}
	var md bytes.Buffer
	if err := readFixture(t).WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "## At a glance\n\n- "+h+"\n") {
		t.Errorf("summary.md lacks the headline:\n%s", md.String())
	}
	errs := figureOf(t, page, "errors-ability_attr")
	if strings.Contains(errs, "No failed") || !strings.Contains(errs, "<svg") {
		t.Error("ability_attr had errors but no errors chart")
	}
}

// TestHTMLErrorsWithoutErrors: a workload without a failed transaction has
// a line of text, not a chart around zero.
func TestHTMLErrorsWithoutErrors(t *testing.T) {
	r := readFixture(t)
	for i := range r.Steps {
		r.Steps[i].ErrorTotal, r.Steps[i].Errors = 0, nil
	}
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	fig := figureOf(t, b.String(), "errors-oltp_point_select")
	if strings.Contains(fig, "<svg") || !strings.Contains(fig, `<span class="nodata">No failed transactions in any step.</span>`) {
		t.Errorf("errors chart without errors:\n%s", fig)
	}
}

// TestRatioChart: each target's TPS and p99 divided by the baseline's at
// the same step; none where the baseline completed nothing.
func TestRatioChart(t *testing.T) {
	ws := readFixture(t).byWorkload()
	c := ws[0].charts("", 2)[1]
	if c.ID != "ratio" || !c.LogY || c.Kind != 0 {
		t.Fatalf("second chart %q (log %v, kind %d), want the log ratio line chart", c.ID, c.LogY, c.Kind)
	}
	got := map[string][]float64{}
	for _, s := range c.Series {
		var ys []string
		for _, p := range s.Points {
			ys = append(ys, strconv.FormatFloat(p.X, 'f', 0, 64)+"="+strconv.FormatFloat(p.Y, 'f', 4, 64))
			got[s.Name] = append(got[s.Name], p.Y)
		}
		if dashed := strings.HasSuffix(s.Name, " p99"); s.Dashed != dashed {
			t.Errorf("%s: dashed %v", s.Name, s.Dashed)
		}
		t.Logf("%s (key %s): %s", s.Name, s.Key, strings.Join(ys, " "))
	}
	want := map[string][]float64{
		"direct = 1":       {1, 1, 1},
		"tpproxy TPS":      {19000.0 / 21000, 20000.0 / 15000, 18900.0 / 9000}, // the confirmation rerun left out
		"tpproxy p99":      {4.8 / 4, 9.0 / 12, 40.0 / 250},
		"haproxy TPS":      {20000.0 / 21000, 14100.0 / 15000},
		"haproxy p99":      {4.4 / 4, 13.2 / 12},
		"mariadb-pool TPS": {21500.0 / 21000, 19000.0 / 15000, 17000.0 / 9000},
		"mariadb-pool p99": {3.9 / 4, 10.0 / 12, 50.0 / 250},
	}
	for name, w := range want {
		if len(got[name]) != len(w) {
			t.Errorf("%s: %v, want %v", name, got[name], w)
			continue
		}
		for i := range w {
			if math.Abs(got[name][i]-w[i]) > 1e-12 {
				t.Errorf("%s[%d] = %v, want %v", name, i, got[name][i], w[i])
			}
		}
	}
	aa := ws[1].charts("", 2)[1]
	for _, s := range aa.Series {
		if len(s.Points) != 1 || s.Points[0].X != 100 {
			t.Errorf("ability_attr %s: %v, want only the step where direct completed transactions", s.Name, s.Points)
		}
	}
}

// TestCPUStacks: per target and step, the stack is client, proxy, server
// and the rest of the host, summing to the host's busy time in % of one
// core.
func TestCPUStacks(t *testing.T) {
	r := readFixture(t)
	c := r.byWorkload()[0].cpuChart("", 2)
	if !slices.Equal(c.Stacks.Segments, []string{"client", "proxy", "server", "other"}) {
		t.Fatalf("segments %q", c.Stacks.Segments)
	}
	var labels []string
	for _, g := range c.Stacks.Groups {
		labels = append(labels, g.Label)
	}
	if !slices.Equal(labels, []string{"40", "200", "1000"}) {
		t.Errorf("groups %q", labels)
	}
	for gi, g := range c.Stacks.Groups {
		var names []string
		for _, b := range g.Bars {
			names = append(names, b.Name)
		}
		if !slices.Equal(names, []string{"direct", "tpproxy", "haproxy", "mariadb-pool"}) {
			t.Errorf("group %s: bars %q", g.Label, names)
		}
		for _, b := range g.Bars {
			if g.Label == "1000" && b.Name == "haproxy" {
				if b.Values != nil {
					t.Errorf("haproxy did not run 1,000 clients but has %v", b.Values)
				}
				continue
			}
			var s StepResult
			for _, st := range r.Steps {
				if st.Target == b.Name && strconv.Itoa(st.Threads) == g.Label && st.Workload == "oltp_point_select" && !st.Confirm {
					s = st
				}
			}
			sum := 0.0
			for _, v := range b.Values {
				sum += v
			}
			if host := s.Host.CPUBusyPct * 2; math.Abs(sum-host) > 1e-9 {
				t.Errorf("group %d %s: %v sums to %v, want the host's %v", gi, b.Name, b.Values, sum, host)
			}
			if b.Values[0] != s.ClientCPU.Pct {
				t.Errorf("%s %s: client %v, want %v", g.Label, b.Name, b.Values[0], s.ClientCPU.Pct)
			}
			if wantRelay := map[string]bool{"tpproxy": true, "haproxy": true}[b.Name]; (b.Values[1] > 0) != wantRelay {
				t.Errorf("%s %s: proxy %v", g.Label, b.Name, b.Values[1])
			}
		}
	}
	// Without a core count the host's busy share cannot be put in cores:
	// no "other", rather than a wrong one; the machine's count stands in
	// for a step's.
	for i := range r.Steps {
		r.Steps[i].ClientCPU.Cores = 0
	}
	if v := r.byWorkload()[0].cpuChart("", 0).Stacks.Groups[0].Bars[0].Values; !math.IsNaN(v[3]) {
		t.Errorf("no core count: other = %v, want none", v[3])
	}
	if v := r.byWorkload()[0].cpuChart("", 2).Stacks.Groups[0].Bars[0].Values; v[3] != 80*2-30-0-120 {
		t.Errorf("2 cores from the environment: other = %v, want 10", v[3])
	}

	// Without any CPU figure the chart is a line of text.
	empty := (&Report{Steps: []StepResult{{Target: "a", Workload: "w", Threads: 1}}}).byWorkload()[0].cpuChart("", 2)
	var b bytes.Buffer
	if err := (&Report{Steps: []StepResult{{Target: "a", Workload: "w", Threads: 1}}}).WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if empty.Empty == "" || !strings.Contains(figureOf(t, b.String(), "cpu"), `<span class="nodata">`+empty.Empty+`</span>`) {
		t.Errorf("no CPU figures: not the line of text %q", empty.Empty)
	}
}

// TestHTMLFixtureFile writes the fixture's report.html next to its
// screenshot when HTMLREPORT_ARTIFACTS names a directory.
func TestHTMLFixtureFile(t *testing.T) {
	dir := os.Getenv("HTMLREPORT_ARTIFACTS")
	if dir == "" {
		t.Skip("HTMLREPORT_ARTIFACTS not set")
	}
	if err := os.WriteFile(filepath.Join(dir, "fixture-report.html"), []byte(htmlOfFixture(t)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHTMLSingleStep: with one client count the charts are bars, and a
// target's p99 is a light bar of its colour, as the title says.
func TestHTMLSingleStep(t *testing.T) {
	var b bytes.Buffer
	if err := cpuReport().WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	lat := figureOf(t, b.String(), "latency")
	if !strings.Contains(lat, "<figcaption>Latency: p90 dark, p99 light</figcaption>") {
		t.Errorf("latency chart title does not say how p99 is drawn:\n%.300s", lat)
	}
	if !strings.Contains(lat, `<span class="swatch c1 tint"></span>tpproxy p99`) {
		t.Error("tpproxy p99 is not a light bar in the legend")
	}
	if strings.Contains(lat, "stroke-dasharray") {
		t.Error("bar chart with dashes")
	}
}
