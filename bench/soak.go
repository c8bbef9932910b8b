package bench

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
)

// SoakConfig is a long stable load with an optional spike (tpbench soak).
type SoakConfig struct {
	Title    string
	Target   Target
	Workload string
	Schema   Schema
	Threads  int
	// Duration is the whole soak; Sample the time-series interval.
	Duration time.Duration
	Sample   time.Duration
	Warmup   time.Duration
	// SpikeThreads extra clients join at SpikeAt for SpikeDuration (0:
	// no spike).
	SpikeAt       time.Duration
	SpikeThreads  int
	SpikeDuration time.Duration
	ConnectPerTx  bool
	ServerDSN     string
	Monitor       MonitorConfig
	Out           io.Writer
	Interactive   bool
	Logger        *slog.Logger
}

func (c *SoakConfig) validate() error {
	switch {
	case c.Target.DSN == "" || c.Target.Name == "":
		return fmt.Errorf("%w: soak needs one --target NAME=DSN", ErrBadRamp)
	case c.Threads < 1:
		return fmt.Errorf("%w: --threads must be at least 1", ErrBadRamp)
	case c.Duration <= 0 || c.Sample <= 0 || c.Sample > c.Duration:
		return fmt.Errorf("%w: want --duration > 0 and 0 < --sample <= --duration", ErrBadRamp)
	case c.SpikeThreads < 0 || c.SpikeAt < 0 || c.SpikeDuration < 0 || c.Warmup < 0:
		return fmt.Errorf("%w: spike settings and --warmup must not be negative", ErrBadRamp)
	case c.SpikeThreads > 0 && (c.SpikeDuration <= 0 || c.SpikeAt+c.SpikeDuration > c.Duration):
		return fmt.Errorf("%w: the spike (--spike-at %s + --spike-duration %s) must lie within --duration %s",
			ErrBadRamp, c.SpikeAt, c.SpikeDuration, c.Duration)
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Title == "" {
		c.Title = "tpbench soak"
	}
	return nil
}

// SoakSample is one interval of a soak. Latencies are 0 when no
// transaction completed in the interval.
type SoakSample struct {
	ElapsedSec float64 `json:"elapsed_s"`
	// Spike is set while the spike's extra clients run.
	Spike        bool    `json:"spike,omitempty"`
	Transactions uint64  `json:"transactions"`
	Errors       uint64  `json:"errors"`
	TPS          float64 `json:"tps"`
	ErrorPct     float64 `json:"error_pct"`
	P50          float64 `json:"p50_ms"`
	P90          float64 `json:"p90_ms"`
	P99          float64 `json:"p99_ms"`
	// Host figures over the interval (when available).
	HostCPUPct        float64 `json:"host_cpu_pct"`
	MemUsedPct        float64 `json:"mem_used_pct"`
	CtxSwitchesPerSec float64 `json:"ctx_switches_per_s"`
	// RSS and CPU of the local server and proxy processes (0: unknown).
	ServerRSS    uint64  `json:"server_rss_bytes"`
	ProxyRSS     uint64  `json:"proxy_rss_bytes"`
	ServerCPUPct float64 `json:"server_cpu_pct"`
	ProxyCPUPct  float64 `json:"proxy_cpu_pct"`
}

// SoakOutcome is a soak's time series, its spike and what looks wrong.
type SoakOutcome struct {
	SampleSec float64      `json:"sample_s"`
	Samples   []SoakSample `json:"samples"`
	// Spike is the spike clients' own result.
	Spike *StepResult `json:"spike,omitempty"`
	// Flags are findings: TPS decay, a rising error rate, growing memory.
	Flags []string `json:"flags"`
}

// Soak holds the load for the whole duration, sampling it, with the
// spike's extra clients in the middle. The report's single step is the
// whole soak (warmup excluded); Soak holds the series.
func Soak(ctx context.Context, cfg SoakConfig) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// The spike's goroutine prints too.
	cfg.Out = &lockedWriter{w: cfg.Out}
	wl, err := NewWorkload(cfg.Workload, cfg.Schema)
	if err != nil {
		return nil, err
	}
	if err := CheckTarget(ctx, cfg.Target, wl); err != nil {
		return nil, err
	}
	mon, err := newMonitor(ctx, cfg.Monitor, cfg.ServerDSN, []Target{cfg.Target}, cfg.Logger)
	if err != nil {
		return nil, err
	}
	defer mon.close()
	rc := RampConfig{Title: cfg.Title, Workload: cfg.Workload, Schema: cfg.Schema, Warmup: cfg.Warmup,
		StepDuration: cfg.Duration, ConnectPerTx: cfg.ConnectPerTx}
	rep := newReport(rc)
	out := &SoakOutcome{SampleSec: cfg.Sample.Seconds()}
	rep.Soak = out

	var (
		spikeDone          = make(chan struct{})
		spikeMu            sync.Mutex // guards spikeFrom, spikeTo
		spikeFrom, spikeTo time.Time
		spikeRes           StepResult
		spikeErr           error
	)
	spikeCtx, cancelSpike := context.WithCancel(ctx)
	defer cancelSpike()
	var spikeTimer *time.Timer
	if cfg.SpikeThreads > 0 {
		// Counted from now, not from the end of connecting: the spike
		// may start a connect's time early.
		spikeTimer = time.AfterFunc(cfg.Warmup+cfg.SpikeAt, func() {
			defer close(spikeDone)
			spikeMu.Lock()
			spikeFrom = time.Now()
			spikeMu.Unlock()
			fmt.Fprintf(cfg.Out, "spike: %d more clients for %s\n", cfg.SpikeThreads, cfg.SpikeDuration)
			spikeRes, spikeErr = Run(spikeCtx, Step{
				Target: cfg.Target, Workload: wl, Threads: cfg.SpikeThreads, Duration: cfg.SpikeDuration,
				ConnectPerTx: cfg.ConnectPerTx, Seed: 1 << 40, Logger: cfg.Logger,
			})
			spikeMu.Lock()
			spikeTo = time.Now()
			spikeMu.Unlock()
		})
	}
	inSpike := func(iv Interval) bool {
		spikeMu.Lock()
		defer spikeMu.Unlock()
		begin := iv.At.Add(-time.Duration(iv.Seconds * float64(time.Second)))
		return !spikeFrom.IsZero() && iv.At.After(spikeFrom) && (spikeTo.IsZero() || begin.Before(spikeTo))
	}
	ss := newSoakSampler(ctx, mon)
	res, err := Run(ctx, Step{
		Target: cfg.Target, Workload: wl, Threads: cfg.Threads, Duration: cfg.Duration, Warmup: cfg.Warmup,
		ServerDSN: cfg.ServerDSN, ConnectPerTx: cfg.ConnectPerTx, Seed: 1, Logger: cfg.Logger, monitor: mon,
		Sample: cfg.Sample,
		OnSample: func(iv Interval) {
			smp := ss.sample(iv)
			smp.Spike = inSpike(iv)
			out.Samples = append(out.Samples, smp)
			if cfg.Interactive {
				fmt.Fprint(cfg.Out, "\r\033[K")
			}
			fmt.Fprintf(cfg.Out, "%s  %8.1f tps  p90 %s ms  p99 %s ms  errors %d%s\n",
				iv.Elapsed.Round(time.Second), smp.TPS, formatMillis(smp.P90), formatMillis(smp.P99), smp.Errors, spikeMark(smp.Spike))
		},
		Progress: progressLine(cfg.Out, cfg.Interactive, 1, 1, stepLabel(wl.Name(), cfg.Threads), cfg.Target.Name, cfg.Warmup, cfg.Duration),
	})
	if spikeTimer != nil && !spikeTimer.Stop() {
		if err != nil {
			cancelSpike()
		}
		<-spikeDone
		if spikeErr == nil {
			out.Spike = &spikeRes
		} else if err == nil {
			rep.Notes = append(rep.Notes, "The spike did not run: "+spikeErr.Error())
		}
	}
	if err == nil {
		rep.Steps = append(rep.Steps, res)
	}
	out.Flags = soakFlags(out.Samples)
	rep.Notes = append(rep.Notes, out.Flags...)
	rep.Finished = time.Now()
	return rep, err
}

