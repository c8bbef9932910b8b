package sysstat_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/bench/internal/sysstat"
)

func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/metrics"
}

func serveBody(t *testing.T, body string) string {
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte(body))
	})
}

func fixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/node_exporter.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNodeExporter scrapes a node_exporter's text exposition: CPU modes
// summed over CPUs, memory and network in bytes, lo set apart, the
// virtual docker0 and veth left out, eth1's unknown speed (-125000)
// ignored. The request asks for the text format.
func TestNodeExporter(t *testing.T) {
	body := fixture(t)
	var accept string
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		_, _ = w.Write([]byte(body))
	})
	before := time.Now()
	s, err := sysstat.NodeExporter(url, nil).Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(accept, "text/plain") {
		t.Errorf("Accept = %q, want text/plain", accept)
	}
	if s.Source != url || s.At.Before(before) {
		t.Errorf("Source %q At %v", s.Source, s.At)
	}
	cpu := []struct {
		name      string
		got, want float64
	}{
		{"User", s.CPU.User, 5365.94 + 5505.47},
		{"Nice", s.CPU.Nice, 2.5},
		{"System", s.CPU.System, 1867.67 + 2100.44},
		{"Idle", s.CPU.Idle, 7597.92 + 7094.85},
		{"IOWait", s.CPU.IOWait, 58.98 + 144.47},
		{"IRQ", s.CPU.IRQ, 0},
		{"SoftIRQ", s.CPU.SoftIRQ, 487.02 + 556.28},
		{"Steal", s.CPU.Steal, 57.69 + 64.52},
	}
	for _, c := range cpu {
		checkNear(t, c.name, c.got, c.want)
	}
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"CPUs", uint64(s.CPUs), 2},
		{"MemTotal", s.MemTotal, 25276502016},
		{"MemAvailable", s.MemAvailable, 24823742464},
		{"NetRx", s.NetRx, 324567680 + 12345678901234},
		{"NetTx", s.NetTx, 1015850 + 98765432109},
		{"LoRx", s.LoRx, 162609740708},
		{"LoTx", s.LoTx, 162609740708},
		{"NetSpeed", s.NetSpeed, 125000000},
		{"ContextSwitches", s.ContextSwitches, 281569816},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// TestNodeExporterNoSpeed: without the netclass collector there is no
// node_network_speed_bytes; the sample is still good, with the speed
// unknown.
func TestNodeExporterNoSpeed(t *testing.T) {
	var kept []string
	for _, line := range strings.Split(fixture(t), "\n") {
		if !strings.Contains(line, "node_network_speed_bytes") {
			kept = append(kept, line)
		}
	}
	s, err := sysstat.NodeExporter(serveBody(t, strings.Join(kept, "\n")), nil).Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.NetSpeed != 0 || s.NetRx == 0 {
		t.Errorf("NetSpeed %d NetRx %d, want 0 and > 0", s.NetSpeed, s.NetRx)
	}
}

// TestNodeExporterErrors: whatever goes wrong, the error wraps ErrScrape.
func TestNodeExporterErrors(t *testing.T) {
	without := func(family string) string {
		var kept []string
		for _, line := range strings.Split(fixture(t), "\n") {
			if !strings.Contains(line, family) {
				kept = append(kept, line)
			}
		}
		return strings.Join(kept, "\n")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/metrics"
	ln.Close()

	for _, c := range []struct {
		name, url, want string
	}{
		{"status 500", serve(t, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "collector failed", http.StatusInternalServerError)
		}), "500"},
		{"not found", serve(t, http.NotFound), "404"},
		{"garbage", serveBody(t, "<html><body>Grafana</body></html>\n"), "parsing"},
		{"missing families", serveBody(t, without("node_context_switches_total")), "node_context_switches_total"},
		{"missing memory", serveBody(t, without("node_memory_MemAvailable_bytes")), "node_memory_MemAvailable_bytes"},
		{"empty", serveBody(t, ""), "missing"},
		{"negative counter", serveBody(t, strings.Replace(fixture(t),
			`node_cpu_seconds_total{cpu="0",mode="user"} 5365.94`, `node_cpu_seconds_total{cpu="0",mode="user"} -1`, 1)), "-1"},
		{"NaN gauge", serveBody(t, strings.Replace(fixture(t),
			"node_memory_MemTotal_bytes 2.5276502016e+10", "node_memory_MemTotal_bytes NaN", 1)), "NaN"},
		{"two context switch counters", serveBody(t, strings.Replace(fixture(t),
			"node_context_switches_total 2.81569816e+08", "node_context_switches_total{a=\"1\"} 1\nnode_context_switches_total{a=\"2\"} 2", 1)), "2 metrics"},
		{"unreachable", closed, "dial"},
		{"bad URL", "http://[::1", "parse"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := sysstat.NodeExporter(c.url, nil).Sample(context.Background())
			if !errors.Is(err, sysstat.ErrScrape) {
				t.Fatalf("Sample = %v, want ErrScrape", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

// TestNodeExporterCancel: a scrape that hangs ends with the context, and
// the error says so.
func TestNodeExporterCancel(t *testing.T) {
	arrived := make(chan struct{})
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	_, err := sysstat.NodeExporter(url, &http.Client{}).Sample(ctx)
	if !errors.Is(err, sysstat.ErrScrape) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Sample = %v, want ErrScrape and context.Canceled", err)
	}
}
