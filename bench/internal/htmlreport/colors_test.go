package htmlreport_test

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tpproxy/tpproxy/bench/internal/htmlreport"
)

// TestColourFollowsKeyAcrossCharts: a key keeps its colour in every chart
// and legend of the page, whatever the series order, omissions and chart
// kinds.
func TestColourFollowsKeyAcrossCharts(t *testing.T) {
	up := func(x float64) float64 { return x }
	p := htmlreport.Page{Sections: []htmlreport.Section{{Charts: []htmlreport.Chart{
		{ID: "first", Series: []htmlreport.Series{
			{Name: "direct", Points: pts(clientSteps, up)},
			{Name: "tpproxy", Points: pts(clientSteps, up)},
			{Name: "haproxy", Points: pts(clientSteps, up)},
		}},
		// Reordered, one missing, names differing from keys.
		{ID: "second", Series: []htmlreport.Series{
			{Name: "haproxy p90", Key: "haproxy", Points: pts(clientSteps, up)},
			{Name: "tpproxy p90", Key: "tpproxy", Points: pts(clientSteps, up)},
		}},
		{ID: "bars", Kind: htmlreport.BarChart, Series: []htmlreport.Series{
			{Name: "tpproxy", Points: pts(clientSteps, up)},
		}},
		{ID: "stack", Kind: htmlreport.StackedBarChart, Stacks: &htmlreport.Stacks{
			Segments: []string{"server"},
			Groups:   []htmlreport.StackGroup{{Label: "8", Bars: []htmlreport.Bar{{Name: "haproxy", Values: []float64{3}}, {Name: "direct", Values: []float64{2}}}}},
		}},
	}}}}
	out := render(t, p)
	want := map[string]int{"direct": 0, "tpproxy": 1, "haproxy": 2} // order of first appearance
	for key, i := range want {
		if got := htmlreport.KeyColor(p, key); got != htmlreport.SeriesColor(i) {
			t.Errorf("%s: colour %s, want palette colour %d", key, got, i)
		}
	}
	has := func(id, key string) {
		t.Helper()
		fig := figure(t, out, id)
		if len(seriesPaths(fig, htmlreport.KeyColor(p, key))) == 0 {
			t.Errorf("chart %q: nothing drawn in %s's colour", id, key)
		}
		if !regexp.MustCompile(`<span class="swatch (band )?c` + strconv.Itoa(want[key]) + `"></span>` + key).MatchString(fig) {
			t.Errorf("chart %q: legend of %s lacks its colour class c%d", id, key, want[key])
		}
	}
	has("first", "direct")
	has("first", "haproxy")
	has("second", "haproxy")
	has("second", "tpproxy")
	has("bars", "tpproxy")
	for _, id := range []string{"second", "bars"} {
		if len(seriesPaths(figure(t, out, id), htmlreport.KeyColor(p, "direct"))) != 0 {
			t.Errorf("chart %q: drawn in direct's colour without a direct series", id)
		}
	}
	// The stacked chart's bands carry the keys' colours.
	stack := figure(t, out, "stack")
	for _, key := range []string{"haproxy", "direct"} {
		if !strings.Contains(stack, `data-band="`+key+`" style="stroke:none;fill:`+htmlreport.KeyColor(p, key)+`"`) {
			t.Errorf("stacked chart: band of %s not in its colour", key)
		}
	}
}

