package htmlreport

// Test seams: the colours are an implementation detail, but tests must know
// them to tell one series from another in SVG markup and in screenshots.

// SeriesColor is the "#rrggbb" colour of series i.
func SeriesColor(i int) string { return seriesColor(i) }

// PlotBorderColor is the "#rrggbb" colour framing every plot area.
const PlotBorderColor = plotBorderColor

// KeyColor is the "#rrggbb" colour series or bars of key have in page p.
func KeyColor(p Page, key string) string { return seriesColor(newPageColors(p).keys[key]) }

// SegmentColor is the "#rrggbb" colour of stacked bar segment name in page p.
func SegmentColor(p Page, name string) string {
	return segmentColor(newPageColors(p).segments[name])
}

// Tint is the fill of a Dashed bar series of colour hex.
func Tint(hex string) string { return tint(hex) }
