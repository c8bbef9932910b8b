package htmlreport_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tpproxy/tpproxy/bench/internal/htmlreport"
)

func pts(xs []float64, f func(x float64) float64) []htmlreport.Point {
	ps := make([]htmlreport.Point, len(xs))
	for i, x := range xs {
		ps[i] = htmlreport.Point{X: x, Y: f(x)}
	}
	return ps
}

var clientSteps = []float64{1, 2, 4, 8, 16, 32, 64}

// samplePage has three charts and two tables, like a small tpbench report.
func samplePage() htmlreport.Page {
	secs := make([]float64, 60)
	for i := range secs {
		secs[i] = float64(i)
	}
	return htmlreport.Page{
		Title:    "tpbench report",
		Subtitle: "2026-05-01, 2 cores",
		Sections: []htmlreport.Section{
			{
				Heading:    "Summary",
				Paragraphs: []string{"Before/after comparison of the point-select workload."},
				Tables: []htmlreport.Table{
					{
						Caption:     "Peak throughput",
						Header:      []string{"target", "before", "after", "change"},
						Rows:        [][]string{{"direct", "12000", "12500", "+4.2%"}, {"tpproxy", "9000", "11000", "+22.2%"}},
						NumericCols: []int{1, 2, 3},
					},
					{
						Caption: "Notes",
						Header:  []string{"key", "value"},
						Rows:    [][]string{{"machine", "2 cores"}, {"duration", "60s per step"}},
					},
				},
			},
			{
				Heading: "Throughput and latency",
				Charts: []htmlreport.Chart{
					{
						ID: "tps", Title: "TPS vs clients", XLabel: "clients", YLabel: "TPS", LogX: true,
						Series: []htmlreport.Series{
							{Name: "direct", Points: pts(clientSteps, func(x float64) float64 { return 20000 * x / (x + 8) })},
							{Name: "tpproxy", Points: pts(clientSteps[:5], func(x float64) float64 { return 15000 * x / (x + 10) })},
						},
					},
					{
						ID: "p99", Title: "p99 latency vs clients", XLabel: "clients", YLabel: "ms", LogY: true,
						Series: []htmlreport.Series{
							{Name: "direct", Points: pts(clientSteps, func(x float64) float64 { return 0.2 * x })},
							{Name: "tpproxy", Points: pts(clientSteps, func(x float64) float64 { return 0.3*x + 1 })},
							{Name: "haproxy", Points: pts(clientSteps, func(x float64) float64 { return 0.25*x + 2 })},
						},
					},
					{
						ID: "cpu", Title: "Proxy CPU", XLabel: "seconds", YLabel: "CPU %",
						Series: []htmlreport.Series{
							{Name: "tpproxy", Points: pts(secs, func(x float64) float64 { return 50 + 30*math.Sin(x/5) })},
						},
					},
				},
			},
		},
	}
}

func render(t *testing.T, p htmlreport.Page) string {
	t.Helper()
	var b bytes.Buffer
	if err := htmlreport.Render(&b, p); err != nil {
		t.Fatalf("Render: %v", err)
	}
	return b.String()
}

// figure returns the markup of the figure for chart id.
func figure(t *testing.T, page, id string) string {
	t.Helper()
	open := fmt.Sprintf(`id="%s" data-chart="%s">`, id, id)
	i := strings.Index(page, open)
	if i < 0 {
		t.Fatalf("no figure for chart %q", id)
	}
	j := strings.Index(page[i:], "</figure>")
	if j < 0 {
		t.Fatalf("figure %q is not closed", id)
	}
	return page[i : i+j]
}

// rgb converts "#rrggbb" to the "rgb(r,g,b)" form the chart SVG uses.
func rgb(hex string) string {
	v, err := strconv.ParseUint(hex[1:], 16, 32)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", v>>16, v>>8&0xff, v&0xff)
}

