package htmlreport

// Test seams: the colours are an implementation detail, but tests must know
// them to tell one series from another in SVG markup and in screenshots.

// SeriesColor is the "#rrggbb" colour of series i.
func SeriesColor(i int) string { return seriesColor(i) }

// PlotBorderColor is the "#rrggbb" colour framing every plot area.
const PlotBorderColor = plotBorderColor
