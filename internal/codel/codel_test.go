package codel_test

import (
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/codel"
)

var cfg = codel.Config{Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond}

func TestOffNeverOverloaded(t *testing.T) {
	d := codel.New(codel.Config{})
	now := time.Unix(0, 0)
	for i := range 100 {
		now = now.Add(10 * time.Millisecond)
		d.Observe(now, time.Duration(i)*time.Second)
	}
	if d.Overloaded(now) || d.GiveUp(now, time.Hour) {
		t.Fatal("a zero target detected an overload")
	}
}

func TestStandingQueue(t *testing.T) {
	d := codel.New(cfg)
	now := time.Unix(0, 0)
	step := func(n int, every, wait time.Duration) {
		for range n {
			now = now.Add(every)
			d.Observe(now, wait)
		}
	}
	// Waits above the target, but for less than a whole interval: the
	// first interval only starts being measured at the first request.
	step(5, 10*time.Millisecond, 20*time.Millisecond)
	if d.Overloaded(now) {
		t.Fatal("overloaded before a whole interval stood")
	}
	// One whole interval above the target.
	step(10, 10*time.Millisecond, 20*time.Millisecond)
	if !d.Overloaded(now) {
		t.Fatal("a queue whose shortest wait stayed 20ms over an interval is not overloaded")
	}
	if d.GiveUp(now, 10*time.Millisecond) {
		t.Fatal("gave up a wait of 2×target (only longer ones go)")
	}
	if !d.GiveUp(now, 11*time.Millisecond) {
		t.Fatal("kept a wait past 2×target while overloaded")
	}
	// One request that went straight in during the next interval: the
	// queue drained, and the next verdict says so.
	step(3, 10*time.Millisecond, 20*time.Millisecond)
	d.Observe(now, 0)
	step(10, 10*time.Millisecond, 20*time.Millisecond)
	if d.Overloaded(now) {
		t.Fatal("still overloaded after an interval in which a request did not wait")
	}
	if d.GiveUp(now, time.Second) {
		t.Fatal("gave up a request while not overloaded")
	}
}

func TestQuietIntervalKeepsVerdict(t *testing.T) {
	d := codel.New(cfg)
	now := time.Unix(0, 0)
	for range 25 {
		now = now.Add(10 * time.Millisecond)
		d.Observe(now, 50*time.Millisecond)
	}
	if !d.Overloaded(now) {
		t.Fatal("not overloaded")
	}
	// Nothing leaves the queue for a second (every slot is held): no
	// interval with a wait in it, so the verdict stands.
	now = now.Add(time.Second)
	if !d.Overloaded(now) {
		t.Fatal("an interval in which nothing left the queue cleared the verdict")
	}
	d.SetConfig(cfg)
	if d.Overloaded(now) {
		t.Fatal("SetConfig kept the verdict")
	}
}