var pathRE = regexp.MustCompile(`<path[^>]*\bd="([^"]*)"[^>]*style="([^"]*)"`)

// seriesPaths returns the d attributes of the paths drawn in colour hex.
func seriesPaths(fig string, hex string) []string {
	col := rgb(hex)
	var ds []string
	for _, m := range pathRE.FindAllStringSubmatch(fig, -1) {
		if strings.Contains(m[2], col) {
			ds = append(ds, m[1])
		}
	}
	return ds
}

func TestRenderChartsAndTables(t *testing.T) {
	p := samplePage()
	out := render(t, p)
	for _, c := range p.Sections[1].Charts {
		fig := figure(t, out, c.ID)
		if !strings.Contains(fig, "<figcaption>"+c.Title+"</figcaption>") {
			t.Errorf("chart %q: figcaption with title missing", c.ID)
		}
		if n := strings.Count(fig, "<svg"); n != 1 {
			t.Errorf("chart %q: %d <svg> elements, want 1", c.ID, n)
		}
		names := map[string]bool{}
		for i, s := range c.Series {
			names[s.Name] = true
			if len(seriesPaths(fig, htmlreport.KeyColor(p, s.Name))) == 0 {
				t.Errorf("chart %q: no path in the colour of series %d (%s)", c.ID, i, s.Name)
			}
			if !strings.Contains(fig, "</span>"+s.Name+"</li>") {
				t.Errorf("chart %q: legend entry for %q missing", c.ID, s.Name)
			}
		}
		// No series of the page but those of the chart may appear.
		for _, key := range []string{"direct", "tpproxy", "haproxy"} {
			if !names[key] && len(seriesPaths(fig, htmlreport.KeyColor(p, key))) != 0 {
				t.Errorf("chart %q: paths in the colour of %q, a series it does not have", c.ID, key)
			}
		}
	}
	for _, want := range []string{
		"<caption>Peak throughput</caption>",
		`<th class="num">before</th>`,
		"<td>tpproxy</td>",
		`<td class="num">11000</td>`,
		`<td class="num">&#43;22.2%</td>`,
		"<caption>Notes</caption>",
		"<td>60s per step</td>",
		"<p>Before/after comparison of the point-select workload.</p>",
		"<h2>Throughput and latency</h2>",
		`<p class="subtitle">2026-05-01, 2 cores</p>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s", want)
		}
	}
}

// fullPage is samplePage with a bar chart and a chart without data, so both
// chart libraries and the placeholder are exercised.
func fullPage() htmlreport.Page {
	p := samplePage()
	p.Sections = append(p.Sections, htmlreport.Section{
		Heading: "Errors",
		Charts: []htmlreport.Chart{
			{
				ID: "errors", Title: "Errors per step", Kind: htmlreport.BarChart, XLabel: "clients", YLabel: "errors",
				Series: []htmlreport.Series{
					{Name: "direct", Points: pts(clientSteps, func(x float64) float64 { return x / 2 })},
					{Name: "tpproxy", Points: pts(clientSteps, func(x float64) float64 { return x })},
				},
			},
			{ID: "queue", Title: "Proxy queue wait"},
		},
	})
	return p
}

func TestRenderIsSelfContained(t *testing.T) {
	out := strings.ToLower(render(t, fullPage()))
	for _, bad := range []string{"http://", "https://", "<script", "<link", "@import", "url(", "src=", "xmlns", "<img", "<iframe", "<object"} {
		if i := strings.Index(out, bad); i >= 0 {
			t.Errorf("output contains %q: ...%s...", bad, out[max(0, i-60):min(len(out), i+60)])
		}
	}
}

func TestRenderEscapesText(t *testing.T) {
	const evil = `<script>alert("x")</script>`
	p := htmlreport.Page{
		Title:    evil,
		Subtitle: evil,
		Sections: []htmlreport.Section{{
			Heading:    evil,
			Paragraphs: []string{evil},
			Tables:     []htmlreport.Table{{Caption: evil, Header: []string{evil}, Rows: [][]string{{evil}}}},
			Charts: []htmlreport.Chart{
				{
					ID: `a"b<c>`, Title: evil, XLabel: evil, YLabel: evil,
					Series: []htmlreport.Series{{Name: evil, Points: pts(clientSteps, func(x float64) float64 { return x })}},
				},
				{
					ID: "bar", Title: evil, XLabel: evil, YLabel: evil, Kind: htmlreport.BarChart,
					Series: []htmlreport.Series{{Name: evil, Points: pts(clientSteps, func(x float64) float64 { return x })}},
				},
			},
		}},
	}
	out := render(t, p)
	if strings.Contains(strings.ToLower(out), "<script") {
		t.Fatalf("unescaped <script> in output:\n%s", out)
	}
	if strings.Contains(out, `a"b<c>`) {
		t.Error("chart ID not escaped")
	}
	// html/template escapes to &lt;script&gt;alert(&#34;x&#34;)..., the SVG
	// renderer to &lt;script&gt;alert("x")...; both are inert.
	if n := strings.Count(out, "&lt;script&gt;alert("); n < 10 {
		t.Errorf("escaped text found %d times, want at least 10 (every place it was used)", n)
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	p := fullPage()
	first := render(t, p)
	// Concurrent renders also check that the chart libraries share no
	// mutable state (run with -race).
	const n = 4
	outs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var b bytes.Buffer
			errs[i] = htmlreport.Render(&b, p)
			outs[i] = b.String()
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("render %d: %v", i, errs[i])
		}
		if outs[i] != first {
			t.Fatalf("render %d differs from the first render", i)
		}
	}
}

