package bench

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/tpproxy/tpproxy/bench/internal/htmlreport"
)

// Segments of the stacked CPU charts: who used the CPU. They keep their
// colours in every chart of the report.
const (
	segClient = "client"
	segProxy  = "proxy"
	segServer = "server"
	segOther  = "other"
	// segRestOfHost is the host's context switches not made by a watched
	// proxy or server (the client's among them).
	segRestOfHost = "rest of host"
)

// charts draws the workload's steps against client count. Every series is
// keyed by its target, so a target has one colour in the whole report;
// idSuffix tells the charts of several workloads apart; cpus is the
// machine's core count, for results that do not carry it per step.
func (w workloadSteps) charts(idSuffix string, cpus int) []htmlreport.Chart {
	if len(w.steps) == 0 {
		return nil
	}
	lo, hi := math.MaxInt, 0
	for _, s := range w.steps {
		lo, hi = min(lo, s.Threads), max(hi, s.Threads)
	}
	// Client counts spanning a factor of 8 or more get a log axis; a
	// single client count reads better as bars than as lone dots.
	logX, single := hi >= 8*lo, lo == hi
	chart := func(id, title, ylabel string) htmlreport.Chart {
		c := htmlreport.Chart{ID: id + idSuffix, Title: title, XLabel: "clients", YLabel: ylabel, LogX: logX}
		if single {
			c.Kind = htmlreport.BarChart
		}
		return c
	}
	series := func(target, name string, dashed bool, y func(StepResult) (float64, bool)) htmlreport.Series {
		sr := htmlreport.Series{Name: name, Key: target, Dashed: dashed}
		for _, s := range w.steps {
			if s.Target != target {
				continue
			}
			if v, ok := y(s); ok {
				sr.Points = append(sr.Points, htmlreport.Point{X: float64(s.Threads), Y: v})
			}
		}
		return sr
	}
	// How a chart tells a target's two series apart: dashed lines are
	// light bars (see htmlreport.Series.Dashed).
	solid, dashed := "solid", "dashed"
	if single {
		solid, dashed = "dark", "light"
	}
	always := func(f func(StepResult) float64) func(StepResult) (float64, bool) {
		return func(s StepResult) (float64, bool) { return f(s), true }
	}

	tps := chart("tps", "Throughput", "transactions/s")
	lat := chart("latency", "Latency: p90 "+solid+", p99 "+dashed, "ms")
	errs := chart("errors", "Failed transactions", "errors in the hold")
	errs.Empty = "No failed transactions in any step."
	queue := chart("queue", "tpproxy queue wait: per statement "+solid+", per queued statement "+dashed, "ms")
	for _, t := range w.targets {
		tps.Series = append(tps.Series, series(t, t, false, always(func(s StepResult) float64 { return s.TPS })))
		lat.Series = append(lat.Series,
			series(t, t+" p90", false, always(func(s StepResult) float64 { return s.Latency.P90 })),
			series(t, t+" p99", true, always(func(s StepResult) float64 { return s.Latency.P99 })))
		errs.Series = append(errs.Series, series(t, t, false, always(func(s StepResult) float64 { return float64(s.ErrorTotal) })))
		queued := func(f func(*ProxyStep) float64) func(StepResult) (float64, bool) {
			return func(s StepResult) (float64, bool) {
				if s.Proxy == nil {
					return 0, false
				}
				return f(s.Proxy), true
			}
		}
		for _, sr := range []htmlreport.Series{
			series(t, t+" per statement", false, queued(func(p *ProxyStep) float64 { return p.QueueWaitPerStmtMs })),
			series(t, t+" per queued statement", true, queued(func(p *ProxyStep) float64 { return p.QueueWaitAvgMs })),
		} {
			if len(sr.Points) > 0 {
				queue.Series = append(queue.Series, sr)
			}
		}
	}
	charts := []htmlreport.Chart{tps}
	if len(w.targets) > 1 {
		ratio := chart("ratio", "Relative to "+w.baseline+": TPS "+solid+" (higher is better), p99 "+dashed+" (lower is better)", "× "+w.baseline)
		charts = append(charts, w.ratioChart(ratio))
	}
	charts = append(charts, lat, errs, w.cpuChart(idSuffix, cpus))
	if c, ok := w.cpuPerStmtChart(idSuffix); ok {
		charts = append(charts, c)
	}
	if c, ok := w.ctxChart(idSuffix); ok {
		charts = append(charts, c)
	}
	if len(queue.Series) > 0 {
		charts = append(charts, queue)
	}
	return charts
}

