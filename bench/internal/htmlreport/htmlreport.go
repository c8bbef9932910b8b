// Package htmlreport renders a benchmark report as one self-contained HTML
// file: inline CSS, charts as inline SVG drawn server-side (lines and bars
// with github.com/go-analyze/charts, stacked bars by the package), no scripts and no references to anything
// outside the document, so the file can be mailed, archived or opened
// offline and looks the same everywhere.
//
// The package knows nothing about benchmarks: callers map their results into
// the neutral [Page] model and call [Render].
package htmlreport

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
)

// Page is a whole report.
type Page struct {
	Title    string
	Subtitle string // e.g. date, machine
	Sections []Section
}

// Section is a headed part of the page. Its content is rendered in the order
// lead, paragraphs, tables, charts.
type Section struct {
	Heading string
	// Lead are the section's findings, one sentence each, set larger than
	// paragraphs so a reader sees them first (plain text, escaped).
	Lead       []string
	Paragraphs []string // plain text, escaped
	Tables     []Table
	Charts     []Chart
}

// Table is a plain data table. Rows may be shorter or longer than Header;
// cells are rendered as given.
type Table struct {
	Caption string
	Header  []string
	Rows    [][]string
	// NumericCols marks right-aligned columns (optional), by 0-based index.
	NumericCols []int
}

// ChartKind selects how a chart draws its series.
type ChartKind int

const (
	// LineChart draws each series as a line over a numeric X axis, so series
	// with different X points are placed correctly. It is the zero value.
	LineChart ChartKind = iota
	// BarChart draws grouped bars. Its X axis is categorical: the sorted union
	// of all finite X values, with no bar where a series has no point.
	BarChart
	// StackedBarChart draws Chart.Stacks: groups of stacked bars. Series,
	// LogX and LogY are not used.
	StackedBarChart
)

// Chart is one figure. Series colours come from the page, by Series.Key:
// one key has one colour in every chart (see [Series]).
type Chart struct {
	// ID must be non-empty and unique in the page; it becomes the figure's id
	// and data-chart attributes.
	ID             string
	Title          string
	XLabel, YLabel string
	// LogY draws the Y axis on a log10 scale. Points with Y <= 0 cannot be
	// placed and are skipped (the figure says how many). Line charts only;
	// bar charts ignore it.
	LogY bool
	// LogX draws the X axis on a log10 scale, which suits client counts that
	// double at each step. Points with X <= 0 are skipped. Line charts only.
	LogX   bool
	Series []Series
	// Kind is LineChart (default), BarChart or StackedBarChart.
	Kind ChartKind
	// Stacks is the data of a StackedBarChart.
	Stacks *Stacks
	// Empty is the line of text shown instead of a plot that would show
	// nothing: no drawable value, or only zeros (an axis from -1 to 1 around
	// a flat line says nothing). Default "No data." or "All values are 0.".
	Empty string
}

// Series is one named set of points, e.g. one benchmark target.
type Series struct {
	Name string
	// Key is what the series is about, e.g. a benchmark target. Series with
	// the same key have the same colour in every chart and legend of the
	// page; keys take the palette's colours in the order they first appear
	// in the page (series keys and stacked bar keys alike). Empty means
	// Name.
	Key string
	// Dashed draws a line series with a dashed stroke, to tell two series
	// of one key apart (p90 solid, p99 dashed). A bar series is filled with
	// a light tint of its colour instead.
	Dashed bool
	Points []Point
}

// Stacks is the data of a StackedBarChart: groups side by side along the X
// axis (e.g. one per client count), in each a bar per key (e.g. per
// target), each bar a stack of segments (e.g. the CPU used by client, proxy
// and server). Segments have colours of their own, by name, the same in
// every stacked chart of the page; the band under each bar has its key's
// colour.
type Stacks struct {
	// Segments name the parts of every bar, bottom to top.
	Segments []string
	Groups   []StackGroup
}

// StackGroup is one X category of a stacked bar chart.
type StackGroup struct {
	Label string
	// Bars are drawn left to right. A bar without values keeps its slot, so
	// a key stays in the same place in every group.
	Bars []Bar
}

// Bar is one stack.
type Bar struct {
	// Name labels the bar; Key is as in Series (empty means Name).
	Name, Key string
	// Values are the heights of the segments, in the order of
	// Stacks.Segments. A missing, NaN, infinite or negative value is not
	// drawn, and a note says so.
	Values []float64
}

// Point is one sample. X is numeric: clients, or seconds since start for
// time series. NaN and ±Inf are allowed and are not drawn; on a line chart a
// point with a non-finite Y breaks the line.
type Point struct{ X, Y float64 }

// ErrChartID reports a chart ID that is empty or used twice in one page.
var ErrChartID = errors.New("htmlreport: invalid chart ID")

// ErrChartKind reports a Chart.Kind that is not one of the ChartKind
// constants.
var ErrChartKind = errors.New("htmlreport: unknown chart kind")

