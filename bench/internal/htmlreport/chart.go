package htmlreport

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"html"
	"html/template"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-analyze/charts"
	"github.com/go-analyze/charts/chartdraw"
	"github.com/go-analyze/charts/chartdraw/drawing"
)

// Chart canvas size in SVG user units. The SVG scales to the page width
// (viewBox only, no fixed size), so this mostly sets the aspect ratio and the
// text size relative to the plot.
const (
	chartWidth  = 900
	chartHeight = 380
)

// Series colours, by series index. Tableau 10: distinct for the usual
// handful of targets and readable on white. Line series past the palette
// reuse it with a dashed stroke.
var palette = []string{
	"#1f77b4", // blue
	"#d62728", // red
	"#2ca02c", // green
	"#ff7f0e", // orange
	"#9467bd", // purple
	"#8c564b", // brown
	"#e377c2", // pink
	"#17becf", // cyan
	"#bcbd22", // olive
	"#7f7f7f", // grey
}

// Neutral colours shared by the page CSS and the SVG so charts and tables
// look like one document.
const (
	textColor  = "#1b1f24"
	mutedColor = "#57606a"
	axisColor  = "#8c959f"
	gridColor  = "#e4e8ec"
	// plotBorderColor frames each plot area and is used for nothing else on
	// the page, which lets the browser test find the plots in a screenshot.
	plotBorderColor = "#b4bcc6"
)

// Axis text size in points, for both chart libraries.
const axisFontSize = 10

// Where the Y axis label goes: horizontally, above the axis, in the top
// padding that topPadding reserves for it.
const (
	yLabelX = 10
	yLabelY = 18
)

func topPadding(yLabel string) int {
	if yLabel == "" {
		return 14
	}
	return 32
}

// Lines of dense series are drawn without point markers, which would only
// blur into a thick line.
const maxMarkedPoints = 40

// pageColors gives every key of a page its colour index, by first
// appearance, so a target has one colour in the whole report however the
// charts order or omit their series. Segment names of stacked charts have
// a palette and an index of their own.
type pageColors struct {
	keys, segments map[string]int
}

func newPageColors(p Page) pageColors {
	pc := pageColors{keys: map[string]int{}, segments: map[string]int{}}
	see := func(m map[string]int, k string) {
		if _, ok := m[k]; !ok {
			m[k] = len(m)
		}
	}
	for _, s := range p.Sections {
		for _, c := range s.Charts {
			if c.Kind == StackedBarChart {
				if c.Stacks != nil {
					for _, seg := range c.Stacks.Segments {
						see(pc.segments, seg)
					}
					for _, g := range c.Stacks.Groups {
						for _, b := range g.Bars {
							see(pc.keys, keyOf(b.Key, b.Name))
						}
					}
				}
				continue
			}
			for _, sr := range c.Series {
				see(pc.keys, keyOf(sr.Key, sr.Name))
			}
		}
	}
	return pc
}

func keyOf(key, name string) string {
	if key == "" {
		return name
	}
	return key
}

// series returns the colour index of a series.
func (pc pageColors) series(s Series) int { return pc.keys[keyOf(s.Key, s.Name)] }

func seriesColor(i int) string { return palette[i%len(palette)] }

// lineDashed reports whether a line of colour index i is dashed: asked
// for, or sharing its colour with an earlier key past the palette's end.
func lineDashed(s Series, i int) bool { return s.Dashed || i >= len(palette) }

// seriesClass is the legend swatch class of a series of colour index i.
func seriesClass(s Series, i int, kind ChartKind) string {
	c := "c" + strconv.Itoa(i%len(palette))
	switch {
	case kind == LineChart && lineDashed(s, i):
		c += " dash"
	case kind == BarChart && s.Dashed:
		c += " tint"
	}
	return c
}

