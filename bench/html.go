package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tpproxy/tpproxy/bench/internal/htmlreport"
)

// HTMLFile is the self-contained report WriteFiles writes.
const HTMLFile = "report.html"

// WriteHTML writes report.html: one file with inline SVG charts and no
// external references, readable offline and printable.
func (r *Report) WriteHTML(w io.Writer) error {
	title := r.Title
	if title == "" {
		title = "tpbench"
	}
	p := htmlreport.Page{
		Title:    title,
		Subtitle: r.subtitle(),
	}
	workloads := r.byWorkload()
	var lead []string
	for _, w := range workloads {
		lead = append(lead, w.headline())
	}
	if len(lead) > 0 {
		p.Sections = append(p.Sections, htmlreport.Section{Heading: "At a glance", Lead: lead})
	}
	p.Sections = append(p.Sections, r.setupSection())
	if len(r.Comparisons) > 0 {
		p.Sections = append(p.Sections, htmlreport.Section{
			Heading: "Before/after",
			Tables:  []htmlreport.Table{{Header: comparisonHeader, Rows: comparisonRows(r.Comparisons), NumericCols: []int{2, 3, 4, 5, 6, 7, 8}}},
			Paragraphs: func() []string {
				var out []string
				for _, c := range r.Comparisons {
					out = append(out, strings.ReplaceAll(verdict(c), "**", ""))
				}
				return out
			}(),
		})
	}
	if len(r.Capacity) > 0 {
		p.Sections = append(p.Sections, htmlreport.Section{
			Heading: "Capacity",
			Tables:  []htmlreport.Table{{Header: capacityHeader, Rows: capacityRows(r.Capacity), NumericCols: []int{1, 2, 3, 4}}},
		})
	}
	if s := r.Sweep; s != nil {
		p.Sections = append(p.Sections, htmlreport.Section{
			Heading:    "Sweep",
			Paragraphs: []string{"Recommendation: " + s.Recommendation},
			Tables:     []htmlreport.Table{{Header: sweepHeader, Rows: sweepRows(s), NumericCols: []int{1, 2, 3}}},
		})
	}
	for _, w := range workloads {
		heading, suffix := "Charts", ""
		if len(workloads) > 1 {
			heading, suffix = "Charts: "+w.name, "-"+w.name
		}
		p.Sections = append(p.Sections, htmlreport.Section{Heading: heading, Lead: []string{w.headline()}, Charts: w.charts(suffix, r.Environment.CPUs)})
	}
	if s := r.Soak; s != nil {
		p.Sections = append(p.Sections, htmlreport.Section{
			Heading:    "Soak",
			Paragraphs: append([]string{fmt.Sprintf("%d samples of %s.", len(s.Samples), secs(s.SampleSec))}, s.Flags...),
			Charts:     soakCharts(s),
		})
	}
	p.Sections = append(p.Sections, htmlreport.Section{
		Heading:    "All runs",
		Tables:     []htmlreport.Table{{Header: stepHeader, Rows: stepRows(r.Steps), NumericCols: []int{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 18}}},
		Paragraphs: errorLines(r.Steps),
	})
	if len(r.Notes) > 0 {
		p.Sections = append(p.Sections, htmlreport.Section{Heading: "Notes", Paragraphs: r.Notes})
	}
	if err := htmlreport.Render(w, p); err != nil {
		return fmt.Errorf("bench: report.html: %w", err)
	}
	return nil
}

func (r *Report) subtitle() string {
	e := r.Environment
	s := fmt.Sprintf("%s · %s/%s, %d CPUs", r.Started.Format(time.RFC3339), e.OS, e.Arch, e.CPUs)
	if e.ServerVersion != "" {
		s += " · server " + e.ServerVersion
	}
	return s
}

// setupSection describes what ran.
func (r *Report) setupSection() htmlreport.Section {
	e := r.Environment
	rows := [][]string{
		{"took", r.Finished.Sub(r.Started).Round(time.Second).String()},
		{"workload", e.Workload},
		{"data", dataLine(e)},
		{"statements", "ps-mode " + e.PSMode + ", " + e.Distribution + " key distribution" + map[bool]string{true: ", a new connection per transaction"}[e.ConnectPerTx]},
		{"each step", secs(e.WarmupSec) + " warmup + " + secs(e.DurationSec) + " measured"},
		{"client", e.GoVersion},
	}
	if e.PoolSize > 0 {
		rows = append(rows, []string{"tpproxy", strconv.Itoa(e.PoolSize) + " backend connections"})
	}
	return htmlreport.Section{Heading: "Setup", Tables: []htmlreport.Table{{Header: []string{"", ""}, Rows: rows}}}
}