// Render writes p as one HTML document to w.
//
// The page is validated (chart IDs, kinds) and rendered completely in memory
// before anything is written, so w receives either the whole document or
// nothing. A chart without drawable points, or with only zeros, is one line
// of text (Chart.Empty). If
// the chart library rejects a chart, its figure shows the library's message
// instead and the rest of the report is still written: losing a long
// benchmark's report to one bad chart would be worse. Output is
// deterministic: identical input gives identical bytes.
func Render(w io.Writer, p Page) error {
	if err := validate(p); err != nil {
		return err
	}
	vp := viewPage{Title: p.Title, Subtitle: p.Subtitle, CSS: template.CSS(stylesheet)}
	pal := newPageColors(p)
	for i, s := range p.Sections {
		vs := viewSection{
			Anchor:     fmt.Sprintf("sec-%d", i+1),
			Heading:    s.Heading,
			Lead:       s.Lead,
			Paragraphs: s.Paragraphs,
		}
		for _, t := range s.Tables {
			vs.Tables = append(vs.Tables, newViewTable(t))
		}
		for _, c := range s.Charts {
			vs.Charts = append(vs.Charts, renderChart(c, pal))
		}
		vp.Sections = append(vp.Sections, vs)
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, vp); err != nil {
		return fmt.Errorf("htmlreport: execute template: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("htmlreport: write: %w", err)
	}
	return nil
}

func validate(p Page) error {
	seen := make(map[string]bool)
	for si, s := range p.Sections {
		for ci, c := range s.Charts {
			if c.ID == "" {
				return fmt.Errorf("%w: section %d chart %d (%q) has an empty ID", ErrChartID, si, ci, c.Title)
			}
			if seen[c.ID] {
				return fmt.Errorf("%w: %q is used by more than one chart", ErrChartID, c.ID)
			}
			seen[c.ID] = true
			if c.Kind != LineChart && c.Kind != BarChart && c.Kind != StackedBarChart {
				return fmt.Errorf("%w: chart %q has kind %d", ErrChartKind, c.ID, c.Kind)
			}
		}
	}
	return nil
}

// The view types are what the template sees: everything already decided, so
// the template holds no logic beyond loops.
type viewPage struct {
	Title, Subtitle string
	CSS             template.CSS
	Sections        []viewSection
}

type viewSection struct {
	Anchor     string
	Heading    string
	Lead       []string
	Paragraphs []string
	Tables     []viewTable
	Charts     []viewChart
}

type viewTable struct {
	Caption string
	Header  []viewCell
	Rows    [][]viewCell
}

type viewCell struct {
	Text string
	Num  bool
}

type viewChart struct {
	ID, Title string
	// SVG is the chart markup produced by the chart library (text inside it
	// escaped by the library) with the namespace attributes stripped.
	SVG template.HTML
	// Placeholder replaces SVG when there is nothing to draw.
	Placeholder string
	Legend      []legendGroup
	Notes       []string
}

// legendGroup is one line of a legend, e.g. a stacked chart's segments.
type legendGroup struct {
	Title string // optional, e.g. "Bars, left to right:"
	Items []legendItem
}

type legendItem struct {
	Name  string
	Class string // swatch colour class, see stylesheet
}

func newViewTable(t Table) viewTable {
	num := make(map[int]bool, len(t.NumericCols))
	for _, c := range t.NumericCols {
		num[c] = true
	}
	vt := viewTable{Caption: t.Caption}
	for i, h := range t.Header {
		vt.Header = append(vt.Header, viewCell{Text: h, Num: num[i]})
	}
	for _, r := range t.Rows {
		row := make([]viewCell, len(r))
		for i, c := range r {
			row[i] = viewCell{Text: c, Num: num[i]}
		}
		vt.Rows = append(vt.Rows, row)
	}
	return vt
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>{{.CSS}}</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}}</h1>
{{- with .Subtitle}}
<p class="subtitle">{{.}}</p>
{{- end}}
</header>
{{- if gt (len .Sections) 1}}
<nav class="toc"><ol>
{{- range .Sections}}
{{- if .Heading}}
<li><a href="#{{.Anchor}}">{{.Heading}}</a></li>
{{- end}}
{{- end}}
</ol></nav>
{{- end}}
{{- range .Sections}}
<section id="{{.Anchor}}">
{{- with .Heading}}
<h2>{{.}}</h2>
{{- end}}
{{- range .Lead}}
<p class="lead">{{.}}</p>
{{- end}}
{{- range .Paragraphs}}
<p>{{.}}</p>
{{- end}}
{{- range .Tables}}
<div class="table-wrap">
<table>
{{- with .Caption}}
<caption>{{.}}</caption>
{{- end}}
{{- if .Header}}
<thead><tr>{{range .Header}}<th{{if .Num}} class="num"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
{{- end}}
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td{{if .Num}} class="num"{{end}}>{{.Text}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
</div>
{{- end}}
{{- range .Charts}}
{{- if .Placeholder}}
<figure class="chart empty" id="{{.ID}}" data-chart="{{.ID}}">
<figcaption>{{.Title}}: <span class="nodata">{{.Placeholder}}</span></figcaption>
{{- else}}
<figure class="chart" id="{{.ID}}" data-chart="{{.ID}}">
<figcaption>{{.Title}}</figcaption>
<div class="plot">{{.SVG}}</div>
{{- range .Legend}}
<ul class="legend">
{{- with .Title}}
<li class="legend-title">{{.}}</li>
{{- end}}
{{- range .Items}}
<li><span class="swatch {{.Class}}"></span>{{.Name}}</li>
{{- end}}
</ul>
{{- end}}
{{- end}}
{{- range .Notes}}
<p class="note">{{.}}</p>
{{- end}}
</figure>
{{- end}}
</section>
{{- end}}
</main>
</body>
</html>
`))