// ratioChart divides each target's TPS and p99 by the baseline's at the
// same step, on a log axis so 2× and 0.5× are as far from 1. A step where
// the baseline has no transactions has no ratio and no point.
func (w workloadSteps) ratioChart(c htmlreport.Chart) htmlreport.Chart {
	c.LogY = c.Kind == htmlreport.LineChart
	ratio := func(t string, f func(StepResult) float64) []htmlreport.Point {
		var pts []htmlreport.Point
		for _, s := range w.steps {
			if s.Target != t {
				continue
			}
			b, ok := w.step(w.baseline, s.Threads)
			if ok && f(b) > 0 && f(s) > 0 {
				pts = append(pts, htmlreport.Point{X: float64(s.Threads), Y: f(s) / f(b)})
			}
		}
		return pts
	}
	var base []htmlreport.Point
	for _, s := range w.steps {
		if s.Target == w.baseline && s.TPS > 0 {
			base = append(base, htmlreport.Point{X: float64(s.Threads), Y: 1})
		}
	}
	c.Series = append(c.Series, htmlreport.Series{Name: w.baseline + " = 1", Key: w.baseline, Points: base})
	for _, t := range w.targets[1:] {
		c.Series = append(c.Series,
			htmlreport.Series{Name: t + " TPS", Key: t, Points: ratio(t, func(s StepResult) float64 { return s.TPS })},
			htmlreport.Series{Name: t + " p99", Key: t, Dashed: true, Points: ratio(t, func(s StepResult) float64 { return s.Latency.P99 })})
	}
	return c
}

// stackedByStep is a stacked chart with a group per client count and a
// bar per target, values from f (nil: the target did not run the step).
func (w workloadSteps) stackedByStep(id, title, ylabel string, segments []string, f func(StepResult) []float64) htmlreport.Chart {
	var threads []int
	for _, s := range w.steps {
		if !slices.Contains(threads, s.Threads) {
			threads = append(threads, s.Threads)
		}
	}
	slices.Sort(threads)
	st := &htmlreport.Stacks{Segments: segments}
	for _, n := range threads {
		// Labelled like the client axis of the line charts.
		g := htmlreport.StackGroup{Label: strconv.Itoa(n)}
		for _, t := range w.targets {
			b := htmlreport.Bar{Name: t}
			if s, ok := w.step(t, n); ok {
				b.Values = f(s)
			}
			g.Bars = append(g.Bars, b)
		}
		st.Groups = append(st.Groups, g)
	}
	return htmlreport.Chart{ID: id, Title: title, XLabel: "clients", YLabel: ylabel, Kind: htmlreport.StackedBarChart, Stacks: st}
}

// processCPU is the CPU use (100 = one core) and context switches of the
// relays and the server a step's statements went through; the ok flags
// say whether such a process was watched at all.
func processCPU(s StepResult) (relayPct, serverPct, relayCtx, serverCtx float64, relayOK, serverOK bool) {
	servers, relays := s.servingProcesses()
	for _, i := range relays {
		relayPct += s.Processes[i].CPUPct
		relayCtx += s.Processes[i].CtxSwitchesPerSec
	}
	for _, i := range servers {
		serverPct += s.Processes[i].CPUPct
		serverCtx += s.Processes[i].CtxSwitchesPerSec
	}
	return relayPct, serverPct, relayCtx, serverCtx, len(relays) > 0, len(servers) > 0
}

// localHost reports whether s's host figures are of this machine (where
// the client, the relays and the watched servers run), not of a database
// host read through node_exporter.
func localHost(s StepResult) bool {
	return s.Host != nil && (s.Host.Source == "" || s.Host.Source == "local")
}

