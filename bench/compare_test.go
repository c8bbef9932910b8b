package bench

import (
	"math"
	"testing"
)

func result(target, workload string, threads int, tps, p99 float64, errs uint64, conns int64) StepResult {
	return StepResult{
		Target: target, Workload: workload, Threads: threads, TPS: tps, QPS: tps * 20,
		Latency:    Latency{P50: p99 / 4, P95: p99 / 2, P99: p99, P999: p99 * 2, Max: p99 * 3},
		ErrorTotal: errs, SuccessPct: 100, Server: &ServerStatus{ThreadsConnectedMax: conns},
	}
}

func TestCompareMath(t *testing.T) {
	c := Compare(result("direct", "oltp_read_write", 300, 1000, 40, 0, 317), result("proxy", "oltp_read_write", 300, 1500, 30, 3, 17))
	if c.Step != "oltp_read_write/300" || c.Direct != "direct" || c.Proxy != "proxy" {
		t.Errorf("labels %+v", c)
	}
	for _, tc := range []struct {
		name          string
		ratio, change float64
		better        int
	}{
		{MetricTPS, 1.5, 50, 1},
		{MetricQPS, 1.5, 50, 1},
		{MetricP99, 0.75, -25, 1},
		{MetricServerConn, 17.0 / 317, (17.0/317 - 1) * 100, 1},
		{MetricSuccess, 1, 0, 0},
	} {
		m, ok := c.Metric(tc.name)
		if !ok {
			t.Fatalf("no metric %s", tc.name)
		}
		if m.Ratio == nil || math.Abs(*m.Ratio-tc.ratio) > 1e-9 || math.Abs(*m.ChangePct-tc.change) > 1e-9 {
			t.Errorf("%s: ratio %v change %v, want %v %v", tc.name, m.Ratio, m.ChangePct, tc.ratio, tc.change)
		}
		if m.Better() != tc.better {
			t.Errorf("%s: better %d, want %d", tc.name, m.Better(), tc.better)
		}
	}
	// Errors from 0 to 3: no ratio, and worse.
	m, _ := c.Metric(MetricErrors)
	if m.Ratio != nil || m.ChangePct != nil || m.Better() != -1 || FormatRatio(m) != "n/a" {
		t.Errorf("errors 0 → 3: %+v", m)
	}
	// Worse latency is -1.
	c = Compare(result("direct", "w", 1, 100, 10, 0, 2), result("proxy", "w", 1, 50, 20, 0, 2))
	if m, _ := c.Metric(MetricP99); m.Better() != -1 || FormatRatio(m) != "2.00x (+100%)" {
		t.Errorf("p99 doubled: %+v %s", m, FormatRatio(m))
	}
	if m, _ := c.Metric(MetricTPS); m.Better() != -1 || FormatRatio(m) != "0.50x (-50%)" {
		t.Errorf("tps halved: %s", FormatRatio(m))
	}
	if m, _ := c.Metric(MetricErrors); *m.Ratio != 1 || m.Better() != 0 || FormatRatio(m) != "=" {
		t.Errorf("errors 0 → 0: %+v", m)
	}
	// Server metrics only when both sides have them.
	d := result("direct", "w", 1, 1, 1, 0, 1)
	d.Server = nil
	if _, ok := Compare(d, result("proxy", "w", 1, 1, 1, 0, 1)).Metric(MetricServerConn); ok {
		t.Error("server metric without a direct sample")
	}
}

func TestPair(t *testing.T) {
	steps := []StepResult{
		result("direct", "a", 8, 1, 1, 0, 1), result("proxy", "a", 8, 2, 1, 0, 1),
		result("direct", "b", 8, 3, 1, 0, 1), // no proxy run
		result("proxy", "a", 300, 4, 1, 0, 1), result("direct", "a", 300, 5, 1, 0, 1),
	}
	got := Pair(steps, "direct", "proxy")
	if len(got) != 2 || got[0].Step != "a/8" || got[1].Step != "a/300" {
		t.Fatalf("pairs %+v", got)
	}
	if m, _ := got[1].Metric(MetricTPS); m.Direct != 5 || m.Proxy != 4 {
		t.Errorf("a/300 paired wrongly: %+v", m)
	}
}