// TestDashedSeries: p99 next to p90 of one target is the same colour,
// dashed, in the plot and the legend; a dashed bar series is a tint.
func TestDashedSeries(t *testing.T) {
	p := htmlreport.Page{Sections: []htmlreport.Section{{Charts: []htmlreport.Chart{
		{ID: "lat", Series: []htmlreport.Series{
			{Name: "direct p90", Key: "direct", Points: pts(clientSteps, func(x float64) float64 { return x })},
			{Name: "direct p99", Key: "direct", Dashed: true, Points: pts(clientSteps, func(x float64) float64 { return 2 * x })},
		}},
		{ID: "bars", Kind: htmlreport.BarChart, Series: []htmlreport.Series{
			{Name: "direct p90", Key: "direct", Points: pts(clientSteps, func(x float64) float64 { return x })},
			{Name: "direct p99", Key: "direct", Dashed: true, Points: pts(clientSteps, func(x float64) float64 { return 2 * x })},
		}},
	}}}}
	out := render(t, p)
	lat := figure(t, out, "lat")
	col := rgb(htmlreport.SeriesColor(0))
	var solid, dashed int
	for _, m := range regexp.MustCompile(`<path[^>]*>`).FindAllString(lat, -1) {
		if !strings.Contains(m, "stroke:"+col) {
			continue
		}
		if strings.Contains(m, "stroke-dasharray") {
			dashed++
		} else {
			solid++
		}
	}
	if solid != 1 || dashed != 1 {
		t.Errorf("line chart: %d solid and %d dashed paths in the series colour, want 1 and 1", solid, dashed)
	}
	for _, want := range []string{`<span class="swatch c0"></span>direct p90`, `<span class="swatch c0 dash"></span>direct p99`} {
		if !strings.Contains(lat, want) {
			t.Errorf("line legend lacks %s", want)
		}
	}
	bars := figure(t, out, "bars")
	if n, m := len(seriesPaths(bars, htmlreport.SeriesColor(0))), len(seriesPaths(bars, htmlreport.Tint(htmlreport.SeriesColor(0)))); n != len(clientSteps) || m != len(clientSteps) {
		t.Errorf("bar chart: %d bars in the colour and %d in its tint, want %d each", n, m, len(clientSteps))
	}
	if !strings.Contains(bars, `<span class="swatch c0 tint"></span>direct p99`) {
		t.Error("bar legend lacks the tinted swatch")
	}
	if !strings.Contains(render(t, p), ".swatch.c0.tint { border-top-color: "+htmlreport.Tint(htmlreport.SeriesColor(0))) {
		t.Error("stylesheet lacks the tint swatch colour")
	}
}

type stackRect struct {
	bar, group, segment string
	value, y, h         float64
	fill                string
}

var stackRectRE = regexp.MustCompile(`<rect x="[^"]*" y="([^"]*)" width="[^"]*" height="([^"]*)" data-bar="([^"]*)" data-group="([^"]*)" data-segment="([^"]*)" data-value="([^"]*)" style="stroke:none;fill:([^"]*)">`)

func stackRects(t *testing.T, fig string) []stackRect {
	t.Helper()
	var out []stackRect
	for _, m := range stackRectRE.FindAllStringSubmatch(fig, -1) {
		f := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%q: %v", s, err)
			}
			return v
		}
		out = append(out, stackRect{bar: m[3], group: m[4], segment: m[5], value: f(m[6]), y: f(m[1]), h: f(m[2]), fill: m[7]})
	}
	return out
}

