package htmlreport

import (
	"html"
	"math"
	"strconv"
	"strings"
)

// Segment colours of stacked bars, by the order segment names first appear
// in the page. They are not series colours: a stack's parts are told apart
// by these, its key (target) by the band under the bar. Muted, so the
// series colours of the bands stay the strongest colours, and far enough
// from every series and page colour that the browser test can tell them
// apart.
var segmentPalette = []string{
	"#5fa8a0", // teal
	"#f28e5c", // salmon
	"#6a5acd", // slate blue
	"#e6d3a3", // sand
	"#b3de69", // yellow-green
	"#9c755f", // umber
}

func segmentColor(i int) string    { return segmentPalette[i%len(segmentPalette)] }
func segmentClass(i int) string    { return "s" + strconv.Itoa(i%len(segmentPalette)) }
func approxTextWidth(s string) int { return int(math.Ceil(float64(len([]rune(s))) * 7.4)) }

// Geometry of a stacked chart, in SVG user units.
const (
	stackBandHeight = 5  // key-coloured band under each bar
	stackMaxBar     = 64 // wider bars only waste ink
	stackLineHeight = 17 // one row of labels under the plot
)

// textStyle matches the text of the library-drawn charts.
const textStyle = "stroke:none;font-size:13.3px;font-family:'Roboto Medium',sans-serif"

// stackKeys returns one bar per distinct key in the order the keys first
// appear in the groups: the left-to-right order of the bars.
func stackKeys(st *Stacks) []Bar {
	var out []Bar
	seen := map[string]bool{}
	for _, g := range st.Groups {
		for _, b := range g.Bars {
			if k := keyOf(b.Key, b.Name); !seen[k] {
				seen[k] = true
				out = append(out, b)
			}
		}
	}
	return out
}

