package sysstat

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// maxScrapeBytes bounds a node_exporter response. A large host's full
// output is a few MB; more means the URL is not a node_exporter.
const maxScrapeBytes = 32 << 20

// NodeExporter reads samples of a remote machine by scraping the metrics
// URL of its Prometheus node_exporter, e.g. http://db:9100/metrics. A nil
// client means a new http.Client without a timeout: the ctx passed to
// Sample bounds each request.
//
// Sample needs the families node_cpu_seconds_total, node_memory_MemTotal_bytes,
// node_memory_MemAvailable_bytes, node_network_receive_bytes_total,
// node_network_transmit_bytes_total and node_context_switches_total, which
// the default collectors (cpu, meminfo, netdev, stat) export;
// node_network_speed_bytes (collector netclass) is optional and its
// absence leaves NetSpeed 0. An interface is left out of NetRx/NetTx when
// its name starts with one of the prefixes virtual interfaces get from
// the kernel, Docker, libvirt and Kubernetes network plugins (veth,
// docker, br, virbr, vnet, tap, tun, cni, flannel, cali, cilium, vxlan,
// genev, kube, lxc, weave, bond, team, dummy, ifb, wg, tailscale, sit,
// gre, ip6, ipip, nodelocaldns).
//
// Every error wraps ErrScrape; a cancelled or expired ctx is wrapped too.
func NodeExporter(url string, client *http.Client) Host {
	if client == nil {
		client = &http.Client{}
	}
	return &nodeExporter{url: url, client: client}
}

type nodeExporter struct {
	url    string
	client *http.Client
}

// Sample scrapes the URL once.
func (n *nodeExporter) Sample(ctx context.Context) (HostSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.url, nil)
	if err != nil {
		return HostSample{}, fmt.Errorf("%w: %w", ErrScrape, err)
	}
	// The text format; not protobuf or OpenMetrics, which a node_exporter
	// would otherwise be free to choose.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := n.client.Do(req)
	if err != nil {
		return HostSample{}, fmt.Errorf("%w: %w", ErrScrape, err)
	}
	// The exporter gathers every collector before it writes the first
	// byte, so the counters are from about when the headers arrived.
	at := time.Now()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return HostSample{}, fmt.Errorf("%w: %s: HTTP status %s", ErrScrape, n.url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxScrapeBytes+1))
	if err != nil {
		return HostSample{}, fmt.Errorf("%w: %s: reading body: %w", ErrScrape, n.url, err)
	}
	if len(body) > maxScrapeBytes {
		return HostSample{}, fmt.Errorf("%w: %s: response larger than %d bytes", ErrScrape, n.url, maxScrapeBytes)
	}
	s, err := parseNodeExporter(bytes.NewReader(body))
	if err != nil {
		return HostSample{}, fmt.Errorf("%w: %s: %w", ErrScrape, n.url, err)
	}
	s.At = at
	s.Source = n.url
	return s, nil
}

// Metric families Sample reads.
const (
	famCPU       = "node_cpu_seconds_total"
	famMemTotal  = "node_memory_MemTotal_bytes"
	famMemAvail  = "node_memory_MemAvailable_bytes"
	famRx        = "node_network_receive_bytes_total"
	famTx        = "node_network_transmit_bytes_total"
	famSpeed     = "node_network_speed_bytes"
	famCtxSwitch = "node_context_switches_total"
)