// TestStackedBars: each bar is its segments stacked bottom to top in the
// segment colours, heights proportional to the values, the total written on
// top; a value that cannot be drawn is left out and named in a note.
func TestStackedBars(t *testing.T) {
	segs := []string{"client", "proxy", "server", "other"}
	p := htmlreport.Page{Sections: []htmlreport.Section{{Charts: []htmlreport.Chart{
		{ID: "cpu", Kind: htmlreport.StackedBarChart, XLabel: "clients", YLabel: "% of one core", Stacks: &htmlreport.Stacks{
			Segments: segs,
			Groups: []htmlreport.StackGroup{
				{Label: "100", Bars: []htmlreport.Bar{{Name: "direct", Values: []float64{20, 0, 100, 10}}, {Name: "tpproxy", Values: []float64{22, 40, 60, math.NaN()}}}},
				// direct did not run this step: its slot stays empty.
				{Label: "1000", Bars: []htmlreport.Bar{{Name: "direct"}, {Name: "tpproxy", Values: []float64{30, 60, 90, 5}}}},
			},
		}},
		// A second stacked chart reuses segment colours by name.
		{ID: "per-stmt", Kind: htmlreport.StackedBarChart, Stacks: &htmlreport.Stacks{
			Segments: []string{"proxy", "server"},
			Groups:   []htmlreport.StackGroup{{Label: "1000", Bars: []htmlreport.Bar{{Name: "tpproxy", Values: []float64{12, 30}}}}},
		}},
	}}}}
	out := render(t, p)
	fig := figure(t, out, "cpu")
	rects := stackRects(t, fig)
	type bk struct{ group, bar string }
	totals := map[bk]float64{}
	var got []string
	for _, r := range rects {
		totals[bk{r.group, r.bar}] += r.value
		got = append(got, r.group+"/"+r.bar+"/"+r.segment)
		if r.fill != htmlreport.SegmentColor(p, r.segment) {
			t.Errorf("%s/%s/%s: fill %s, want the segment colour %s", r.group, r.bar, r.segment, r.fill, htmlreport.SegmentColor(p, r.segment))
		}
	}
	// Zero and NaN segments draw nothing; the rest in segment order.
	want := []string{"100/direct/client", "100/direct/server", "100/direct/other",
		"100/tpproxy/client", "100/tpproxy/proxy", "100/tpproxy/server",
		"1000/tpproxy/client", "1000/tpproxy/proxy", "1000/tpproxy/server", "1000/tpproxy/other"}
	if !slices.Equal(got, want) {
		t.Errorf("segments drawn:\n got %q\nwant %q", got, want)
	}
	for k, w := range map[bk]float64{{"100", "direct"}: 130, {"100", "tpproxy"}: 122, {"1000", "tpproxy"}: 185} {
		if totals[k] != w {
			t.Errorf("bar %v sums to %v, want %v", k, totals[k], w)
		}
	}
	// Stacked: each segment starts where the one below ends, and heights
	// are proportional to values (one scale for the chart).
	var scale float64
	for i, r := range rects {
		if i > 0 && rects[i-1].bar == r.bar && rects[i-1].group == r.group {
			if below := rects[i-1]; math.Abs(r.y+r.h-below.y) > 0.11 {
				t.Errorf("%s/%s/%s: bottom at %.1f, want the top of %s at %.1f", r.group, r.bar, r.segment, r.y+r.h, below.segment, below.y)
			}
		}
		if s := r.h / r.value; scale == 0 {
			scale = s
		} else if math.Abs(s-scale) > 0.1/r.value+1e-9 {
			t.Errorf("%s/%s/%s: %.1f units for %v, scale %.4f, want %.4f", r.group, r.bar, r.segment, r.h, r.value, s, scale)
		}
	}
	for _, want := range []string{">130</text>", ">122</text>", ">185</text>", ">100</text>", ">1000</text>", ">clients</text>", ">% of one core</text>",
		"<title>tpproxy, 1000: proxy 60.0</title>", "No figure for “other” in 1 bar."} {
		if !strings.Contains(fig, want) {
			t.Errorf("stacked chart lacks %s", want)
		}
	}
	for i, seg := range segs {
		if !strings.Contains(fig, `<span class="swatch box s`+strconv.Itoa(i)+`"></span>`+seg) {
			t.Errorf("segment legend lacks %s", seg)
		}
	}
	if n := strings.Count(fig, "No figure for"); n != 1 {
		t.Errorf("%d notes of missing figures, want 1 (an empty slot is not a missing figure)", n)
	}
	if !strings.Contains(fig, `<li class="legend-title">Bars, left to right:</li>`) {
		t.Error("no legend for the bars' keys")
	}
	fills := map[string]string{}
	for _, r := range rects {
		fills[r.segment] = r.fill
	}
	for _, r := range stackRects(t, figure(t, out, "per-stmt")) {
		if r.fill != fills[r.segment] {
			t.Errorf("per-stmt %s: fill %s, want %s as in the first stacked chart", r.segment, r.fill, fills[r.segment])
		}
	}
	if len(fills) != 4 || fills["proxy"] == fills["server"] || fills["client"] == fills["other"] {
		t.Errorf("segments share colours: %v", fills)
	}
}

// TestLeadAndPrintStyle: findings come first in a section, and the print
// stylesheet keeps charts whole, within the page and on white.
func TestLeadAndPrintStyle(t *testing.T) {
	out := render(t, htmlreport.Page{Sections: []htmlreport.Section{{
		Heading: "h", Lead: []string{"At 1,000 clients tpproxy: 2.1× direct TPS."}, Paragraphs: []string{"later"},
	}}})
	if i, j := strings.Index(out, `<p class="lead">At 1,000 clients tpproxy: 2.1× direct TPS.</p>`), strings.Index(out, "<p>later</p>"); i < 0 || j < i {
		t.Errorf("lead missing or not before the paragraphs (%d, %d)", i, j)
	}
	i := strings.Index(out, "@media print {")
	if i < 0 {
		t.Fatal("no print stylesheet")
	}
	print := out[i:]
	print = print[:strings.Index(print, "\n}\n")]
	for _, want := range []string{"figure.chart", "break-inside: avoid", "page-break-inside: avoid", ".plot { max-width: 100%; }", "body { font-size: 10.5pt; background: #fff; color: #000; }"} {
		if !strings.Contains(print, want) {
			t.Errorf("print stylesheet lacks %q", want)
		}
	}
	for _, m := range regexp.MustCompile(`background: ([^;]+);`).FindAllStringSubmatch(print, -1) {
		if m[1] != "#fff" {
			t.Errorf("print stylesheet sets a background of %s", m[1])
		}
	}
}
