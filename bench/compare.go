package bench

import (
	"strconv"
)

// Names of the metrics Compare reports.
const (
	MetricTPS        = "tps"
	MetricQPS        = "qps"
	MetricP50        = "p50_ms"
	MetricP95        = "p95_ms"
	MetricP99        = "p99_ms"
	MetricP999       = "p99_9_ms"
	MetricMax        = "max_ms"
	MetricErrors     = "errors"
	MetricSuccess    = "success_pct"
	MetricClientCPU  = "client_cpu_pct"
	MetricServerConn = "server_threads_connected_max"
	MetricThreadsNew = "server_threads_created"
	// MetricRelayCPU and MetricServerCPU are StepResult's
	// RelayCPUUsPerStmt and ServerCPUUsPerStmt.
	MetricRelayCPU  = "relay_cpu_us_per_stmt"
	MetricServerCPU = "server_cpu_us_per_stmt"
)

// Metric is one figure of a direct and a proxy run of the same step.
type Metric struct {
	Name string `json:"name"`
	// HigherIsBetter tells how to read the change: TPS up is good, p99 up
	// is bad.
	HigherIsBetter bool    `json:"higher_is_better"`
	Direct         float64 `json:"direct"`
	Proxy          float64 `json:"proxy"`
	// Ratio is Proxy/Direct and ChangePct (Ratio-1)×100; both are null
	// when Direct is 0 and Proxy is not (and 1 and 0 when both are 0).
	Ratio     *float64 `json:"ratio"`
	ChangePct *float64 `json:"change_pct"`
}

// newMetric computes the ratio and change of proxy over direct.
func newMetric(name string, higherIsBetter bool, direct, proxy float64) Metric {
	m := Metric{Name: name, HigherIsBetter: higherIsBetter, Direct: direct, Proxy: proxy}
	var ratio float64
	switch {
	case direct == 0 && proxy == 0:
		ratio = 1
	case direct == 0:
		return m
	default:
		ratio = proxy / direct
	}
	change := (ratio - 1) * 100
	m.Ratio, m.ChangePct = &ratio, &change
	return m
}

// Better reports whether the proxy did better (1), worse (-1) or the
// same (0) on this metric.
func (m Metric) Better() int {
	var up bool
	switch {
	case m.Ratio == nil: // from 0 to something
		up = true
	case *m.Ratio == 1:
		return 0
	default:
		up = *m.Ratio > 1
	}
	if up == m.HigherIsBetter {
		return 1
	}
	return -1
}

// Comparison pairs a direct and a proxy run of the same step.
type Comparison struct {
	// Step is "<workload>/<threads>".
	Step     string `json:"step"`
	Workload string `json:"workload"`
	Threads  int    `json:"threads"`
	// Direct and Proxy are the targets' names.
	Direct  string   `json:"direct"`
	Proxy   string   `json:"proxy"`
	Metrics []Metric `json:"metrics"`
}

// stepLabel names a step without its target.
func stepLabel(workload string, threads int) string {
	return workload + "/" + strconv.Itoa(threads)
}

// Compare puts a proxy run next to the direct run of the same step. Server
// metrics are included when both runs have them.
func Compare(direct, proxy StepResult) Comparison {
	c := Comparison{
		Step:     direct.Label(),
		Workload: direct.Workload,
		Threads:  direct.Threads,
		Direct:   direct.Target,
		Proxy:    proxy.Target,
	}
	add := func(name string, higher bool, d, p float64) {
		c.Metrics = append(c.Metrics, newMetric(name, higher, d, p))
	}
	add(MetricTPS, true, direct.TPS, proxy.TPS)
	add(MetricQPS, true, direct.QPS, proxy.QPS)
	add(MetricP50, false, direct.Latency.P50, proxy.Latency.P50)
	add(MetricP95, false, direct.Latency.P95, proxy.Latency.P95)
	add(MetricP99, false, direct.Latency.P99, proxy.Latency.P99)
	add(MetricP999, false, direct.Latency.P999, proxy.Latency.P999)
	add(MetricMax, false, direct.Latency.Max, proxy.Latency.Max)
	add(MetricErrors, false, float64(direct.ErrorTotal), float64(proxy.ErrorTotal))
	add(MetricSuccess, true, direct.SuccessPct, proxy.SuccessPct)
	add(MetricClientCPU, false, direct.ClientCPU.Pct, proxy.ClientCPU.Pct)
	if direct.Server != nil && proxy.Server != nil {
		add(MetricServerConn, false, float64(direct.Server.ThreadsConnectedMax), float64(proxy.Server.ThreadsConnectedMax))
		add(MetricThreadsNew, false, float64(direct.Server.ThreadsCreated), float64(proxy.Server.ThreadsCreated))
	}
	if direct.RelayCPUUsPerStmt > 0 || proxy.RelayCPUUsPerStmt > 0 {
		add(MetricRelayCPU, false, direct.RelayCPUUsPerStmt, proxy.RelayCPUUsPerStmt)
	}
	if direct.ServerCPUUsPerStmt > 0 && proxy.ServerCPUUsPerStmt > 0 {
		add(MetricServerCPU, false, direct.ServerCPUUsPerStmt, proxy.ServerCPUUsPerStmt)
	}
	return c
}

// Pair compares every step that ran on both targets, in the order the
// direct runs appear in results.
func Pair(results []StepResult, direct, proxy string) []Comparison {
	var out []Comparison
	for _, d := range results {
		if d.Target != direct || d.Confirm {
			continue
		}
		for _, p := range results {
			if p.Target == proxy && !p.Confirm && p.Workload == d.Workload && p.Threads == d.Threads {
				out = append(out, Compare(d, p))
				break
			}
		}
	}
	return out
}

// Metric returns the named metric.
func (c Comparison) Metric(name string) (Metric, bool) {
	for _, m := range c.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}
