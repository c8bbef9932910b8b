package htmlreport

import (
	"strconv"
	"strings"
)

// stylesheet is the page's only CSS. It must not load anything (no url(),
// no @import): the report is one self-contained file.
var stylesheet = baseCSS + swatchCSS()

const baseCSS = `
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #fff; color: ` + textColor + `;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 960px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 1.75em; line-height: 1.25; margin: 0 0 .2em; }
h2 { font-size: 1.3em; margin: 2em 0 .6em; padding-bottom: .25em; border-bottom: 1px solid #d0d7de; }
p { margin: .6em 0; max-width: 46em; }
.subtitle { color: ` + mutedColor + `; margin: 0; }
.toc ol { margin: 1em 0 0; padding-left: 1.4em; }
.toc a { color: inherit; }
.table-wrap { overflow-x: auto; margin: 1em 0; }
table { border-collapse: collapse; font-size: 14px; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding-bottom: .4em; }
th, td { border: 1px solid #d0d7de; padding: 4px 10px; text-align: left; vertical-align: top; }
thead th { background: #f6f8fa; }
tbody tr:nth-child(even) { background: #fafbfc; }
th.num, td.num { text-align: right; white-space: nowrap; }
figure.chart { margin: 1.6em 0; break-inside: avoid; page-break-inside: avoid; }
figcaption { font-weight: 600; margin-bottom: .4em; }
.plot { max-width: 902px; border: 1px solid ` + plotBorderColor + `; background: #fff; }
.plot svg { display: block; width: 100%; height: auto; }
figure.chart.empty { margin: 1em 0; }
.nodata { font-weight: normal; color: ` + mutedColor + `; }
.lead { font-size: 1.15em; font-weight: 600; margin: .8em 0; }
.legend { list-style: none; display: flex; flex-wrap: wrap; gap: 2px 18px; margin: .5em 0 0; padding: 0; font-size: 14px; }
.legend li { display: flex; align-items: center; }
.legend .legend-title { color: ` + mutedColor + `; }
.swatch { display: inline-block; width: 20px; height: 0; margin-right: 6px; border-top: 3px solid ` + textColor + `; }
.swatch.dash { border-top-style: dashed; }
.swatch.band { border-top-width: 5px; }
.swatch.box { width: 12px; height: 12px; border-top: 0; }
.note { font-size: 13px; color: ` + mutedColor + `; margin: .3em 0 0; }
@media print {
  @page { margin: 14mm; }
  body { font-size: 10.5pt; background: #fff; color: #000; }
  main { max-width: none; padding: 0; }
  .toc { display: none; }
  h2 { break-after: avoid; page-break-after: avoid; }
  section, figure.chart, .table-wrap, .lead { break-inside: avoid; page-break-inside: avoid; }
  .plot { max-width: 100%; }
  .table-wrap { overflow: visible; }
  thead th, tbody tr:nth-child(even) { background: #fff; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
`

// swatchCSS gives legend swatches the series and segment colours, by
// class, so the markup carries no inline styles.
func swatchCSS() string {
	var b strings.Builder
	for i, c := range palette {
		b.WriteString(".swatch.c" + strconv.Itoa(i) + " { border-top-color: " + c + "; }\n")
		b.WriteString(".swatch.c" + strconv.Itoa(i) + ".tint { border-top-color: " + tint(c) + "; }\n")
	}
	for i, c := range segmentPalette {
		b.WriteString(".swatch." + segmentClass(i) + " { background: " + c + "; }\n")
	}
	return b.String()
}
