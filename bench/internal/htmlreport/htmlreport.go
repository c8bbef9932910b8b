// Package htmlreport renders a benchmark report as one self-contained HTML
// file: inline CSS, charts as inline SVG drawn server-side with
// github.com/go-analyze/charts, no scripts and no references to anything
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
// paragraphs, tables, charts.
type Section struct {
	Heading    string
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
)

// Chart is one figure. Series colours are assigned by position in Series,
// from the same palette in every chart, so a target keeps its colour across
// charts when callers keep the series order.
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
	// Kind is LineChart (default) or BarChart.
	Kind ChartKind
}

// Series is one named set of points, e.g. one benchmark target.
type Series struct {
	Name   string
	Points []Point
}

// Point is one sample. X is numeric: clients, or seconds since start for
// time series. NaN and ±Inf are allowed and are not drawn; on a line chart a
// point with a non-finite Y breaks the line.
type Point struct{ X, Y float64 }

// ErrChartID reports a chart ID that is empty or used twice in one page.
var ErrChartID = errors.New("htmlreport: invalid chart ID")

// ErrChartKind reports a Chart.Kind that is neither LineChart nor BarChart.
var ErrChartKind = errors.New("htmlreport: unknown chart kind")

// Render writes p as one HTML document to w.
//
// The page is validated (chart IDs, kinds) and rendered completely in memory
// before anything is written, so w receives either the whole document or
// nothing. A chart without drawable points shows a "no data" placeholder. If
// the chart library rejects a chart, its figure shows the library's message
// instead and the rest of the report is still written: losing a long
// benchmark's report to one bad chart would be worse. Output is
// deterministic: identical input gives identical bytes.
func Render(w io.Writer, p Page) error {
	if err := validate(p); err != nil {
		return err
	}
	vp := viewPage{Title: p.Title, Subtitle: p.Subtitle, CSS: template.CSS(stylesheet)}
	for i, s := range p.Sections {
		vs := viewSection{
			Anchor:     fmt.Sprintf("sec-%d", i+1),
			Heading:    s.Heading,
			Paragraphs: s.Paragraphs,
		}
		for _, t := range s.Tables {
			vs.Tables = append(vs.Tables, newViewTable(t))
		}
		for _, c := range s.Charts {
			vs.Charts = append(vs.Charts, renderChart(c))
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
			if c.Kind != LineChart && c.Kind != BarChart {
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
	Legend      []legendItem
	Notes       []string
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
<figure class="chart" id="{{.ID}}" data-chart="{{.ID}}">
<figcaption>{{.Title}}</figcaption>
{{- if .Placeholder}}
<div class="plot nodata" role="img" aria-label="{{.Title}}: {{.Placeholder}}">{{.Placeholder}}</div>
{{- else}}
<div class="plot">{{.SVG}}</div>
{{- end}}
{{- if .Legend}}
<ul class="legend">
{{- range .Legend}}
<li><span class="swatch {{.Class}}"></span>{{.Name}}</li>
{{- end}}
</ul>
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
