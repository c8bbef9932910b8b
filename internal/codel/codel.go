// Package codel tells a queue that stands from one that drains, by how
// long its requests wait: CoDel's test (Nichols and Jacobson, "Controlling
// Queue Delay", 2012) in the form request servers use it (folly::Codel,
// Facebook's "Fail at Scale", 2015). A queue is overloaded when even the
// shortest wait of a whole interval was longer than the target; while it
// is, a request that has waited longer than twice the target is given up
// (sloughed: answered with an error at once instead of late) and the
// queue serves its newest requests first (adaptive LIFO), so the requests
// that are served are served while their clients still wait for them.
//
// A Detector is not safe for concurrent use: its queue's lock guards it.
// Time is passed in, so tests drive it with a fake clock.
package codel

import (
	"fmt"
	"time"
)

// Config sets a Detector. A zero Target turns it off: never overloaded.
type Config struct {
	// Target is the queue wait a drained queue stays under: a queue whose
	// shortest wait over a whole Interval exceeds it stands.
	Target time.Duration
	// Interval is how long the wait must stay above Target before the
	// queue counts as overloaded, and how often that is judged again.
	Interval time.Duration
}

// On reports whether c detects anything.
func (c Config) On() bool { return c.Target > 0 && c.Interval > 0 }

// Slough is the wait past which an overloaded queue gives a request up:
// twice the target, as folly does.
func (c Config) Slough() time.Duration { return 2 * c.Target }

// Reason says why a request that waited wait was given up under c, for
// its error message.
func (c Config) Reason(wait time.Duration) string {
	return fmt.Sprintf("waited %s; overloaded: waits above codel_target %s for codel_interval %s",
		wait.Round(time.Millisecond), c.Target, c.Interval)
}

// Detector judges one queue.
type Detector struct {
	cfg Config
	// end is when the interval being measured ends (zero: none yet).
	end time.Time
	// min is the shortest wait seen in it; fresh means none was seen yet.
	min   time.Duration
	fresh bool
	// overloaded is the verdict of the last interval that ended.
	overloaded bool
}

// New returns a Detector for c.
func New(c Config) *Detector { return &Detector{cfg: c, fresh: true} }

// Config is the configuration in force.
func (d *Detector) Config() Config { return d.cfg }

// SetConfig changes the configuration; the verdict starts over.
func (d *Detector) SetConfig(c Config) { *d = Detector{cfg: c, fresh: true} }

// Observe records the wait of a request that leaves the queue at now,
// served or given up (0 for one that never queued).
func (d *Detector) Observe(now time.Time, wait time.Duration) {
	if !d.cfg.On() {
		return
	}
	d.roll(now)
	if d.fresh || wait < d.min {
		d.min, d.fresh = wait, false
	}
}

// roll ends the intervals that ended by now: the verdict is that of the
// last one, and an interval in which nothing left the queue proves
// nothing, so it keeps the verdict before it.
func (d *Detector) roll(now time.Time) {
	if d.end.IsZero() {
		d.end = now.Add(d.cfg.Interval)
		return
	}
	if now.Before(d.end) {
		return
	}
	if !d.fresh {
		d.overloaded = d.min > d.cfg.Target
	}
	d.fresh = true
	d.end = now.Add(d.cfg.Interval)
}

// Overloaded reports whether the queue stands at now: the shortest wait
// of the last whole interval in which requests left it was above the
// target.
func (d *Detector) Overloaded(now time.Time) bool {
	if !d.cfg.On() {
		return false
	}
	d.roll(now)
	return d.overloaded
}

// GiveUp reports whether a request that has waited wait is to be given
// up at now: the queue is overloaded and wait is longer than Slough.
func (d *Detector) GiveUp(now time.Time, wait time.Duration) bool {
	return d.Overloaded(now) && wait > d.cfg.Slough()
}