// parseNodeExporter reads a node_exporter's text exposition. Errors do
// not wrap ErrScrape; Sample adds it.
func parseNodeExporter(r io.Reader) (HostSample, error) {
	var s HostSample
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return s, err
	}
	var missing []string
	family := func(name string) []*dto.Metric {
		mf := mfs[name]
		if mf == nil {
			missing = append(missing, name)
			return nil
		}
		return mf.GetMetric()
	}
	cpuMetrics := family(famCPU)
	memTotal := family(famMemTotal)
	memAvail := family(famMemAvail)
	rxMetrics := family(famRx)
	txMetrics := family(famTx)
	ctxMetrics := family(famCtxSwitch)
	if len(missing) > 0 {
		return s, fmt.Errorf("metric families missing: %s", strings.Join(missing, ", "))
	}

	cpus := map[string]bool{}
	for _, m := range cpuMetrics {
		v, err := counterValue(famCPU, m)
		if err != nil {
			return s, err
		}
		cpus[label(m, "cpu")] = true
		switch label(m, "mode") {
		case "user":
			s.CPU.User += v
		case "nice":
			s.CPU.Nice += v
		case "system":
			s.CPU.System += v
		case "idle":
			s.CPU.Idle += v
		case "iowait":
			s.CPU.IOWait += v
		case "irq":
			s.CPU.IRQ += v
		case "softirq":
			s.CPU.SoftIRQ += v
		case "steal":
			s.CPU.Steal += v
		}
	}
	s.CPUs = len(cpus)

	if s.MemTotal, err = singleUint(famMemTotal, memTotal); err != nil {
		return s, err
	}
	if s.MemAvailable, err = singleUint(famMemAvail, memAvail); err != nil {
		return s, err
	}
	if s.ContextSwitches, err = singleUint(famCtxSwitch, ctxMetrics); err != nil {
		return s, err
	}

	byDev := map[string]*netIf{}
	var ifs []*netIf
	dev := func(m *dto.Metric) *netIf {
		name := label(m, "device")
		i := byDev[name]
		if i == nil {
			i = &netIf{name: name, physical: !virtualName(name)}
			byDev[name] = i
			ifs = append(ifs, i)
		}
		return i
	}
	for _, fam := range []struct {
		name    string
		metrics []*dto.Metric
		dst     func(*netIf) *uint64
	}{
		{famRx, rxMetrics, func(i *netIf) *uint64 { return &i.rx }},
		{famTx, txMetrics, func(i *netIf) *uint64 { return &i.tx }},
		{famSpeed, mfs[famSpeed].GetMetric(), func(i *netIf) *uint64 { return &i.speed }},
	} {
		for _, m := range fam.metrics {
			f, ok := value(m)
			if fam.name == famSpeed && ok && f <= 0 { // unknown speed: -125000 (-1 Mb/s)
				continue
			}
			v, err := toUint(fam.name, f, ok)
			if err != nil {
				return s, err
			}
			*fam.dst(dev(m)) = v
		}
	}
	list := make([]netIf, 0, len(ifs))
	for _, i := range ifs {
		list = append(list, *i)
	}
	addInterfaces(&s, list)
	return s, nil
}

// virtualPrefixes start the names of interfaces whose traffic also
// crosses a physical interface; NodeExporter documents the list.
var virtualPrefixes = [...]string{
	"veth", "docker", "br", "virbr", "vnet", "tap", "tun", "cni", "flannel", "cali",
	"cilium", "vxlan", "genev", "kube", "lxc", "weave", "bond", "team", "dummy", "ifb",
	"wg", "tailscale", "sit", "gre", "ip6", "ipip", "nodelocaldns",
}

func virtualName(name string) bool {
	for _, p := range virtualPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// value is a counter's, gauge's or untyped metric's value.
func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

// counterValue is m's value if it is a finite, non-negative number.
func counterValue(fam string, m *dto.Metric) (float64, error) {
	v, ok := value(m)
	if !ok {
		return 0, fmt.Errorf("%s is not a counter or gauge", fam)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("%s has value %v", fam, v)
	}
	return v, nil
}

func toUint(fam string, v float64, ok bool) (uint64, error) {
	if !ok {
		return 0, fmt.Errorf("%s is not a counter or gauge", fam)
	}
	// 1<<64 itself does not fit; NaN fails both comparisons.
	if !(v >= 0 && v < 1<<64) {
		return 0, fmt.Errorf("%s has value %v", fam, v)
	}
	return uint64(v), nil
}

// singleUint is the value of a family that has one unlabelled metric.
func singleUint(fam string, ms []*dto.Metric) (uint64, error) {
	if len(ms) != 1 {
		return 0, fmt.Errorf("%s has %d metrics, want 1", fam, len(ms))
	}
	v, ok := value(ms[0])
	return toUint(fam, v, ok)
}
