package sysstat

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzNodeExporter: the scrape body comes from the network; whatever it
// holds, parsing returns a sample or an error and never panics, and a
// sample's figures come from finite, non-negative values.
func FuzzNodeExporter(f *testing.F) {
	b, err := os.ReadFile("testdata/node_exporter.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("node_context_switches_total 1\n"))
	f.Add([]byte("# TYPE node_cpu_seconds_total counter\nnode_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} +Inf\n"))
	f.Add([]byte("node_network_speed_bytes{device=\"eth0\"} 1e300\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseNodeExporter(bytes.NewReader(data))
		if err != nil {
			return
		}
		if s.CPU.Total() < 0 || s.CPU.Total() != s.CPU.Total() {
			t.Errorf("CPU times %+v", s.CPU)
		}
	})
}

// FuzzProcParsers feeds the same bytes to every /proc parser: none may
// panic.
func FuzzProcParsers(f *testing.F) {
	for _, name := range []string{"stat", "meminfo", "net/dev", "net/tcp", "net/tcp6", "4242/stat", "4242/status"} {
		b, err := os.ReadFile(filepath.Join("testdata/proc", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("1 ) ( 2"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _, _ = parseStat(data)
		_, _, _ = parseMeminfo(data)
		_, _ = parseNetDev(data)
		_, _ = parsePidStatus(data)
		var s ProcSample
		_ = parsePidStat(data, &s)
		_ = parseNetTCP(data, 3306, map[uint64]bool{})
	})
}
