package bench

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func sampleReport() *Report {
	d := result("direct", "oltp_read_write", 300, 989, 404, 0, 317)
	p := result("proxy", "oltp_read_write", 300, 1500.25, 300, 2, 17)
	p.Errors = map[string]uint64{"9001": 2}
	p.Transactions = 15000
	return &Report{
		Title:       "tpbench demo",
		Started:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Finished:    time.Date(2026, 1, 2, 3, 5, 35, 0, time.UTC),
		Environment: Environment{OS: "linux", Arch: "amd64", CPUs: 2, ServerVersion: "10.11.14-MariaDB", Sandbox: true, Tables: 4, TableSize: 10000, WarmupSec: 2, DurationSec: 10, PoolSize: 16},
		Steps:       []StepResult{d, p},
		Comparisons: []Comparison{Compare(d, p)},
		Proxy:       &ProxyStats{Pool: PoolStats{Size: 16, Waits: 7}, Front: FrontStats{Accepted: 300}},
		Notes:       []string{"a caveat."},
	}
}

func TestRenderTable(t *testing.T) {
	var b bytes.Buffer
	if err := RenderTable(&b, sampleReport().Comparisons); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	// Border, header, border, three rows, border.
	if len(lines) != 7 {
		t.Fatalf("table has %d lines:\n%s", len(lines), b.String())
	}
	for i, want := range [][]string{
		1: {"step", "target", "TPS", "p95 ms", "p99 ms", "errors", "server conns max"},
		3: {"oltp_read_write/300", "direct", "989.0", "202", "404", "0", "317"},
		4: {"proxy", "1500.2", "150", "300", "2", "17"},
		5: {"proxy/direct", "1.52x (+52%)", "0.74x (-26%)", "n/a", "0.05x (-95%)"},
	} {
		for _, cell := range want {
			if !strings.Contains(lines[i], "| "+cell+" ") && !strings.Contains(lines[i], " "+cell+" |") {
				t.Errorf("line %d lacks %q: %s", i, cell, lines[i])
			}
		}
	}
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	r := sampleReport()
	js, md, err := r.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if js != filepath.Join(dir, ResultsFile) || md != filepath.Join(dir, SummaryFile) {
		t.Errorf("paths %s %s", js, md)
	}
	back, err := ReadReport(js)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Steps) != 2 || back.Steps[1].TPS != 1500.25 || back.Steps[1].Errors["9001"] != 2 || back.Steps[0].Server.ThreadsConnectedMax != 317 {
		t.Errorf("round trip: %+v", back.Steps)
	}
	if m, ok := back.Comparisons[0].Metric(MetricErrors); !ok || m.Ratio != nil {
		t.Errorf("null ratio lost: %+v", m)
	}
	raw, _ := os.ReadFile(js)
	for _, key := range []string{`"tps": 1500.25`, `"p99_ms": 404`, `"threads_connected_max": 317`, `"ratio": null`, `"pool"`, `"acquire_timeouts"`} {
		if !bytes.Contains(raw, []byte(key)) {
			t.Errorf("results.json lacks %s", key)
		}
	}
	sum, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# tpbench demo",
		"10.11.14-MariaDB (private sandbox)",
		"4 sysbench tables × 10000 rows; each run 2s warmup + 10s measured",
		"|:----", // markdown alignment row
		"| oltp_read_write/300 | direct",
		"**oltp_read_write/300** (direct → proxy): TPS 989.0 → 1500.2 (1.52x (+52%))",
		"oltp_read_write/300 on proxy: 9001×2 (proxy: pool acquire timeout)",
		"pool: size 16",
		"- a caveat.",
	} {
		if !bytes.Contains(sum, []byte(want)) {
			t.Errorf("summary.md lacks %q:\n%s", want, sum)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"tps", "latency", "errors", "cpu"} {
		if !bytes.Contains(html, []byte(`data-chart="`+id+`"`)) {
			t.Errorf("report.html lacks chart %q", id)
		}
	}
	if n := bytes.Count(html, []byte("<svg")); n < 4 {
		t.Errorf("report.html has %d SVG charts", n)
	}
	for _, bad := range []string{"http://", "https://", "<script", "<link", "url("} {
		if bytes.Contains(html, []byte(bad)) {
			t.Errorf("report.html contains %q: not self-contained", bad)
		}
	}
	for _, want := range []string{"oltp_read_write/300", "Before/after", "a caveat."} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// cpuReport has three targets compared with the first, two of them
// through relays whose CPU per statement was measured.
func cpuReport() *Report {
	d := result("direct", "oltp_point_select", 8, 20000, 1, 0, 9)
	d.ServerCPUUsPerStmt = 30
	px := result("tpproxy", "oltp_point_select", 8, 10000, 2, 0, 17)
	px.RelayCPUUsPerStmt, px.ServerCPUUsPerStmt = 25.04, 45
	hp := result("haproxy", "oltp_point_select", 8, 12000, 2, 0, 9)
	hp.RelayCPUUsPerStmt, hp.ServerCPUUsPerStmt = 12.5, 40
	mp := result("mariadb-pool", "oltp_point_select", 8, 21000, 1, 0, 9)
	mp.ServerCPUUsPerStmt = 28
	r := sampleReport()
	r.Steps = []StepResult{d, px, hp, mp}
	r.Comparisons = []Comparison{Compare(d, px), Compare(d, hp), Compare(d, mp)}
	return r
}

// TestRenderTableCPUPerStmt: the first target's row appears once per
// step, followed by each target compared with it and the ratio; the
// relay and server CPU per statement have their columns.
func TestRenderTableCPUPerStmt(t *testing.T) {
	var b bytes.Buffer
	if err := RenderTable(&b, cpuReport().Comparisons); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	// Border, header, border, 1 + 3×2 rows, border.
	if len(lines) != 11 {
		t.Fatalf("table has %d lines:\n%s", len(lines), b.String())
	}
	cells := func(line string) []string {
		var out []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			out = append(out, strings.TrimSpace(c))
		}
		return out
	}
	if h := cells(lines[1]); h[7] != "proxy CPU µs/stmt" || h[8] != "server CPU µs/stmt" {
		t.Errorf("header %q", h)
	}
	for i, want := range map[int][]string{
		3: {"oltp_point_select/8", "direct", "20000.0", "0.50", "1.00", "0", "9", "-", "30.0"},
		4: {"", "tpproxy", "10000.0", "1.00", "2.00", "0", "17", "25.0", "45.0"},
		5: {"", "tpproxy/direct", "0.50x (-50%)", "2.00x (+100%)", "2.00x (+100%)", "=", "1.89x (+89%)", "", "1.50x (+50%)"},
		6: {"", "haproxy", "12000.0", "1.00", "2.00", "0", "9", "12.5", "40.0"},
		8: {"", "mariadb-pool", "21000.0", "0.50", "1.00", "0", "9", "-", "28.0"},
		9: {"", "mariadb-pool/direct", "1.05x (+5%)", "=", "=", "=", "=", "", "0.93x (-7%)"},
	} {
		if got := cells(lines[i]); !slices.Equal(got, want) {
			t.Errorf("line %d:\n got %q\nwant %q", i, got, want)
		}
	}
}