func TestEmptyChartIsOneLine(t *testing.T) {
	nan := math.NaN()
	zeros := func(x float64) float64 { return 0 }
	charts := []htmlreport.Chart{
		{ID: "no-series", Title: "no series"},
		{ID: "no-points", Title: "no points", Series: []htmlreport.Series{{Name: "a"}, {Name: "b"}}},
		{ID: "all-nan", Title: "all NaN", Series: []htmlreport.Series{{Name: "a", Points: []htmlreport.Point{{X: 1, Y: nan}, {X: nan, Y: 1}, {X: 2, Y: math.Inf(1)}}}}},
		{ID: "log-nonpositive", Title: "log, all zero", LogY: true, Series: []htmlreport.Series{{Name: "a", Points: []htmlreport.Point{{X: 1, Y: 0}, {X: 2, Y: -1}}}}},
		{ID: "bar-empty", Title: "bar, no points", Kind: htmlreport.BarChart, Series: []htmlreport.Series{{Name: "a"}}},
		{ID: "stacked-empty", Title: "stacked, no values", Kind: htmlreport.StackedBarChart, Stacks: &htmlreport.Stacks{
			Segments: []string{"x"}, Groups: []htmlreport.StackGroup{{Label: "1", Bars: []htmlreport.Bar{{Name: "a", Values: []float64{nan}}}}}}},
		{ID: "stacked-nil", Title: "stacked, nil", Kind: htmlreport.StackedBarChart},
	}
	// Only zeros: a flat line on an invented -1..1 (or 0..1) axis says
	// nothing, so these are text too, with the caller's words when given.
	zeroCharts := []htmlreport.Chart{
		{ID: "line-zero", Title: "line, zeros", Series: []htmlreport.Series{{Name: "a", Points: pts(clientSteps, zeros)}, {Name: "b", Points: pts(clientSteps, zeros)}}},
		{ID: "bar-zero", Title: "bar, zeros", Kind: htmlreport.BarChart, Empty: "No failed transactions.", Series: []htmlreport.Series{{Name: "a", Points: pts(clientSteps, zeros)}}},
		{ID: "stacked-zero", Title: "stacked, zeros", Kind: htmlreport.StackedBarChart, Stacks: &htmlreport.Stacks{
			Segments: []string{"x", "y"}, Groups: []htmlreport.StackGroup{{Label: "1", Bars: []htmlreport.Bar{{Name: "a", Values: []float64{0, 0}}}}}}},
	}
	out := render(t, htmlreport.Page{Title: "empty", Sections: []htmlreport.Section{{Heading: "s", Charts: append(charts, zeroCharts...)}}})
	check := func(c htmlreport.Chart, text string) {
		t.Helper()
		fig := figure(t, out, c.ID)
		want := `<figure class="chart empty" id="` + c.ID + `" data-chart="` + c.ID + `">` + "\n" +
			"<figcaption>" + c.Title + `: <span class="nodata">` + text + "</span></figcaption>"
		if !strings.HasPrefix(out[strings.Index(out, fig)-len(`<figure class="chart empty" `):], want) {
			t.Errorf("chart %q: not the one line %q:\n%s", c.ID, text, fig)
		}
		for _, bad := range []string{"<svg", `class="plot`, `class="legend"`} {
			if strings.Contains(fig, bad) {
				t.Errorf("chart %q: has %s despite having nothing to show", c.ID, bad)
			}
		}
	}
	for _, c := range charts {
		check(c, "No data.")
	}
	check(zeroCharts[0], "All values are 0.")
	check(zeroCharts[1], "No failed transactions.")
	check(zeroCharts[2], "All values are 0.")
	if !strings.Contains(figure(t, out, "log-nonpositive"), "2 points with a value ≤ 0 not drawn (log Y scale).") {
		t.Error("log chart does not say why its points are missing")
	}
	// One value that is not zero is a chart again.
	c := zeroCharts[0]
	c.Series = append(c.Series, htmlreport.Series{Name: "c", Points: []htmlreport.Point{{X: 1, Y: 0}, {X: 2, Y: 0.5}}})
	if fig := figure(t, render(t, htmlreport.Page{Sections: []htmlreport.Section{{Charts: []htmlreport.Chart{c}}}}), c.ID); !strings.Contains(fig, "<svg") {
		t.Errorf("a chart with one non-zero value was not drawn:\n%s", fig)
	}
}

