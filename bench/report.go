package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// File names WriteFiles creates in the output directory.
const (
	ResultsFile = "results.json"
	SummaryFile = "summary.md"
)

// Report is a benchmark's outcome: results.json is this struct.
type Report struct {
	// Title heads summary.md, e.g. "tpbench demo".
	Title    string    `json:"title"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Environment is what the numbers depend on besides the code.
	Environment Environment `json:"environment"`
	// Steps are all runs in the order they ran.
	Steps []StepResult `json:"steps"`
	// Comparisons pair the direct and proxy run of each step.
	Comparisons []Comparison `json:"comparisons"`
	// Capacity is each target's last passing step (a ramp with stop
	// conditions).
	Capacity []Capacity `json:"capacity,omitempty"`
	// Sweep is the outcome of tpbench sweep.
	Sweep *SweepOutcome `json:"sweep,omitempty"`
	// Soak is the outcome of tpbench soak.
	Soak *SoakOutcome `json:"soak,omitempty"`
	// Proxy is tpproxy's own view at the end (the demo reads it from the
	// tpproxy process's admin port and /metrics).
	Proxy *ProxyStats `json:"proxy,omitempty"`
	// Notes are caveats for the reader, one sentence each.
	Notes []string `json:"notes,omitempty"`
	// Shard is set in one shard's part of a distributed run.
	Shard *ShardInfo `json:"shard,omitempty"`
	// Merged is set in the merge of a distributed run's parts.
	Merged *MergeInfo `json:"merged,omitempty"`
	// Networks are the delayed networks the demo ran over besides
	// loopback (tpbench demo --network), with their measured round trips.
	Networks []NetworkInfo `json:"networks,omitempty"`
}

// NetworkInfo is one delayed network between the tiers: its targets are
// named "<target>@<Label>".
type NetworkInfo struct {
	Label string `json:"label"`
	// DelayUs is the one-way delay of every link, each direction.
	DelayUs float64 `json:"delay_us"`
	// Mechanism is netem or nfqueue (tpbench's own delayer).
	Mechanism string `json:"mechanism"`
	// RTT are the TCP connect round trips measured on its links before
	// the runs.
	RTT []LinkRTT `json:"rtt"`
	// DelayerCPUSec is the NFQUEUE delayer process's CPU over the runs.
	DelayerCPUSec float64 `json:"delayer_cpu_s,omitempty"`
}

// LinkRTT is one link's measured round trip.
type LinkRTT struct {
	Link    string  `json:"link"`
	Samples int     `json:"samples"`
	MinUs   float64 `json:"min_us"`
	P50Us   float64 `json:"p50_us"`
	P99Us   float64 `json:"p99_us"`
}

// Environment describes the machine, the server and the settings.
type Environment struct {
	OS            string  `json:"os"`
	Arch          string  `json:"arch"`
	CPUs          int     `json:"cpus"`
	GoVersion     string  `json:"go_version"`
	ServerVersion string  `json:"server_version,omitempty"`
	Sandbox       bool    `json:"sandbox"`
	Workload      string  `json:"workload,omitempty"`
	Tables        int     `json:"tables"`
	TableSize     int     `json:"table_size"`
	Schemas       int     `json:"schemas,omitempty"`
	Scale         float64 `json:"scale,omitempty"`
	Distribution  string  `json:"distribution,omitempty"`
	PSMode        string  `json:"ps_mode,omitempty"`
	ConnectPerTx  bool    `json:"connect_per_tx,omitempty"`
	ErrorPauseMs  float64 `json:"error_pause_ms,omitempty"`
	WarmupSec     float64 `json:"warmup_s"`
	DurationSec   float64 `json:"duration_s"`
	// PoolSize is tpproxy's number of backend connections.
	PoolSize int `json:"pool_size,omitempty"`
}

// ProxyStats is tpproxy's pool and front end at the end of a run.
type ProxyStats struct {
	Pool  PoolStats  `json:"pool"`
	Front FrontStats `json:"front"`
}

// PoolStats mirrors pool.Stats (backend connections).
type PoolStats struct {
	Size            int     `json:"size"`
	Open            int     `json:"open"`
	Acquires        uint64  `json:"acquires"`
	Waits           uint64  `json:"waits"`
	WaitSec         float64 `json:"wait_s"`
	AcquireTimeouts uint64  `json:"acquire_timeouts"`
	Dials           uint64  `json:"dials"`
	DialErrors      uint64  `json:"dial_errors"`
	Resets          uint64  `json:"resets"`
	Broken          uint64  `json:"broken"`
}

// FrontStats mirrors proxy.Stats (client sessions).
type FrontStats struct {
	Sessions     int    `json:"sessions"`
	Accepted     uint64 `json:"accepted"`
	Rejected     uint64 `json:"rejected"`
	AuthFailures uint64 `json:"auth_failures"`
	Statements   uint64 `json:"statements"`
	Errors       uint64 `json:"errors"`
	Pins         uint64 `json:"pins"`
}

// WriteFiles writes results.json, results.csv (CSVFile), summary.md,
// report.html (HTMLFile) and for a soak soak.csv into dir, creating it, and returns the paths of the JSON and the summary.
func (r *Report) WriteFiles(dir string) (resultsPath, summaryPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("bench: output dir: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", "", fmt.Errorf("bench: results: %w", err)
	}
	resultsPath = filepath.Join(dir, ResultsFile)
	if err := os.WriteFile(resultsPath, append(js, '\n'), 0o644); err != nil {
		return "", "", fmt.Errorf("bench: %w", err)
	}
	var md bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		return "", "", err
	}
	summaryPath = filepath.Join(dir, SummaryFile)
	if err := os.WriteFile(summaryPath, md.Bytes(), 0o644); err != nil {
		return "", "", fmt.Errorf("bench: %w", err)
	}
	var csvBuf bytes.Buffer
	if err := r.WriteCSV(&csvBuf); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(dir, CSVFile), csvBuf.Bytes(), 0o644); err != nil {
		return "", "", fmt.Errorf("bench: %w", err)
	}
	var html bytes.Buffer
	if err := r.WriteHTML(&html); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(dir, HTMLFile), html.Bytes(), 0o644); err != nil {
		return "", "", fmt.Errorf("bench: %w", err)
	}
	if r.Soak != nil {
		var sb bytes.Buffer
		if err := r.Soak.WriteCSV(&sb); err != nil {
			return "", "", fmt.Errorf("bench: %s: %w", SoakCSVFile, err)
		}
		if err := os.WriteFile(filepath.Join(dir, SoakCSVFile), sb.Bytes(), 0o644); err != nil {
			return "", "", fmt.Errorf("bench: %w", err)
		}
	}
	return resultsPath, summaryPath, nil
}

// CSVFile is the per-step table WriteFiles writes: one row per target and
// step, for spreadsheets.
const CSVFile = "results.csv"

// csvHeader names results.csv's columns (the results.json names).
var csvHeader = []string{"target", "workload", "threads", "started", "duration_s", "transactions", "queries",
	"tps", "qps", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p99_9_ms", "max_ms", "error_total", "success_pct",
	"deadlocks_retried", "lock_wait_timeouts_retried", "reconnects", "client_cpu_pct",
	"relay_cpu_us_per_stmt", "server_cpu_us_per_stmt"}

// WriteCSV writes the steps as CSV, a header first.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for _, s := range r.Steps {
		l := s.Latency
		if err := cw.Write([]string{s.Target, s.Workload, strconv.Itoa(s.Threads), s.Started.UTC().Format(time.RFC3339Nano),
			f(s.DurationSec), u(s.Transactions), u(s.Queries), f(s.TPS), f(s.QPS),
			f(l.P50), f(l.P90), f(l.P95), f(l.P99), f(l.P999), f(l.Max), u(s.ErrorTotal), f(s.SuccessPct),
			u(s.Deadlocks), u(s.LockWaitTimeouts), u(s.Reconnects), f(s.ClientCPU.Pct),
			f(s.RelayCPUUsPerStmt), f(s.ServerCPUUsPerStmt)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadReport loads a results.json.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	return &r, nil
}

// comparisonHeader and comparisonRows are the before/after table shared by
// the terminal and markdown renderings.
var comparisonHeader = []string{"step", "target", "TPS", "p95 ms", "p99 ms", "errors", "server conns max",
	"proxy CPU µs/stmt", "server CPU µs/stmt"}

// tableMetrics are the comparison table's metric columns, in order.
var tableMetrics = []string{MetricTPS, MetricP95, MetricP99, MetricErrors, MetricServerConn, MetricRelayCPU, MetricServerCPU}

// comparisonRows lists each step's first target once, then every target
// compared with it and the ratio; steps keep the order of their first
// comparison.
func comparisonRows(comps []Comparison) [][]string {
	type key struct{ step, direct string }
	var order []key
	groups := map[key][]Comparison{}
	for _, c := range comps {
		k := key{c.Step, c.Direct}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c)
	}
	var rows [][]string
	for _, k := range order {
		direct := []string{k.step, k.direct}
		for _, name := range tableMetrics {
			// The first target's figures are the same in every
			// comparison; one that has the metric says it.
			v := "-"
			for _, c := range groups[k] {
				if m, ok := c.Metric(name); ok {
					v = formatValue(name, m.Direct)
					break
				}
			}
			direct = append(direct, v)
		}
		rows = append(rows, direct)
		for _, c := range groups[k] {
			proxy := []string{"", c.Proxy}
			ratio := []string{"", c.Proxy + "/" + c.Direct}
			for _, name := range tableMetrics {
				m, ok := c.Metric(name)
				switch {
				case !ok:
					proxy, ratio = append(proxy, "-"), append(ratio, "")
				case name == MetricRelayCPU && m.Direct == 0:
					// The server directly has no relay to compare with.
					proxy, ratio = append(proxy, formatValue(name, m.Proxy)), append(ratio, "")
				default:
					proxy, ratio = append(proxy, formatValue(name, m.Proxy)), append(ratio, FormatRatio(m))
				}
			}
			rows = append(rows, proxy, ratio)
		}
	}
	return rows
}

// formatValue prints a metric value with the precision it deserves.
func formatValue(name string, v float64) string {
	switch name {
	case MetricErrors, MetricServerConn, MetricThreadsNew:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case MetricTPS, MetricQPS, MetricClientCPU:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case MetricSuccess:
		return strconv.FormatFloat(v, 'f', 3, 64)
	case MetricRelayCPU, MetricServerCPU:
		return formatMicros(v)
	}
	return formatMillis(v)
}

// formatMillis keeps three significant digits for small latencies.
func formatMillis(ms float64) string {
	switch {
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 2, 64)
	case ms < 100:
		return strconv.FormatFloat(ms, 'f', 1, 64)
	}
	return strconv.FormatFloat(ms, 'f', 0, 64)
}

// formatMicros prints a CPU time per statement in µs; 0 (not measured,
// or no relay) is "-".
func formatMicros(us float64) string {
	if us == 0 {
		return "-"
	}
	return strconv.FormatFloat(us, 'f', 1, 64)
}

// FormatRatio prints a metric's ratio as "0.84x (-16%)", "=" when both
// sides are equal, and "n/a" when direct was 0.
func FormatRatio(m Metric) string {
	switch {
	case m.Ratio == nil:
		return "n/a"
	case *m.Ratio == 1:
		return "="
	}
	return fmt.Sprintf("%.2fx (%+.0f%%)", *m.Ratio, *m.ChangePct)
}

// RenderTable writes the before/after table for a terminal.
func RenderTable(w io.Writer, comps []Comparison) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignmentConfig(labelsLeft(len(comparisonHeader))),
		tablewriter.WithHeaderAlignmentConfig(labelsLeft(len(comparisonHeader))),
	)
	return renderRows(t, comparisonHeader, comparisonRows(comps))
}

// renderMarkdownTable writes rows as a GitHub markdown table.
func renderMarkdownTable(w io.Writer, header []string, rows [][]string) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewMarkdown()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignmentConfig(labelsLeft(len(header))),
		tablewriter.WithHeaderAlignmentConfig(labelsLeft(len(header))),
	)
	return renderRows(t, header, rows)
}

// renderMarkdownAligned writes rows as a GitHub markdown table whose
// first columns are aligned as labels says ('l' left, 'r' right) and the
// rest right.
func renderMarkdownAligned(w io.Writer, header []string, rows [][]string, labels string) error {
	a := make([]tw.Align, len(header))
	for i := range a {
		a[i] = tw.AlignRight
		if i < len(labels) && labels[i] == 'l' {
			a[i] = tw.AlignLeft
		}
	}
	align := tw.CellAlignment{Global: tw.AlignRight, PerColumn: a}
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewMarkdown()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignmentConfig(align),
		tablewriter.WithHeaderAlignmentConfig(align),
	)
	return renderRows(t, header, rows)
}

// labelsLeft aligns the first two columns (step, target) left and the
// figures right.
func labelsLeft(cols int) tw.CellAlignment {
	a := make([]tw.Align, cols)
	for i := range a {
		a[i] = tw.AlignRight
	}
	a[0], a[1] = tw.AlignLeft, tw.AlignLeft
	return tw.CellAlignment{Global: tw.AlignRight, PerColumn: a}
}

func renderRows(t *tablewriter.Table, header []string, rows [][]string) error {
	t.Header(header)
	if err := t.Bulk(rows); err != nil {
		return fmt.Errorf("bench: table: %w", err)
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("bench: table: %w", err)
	}
	return nil
}

// WriteMarkdown writes summary.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b bytes.Buffer
	title := r.Title
	if title == "" {
		title = "tpbench"
	}
	e := r.Environment
	fmt.Fprintf(&b, "# %s\n\n", title)
	fmt.Fprintf(&b, "- started %s, took %s\n", r.Started.Format(time.RFC3339), r.Finished.Sub(r.Started).Round(time.Second))
	fmt.Fprintf(&b, "- host: %s/%s, %d CPUs, %s\n", e.OS, e.Arch, e.CPUs, e.GoVersion)
	server := e.ServerVersion
	if e.Sandbox {
		server += " (private sandbox)"
	}
	fmt.Fprintf(&b, "- server: %s\n", server)
	if e.Workload != "" {
		fmt.Fprintf(&b, "- workload: %s, ps-mode %s, %s key distribution", e.Workload, e.PSMode, e.Distribution)
		if e.ConnectPerTx {
			b.WriteString(", a new connection per transaction")
		}
		if e.ErrorPauseMs > 0 {
			fmt.Fprintf(&b, ", a client pauses %s after a failed transaction", time.Duration(e.ErrorPauseMs*float64(time.Millisecond)))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "- data: %s; each run %s warmup + %s measured\n", dataLine(e), secs(e.WarmupSec), secs(e.DurationSec))
	if e.PoolSize > 0 {
		fmt.Fprintf(&b, "- tpproxy: %d backend connections\n", e.PoolSize)
	}

	if ws := r.byWorkload(); len(ws) > 0 {
		b.WriteString("\n## At a glance\n\n")
		for _, w := range ws {
			fmt.Fprintf(&b, "- %s\n", w.headline())
		}
	}

	b.WriteString("\n## Before/after\n\n")
	if err := renderMarkdownTable(&b, comparisonHeader, comparisonRows(r.Comparisons)); err != nil {
		return err
	}
	if len(r.Comparisons) > 0 {
		b.WriteString("\n")
		for _, c := range r.Comparisons {
			fmt.Fprintf(&b, "- %s\n", verdict(c))
		}
	}

	if len(r.Capacity) > 0 {
		b.WriteString("\n## Capacity\n\n")
		if err := renderMarkdownTable(&b, capacityHeader, capacityRows(r.Capacity)); err != nil {
			return err
		}
	}
	if sw := r.Sweep; sw != nil {
		b.WriteString("\n## Sweep\n\n")
		if err := renderMarkdownTable(&b, sweepHeader, sweepRows(sw)); err != nil {
			return err
		}
		fmt.Fprintf(&b, "\nRecommendation: %s\n", sw.Recommendation)
	}
	if so := r.Soak; so != nil {
		fmt.Fprintf(&b, "\n## Soak\n\n%d samples of %s (time series in %s).\n", len(so.Samples), secs(so.SampleSec), SoakCSVFile)
		if so.Spike != nil {
			fmt.Fprintf(&b, "\nSpike: %s\n", resultLine(*so.Spike))
		}
		if len(so.Flags) == 0 {
			b.WriteString("\nNo TPS decay, rising error rate or growing memory found.\n")
		}
	}

	b.WriteString("\n## All runs\n\n")
	if err := renderMarkdownTable(&b, stepHeader, stepRows(r.Steps)); err != nil {
		return err
	}
	if errs := errorLines(r.Steps); len(errs) > 0 {
		b.WriteString("\nErrors:\n\n")
		for _, l := range errs {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}

	if p := r.Proxy; p != nil {
		b.WriteString("\n## tpproxy\n\n")
		fmt.Fprintf(&b, "- pool: size %d, open %d, %d acquires, %d waited (%.1f s in total), %d acquire timeouts, %d dials (%d failed), %d resets, %d broken\n",
			p.Pool.Size, p.Pool.Open, p.Pool.Acquires, p.Pool.Waits, p.Pool.WaitSec, p.Pool.AcquireTimeouts,
			p.Pool.Dials, p.Pool.DialErrors, p.Pool.Resets, p.Pool.Broken)
		fmt.Fprintf(&b, "- front end: %d sessions accepted (%d rejected, %d auth failures), %d statements, %d answered with ERR, %d pins\n",
			p.Front.Accepted, p.Front.Rejected, p.Front.AuthFailures, p.Front.Statements, p.Front.Errors, p.Front.Pins)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// verdict is one sentence on a comparison.
func verdict(c Comparison) string {
	parts := []string{}
	for _, name := range []string{MetricTPS, MetricP99} {
		if m, ok := c.Metric(name); ok {
			parts = append(parts, fmt.Sprintf("%s %s → %s (%s)", metricTitle(name), formatValue(name, m.Direct), formatValue(name, m.Proxy), FormatRatio(m)))
		}
	}
	if m, ok := c.Metric(MetricServerConn); ok {
		parts = append(parts, fmt.Sprintf("server connections %s → %s", formatValue(m.Name, m.Direct), formatValue(m.Name, m.Proxy)))
	}
	if m, ok := c.Metric(MetricErrors); ok && (m.Direct != 0 || m.Proxy != 0) {
		parts = append(parts, fmt.Sprintf("errors %s → %s", formatValue(m.Name, m.Direct), formatValue(m.Name, m.Proxy)))
	}
	if m, ok := c.Metric(MetricRelayCPU); ok && m.Proxy > 0 {
		parts = append(parts, fmt.Sprintf("proxy CPU %s µs/stmt", formatValue(m.Name, m.Proxy)))
	}
	if m, ok := c.Metric(MetricServerCPU); ok {
		parts = append(parts, fmt.Sprintf("server CPU %s → %s µs/stmt", formatValue(m.Name, m.Direct), formatValue(m.Name, m.Proxy)))
	}
	return fmt.Sprintf("**%s** (%s → %s): %s", c.Step, c.Direct, c.Proxy, strings.Join(parts, ", "))
}

func metricTitle(name string) string {
	switch name {
	case MetricTPS:
		return "TPS"
	case MetricP99:
		return "p99 ms"
	}
	return name
}

var stepHeader = []string{"step", "target", "tx", "TPS", "QPS", "p50", "p95", "p99", "p99.9", "max ms",
	"errors", "retried", "reconn", "client CPU %", "host CPU %", "server conns base/max", "threads created",
	"proxy CPU µs/stmt", "server CPU µs/stmt"}

func stepRows(steps []StepResult) [][]string {
	rows := make([][]string, 0, len(steps))
	for _, s := range steps {
		host, server, created := "-", "-", "-"
		if s.Host != nil {
			host = strconv.FormatFloat(s.Host.CPUBusyPct, 'f', 0, 64)
		}
		if s.Server != nil {
			server = fmt.Sprintf("%d/%d", s.Server.ThreadsConnectedBase, s.Server.ThreadsConnectedMax)
			created = strconv.FormatInt(s.Server.ThreadsCreated, 10)
		}
		l := s.Latency
		label := s.Label()
		if s.Confirm {
			label += " (confirm)"
		}
		rows = append(rows, []string{
			label, s.Target, strconv.FormatUint(s.Transactions, 10),
			formatValue(MetricTPS, s.TPS), formatValue(MetricQPS, s.QPS),
			formatMillis(l.P50), formatMillis(l.P95), formatMillis(l.P99), formatMillis(l.P999), formatMillis(l.Max),
			strconv.FormatUint(s.ErrorTotal, 10), strconv.FormatUint(s.Deadlocks+s.LockWaitTimeouts, 10),
			strconv.FormatUint(s.Reconnects, 10),
			strconv.FormatFloat(s.ClientCPU.Pct, 'f', 0, 64), host, server, created,
			formatMicros(s.RelayCPUUsPerStmt), formatMicros(s.ServerCPUUsPerStmt),
		})
	}
	return rows
}

// errorLines lists each run's errors with their names.
func errorLines(steps []StepResult) []string {
	var out []string
	for _, s := range steps {
		if s.ErrorTotal == 0 {
			continue
		}
		var parts []string
		for _, k := range s.ErrorKeys() {
			p := fmt.Sprintf("%s×%d", k, s.Errors[k])
			if n := ErrorName(k); n != "" {
				p += " (" + n + ")"
			}
			parts = append(parts, p)
		}
		out = append(out, fmt.Sprintf("%s on %s: %s", s.Label(), s.Target, strings.Join(parts, ", ")))
	}
	return out
}

func secs(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(100 * time.Millisecond).String()
}