func spikeMark(b bool) string {
	if b {
		return "  (spike)"
	}
	return ""
}

// soakSampler adds the host's and processes' figures to each interval,
// with the monitor's readings: each interval ends one and begins the next.
type soakSampler struct {
	ctx  context.Context
	mon  *monitor
	prev *holdReading
}

func newSoakSampler(ctx context.Context, mon *monitor) *soakSampler {
	return &soakSampler{ctx: ctx, mon: mon, prev: mon.begin(ctx, "")}
}

func (s *soakSampler) sample(iv Interval) SoakSample {
	nz := func(v float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	out := SoakSample{
		ElapsedSec: iv.Elapsed.Seconds(), Transactions: iv.Transactions, Errors: iv.Errors, TPS: iv.TPS,
		P50: nz(iv.P50), P90: nz(iv.P90), P99: nz(iv.P99),
	}
	if n := iv.Transactions + iv.Errors; n > 0 {
		out.ErrorPct = float64(iv.Errors) / float64(n) * 100
	}
	var r StepResult
	s.mon.end(s.ctx, "", s.prev, &r)
	s.prev = s.mon.begin(s.ctx, "")
	if h := r.Host; h != nil {
		out.HostCPUPct, out.MemUsedPct, out.CtxSwitchesPerSec = h.CPUBusyPct, h.MemUsedPct, h.CtxSwitchesPerSec
	}
	for _, p := range r.Processes {
		if p.Role == "server" {
			out.ServerRSS, out.ServerCPUPct = p.RSSBytes, p.CPUPct
		} else {
			out.ProxyRSS, out.ProxyCPUPct = p.RSSBytes, p.CPUPct
		}
	}
	return out
}

// Thresholds of soakFlags.
const (
	soakDecayPct     = 10 // TPS drop between the first and last quarter
	soakErrorRisePct = 0.1
	soakMemGrowthPct = 10
	soakMinSamples   = 8
)

// soakFlags compares the first and last quarter of the samples outside
// the spike: TPS decay, a rising error rate, growing server or proxy
// memory.
func soakFlags(samples []SoakSample) []string {
	var calm []SoakSample
	for _, s := range samples {
		if !s.Spike {
			calm = append(calm, s)
		}
	}
	if len(calm) < soakMinSamples {
		return []string{fmt.Sprintf("Only %d samples outside the spike: too few to judge trends (want %d).", len(calm), soakMinSamples)}
	}
	q := len(calm) / 4
	first, last := calm[:q], calm[len(calm)-q:]
	mean := func(ss []SoakSample, f func(SoakSample) float64) float64 {
		var sum float64
		for _, s := range ss {
			sum += f(s)
		}
		return sum / float64(len(ss))
	}
	var flags []string
	tps := func(s SoakSample) float64 { return s.TPS }
	if a, b := mean(first, tps), mean(last, tps); a > 0 && (a-b)/a*100 > soakDecayPct {
		flags = append(flags, fmt.Sprintf("TPS decay: %.1f in the first quarter, %.1f in the last (%.1f %% lower).", a, b, (a-b)/a*100))
	}
	errPct := func(s SoakSample) float64 { return s.ErrorPct }
	if a, b := mean(first, errPct), mean(last, errPct); b-a > soakErrorRisePct {
		flags = append(flags, fmt.Sprintf("Rising error rate: %.3f %% in the first quarter, %.3f %% in the last.", a, b))
	}
	for _, m := range []struct {
		what string
		f    func(SoakSample) float64
	}{
		{"server", func(s SoakSample) float64 { return float64(s.ServerRSS) }},
		{"proxy", func(s SoakSample) float64 { return float64(s.ProxyRSS) }},
	} {
		a, b := mean(first, m.f), mean(last, m.f)
		if a > 0 && (b-a)/a*100 > soakMemGrowthPct && slope(calm, m.f) > 0 {
			flags = append(flags, fmt.Sprintf("Rising %s memory: RSS %.1f MB in the first quarter, %.1f MB in the last (+%.0f %%).",
				m.what, a/1e6, b/1e6, (b-a)/a*100))
		}
	}
	return flags
}

// slope is the least-squares slope of f over the samples' index.
func slope(ss []SoakSample, f func(SoakSample) float64) float64 {
	n := float64(len(ss))
	var sx, sy, sxy, sxx float64
	for i, s := range ss {
		x, y := float64(i), f(s)
		sx += x
		sy += y
		sxy += x * y
		sxx += x * x
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// SoakCSVFile is the soak's time series WriteFiles writes.
const SoakCSVFile = "soak.csv"

// WriteCSV writes the time series, one row per sample.
func (o *SoakOutcome) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"elapsed_s", "spike", "transactions", "errors", "tps", "error_pct", "p50_ms", "p90_ms", "p99_ms",
		"host_cpu_pct", "mem_used_pct", "ctx_switches_per_s", "server_rss_bytes", "proxy_rss_bytes", "server_cpu_pct", "proxy_cpu_pct"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, s := range o.Samples {
		_ = cw.Write([]string{f(s.ElapsedSec), strconv.FormatBool(s.Spike), strconv.FormatUint(s.Transactions, 10),
			strconv.FormatUint(s.Errors, 10), f(s.TPS), f(s.ErrorPct), f(s.P50), f(s.P90), f(s.P99),
			f(s.HostCPUPct), f(s.MemUsedPct), f(s.CtxSwitchesPerSec), strconv.FormatUint(s.ServerRSS, 10),
			strconv.FormatUint(s.ProxyRSS, 10), f(s.ServerCPUPct), f(s.ProxyCPUPct)})
	}
	cw.Flush()
	return cw.Error()
}

// lockedWriter serialises writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