// dataLine describes the data set.
func dataLine(e Environment) string {
	var s string
	if e.Workload == AbilityAttr {
		z := sizesAt(e.Scale)
		s = fmt.Sprintf("ability_attr tables: %d client_app, %d app_ability, %d ability_attr, %d conf_attr rows",
			z.apps, z.abilities, z.abilities*abilityAttrsEach, z.confAttrs)
	} else {
		s = fmt.Sprintf("%d sysbench tables × %d rows", e.Tables, e.TableSize)
	}
	if e.Schemas > 1 {
		s += fmt.Sprintf(", in each of %d databases", e.Schemas)
	}
	return s
}

var capacityHeader = []string{"target", "clients", "TPS", "p90 ms", "passed steps", "stopped by", "confirmed"}

func capacityRows(cs []Capacity) [][]string {
	var rows [][]string
	for _, c := range cs {
		conf := "-"
		switch {
		case c.Confirmed:
			conf = fmt.Sprintf("yes (%.1f TPS)", c.ConfirmTPS)
		case c.ConfirmNote != "":
			conf = c.ConfirmNote
		}
		stopped := c.StoppedBy
		if stopped == "" {
			stopped = "(steps ran out)"
		}
		rows = append(rows, []string{c.Target, strconv.Itoa(c.Clients), formatValue(MetricTPS, c.TPS),
			formatMillis(c.P90), strconv.Itoa(c.PassedSteps), stopped, conf})
	}
	return rows
}

var sweepHeader = []string{"settings", "passed steps", "clients", "best TPS", "stopped by", ""}

func sweepRows(s *SweepOutcome) [][]string {
	var rows [][]string
	for i, r := range s.Runs {
		mark := ""
		if i == s.Best {
			mark = "recommended"
		}
		rows = append(rows, []string{r.Label, strconv.Itoa(r.Capacity.PassedSteps), strconv.Itoa(r.Capacity.Clients),
			formatValue(MetricTPS, r.MaxTPS), r.Capacity.StoppedBy, mark})
	}
	return rows
}

// soakCharts draws a soak's time series.
func soakCharts(s *SoakOutcome) []htmlreport.Chart {
	line := func(name string, f func(SoakSample) float64) htmlreport.Series {
		out := htmlreport.Series{Name: name}
		for _, smp := range s.Samples {
			out.Points = append(out.Points, htmlreport.Point{X: smp.ElapsedSec, Y: f(smp)})
		}
		return out
	}
	mb := func(b uint64) float64 { return float64(b) / 1e6 }
	keyed := func(s htmlreport.Series, key string, dashed bool) htmlreport.Series {
		s.Key, s.Dashed = key, dashed
		return s
	}
	return []htmlreport.Chart{
		{ID: "soak-tps", Title: "Throughput over time", XLabel: "seconds", YLabel: "transactions/s",
			Series: []htmlreport.Series{line("tps", func(x SoakSample) float64 { return x.TPS })}},
		{ID: "soak-latency", Title: "Latency over time: p90 solid, p99 dashed", XLabel: "seconds", YLabel: "ms", Series: []htmlreport.Series{
			keyed(line("p90", func(x SoakSample) float64 { return x.P90 }), "latency", false),
			keyed(line("p99", func(x SoakSample) float64 { return x.P99 }), "latency", true)}},
		{ID: "soak-errors", Title: "Error rate over time", XLabel: "seconds", YLabel: "%", Empty: "No failed transactions.",
			Series: []htmlreport.Series{line("errors", func(x SoakSample) float64 { return x.ErrorPct })}},
		{ID: "soak-memory", Title: "Memory over time", XLabel: "seconds", YLabel: "RSS MB", Series: []htmlreport.Series{
			line("server", func(x SoakSample) float64 { return mb(x.ServerRSS) }), line("proxy", func(x SoakSample) float64 { return mb(x.ProxyRSS) })}},
		{ID: "soak-cpu", Title: "CPU over time", XLabel: "seconds", YLabel: "%", Series: []htmlreport.Series{
			line("host", func(x SoakSample) float64 { return x.HostCPUPct }),
			line("server", func(x SoakSample) float64 { return x.ServerCPUPct }),
			line("proxy", func(x SoakSample) float64 { return x.ProxyCPUPct })}},
		{ID: "soak-ctx", Title: "Context switches over time", XLabel: "seconds", YLabel: "switches/s",
			Series: []htmlreport.Series{line("host", func(x SoakSample) float64 { return x.CtxSwitchesPerSec })}},
	}
}