func TestNonFiniteValues(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	p := htmlreport.Page{Title: "nan", Sections: []htmlreport.Section{{Heading: "s", Charts: []htmlreport.Chart{
		{
			ID: "line", Title: "line with holes",
			Series: []htmlreport.Series{
				{Name: "holes", Points: []htmlreport.Point{{X: 1, Y: 1}, {X: 2, Y: 2}, {X: 3, Y: nan}, {X: 4, Y: 4}, {X: 5, Y: 5}, {X: inf, Y: 6}, {X: 6, Y: -inf}}},
				{Name: "fine", Points: pts(clientSteps, func(x float64) float64 { return x })},
			},
		},
		{
			ID: "bar", Title: "bar with holes", Kind: htmlreport.BarChart,
			Series: []htmlreport.Series{{Name: "holes", Points: []htmlreport.Point{{X: 1, Y: 1}, {X: 2, Y: nan}, {X: nan, Y: 3}, {X: 4, Y: inf}, {X: 5, Y: 5}}}},
		},
		{
			ID: "huge", Title: "extreme but finite",
			Series: []htmlreport.Series{{Name: "a", Points: []htmlreport.Point{{X: -1e300, Y: 1e300}, {X: 1e300, Y: -1e300}}}},
		},
		{
			ID: "flat", Title: "one point, flat",
			Series: []htmlreport.Series{{Name: "a", Points: []htmlreport.Point{{X: 3, Y: 7}}}},
		},
	}}}}
	out := render(t, p)
	for _, svg := range regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(out, -1) {
		for _, bad := range []string{"NaN", "Inf"} {
			if i := strings.Index(svg, bad); i >= 0 {
				t.Errorf("SVG contains %q: ...%s...", bad, svg[max(0, i-100):min(len(svg), i+60)])
			}
		}
		for _, m := range regexp.MustCompile(`<text[^>]*>([^<]*)</text>`).FindAllStringSubmatch(svg, -1) {
			if len(m[1]) > 12 {
				t.Errorf("axis label %q is too long to read", m[1])
			}
		}
	}
	line := figure(t, out, "line")
	// The NaN at X=3 breaks the line: 1–2 and 4–5 are separate paths.
	if n := len(seriesPaths(line, htmlreport.SeriesColor(0))); n < 2 {
		t.Errorf("series with a NaN drawn as %d path(s), want the line broken into at least 2", n)
	}
	if !strings.Contains(line, "3 points with a NaN or infinite value not drawn.") {
		t.Errorf("line chart does not report the 3 skipped points:\n%s", line)
	}
	bar := figure(t, out, "bar")
	if !strings.Contains(bar, "<svg") || len(seriesPaths(bar, htmlreport.SeriesColor(0))) != 2 {
		t.Errorf("bar chart: want an svg with 2 bars, got %d", len(seriesPaths(bar, htmlreport.SeriesColor(0))))
	}
	for _, id := range []string{"huge", "flat"} {
		if fig := figure(t, out, id); !strings.Contains(fig, "<svg") || len(seriesPaths(fig, htmlreport.KeyColor(p, "a"))) == 0 {
			t.Errorf("chart %q not drawn:\n%s", id, fig)
		}
	}
}

