package htmlreport

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-analyze/charts/chartdraw"
)

// Axis ticks are computed here rather than by the library so that ranges
// start at zero where that is honest, log axes are true log10 scales, and the
// labels are short ("12k" instead of "12000.00").

// niceStep returns a step of 1, 2, 2.5 or 5 times a power of ten, at least
// raw.
func niceStep(raw float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag*(1+1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}

// linearTicks covers [lo, hi] with about target+1 evenly spaced ticks. With
// fromZero the axis includes zero, so bar heights and line levels are not
// exaggerated.
func linearTicks(lo, hi float64, target int, fromZero bool) []chartdraw.Tick {
	if fromZero {
		lo, hi = min(lo, 0), max(hi, 0)
	}
	if hi == lo {
		pad := math.Abs(lo) * 0.1
		if pad == 0 {
			pad = 1
		}
		lo, hi = lo-pad, hi+pad
		if fromZero && lo < 0 && hi-2*pad >= 0 {
			lo = 0
		}
	}
	step := niceStep((hi - lo) / float64(target))
	start := math.Floor(lo/step) * step
	end := math.Ceil(hi/step) * step
	n := int(math.Round((end - start) / step))
	if !finite(step) || step <= 0 || !finite(start) || !finite(end) || n < 1 || n > 1000 {
		// Extreme magnitudes; two plain ticks still give a valid range.
		return []chartdraw.Tick{{Value: lo, Label: formatExact(lo)}, {Value: hi, Label: formatExact(hi)}}
	}
	div, suffix := unitFor(max(math.Abs(start), math.Abs(end)))
	dec := decimalsFor(step / div)
	ticks := make([]chartdraw.Tick, 0, n+1)
	for i := 0; i <= n; i++ {
		v := start + float64(i)*step
		ticks = append(ticks, chartdraw.Tick{Value: v, Label: formatScaled(v, div, suffix, dec)})
	}
	return ticks
}

// logTicks covers [lo, hi], given in log10 space, with ticks at powers of
// ten, plus 2× and 5× when the range spans few decades.
func logTicks(lo, hi float64) []chartdraw.Tick {
	a, b := math.Floor(lo), math.Ceil(hi)
	if a == b {
		a, b = a-1, b+1
	}
	every := max(1, math.Ceil((b-a)/10))
	var ticks []chartdraw.Tick
	for k := a; k <= b; k += every {
		ticks = append(ticks, chartdraw.Tick{Value: k, Label: formatCompact(math.Pow(10, k))})
		if b-a <= 2 && k < b {
			for _, m := range []float64{2, 5} {
				v := m * math.Pow(10, k)
				ticks = append(ticks, chartdraw.Tick{Value: math.Log10(v), Label: formatCompact(v)})
			}
		}
	}
	if last := ticks[len(ticks)-1].Value; last < hi {
		// every > 1 stepped past b; close the range above the data.
		ticks = append(ticks, chartdraw.Tick{Value: last + every, Label: formatCompact(math.Pow(10, last+every))})
	}
	return ticks
}

// valueTicks puts one tick at each given X (log10 space): client counts that
// double per step read best labelled exactly.
func valueTicks(set map[float64]bool) []chartdraw.Tick {
	vals := make([]float64, 0, len(set))
	for v := range set {
		vals = append(vals, v)
	}
	slices.Sort(vals)
	ticks := make([]chartdraw.Tick, len(vals))
	for i, v := range vals {
		ticks[i] = chartdraw.Tick{Value: v, Label: formatCompact(math.Pow(10, v))}
	}
	return ticks
}

func unitFor(maxAbs float64) (div float64, suffix string) {
	switch {
	case maxAbs >= 1e9:
		return 1e9, "G"
	case maxAbs >= 1e6:
		return 1e6, "M"
	case maxAbs >= 1e4:
		return 1e3, "k"
	}
	return 1, ""
}

// decimalsFor is the number of decimals that shows every multiple of step
// exactly.
func decimalsFor(step float64) int {
	for d := 0; d < 10; d++ {
		x := step * math.Pow(10, float64(d))
		if math.Abs(x-math.Round(x)) < 1e-6*max(1, x) {
			return d
		}
	}
	return 10
}

func formatScaled(v, div float64, suffix string, dec int) string {
	if math.Abs(v/div) >= 1e6 {
		// Beyond any benchmark number; keep the label short.
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	s := strconv.FormatFloat(v/div, 'f', dec, 64)
	if strings.Trim(s, "-0.") == "" {
		s = "0" // no "-0", and zero needs no unit
		return s
	}
	return s + suffix
}

// formatCompact formats one value on its own, e.g. 2000 → "2k", 0.005 →
// "0.005", 64 → "64".
func formatCompact(v float64) string {
	div, suffix := unitFor(math.Abs(v))
	return formatExact(v/div) + suffix
}

// formatExact formats v with up to 10 significant digits, enough for any
// client count or step while hiding float noise such as 10^log10(64).
func formatExact(v float64) string {
	s := strconv.FormatFloat(v, 'g', 10, 64)
	if s == "-0" {
		return "0"
	}
	return s
}
