package gctune

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const mib = 1 << 20

func TestWant(t *testing.T) {
	for _, c := range []struct {
		name      string
		headroom  int64
		live      uint64
		rate      uint64
		max, want int
	}{
		{"off", 0, 400 * mib, 0, 100, 100},
		{"no collection yet", 16 * mib, 0, 0, 100, 100},
		{"small heap keeps GOGC", 16 * mib, 8 * mib, 0, 100, 100},
		{"heap the size of the headroom", 16 * mib, 16 * mib, 0, 100, 100},
		{"idle sessions' heap", 16 * mib, 32 * mib, 2 * mib, 100, 50},
		{"a larger heap", 16 * mib, 64 * mib, 0, 100, 25},
		{"never below MinPercent", 16 * mib, 1024 * mib, 0, 100, MinPercent},
		{"a high allocation rate widens it", 16 * mib, 64 * mib, 48 * mib, 100, 75},
		{"never above the start's GOGC", 16 * mib, 20 * mib, 0, 50, 50},
		{"GOGC=200 at start", 64 * mib, 16 * mib, 0, 200, 200},
	} {
		if got := want(c.headroom, c.live, c.rate, c.max); got != c.want {
			t.Errorf("%s: want(%d MiB, live %d MiB, %d MiB/s, max %d) = %d, want %d",
				c.name, c.headroom/mib, c.live/mib, c.rate/mib, c.max, got, c.want)
		}
	}
}

// fake is a heap the test sets, the GOGC the tuner sets and the
// collections it runs.
type fake struct {
	h        heap
	sets     []int
	collects int
}

func newFake(headroom int64, max int) (*Tuner, *fake) {
	f := &fake{}
	t := &Tuner{max: max, read: func() heap { return f.h },
		set:     func(p int) int { f.sets = append(f.sets, p); return 0 },
		collect: func() { f.collects++; f.h.cycles++ }}
	t.headroom.Store(headroom)
	t.percent.Store(int64(max))
	return t, f
}

func TestStepFollowsTheHeap(t *testing.T) {
	tu, f := newFake(16*mib, 100)
	now := time.Unix(1000, 0)
	f.h.live = 8 * mib
	tu.step(now)
	if len(f.sets) != 0 || tu.Percent() != 100 {
		t.Fatalf("small heap: sets %v, percent %d", f.sets, tu.Percent())
	}
	// Sessions arrive: 64 MiB live, 1 MiB allocated in the second, with
	// collections meanwhile: a lower GOGC, no collection of the tuner's.
	f.h.live, f.h.allocs, f.h.cycles = 64*mib, 1*mib, 3
	tu.step(now.Add(time.Second))
	if tu.Percent() != 25 || len(f.sets) != 1 || f.sets[0] != 25 || f.collects != 0 {
		t.Fatalf("64 MiB live: sets %v, percent %d, collections %d", f.sets, tu.Percent(), f.collects)
	}
	// Unchanged, but GOGC went down since the last collection and none
	// ran since: one collection, once.
	f.h.allocs += mib
	tu.step(now.Add(2 * time.Second))
	if len(f.sets) != 1 || f.collects != 1 {
		t.Fatalf("quiet heap after the GOGC went down: sets %v, collections %d", f.sets, f.collects)
	}
	f.h.allocs += mib
	tu.step(now.Add(2500 * time.Millisecond))
	if len(f.sets) != 1 || f.collects != 1 {
		t.Fatalf("unchanged heap: sets %v, collections %d", f.sets, f.collects)
	}
	// A burst of 48 MiB in a second: the headroom widens to it.
	f.h.allocs += 48 * mib
	f.h.cycles++
	tu.step(now.Add(3500 * time.Millisecond))
	if tu.Percent() != 75 {
		t.Fatalf("burst: percent %d, want 75 (sets %v)", tu.Percent(), f.sets)
	}
	// The burst is over: GOGC goes down again, with no collection of the
	// tuner's, the burst's ran at 25.
	f.h.allocs += mib
	tu.step(now.Add(4500 * time.Millisecond))
	if tu.Percent() != 25 || f.collects != 1 || tu.collections.Load() != 1 {
		t.Fatalf("quiet heap: percent %d, collections %d (%d counted)", tu.Percent(), f.collects, tu.collections.Load())
	}
	// A reload turns it off: back to the start's GOGC, and a higher GOGC
	// needs no collection.
	tu.SetHeadroom(0)
	tu.step(now.Add(5500 * time.Millisecond))
	if tu.Percent() != 100 || f.sets[len(f.sets)-1] != 100 || f.collects != 1 {
		t.Fatalf("headroom 0: percent %d, sets %v, collections %d", tu.Percent(), f.sets, f.collects)
	}
}

func TestOffLeavesTheCollectorAlone(t *testing.T) {
	tu, f := newFake(16*mib, -1)
	tu.off = true
	f.h.live = 512 * mib
	tu.step(time.Now())
	tu.Run(context.Background()) // returns at once
	if len(f.sets) != 0 {
		t.Fatalf("GOGC=off: the tuner set %v", f.sets)
	}
}

// TestRealCollector runs a Tuner on this process: a live heap of 64 MiB
// with a 16 MiB headroom gets GOGC 25 (the runtime's own reading), and Run
// puts the start's GOGC back when it ends.
func TestRealCollector(t *testing.T) {
	tu := New(16 * mib)
	if tu.Disabled() {
		t.Skip("GOGC=off in this environment")
	}
	start := tu.max
	hold := make([][]byte, 64)
	for i := range hold {
		hold[i] = make([]byte, mib)
	}
	runtime.GC()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tu.Run(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for tu.Percent() == start && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	p := tu.Percent()
	if p >= start || p < MinPercent {
		t.Fatalf("64 MiB live, 16 MiB headroom: GOGC %d (start %d)", p, start)
	}
	if got := debug.SetGCPercent(p); got != p {
		t.Fatalf("the runtime's GOGC is %d, the tuner says %d", got, p)
	}
	cancel()
	<-done
	if got := debug.SetGCPercent(start); got != start {
		t.Fatalf("after Run: GOGC %d, want the start's %d", got, start)
	}
	runtime.KeepAlive(hold)
}

func TestCollector(t *testing.T) {
	tu, _ := newFake(16*mib, 100)
	tu.percent.Store(40)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(tu.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		got[mf.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	if got["tpproxy_gc_percent"] != 40 || got["tpproxy_gc_headroom_bytes"] != 16*mib || len(got) != 3 {
		t.Fatalf("metrics %v", got)
	}
}