var moveLineRE = regexp.MustCompile(`[ML] (-?\d+) (-?\d+)`)

// pathXs returns the X pixel coordinates of all points of all paths.
func pathXs(ds []string) []int {
	var xs []int
	for _, d := range ds {
		for _, m := range moveLineRE.FindAllStringSubmatch(d, -1) {
			x, _ := strconv.Atoi(m[1])
			xs = append(xs, x)
		}
	}
	return xs
}

func TestSeriesWithDifferentXPoints(t *testing.T) {
	p := htmlreport.Page{Title: "x", Sections: []htmlreport.Section{{Heading: "s", Charts: []htmlreport.Chart{
		{
			ID: "line", Title: "different steps",
			Series: []htmlreport.Series{
				{Name: "full", Points: pts([]float64{0, 2, 4, 6, 8, 10}, func(x float64) float64 { return x })},
				{Name: "stopped early", Points: pts([]float64{0, 2, 4}, func(x float64) float64 { return x + 1 })},
				// Unsorted on purpose, and on X values the others lack.
				{Name: "odd", Points: pts([]float64{9, 1, 5}, func(x float64) float64 { return x + 2 })},
			},
		},
		{
			ID: "bar", Title: "different steps", Kind: htmlreport.BarChart,
			Series: []htmlreport.Series{
				{Name: "full", Points: pts([]float64{1, 2, 4, 8}, func(x float64) float64 { return x })},
				{Name: "stopped early", Points: pts([]float64{1, 2}, func(x float64) float64 { return x })},
				{Name: "odd", Points: pts([]float64{3}, func(x float64) float64 { return x })},
			},
		},
	}}}}
	out := render(t, p)
	line := figure(t, out, "line")
	full, early, odd := pathXs(seriesPaths(line, htmlreport.SeriesColor(0))), pathXs(seriesPaths(line, htmlreport.SeriesColor(1))), pathXs(seriesPaths(line, htmlreport.SeriesColor(2)))
	if len(full) != 6 || len(early) != 3 || len(odd) != 3 {
		t.Fatalf("points per series = %d, %d, %d; want 6, 3, 3", len(full), len(early), len(odd))
	}
	// Shared X values land on the same pixel column.
	for i := range early {
		if early[i] != full[i] {
			t.Errorf("X=%d: series at pixel %d and %d, want equal", 2*i, early[i], full[i])
		}
	}
	// X values between others are placed proportionally (numeric axis), and
	// points are joined in X order.
	for i, x := range []int{1, 5, 9} {
		lo, hi := full[(x-1)/2], full[(x+1)/2]
		if mid := (lo + hi) / 2; odd[i] < mid-1 || odd[i] > mid+1 {
			t.Errorf("X=%d at pixel %d, want about %d (between %d and %d)", x, odd[i], mid, lo, hi)
		}
	}
	bar := figure(t, out, "bar")
	for i, want := range []int{4, 2, 1} {
		if got := len(seriesPaths(bar, htmlreport.SeriesColor(i))); got != want {
			t.Errorf("bar series %d: %d bars, want %d", i, got, want)
		}
	}
	for _, label := range []string{">1</text>", ">2</text>", ">3</text>", ">4</text>", ">8</text>"} {
		if !strings.Contains(bar, label) {
			t.Errorf("bar chart lacks category label %s", label)
		}
	}
}

