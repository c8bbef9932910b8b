package bench

import (
	"bytes"
	"os"
	"path/filepath"
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