// cpuChart stacks who used the CPU in each target's step: the load
// client, the target's proxy, its server and the rest of the machine
// (the host's busy time less the three). A proxy is 0 where a target has
// none; a server or the rest that was not measured is left out.
func (w workloadSteps) cpuChart(idSuffix string, cpus int) htmlreport.Chart {
	var anyRelay, anyServer, anyHost bool
	for _, s := range w.steps {
		_, _, _, _, r, sv := processCPU(s)
		anyRelay, anyServer, anyHost = anyRelay || r, anyServer || sv, anyHost || localHost(s)
	}
	segs := []string{segClient}
	if anyRelay {
		segs = append(segs, segProxy)
	}
	if anyServer {
		segs = append(segs, segServer)
	}
	if anyHost {
		segs = append(segs, segOther)
	}
	c := w.stackedByStep("cpu"+idSuffix, "CPU by process (100 = one core)", "% of one core", segs, func(s StepResult) []float64 {
		relay, server, _, _, _, serverOK := processCPU(s)
		v := []float64{s.ClientCPU.Pct}
		if anyRelay {
			v = append(v, relay) // no relay: the target has none
		}
		if anyServer {
			if !serverOK {
				server = math.NaN()
			}
			v = append(v, server)
		}
		if anyHost {
			other := math.NaN()
			cores := cmp.Or(s.ClientCPU.Cores, cpus)
			if localHost(s) && cores > 0 {
				used := s.ClientCPU.Pct + relay
				if serverOK {
					used += server
				}
				// Sampling windows differ a little; the rest is never
				// below zero.
				other = max(0, s.Host.CPUBusyPct*float64(cores)-used)
			}
			v = append(v, other)
		}
		return v
	})
	c.Empty = "No CPU figures were recorded."
	return c
}

// cpuPerStmtChart stacks the proxy's and the server's CPU time per
// statement, the cost of a statement with the client's left out.
func (w workloadSteps) cpuPerStmtChart(idSuffix string) (htmlreport.Chart, bool) {
	if !slices.ContainsFunc(w.steps, func(s StepResult) bool { return s.RelayCPUUsPerStmt > 0 || s.ServerCPUUsPerStmt > 0 }) {
		return htmlreport.Chart{}, false
	}
	return w.stackedByStep("cpu-stmt"+idSuffix, "CPU per statement: proxy and server", "µs/statement", []string{segProxy, segServer}, func(s StepResult) []float64 {
		server := s.ServerCPUUsPerStmt
		if server == 0 {
			server = math.NaN() // not a watched local process
		}
		return []float64{s.RelayCPUUsPerStmt, server}
	}), true
}

// ctxChart stacks the context switches per second of the proxy, the server
// and the rest of the host.
func (w workloadSteps) ctxChart(idSuffix string) (htmlreport.Chart, bool) {
	var anyRelay, anyServer, anyHost bool
	for _, s := range w.steps {
		_, _, _, _, r, sv := processCPU(s)
		anyRelay, anyServer, anyHost = anyRelay || r, anyServer || sv, anyHost || localHost(s)
	}
	if !anyRelay && !anyServer && !anyHost {
		return htmlreport.Chart{}, false
	}
	var segs []string
	if anyRelay {
		segs = append(segs, segProxy)
	}
	if anyServer {
		segs = append(segs, segServer)
	}
	if anyHost {
		segs = append(segs, segRestOfHost)
	}
	c := w.stackedByStep("ctx"+idSuffix, "Context switches by process", "switches/s", segs, func(s StepResult) []float64 {
		_, _, relay, server, _, serverOK := processCPU(s)
		var v []float64
		if anyRelay {
			v = append(v, relay)
		}
		if anyServer {
			if !serverOK {
				server = math.NaN()
			}
			v = append(v, server)
		}
		if anyHost {
			rest := math.NaN()
			if localHost(s) {
				rest = s.Host.CtxSwitchesPerSec - relay
				if serverOK {
					rest -= server
				}
				rest = max(0, rest)
			}
			v = append(v, rest)
		}
		return v
	})
	c.Empty = "No context switches were recorded."
	return c, true
}
