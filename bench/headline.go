package bench

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// The report's headlines: one sentence per workload with what a reader
// wants first — every target's TPS and p99 against the first target's, at
// the step with the most clients.

// workloadSteps are one workload's measured steps (confirmation reruns
// left out) and its targets in the order they first ran.
type workloadSteps struct {
	name    string
	steps   []StepResult
	targets []string
	// baseline is the target the others are divided by: the first
	// comparison's direct side, else the first target that ran.
	baseline string
}

// byWorkload groups r's steps by workload, in the order workloads first ran.
func (r *Report) byWorkload() []workloadSteps {
	var out []workloadSteps
	for _, s := range r.Steps {
		if s.Confirm {
			continue
		}
		i := slices.IndexFunc(out, func(w workloadSteps) bool { return w.name == s.Workload })
		if i < 0 {
			out = append(out, workloadSteps{name: s.Workload})
			i = len(out) - 1
		}
		w := &out[i]
		w.steps = append(w.steps, s)
		if !slices.Contains(w.targets, s.Target) {
			w.targets = append(w.targets, s.Target)
		}
	}
	for i := range out {
		w := &out[i]
		w.baseline = w.targets[0]
		for _, c := range r.Comparisons {
			if c.Workload == w.name && slices.Contains(w.targets, c.Direct) {
				w.baseline = c.Direct
				break
			}
		}
		// The baseline first, so it is also the first series of every
		// chart and legend.
		w.targets = append([]string{w.baseline}, slices.DeleteFunc(w.targets, func(t string) bool { return t == w.baseline })...)
	}
	return out
}

// step returns target's step at threads clients.
func (w workloadSteps) step(target string, threads int) (StepResult, bool) {
	for _, s := range w.steps {
		if s.Target == target && s.Threads == threads {
			return s, true
		}
	}
	return StepResult{}, false
}

// lastCommon is the most clients both targets ran with, 0 if none.
func (w workloadSteps) lastCommon(a, b string) int {
	n := 0
	for _, s := range w.steps {
		if s.Target == a {
			if _, ok := w.step(b, s.Threads); ok {
				n = max(n, s.Threads)
			}
		}
	}
	return n
}

// headline states the workload's finding, e.g. "oltp_point_select at 1,000
// clients: tpproxy 2.1× direct TPS, p99 0.16×." A target that did not run
// the top step with the baseline is compared at the last step they share,
// and says so; a baseline without transactions is not divided by.
func (w workloadSteps) headline() string {
	base := w.baseline
	if len(w.targets) == 1 {
		top := 0
		for _, s := range w.steps {
			top = max(top, s.Threads)
		}
		s, _ := w.step(base, top)
		return w.name + " at " + clients(top) + ": only " + base + " ran, " + tpsAndP99(s) + failed(s) + "."
	}
	top := 0
	for _, t := range w.targets[1:] {
		top = max(top, w.lastCommon(base, t))
	}
	if top == 0 {
		return w.name + ": no step ran on " + base + " and another target, nothing to compare."
	}
	var parts []string
	for _, t := range w.targets[1:] {
		n := w.lastCommon(base, t)
		if n == 0 {
			parts = append(parts, t+" ran no step that "+base+" ran")
			continue
		}
		b, _ := w.step(base, n)
		s, _ := w.step(t, n)
		p := t
		if n != top {
			p += " (at " + clients(n) + ", its last step with " + base + ")"
		}
		switch {
		case b.TPS <= 0:
			p += " " + tpsAndP99(s) + " where " + base + " completed no transactions"
		case s.TPS <= 0:
			p += " completed no transactions"
		default:
			p += " " + formatTimes(s.TPS/b.TPS) + " " + base + " TPS"
			if b.Latency.P99 > 0 && s.Latency.P99 > 0 {
				p += ", p99 " + formatTimes(s.Latency.P99/b.Latency.P99)
			}
		}
		parts = append(parts, p+failed(s))
	}
	sentence := w.name + " at " + clients(top) + ": " + strings.Join(parts, "; ")
	if b, ok := w.step(base, top); ok && b.ErrorTotal > 0 {
		sentence += "; " + base + " had " + plural(b.ErrorTotal, "failed transaction", "failed transactions")
	}
	return sentence + "." + w.byClients()
}

// byClients is the headline's second sentence when the workload ran more
// than one client count: every target's TPS over the baseline's at each
// count both ran (where the baseline completed transactions), e.g.
// " TPS against direct by clients: tpproxy 0.62× at 8, 2.1× at 1,000."
// A proxy's cost with few clients and its gain with many are both in the
// headline, not only the top step's.
func (w workloadSteps) byClients() string {
	var counts []int
	for _, s := range w.steps {
		if s.Target == w.baseline && !slices.Contains(counts, s.Threads) {
			counts = append(counts, s.Threads)
		}
	}
	if len(counts) < 2 {
		return ""
	}
	slices.Sort(counts)
	var parts []string
	for _, t := range w.targets[1:] {
		var at []string
		for _, n := range counts {
			b, okb := w.step(w.baseline, n)
			s, oks := w.step(t, n)
			if okb && oks && b.TPS > 0 {
				at = append(at, formatTimes(s.TPS/b.TPS)+" at "+formatCount(float64(n)))
			}
		}
		if len(at) > 0 {
			parts = append(parts, t+" "+strings.Join(at, ", "))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " TPS against " + w.baseline + " by clients: " + strings.Join(parts, "; ") + "."
}

func tpsAndP99(s StepResult) string {
	if s.TPS <= 0 {
		return "no transactions completed"
	}
	return formatCount(s.TPS) + " TPS, p99 " + formatMillis(s.Latency.P99) + " ms"
}

func failed(s StepResult) string {
	if s.ErrorTotal == 0 {
		return ""
	}
	return ", " + plural(s.ErrorTotal, "failed transaction", "failed transactions")
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return formatCount(float64(n)) + " " + many
}

func clients(n int) string {
	if n == 1 {
		return "1 client"
	}
	return formatCount(float64(n)) + " clients"
}

// formatTimes prints a ratio with two significant digits: "2.1×",
// "0.16×", "12×", "1.0×" (rounded, not equal).
func formatTimes(r float64) string {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0):
		return "n/a"
	case r == 0:
		return "0×"
	case r < 0.001:
		return "<0.001×"
	}
	mag := int(math.Floor(math.Log10(r)))
	s := strconv.FormatFloat(r, 'f', max(0, 1-mag), 64)
	if v, _ := strconv.ParseFloat(s, 64); v >= math.Pow(10, float64(mag+1)) {
		// Rounded up to the next power of ten: 9.96 is "10×", not "10.0×".
		s = strconv.FormatFloat(r, 'f', max(0, -mag), 64)
	}
	return s + "×"
}

// formatCount rounds v to a whole number with thousands separators:
// 1234.5 → "1,235".
func formatCount(v float64) string {
	s := strconv.FormatFloat(math.Round(math.Abs(v)), 'f', 0, 64)
	var b strings.Builder
	if v < 0 && s != "0" {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
