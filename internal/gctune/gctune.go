// Package gctune bounds the Go collector's headroom in bytes rather than
// as a percentage of the live heap.
//
// GOGC=100 lets the heap grow by as much again as was live after the last
// collection before the next one starts, and the runtime keeps about 10%
// more than that goal in memory. That suits a heap of short-lived
// objects; a proxy's live heap is mostly its sessions, which stay, while
// what it allocates per statement is small (2.4 MB/s at 64 sysbench
// read/write clients). Holding 19,000 idle sessions, GOGC=100 doubled
// their memory: each cost 3.2 KB of RSS for 1.3 KB of live heap.
//
// A Tuner sets GOGC, once a second, so that the headroom is Headroom
// bytes, or what the process allocated in the last second if that is
// more (so that the tuner never makes the collector run more than about
// once a second), as a percentage of the live heap: never above the GOGC
// the process started with (100 unless the environment says otherwise)
// and never below MinPercent. A small heap therefore keeps GOGC as it is;
// only a heap larger than Headroom gets a smaller percentage.
//
// A smaller percentage applies from the next collection, and a proxy whose
// sessions have all connected and now idle allocates almost nothing: the
// next collection may be the runtime's forced one, two minutes later, and
// until then the heap keeps what the connection burst left, and the
// runtime keeps the memory of the goal it set then. So when the tuner
// has lowered GOGC since the last collection and none ran in the last
// second, it runs one (runtime.GC), after which the runtime's scavenger
// gives back what is beyond the new goal.
package gctune

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MinPercent is the least GOGC a Tuner sets: past a live heap of
// Headroom × 10 the headroom grows with it again.
const MinPercent = 10

// Every is how often Run looks at the heap.
const Every = time.Second

// Tuner sets GOGC from the live heap (see the package comment).
type Tuner struct {
	headroom atomic.Int64 // bytes; 0: GOGC as the process started
	percent  atomic.Int64 // the GOGC in force
	// max is the GOGC the process started with; off (GOGC=off or <0):
	// the tuner leaves the collector alone.
	max int
	off bool
	// read reads the heap; set sets GOGC (debug.SetGCPercent); collect
	// runs a collection (runtime.GC).
	read    func() heap
	set     func(int) int
	collect func()
	// last and lastAt are step's previous reading.
	last   heap
	lastAt time.Time
	// cyclePercent is the GOGC in force when the last collection was seen.
	cyclePercent int
	// collections counts the collections the tuner ran.
	collections atomic.Int64
}

// heap is a reading of the runtime's heap.
type heap struct {
	live   uint64 // live after the last collection
	allocs uint64 // allocated since the start
	cycles uint64 // collections since the start
}

// New returns a tuner for this process's collector with the given
// headroom (0: leave GOGC as it is).
func New(headroom int64) *Tuner {
	p := startPercent()
	t := &Tuner{max: p, off: p < 0, read: readHeap, set: debug.SetGCPercent, collect: runtime.GC}
	t.headroom.Store(headroom)
	t.percent.Store(int64(p))
	t.cyclePercent = p
	return t
}

// startPercent is the GOGC the process runs with (negative: off).
func startPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	v := s[0].Value.Uint64()
	if v > 1<<30 { // GOGC=off reads as a huge value or wraps
		return -1
	}
	return int(v)
}

var heapSamples = []string{"/gc/heap/live:bytes", "/gc/heap/allocs:bytes", "/gc/cycles/total:gc-cycles"}

func readHeap() heap {
	s := make([]metrics.Sample, len(heapSamples))
	for i, n := range heapSamples {
		s[i].Name = n
	}
	metrics.Read(s)
	var v [3]uint64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	return heap{live: v[0], allocs: v[1], cycles: v[2]}
}

// SetHeadroom changes the headroom (a reload); 0 puts GOGC back as the
// process started. It takes effect at the next step.
func (t *Tuner) SetHeadroom(b int64) { t.headroom.Store(b) }

// Headroom is the configured headroom in bytes.
func (t *Tuner) Headroom() int64 { return t.headroom.Load() }

// Percent is the GOGC in force.
func (t *Tuner) Percent() int { return int(t.percent.Load()) }

// Disabled reports whether the process runs with GOGC=off, which the
// tuner leaves alone.
func (t *Tuner) Disabled() bool { return t.off }

// want is the GOGC for a live heap with allocRate bytes allocated per
// second, at most ceiling (the start's GOGC).
func want(headroom int64, live, allocRate uint64, ceiling int) int {
	if headroom <= 0 || live == 0 {
		return ceiling
	}
	p := max(uint64(headroom), allocRate) * 100 / live
	if p >= uint64(ceiling) {
		return ceiling
	}
	return int(max(p, MinPercent))
}

// step reads the heap and sets GOGC when it should change; a heap whose
// GOGC went down since its last collection, and where none ran since the
// last step, gets one.
func (t *Tuner) step(now time.Time) {
	if t.off {
		return
	}
	h := t.read()
	var rate uint64
	quiet := false
	if !t.lastAt.IsZero() {
		if d := now.Sub(t.lastAt); d > 0 && h.allocs >= t.last.allocs {
			rate = uint64(float64(h.allocs-t.last.allocs) / d.Seconds())
		}
		quiet = h.cycles == t.last.cycles
	}
	if !quiet {
		t.cyclePercent = int(t.percent.Load())
	}
	t.last, t.lastAt = h, now
	p := want(t.headroom.Load(), h.live, rate, t.max)
	if int64(p) != t.percent.Load() {
		t.set(p)
		t.percent.Store(int64(p))
	}
	if quiet && p < t.cyclePercent {
		t.collect()
		t.collections.Add(1)
		t.cyclePercent = p
		t.last = t.read()
	}
}

// Run steps every Every until ctx ends, then puts GOGC back as the process
// started.
func (t *Tuner) Run(ctx context.Context) {
	if t.off {
		return
	}
	tick := time.NewTicker(Every)
	defer tick.Stop()
	for {
		t.step(time.Now())
		select {
		case <-ctx.Done():
			if int64(t.max) != t.percent.Load() {
				t.set(t.max)
				t.percent.Store(int64(t.max))
			}
			return
		case <-tick.C:
		}
	}
}

// Collector exports the GOGC in force and the headroom.
func (t *Tuner) Collector() prometheus.Collector {
	return collector{t}
}

type collector struct{ t *Tuner }

var (
	percentDesc = prometheus.NewDesc("tpproxy_gc_percent",
		"The GOGC in force: the collector's headroom as a percentage of the live heap, set from gc_headroom.", nil, nil)
	headroomDesc = prometheus.NewDesc("tpproxy_gc_headroom_bytes",
		"gc_headroom: the collector's headroom in bytes (0: GOGC as the process started).", nil, nil)
	collectionsDesc = prometheus.NewDesc("tpproxy_gc_tuner_collections_total",
		"Collections gc_headroom's tuner ran: it lowered GOGC on a heap no collection had run on for a second.", nil, nil)
)

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- percentDesc
	ch <- headroomDesc
	ch <- collectionsDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(percentDesc, prometheus.GaugeValue, float64(c.t.Percent()))
	ch <- prometheus.MustNewConstMetric(headroomDesc, prometheus.GaugeValue, float64(c.t.Headroom()))
	ch <- prometheus.MustNewConstMetric(collectionsDesc, prometheus.CounterValue, float64(c.t.collections.Load()))
}