func TestLogAxes(t *testing.T) {
	p := htmlreport.Page{Title: "log", Sections: []htmlreport.Section{{Heading: "s", Charts: []htmlreport.Chart{{
		ID: "log", Title: "log", LogX: true, LogY: true,
		Series: []htmlreport.Series{{Name: "a", Points: []htmlreport.Point{{X: 1, Y: 1}, {X: 2, Y: 10}, {X: 4, Y: 100}, {X: 8, Y: 1000}, {X: 16, Y: 0}, {X: 0, Y: 5}}}},
	}}}}}
	fig := figure(t, render(t, p), "log")
	for _, label := range []string{">1</text>", ">2</text>", ">4</text>", ">8</text>", ">10</text>", ">100</text>", ">1000</text>"} {
		if !strings.Contains(fig, label) {
			t.Errorf("log chart lacks tick label %s", label)
		}
	}
	if !strings.Contains(fig, "2 points with a value ≤ 0 not drawn (log X/Y scale).") {
		t.Errorf("log chart does not report the skipped points:\n%s", fig)
	}
	// On log/log axes, y = x^(log2 10) is a straight line: equal pixel steps.
	xs := pathXs(seriesPaths(fig, htmlreport.SeriesColor(0)))
	if len(xs) != 4 {
		t.Fatalf("%d points drawn, want 4", len(xs))
	}
	for i := 2; i < len(xs); i++ {
		if d0, d := xs[1]-xs[0], xs[i]-xs[i-1]; d < d0-1 || d > d0+1 {
			t.Errorf("log X steps not equal: %v", xs)
		}
	}
}

func TestInvalidPage(t *testing.T) {
	line := func(id string) htmlreport.Chart {
		return htmlreport.Chart{ID: id, Series: []htmlreport.Series{{Name: "a", Points: pts(clientSteps, func(x float64) float64 { return x })}}}
	}
	for _, tc := range []struct {
		name   string
		charts []htmlreport.Chart
		want   error
	}{
		{"duplicate ID", []htmlreport.Chart{line("a"), line("a")}, htmlreport.ErrChartID},
		{"empty ID", []htmlreport.Chart{line("")}, htmlreport.ErrChartID},
		{"unknown kind", []htmlreport.Chart{{ID: "k", Kind: 42}}, htmlreport.ErrChartKind},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			err := htmlreport.Render(&b, htmlreport.Page{Sections: []htmlreport.Section{{Charts: tc.charts}}})
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if b.Len() != 0 {
				t.Errorf("%d bytes written despite the error", b.Len())
			}
		})
	}
}

type failWriter struct{}

var errDiskFull = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestWriteErrorIsReturned(t *testing.T) {
	if err := htmlreport.Render(failWriter{}, samplePage()); !errors.Is(err, errDiskFull) {
		t.Errorf("err = %v, want it to wrap %v", err, errDiskFull)
	}
}