// TestWriteFilesCPUPerStmt: the per-statement CPU reaches results.json,
// results.csv, summary.md and a chart of report.html.
func TestWriteFilesCPUPerStmt(t *testing.T) {
	dir := t.TempDir()
	r := cpuReport()
	r.Steps[1].Processes = []ProcessUsage{
		{Role: "server", Kind: ProcServer, PID: 10, CPUSec: 4.5, CPUUsPerStmt: 45},
		{Role: "tpproxy", Kind: ProcRelay, PID: 11, CPUSec: 2.504, CPUUsPerStmt: 25.04},
	}
	js, md, err := r.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(js)
	for _, key := range []string{`"relay_cpu_us_per_stmt": 25.04`, `"server_cpu_us_per_stmt": 45`, `"cpu_us_per_stmt": 25.04`, `"kind": "relay"`, `"cpu_s": 2.504`} {
		if !bytes.Contains(raw, []byte(key)) {
			t.Errorf("results.json lacks %s", key)
		}
	}
	if bytes.Contains(raw[:bytes.Index(raw, []byte(`"target": "tpproxy"`))], []byte("relay_cpu_us_per_stmt")) {
		t.Error("results.json has a relay figure for the direct run")
	}
	f, err := os.Open(filepath.Join(dir, CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	n := len(recs[0])
	if recs[0][n-2] != "relay_cpu_us_per_stmt" || recs[0][n-1] != "server_cpu_us_per_stmt" ||
		recs[2][n-2] != "25.04" || recs[2][n-1] != "45" || recs[1][n-2] != "0" {
		t.Errorf("results.csv: %q", recs)
	}
	sum, _ := os.ReadFile(md)
	for _, want := range []string{"proxy CPU µs/stmt", " 25.0 |", "proxy CPU 25.0 µs/stmt, server CPU 30.0 → 45.0 µs/stmt", "- tpproxy: 16 backend connections"} {
		if !bytes.Contains(sum, []byte(want)) {
			t.Errorf("summary.md lacks %q:\n%s", want, sum)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, HTMLFile))
	for _, want := range []string{`data-chart="cpu-stmt"`, `data-bar="tpproxy" data-group="8" data-segment="proxy" data-value="25.04"`,
		`data-bar="mariadb-pool" data-group="8" data-segment="server" data-value="28"`, "proxy CPU µs/stmt"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