// renderStacked draws a StackedBarChart as SVG markup of its own: the chart
// library stacks series but cannot group stacks side by side. Every bar
// segment carries its figures in data attributes and a <title> (a tooltip
// in browsers), so the numbers can be read and tested without measuring
// pixels.
func renderStacked(c Chart, pal pageColors) ([]byte, []string, error) {
	st := c.Stacks
	if st == nil || len(st.Segments) == 0 || len(st.Groups) == 0 {
		return nil, nil, errNoData
	}
	// Values and totals; a value that cannot be drawn is counted by segment
	// for the note.
	type bar struct {
		name, key string
		values    []float64 // NaN where not drawn
		total     float64
		any       bool
	}
	skipped := make([]int, len(st.Segments))
	groups := make([][]bar, len(st.Groups))
	maxTotal, drawable := 0.0, false
	for gi, g := range st.Groups {
		for _, b := range g.Bars {
			nb := bar{name: b.Name, key: keyOf(b.Key, b.Name), values: make([]float64, len(st.Segments))}
			for si := range st.Segments {
				v := math.NaN()
				if si < len(b.Values) {
					v = b.Values[si]
				}
				if !finite(v) || v < 0 {
					if len(b.Values) > 0 { // a bar without values is an empty slot
						skipped[si]++
					}
					v = math.NaN()
				} else {
					nb.total += v
					nb.any = true
					drawable = true
				}
				nb.values[si] = v
			}
			maxTotal = max(maxTotal, nb.total)
			groups[gi] = append(groups[gi], nb)
		}
	}
	var notes []string
	for si, n := range skipped {
		if n > 0 && drawable {
			notes = append(notes, "No figure for “"+st.Segments[si]+"” in "+plural(n, "bar", "bars")+".")
		}
	}
	if !drawable {
		return nil, notes, errNoData
	}
	if maxTotal == 0 {
		return nil, notes, errAllZero
	}

	ticks := linearTicks(0, maxTotal, 6, true)
	yMax := ticks[len(ticks)-1].Value
	labelW := 0
	for _, t := range ticks {
		labelW = max(labelW, approxTextWidth(t.Label))
	}
	maxBars, longest := 0, 0
	for _, g := range groups {
		maxBars = max(maxBars, len(g))
		for _, b := range g {
			longest = max(longest, approxTextWidth(b.name))
		}
	}
	left := 10 + labelW + 8
	right := chartWidth - 28
	top := topPadding(c.YLabel) + 8
	groupW := float64(right-left) / float64(len(groups))
	barW := min(groupW*0.84/float64(max(1, maxBars)), stackMaxBar)
	// Bar names fit under the bars, or the legend alone names them.
	names := float64(longest) <= barW-2
	bottom := 6 + stackBandHeight + stackLineHeight + 4
	if names {
		bottom += stackLineHeight
	}
	if c.XLabel != "" {
		bottom += stackLineHeight
	}
	axisY := float64(chartHeight - bottom)
	yOf := func(v float64) float64 { return axisY - v/yMax*(axisY-float64(top)) }

	var b strings.Builder
	b.Grow(4096 + 600*len(groups)*maxBars*len(st.Segments))
	b.WriteString(`<svg viewBox="0 0 ` + strconv.Itoa(chartWidth) + " " + strconv.Itoa(chartHeight) + `">`)
	b.WriteString(`<rect x="0" y="0" width="` + strconv.Itoa(chartWidth) + `" height="` + strconv.Itoa(chartHeight) + `" style="fill:#ffffff;stroke:none"/>`)
	// Grid and Y axis labels.
	for _, t := range ticks {
		y := num(yOf(t.Value))
		b.WriteString(`<path d="M ` + strconv.Itoa(left) + " " + y + " L " + strconv.Itoa(right) + " " + y + `" style="fill:none;stroke-width:1;stroke:` + gridColor + `"/>`)
		b.WriteString(`<text x="` + strconv.Itoa(left-8) + `" y="` + num(yOf(t.Value)+4.5) + `" text-anchor="end" style="` + textStyle + ";fill:" + textColor + `">` + html.EscapeString(t.Label) + `</text>`)
	}
	// Group separators, so the eye groups the bars of one step.
	for gi := 1; gi < len(groups); gi++ {
		x := num(float64(left) + float64(gi)*groupW)
		b.WriteString(`<path d="M ` + x + " " + strconv.Itoa(top) + " L " + x + " " + num(axisY) + `" style="fill:none;stroke-width:1;stroke:` + gridColor + `"/>`)
	}
	for gi, g := range groups {
		gx := float64(left) + float64(gi)*groupW
		x0 := gx + (groupW-barW*float64(len(g)))/2
		for bi, br := range g {
			x := x0 + float64(bi)*barW
			w := barW - 2 // a gap between neighbours
			if !br.any {
				continue // the slot stays empty
			}
			base := 0.0
			for si, v := range br.values {
				if math.IsNaN(v) || v == 0 {
					continue
				}
				y0, y1 := yOf(base), yOf(base+v)
				base += v
				title := br.name + ", " + st.Groups[gi].Label + ": " + st.Segments[si] + " " + formatFigure(v)
				b.WriteString(`<rect x="` + num(x) + `" y="` + num(y1) + `" width="` + num(w) + `" height="` + num(y0-y1) +
					`" data-bar="` + html.EscapeString(br.name) + `" data-group="` + html.EscapeString(st.Groups[gi].Label) +
					`" data-segment="` + html.EscapeString(st.Segments[si]) + `" data-value="` + strconv.FormatFloat(v, 'g', -1, 64) +
					`" style="stroke:none;fill:` + segmentColor(pal.segments[st.Segments[si]]) + `"><title>` + html.EscapeString(title) + `</title></rect>`)
			}
			// The band names the bar's key in its page colour.
			b.WriteString(`<rect x="` + num(x) + `" y="` + num(axisY+2) + `" width="` + num(w) + `" height="` + strconv.Itoa(stackBandHeight) +
				`" data-band="` + html.EscapeString(br.name) + `" style="stroke:none;fill:` + seriesColor(pal.keys[br.key]) + `"/>`)
			if total := formatFigure(br.total); float64(approxTextWidth(total)) <= barW {
				b.WriteString(`<text x="` + num(x+w/2) + `" y="` + num(yOf(br.total)-4) + `" text-anchor="middle" style="` + textStyle + ";fill:" + textColor + `">` + total + `</text>`)
			}
			if names {
				b.WriteString(`<text x="` + num(x+w/2) + `" y="` + num(axisY+2+stackBandHeight+14) + `" text-anchor="middle" style="` + textStyle + ";fill:" + mutedColor + `">` + html.EscapeString(br.name) + `</text>`)
			}
		}
		labelY := axisY + 2 + stackBandHeight + 14
		if names {
			labelY += stackLineHeight
		}
		b.WriteString(`<text x="` + num(gx+groupW/2) + `" y="` + num(labelY) + `" text-anchor="middle" style="` + textStyle + ";fill:" + textColor + `">` + html.EscapeString(st.Groups[gi].Label) + `</text>`)
	}
	// The axis line last, over the grid.
	b.WriteString(`<path d="M ` + strconv.Itoa(left) + " " + num(axisY) + " L " + strconv.Itoa(right) + " " + num(axisY) + `" style="fill:none;stroke-width:1;stroke:` + axisColor + `"/>`)
	if c.XLabel != "" {
		b.WriteString(`<text x="` + num(float64(left+right)/2) + `" y="` + strconv.Itoa(chartHeight-8) + `" text-anchor="middle" style="` + textStyle + ";fill:" + mutedColor + `">` + html.EscapeString(c.XLabel) + `</text>`)
	}
	if c.YLabel != "" {
		b.WriteString(`<text x="` + strconv.Itoa(yLabelX) + `" y="` + strconv.Itoa(yLabelY) + `" style="` + textStyle + ";fill:" + mutedColor + `">` + html.EscapeString(c.YLabel) + `</text>`)
	}
	b.WriteString(`</svg>`)
	return []byte(b.String()), notes, nil
}

// num formats an SVG coordinate: one decimal is finer than any screen.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// formatFigure prints a bar's figure with three significant digits at most,
// e.g. 152, 61.2, 0.84.
func formatFigure(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e4:
		return formatCompact(math.Round(v/100) * 100)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