// tint mixes "#rrggbb" with white: the fill of a "dashed" bar series.
func tint(hex string) string {
	v, err := strconv.ParseUint(hex[1:], 16, 32)
	if err != nil {
		return hex
	}
	mix := func(c uint64) uint64 { return c + (255-c)*55/100 }
	r, g, b := mix(v>>16), mix(v>>8&0xff), mix(v&0xff)
	return "#" + fmt.Sprintf("%02x%02x%02x", r, g, b)
}

func renderChart(c Chart, pal pageColors) viewChart {
	vc := viewChart{ID: c.ID, Title: c.Title}
	var (
		svg   []byte
		notes []string
		err   error
	)
	switch c.Kind {
	case BarChart:
		svg, notes, err = renderBar(c, pal)
	case StackedBarChart:
		svg, notes, err = renderStacked(c, pal)
	default:
		svg, notes, err = renderLine(c, pal)
	}
	vc.Notes = notes
	switch {
	case errors.Is(err, errNoData):
		vc.Placeholder = cmp.Or(c.Empty, "No data.")
	case errors.Is(err, errAllZero):
		vc.Placeholder = cmp.Or(c.Empty, "All values are 0.")
	case err != nil:
		vc.Placeholder = "Chart could not be drawn: " + err.Error()
	default:
		vc.SVG = inlineSVG(svg, c.Title)
		vc.Legend = legend(c, pal)
	}
	return vc
}

func legend(c Chart, pal pageColors) []legendGroup {
	if c.Kind != StackedBarChart {
		var g legendGroup
		for _, s := range c.Series {
			g.Items = append(g.Items, legendItem{Name: s.Name, Class: seriesClass(s, pal.series(s), c.Kind)})
		}
		return []legendGroup{g}
	}
	var segs, bars legendGroup
	for _, name := range c.Stacks.Segments {
		segs.Items = append(segs.Items, legendItem{Name: name, Class: "box " + segmentClass(pal.segments[name])})
	}
	bars.Title = "Bars, left to right:"
	for _, b := range stackKeys(c.Stacks) {
		bars.Items = append(bars.Items, legendItem{Name: b.Name, Class: "band c" + strconv.Itoa(pal.keys[keyOf(b.Key, b.Name)]%len(palette))})
	}
	return []legendGroup{segs, bars}
}

// errNoData means the chart has no finite point to draw, errAllZero that
// all it has are zeros; both are shown as a line of text and never returned
// to callers.
var (
	errNoData  = errors.New("no data")
	errAllZero = errors.New("all values are 0")
)

// svgOpenTag matches the root element the chart libraries write.
var svgOpenTag = regexp.MustCompile(`^\s*<svg\b[^>]*>`)

// svgNamespace matches namespace declarations, which are the only URLs the
// libraries write. Inline <svg> in HTML5 gets its namespace from the parser.
var svgNamespace = regexp.MustCompile(`\s+xmlns(:[A-Za-z]+)?="[^"]*"`)

// inlineSVG prepares library SVG output for embedding in HTML: namespace
// declarations dropped so the document contains no URL at all, and an
// accessible name added.
func inlineSVG(svg []byte, title string) template.HTML {
	loc := svgOpenTag.FindIndex(svg)
	if loc == nil {
		// Not what the libraries produce; embedding unknown markup unchecked
		// would defeat the escaping of the rest of the page.
		return template.HTML(`<p class="note">Chart could not be drawn: unexpected SVG output</p>`)
	}
	open := svgNamespace.ReplaceAllString(string(svg[loc[0]:loc[1]]), "")
	open = strings.TrimSuffix(open, ">")
	var b strings.Builder
	b.Grow(len(svg) + 64)
	b.WriteString(open)
	b.WriteString(` role="img" aria-label="`)
	b.WriteString(html.EscapeString(title))
	b.WriteString(`">`)
	b.Write(svg[loc[1]:])
	// The SVG's own text is escaped by the library's renderer (chartdraw's
	// vector renderer escapes text content and attribute values).
	return template.HTML(b.String())
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// segment is a run of drawable points of one series, in plot coordinates
// (log10 already applied on log axes).
type segment struct {
	series int
	xs, ys []float64
}

// lineSegments turns the series into drawable segments sorted by X. A point
// with a non-finite Y, or one that cannot be placed on a log axis, breaks
// the line so the chart does not invent values across it; a point with a
// non-finite X has no place at all and is dropped.
func lineSegments(c Chart) (segs []segment, skippedNonFinite, skippedNonPositive int) {
	for si, s := range c.Series {
		pts := slices.Clone(s.Points)
		pts = slices.DeleteFunc(pts, func(p Point) bool {
			if !finite(p.X) {
				skippedNonFinite++
				return true
			}
			return false
		})
		slices.SortStableFunc(pts, func(a, b Point) int { return cmp.Compare(a.X, b.X) })
		cur := segment{series: si}
		flush := func() {
			if len(cur.xs) > 0 {
				segs = append(segs, cur)
			}
			cur = segment{series: si}
		}
		for _, p := range pts {
			x, y := p.X, p.Y
			if !finite(y) {
				skippedNonFinite++
				flush()
				continue
			}
			if (c.LogX && x <= 0) || (c.LogY && y <= 0) {
				skippedNonPositive++
				flush()
				continue
			}
			if c.LogX {
				x = math.Log10(x)
			}
			if c.LogY {
				y = math.Log10(y)
			}
			cur.xs = append(cur.xs, x)
			cur.ys = append(cur.ys, y)
		}
		flush()
	}
	return segs, skippedNonFinite, skippedNonPositive
}

func skipNotes(nonFinite, nonPositive int, c Chart) []string {
	var notes []string
	if nonFinite > 0 {
		notes = append(notes, plural(nonFinite, "point", "points")+" with a NaN or infinite value not drawn.")
	}
	if nonPositive > 0 {
		axes := "log"
		switch {
		case c.LogX && c.LogY:
			axes = "log X/Y"
		case c.LogX:
			axes = "log X"
		case c.LogY:
			axes = "log Y"
		}
		notes = append(notes, plural(nonPositive, "point", "points")+" with a value ≤ 0 not drawn ("+axes+" scale).")
	}
	return notes
}

// missingNote names the series that appear in the legend but have nothing
// drawn, so a reader does not hunt for them.
func missingNote(c Chart, drawn func(series int) bool) []string {
	var names []string
	for i, s := range c.Series {
		if !drawn(i) {
			names = append(names, strconv.Quote(s.Name))
		}
	}
	if len(names) == 0 || len(names) == len(c.Series) {
		return nil // all missing is the "No data" placeholder
	}
	return []string{"Nothing to draw for " + strings.Join(names, ", ") + "."}
}

func renderLine(c Chart, pal pageColors) ([]byte, []string, error) {
	segs, nonFinite, nonPositive := lineSegments(c)
	notes := skipNotes(nonFinite, nonPositive, c)
	if len(segs) == 0 {
		return nil, notes, errNoData
	}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	distinctX := make(map[float64]bool)
	counts := make([]int, len(c.Series))
	for _, sg := range segs {
		for i := range sg.xs {
			xmin, xmax = min(xmin, sg.xs[i]), max(xmax, sg.xs[i])
			ymin, ymax = min(ymin, sg.ys[i]), max(ymax, sg.ys[i])
			distinctX[sg.xs[i]] = true
		}
		counts[sg.series] += len(sg.xs)
	}
	notes = append(notes, missingNote(c, func(i int) bool { return counts[i] > 0 })...)
	if !c.LogY && ymin == 0 && ymax == 0 {
		return nil, notes, errAllZero
	}

	var xticks, yticks []chartdraw.Tick
	if c.LogX {
		if len(distinctX) > 1 && len(distinctX) <= 12 {
			xticks = valueTicks(distinctX)
		} else {
			xticks = logTicks(xmin, xmax)
		}
	} else {
		xticks = linearTicks(xmin, xmax, 10, false)
	}
	if c.LogY {
		yticks = logTicks(ymin, ymax)
	} else {
		yticks = linearTicks(ymin, ymax, 6, true)
	}

	font := chartdraw.Style{FontStyle: chartdraw.FontStyle{FontColor: drawing.ColorFromHex(textColor[1:]), FontSize: axisFontSize}}
	axisStyle := font
	axisStyle.StrokeColor = drawing.ColorFromHex(axisColor[1:])
	axisStyle.StrokeWidth = 1
	grid := chartdraw.Style{StrokeColor: drawing.ColorFromHex(gridColor[1:]), StrokeWidth: 1}
	nameStyle := font
	nameStyle.FontColor = drawing.ColorFromHex(mutedColor[1:])

	graph := chartdraw.Chart{
		Width:  chartWidth,
		Height: chartHeight,
		Background: chartdraw.Style{
			FillColor: drawing.ColorWhite,
			Padding:   chartdraw.Box{Top: topPadding(c.YLabel), Left: 10, Right: 28, Bottom: 6, IsSet: true},
		},
		Canvas: chartdraw.Style{FillColor: drawing.ColorWhite},
		XAxis: chartdraw.XAxis{
			Name:           c.XLabel,
			NameStyle:      nameStyle,
			Style:          axisStyle,
			Range:          &chartdraw.ContinuousRange{},
			Ticks:          xticks,
			GridMajorStyle: grid,
			GridMinorStyle: grid,
		},
		// The primary Y axis is drawn on the right; readers expect values on
		// the left, so series go to the secondary axis and the primary one
		// is hidden. It still needs a valid range to pass the library's
		// range checks.
		YAxis: chartdraw.YAxis{
			Style: chartdraw.Hidden(),
			Range: &chartdraw.ContinuousRange{Min: 0, Max: 1},
		},
		YAxisSecondary: chartdraw.YAxis{
			Style:          axisStyle,
			Range:          &chartdraw.ContinuousRange{},
			Ticks:          yticks,
			GridMajorStyle: grid,
			GridMinorStyle: grid,
		},
	}
	if c.YLabel != "" {
		// The library writes a Y axis name rotated, where it collides with
		// long tick labels; a horizontal label above the axis reads better.
		graph.Elements = append(graph.Elements, func(r chartdraw.Renderer, _ chartdraw.Box, defaults chartdraw.Style) {
			st := nameStyle
			st.Font = defaults.Font
			chartdraw.Draw.Text(r, c.YLabel, yLabelX, yLabelY, st)
		})
	}
	for _, sg := range segs {
		s := c.Series[sg.series]
		ci := pal.series(s)
		col := drawing.ColorFromHex(seriesColor(ci)[1:])
		st := chartdraw.Style{StrokeColor: col, StrokeWidth: 2}
		if lineDashed(s, ci) {
			st.StrokeDashArray = []float64{6, 4}
		}
		if counts[sg.series] <= maxMarkedPoints || len(sg.xs) == 1 {
			st.DotColor = col
			st.DotWidth = 3
		}
		graph.Series = append(graph.Series, chartdraw.ContinuousSeries{
			YAxis:   chartdraw.YAxisSecondary,
			Style:   st,
			XValues: sg.xs,
			YValues: sg.ys,
		})
	}
	var buf bytes.Buffer
	if err := graph.Render(chartdraw.SVG, &buf); err != nil {
		return nil, notes, err
	}
	return buf.Bytes(), notes, nil
}

func renderBar(c Chart, pal pageColors) ([]byte, []string, error) {
	var notes []string
	if c.LogY {
		notes = append(notes, "Log scale is not supported for bar charts; the Y axis is linear.")
	}
	// Categories: the sorted union of finite X values. A series without a
	// point at some X gets no bar there (the library's null value).
	nonFinite := 0
	xset := make(map[float64]bool)
	for _, s := range c.Series {
		for _, p := range s.Points {
			if finite(p.X) && finite(p.Y) {
				xset[p.X] = true
			} else {
				nonFinite++
			}
		}
	}
	notes = append(notes, skipNotes(nonFinite, 0, c)...)
	notes = append(notes, missingNote(c, func(i int) bool {
		return slices.ContainsFunc(c.Series[i].Points, func(p Point) bool { return finite(p.X) && finite(p.Y) })
	})...)
	if len(xset) == 0 {
		return nil, notes, errNoData
	}
	xs := make([]float64, 0, len(xset))
	for x := range xset {
		xs = append(xs, x)
	}
	slices.Sort(xs)
	index := make(map[float64]int, len(xs))
	labels := make([]string, len(xs))
	for i, x := range xs {
		index[x] = i
		labels[i] = formatExact(x)
	}
	values := make([][]float64, len(c.Series))
	colors := make([]charts.Color, len(c.Series))
	for si, s := range c.Series {
		row := make([]float64, len(xs))
		for i := range row {
			row[i] = charts.GetNullValue()
		}
		for _, p := range s.Points {
			if finite(p.X) && finite(p.Y) {
				row[index[p.X]] = p.Y // a repeated X keeps the last value
			}
		}
		values[si] = row
		col := seriesColor(pal.series(s))
		if s.Dashed {
			col = tint(col)
		}
		colors[si] = charts.ColorFromHex(col)
	}

	theme := charts.MakeTheme(charts.ThemeOption{
		AxisStrokeColor:    charts.ColorFromHex(axisColor),
		AxisSplitLineColor: charts.ColorFromHex(gridColor),
		BackgroundColor:    charts.ColorWhite,
		TextColor:          charts.ColorFromHex(textColor),
		SeriesColors:       colors,
	})
	opt := charts.NewBarChartOptionWithData(values)
	opt.Theme = theme
	opt.Padding = charts.Box{Top: topPadding(c.YLabel), Left: 10, Right: 28, Bottom: 6, IsSet: true}
	opt.Legend.Show = charts.Ptr(false)
	opt.Title.Show = charts.Ptr(false)
	opt.CategoryAxis.Labels = labels
	opt.CategoryAxis.Title = c.XLabel
	opt.CategoryAxis.LabelFontStyle = charts.FontStyle{FontSize: axisFontSize, FontColor: charts.ColorFromHex(textColor)}
	opt.CategoryAxis.TitleFontStyle = charts.FontStyle{FontSize: axisFontSize, FontColor: charts.ColorFromHex(mutedColor)}
	opt.ValueAxis = []charts.ValueAxisOption{{
		LabelFontStyle: charts.FontStyle{FontSize: axisFontSize, FontColor: charts.ColorFromHex(textColor)},
	}}
	// Bars start at zero unless a value is negative: a cut axis would
	// make small differences look large.
	nonNegative, allZero := true, true
	for _, vs := range values {
		for _, v := range vs {
			if v < 0 {
				nonNegative = false
			}
			if v != 0 && v != charts.GetNullValue() {
				allZero = false
			}
		}
	}
	if allZero {
		return nil, notes, errAllZero
	}
	if nonNegative {
		opt.ValueAxis[0].Min = charts.Ptr(0.0)
	}
	p := charts.NewPainter(charts.PainterOptions{
		OutputFormat: charts.ChartOutputSVG,
		Width:        chartWidth,
		Height:       chartHeight,
		Theme:        theme,
	})
	if err := p.BarChart(opt); err != nil {
		return nil, notes, err
	}
	if c.YLabel != "" {
		p.Text(c.YLabel, yLabelX, yLabelY, 0, charts.FontStyle{FontSize: axisFontSize, FontColor: charts.ColorFromHex(mutedColor)})
	}
	svg, err := p.Bytes()
	if err != nil {
		return nil, notes, err
	}
	return svg, notes, nil
}
