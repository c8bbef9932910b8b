// Package autosize decides the size of the backend pool from what the pool
// measures, for backend.pool_size: auto. None of the pools tpproxy is
// compared with sizes itself; this one climbs with three measurements:
//
//   - Little's law on the connection-time held: the time connections spend
//     handed out per second of wall time is the mean number in use (L =
//     λW). The pool grows only while sessions queue for a connection (or
//     for a pinned slot, which the pool's size bounds) or nearly all of it
//     is in use, and shrinks when L, with headroom, needs fewer.
//   - The throughput each change bought: after a growth from s to s' the
//     round trips per second of the next windows are compared with those
//     before. A growth is kept when throughput rose by at least a tenth
//     of the growth's share; otherwise the pool steps back and does not
//     try that size again for a while (ProbeAfter), then probes again, up
//     and down (a step down is kept when it lost less than a tenth of
//     its share), since the load may have changed. Throughput is the
//     server's latency seen through Little's law (X = L/R): a growth that
//     only queues inside the server raises the round trip with the
//     connections and leaves X flat, so the pool settles where the
//     server's latency starts to rise with the connections.
//   - A gradient on the backend's round trip at a steady size: when it
//     doubles over the reference the size was kept at, for three windows
//     in a row, the server has more to do than it had (a heavier load,
//     another client) and the pool steps back.
//
// Steps are the square root of the size (at least 1), the queue allowance
// Netflix's Gradient2 limiter adds: from 4 connections, 16 is 4 steps away
// and 64 twelve. A Controller is pure (it is given each window's counts,
// its clock is the caller's) so that tests drive it with a fake one; a
// Sizer runs one against a pool.
package autosize

import (
	"fmt"
	"math"
	"time"
)

// Config bounds and paces a Controller.
type Config struct {
	// Min and Max bound the size; 1 ≤ Min ≤ Max. A Controller starts at
	// Min.
	Min, Max int
	// Interval is the length of a window, how often the Sizer decides;
	// default 1s.
	Interval time.Duration
	// ProbeAfter is how many windows a size found too large stays out of
	// reach before the controller tries it again (the load may have
	// changed); default 30.
	ProbeAfter int
}

// Defaults of Config.
const (
	DefaultInterval   = time.Second
	DefaultProbeAfter = 30
)

// Validate checks c's bounds and fills in the defaults.
func (c *Config) Validate() error {
	if c.Min < 1 || c.Max < c.Min {
		return fmt.Errorf("autosize: bounds %d..%d: want 1 ≤ min ≤ max", c.Min, c.Max)
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.ProbeAfter <= 0 {
		c.ProbeAfter = DefaultProbeAfter
	}
	return nil
}

// Window is what happened during one interval: the differences of the
// pool's counters (pool.Counters) and of the pinned-slot queue.
type Window struct {
	Elapsed time.Duration
	// Acquires are requests for a connection or a pinned slot, Waits
	// those that had to queue.
	Acquires, Waits uint64
	// Held is the connection-time handed out.
	Held time.Duration
	// RoundTrips and RoundTripTime are the commands timed and their
	// summed durations.
	RoundTrips    uint64
	RoundTripTime time.Duration
}

// Reason says why a Decision has its size.
type Reason string

// The reasons.
const (
	Start    Reason = "start"    // the first size, Min
	Hold     Reason = "hold"     // nothing to change
	Idle     Reason = "idle"     // too few round trips to judge; unchanged unless surplus
	Queueing Reason = "queueing" // grew: sessions queued, the last growth paid
	Trial    Reason = "trial"    // judging the last change
	Kept     Reason = "kept"     // the change paid: more throughput, or as much with fewer
	Probe    Reason = "probe"    // held a while: trying a step down
	Restored Reason = "restored" // the step down lost throughput: back up
	Latency  Reason = "latency"  // stepped back: the round trip grew with the added connections
	Slower   Reason = "slower"   // stepped back: the round trip doubled at a steady size
	Surplus  Reason = "surplus"  // shrank: fewer connections are in use than held
	Bounds   Reason = "bounds"   // Min or Max changed
)

// Reasons lists every Reason, for metrics that show each one.
func Reasons() []Reason {
	return []Reason{Start, Hold, Idle, Queueing, Trial, Kept, Probe, Restored, Latency, Slower, Surplus, Bounds}
}

// Decision is one window's outcome.
type Decision struct {
	At             time.Time
	Size, Previous int
	Reason         Reason
	// InUse is the mean number of connections in use in the window
	// (Held / Elapsed); WaitShare the share of acquires that queued.
	InUse, WaitShare float64
	// RoundTrip is the window's mean round trip (0 when too few were
	// timed); Reference the one the last kept size was judged against.
	RoundTrip, Reference time.Duration
	// Rate is round trips per second.
	Rate float64
}

// Tuning. A window judges anything only with minRoundTrips in it;
// queueing is a WaitShare of at least queueShare or an InUse of at least
// busyShare of the size. A change is judged on trialWindows windows
// against the mean of the (up to trialWindows) windows before it: it is
// kept when ln(X'/X) ≥ gainShare·ln(s'/s), X the round trips per second
// and s the size — a growth raised throughput by at least a tenth of
// its share, a step down lost less than a tenth of its share (extra
// connections cost the server little but threads: err towards growing
// while throughput still rises at all, so that the pool settles on the
// plateau, not below it). By
// Little's law X = L/R with L the round trips in progress: a growth that
// only queues inside the server leaves X where it was and raises the
// round trip R with L instead, and it is undone. A steady size steps back
// when the round trip reaches slowerFactor× its reference for
// slowerWindows in a row; surplus is InUse×headroom+1 below the size for
// quietWindows in a row.
const (
	minRoundTrips = 20
	queueShare    = 0.05
	busyShare     = 0.9
	trialWindows  = 3
	gainShare     = 0.1
	slowerFactor  = 2.0
	slowerWindows = 3
	headroom      = 1.5
	quietWindows  = 5
)

// sample is one window's throughput and round trip.
type sample struct {
	rate float64 // round trips per second
	rt   time.Duration
}

func (a sample) add(b sample) sample { return sample{a.rate + b.rate, a.rt + b.rt} }

func (a sample) mean(n int) sample {
	return sample{a.rate / float64(n), a.rt / time.Duration(n)}
}

// phase is what a Controller is doing.
type phase int

const (
	steady    phase = iota
	trialUp         // judging a growth
	trialDown       // judging a probe down
)

// Controller decides the size window by window. Not safe for concurrent
// use: the Sizer serialises it.
type Controller struct {
	cfg  Config
	size int
	n    int // windows observed

	phase     phase
	trialFrom int    // the size before the change being judged
	trialRef  sample // the mean window before it
	trialSum  sample // the trial's windows so far, summed
	trialN    int
	probe     bool // the growth being judged is a probe after a ceiling expired

	// recent are the last windows at this size, for the next trial's
	// reference.
	recent []sample
	// ref is the round trip at the size last kept.
	ref time.Duration
	// ceiling is the smallest size found too large, out of reach until
	// window ceilingUntil; 0 when none.
	ceiling, ceilingUntil int
	// changed is the window of the last change.
	changed int

	slow, quiet int // consecutive windows slower than ref, with surplus
}

// New returns a Controller at cfg.Min. cfg must be valid (Validate).
func New(cfg Config) *Controller {
	return &Controller{cfg: cfg, size: cfg.Min}
}

// Size is the size decided last.
func (c *Controller) Size() int { return c.size }

// Config is the configuration in force.
func (c *Controller) Config() Config { return c.cfg }

// SetBounds changes Min and Max (a reload); the size is clamped into them.
// It reports the decision when the size changed.
func (c *Controller) SetBounds(minSize, maxSize int, now time.Time) (Decision, bool) {
	c.cfg.Min, c.cfg.Max = minSize, maxSize
	prev := c.size
	c.size = min(max(c.size, minSize), maxSize)
	if c.ceiling > maxSize {
		c.ceiling = 0
	}
	c.phase = steady
	if c.size != prev {
		c.resized()
	}
	return Decision{At: now, Size: c.size, Previous: prev, Reason: Bounds}, c.size != prev
}

// step is the growth or shrink step at size s.
func step(s int) int { return max(1, int(math.Ceil(math.Sqrt(float64(s))))) }

// resized notes a change of size.
func (c *Controller) resized() {
	c.recent = c.recent[:0]
	c.changed = c.n
	c.slow, c.quiet = 0, 0
}

// start begins judging a change from the current size to next.
func (c *Controller) start(p phase, next int, probe bool) {
	var sum sample
	for _, r := range c.recent {
		sum = sum.add(r)
	}
	c.phase, c.trialFrom, c.trialSum, c.trialN, c.probe = p, c.size, sample{}, 0, probe
	c.trialRef = sum.mean(len(c.recent))
	c.size = next
	c.resized()
}

// Observe takes one window and decides the size for the next.
func (c *Controller) Observe(w Window, now time.Time) Decision {
	c.n++
	d := Decision{At: now, Previous: c.size, Reason: Hold}
	if w.Elapsed > 0 {
		d.InUse = w.Held.Seconds() / w.Elapsed.Seconds()
		d.Rate = float64(w.RoundTrips) / w.Elapsed.Seconds()
	}
	if w.Acquires > 0 {
		d.WaitShare = float64(w.Waits) / float64(w.Acquires)
	}
	if w.RoundTrips >= minRoundTrips {
		d.RoundTrip = w.RoundTripTime / time.Duration(w.RoundTrips)
	}
	c.decide(&d)
	d.Size, d.Reference = c.size, c.ref
	return d
}

func (c *Controller) decide(d *Decision) {
	queueing := d.WaitShare >= queueShare || d.InUse >= busyShare*float64(c.size)
	if !queueing && d.InUse*headroom+1 < float64(c.size) {
		c.quiet++
	} else {
		c.quiet = 0
	}
	if d.RoundTrip == 0 {
		// Too little traffic to judge anything by: a trial ends with
		// the size it tried.
		c.phase = steady
		d.Reason = Idle
		c.shrinkSurplus(d)
		return
	}
	if c.phase != steady {
		if c.judge(d) && queueing && c.phase == steady {
			c.grow(d, false) // still queueing after a growth that paid: the next step at once
		}
		return
	}
	c.recent = append(c.recent, sample{d.Rate, d.RoundTrip})
	if len(c.recent) > trialWindows {
		c.recent = c.recent[1:]
	}
	if c.ref > 0 && float64(d.RoundTrip) >= slowerFactor*float64(c.ref) {
		c.slow++
	} else {
		c.slow = 0
	}
	switch {
	case c.slow >= slowerWindows && c.size > c.cfg.Min:
		// The same size got twice as slow: the server has more to do
		// than it had (a heavier load, another client); fewer of
		// tpproxy's statements at once in it.
		c.ceiling, c.ceilingUntil = c.size, c.n+c.cfg.ProbeAfter
		c.size = max(c.cfg.Min, c.size-step(c.size))
		c.ref = d.RoundTrip
		c.resized()
		d.Reason = Slower
	case queueing:
		if c.ref == 0 {
			c.ref = d.RoundTrip
		}
		probe := false
		if c.ceiling > 0 && c.n >= c.ceilingUntil {
			c.ceiling, probe = 0, true // the load may have changed: try again
		}
		switch {
		case c.grow(d, probe):
		case c.n-c.changed >= c.cfg.ProbeAfter && c.size > c.cfg.Min:
			// Held here a while: would a step fewer serve as much?
			c.start(trialDown, max(c.cfg.Min, c.size-step(c.size)), false)
			d.Reason = Probe
		}
	default:
		c.shrinkSurplus(d)
	}
}

// grow starts a trial of the next size up, when there is one below Max
// and the ceiling, and reports whether it did.
func (c *Controller) grow(d *Decision, probe bool) bool {
	next := min(c.cfg.Max, c.size+step(c.size))
	if c.ceiling > 0 {
		next = min(next, c.ceiling-1)
	}
	if next <= c.size {
		return false
	}
	c.start(trialUp, next, probe)
	d.Reason = Queueing
	return true
}

// judge adds a window to the trial and, once it has trialWindows, keeps
// the change or undoes it. It reports whether a growth was kept.
func (c *Controller) judge(d *Decision) (grewKept bool) {
	c.trialSum = c.trialSum.add(sample{d.Rate, d.RoundTrip})
	c.trialN++
	d.Reason = Trial
	if c.trialN < trialWindows {
		return false
	}
	r := c.trialSum.mean(c.trialN)
	gained := math.Log(r.rate / c.trialRef.rate)
	grew := math.Log(float64(c.size) / float64(c.trialFrom))
	kept := gained >= gainShare*grew
	p := c.phase
	c.phase = steady
	switch {
	case kept:
		c.ref = r.rt
		c.changed = c.n
		c.recent = append(c.recent[:0], r)
		d.Reason = Kept
		if p == trialDown {
			// Fewer served as much: the old size is the ceiling now.
			c.ceiling, c.ceilingUntil = c.trialFrom, c.n+c.cfg.ProbeAfter
		}
	case p == trialUp:
		// The server queued the added connections: back to the size
		// before, and that size is the ceiling for a while.
		c.ceiling, c.ceilingUntil = c.size, c.n+c.cfg.ProbeAfter
		c.size, c.ref = c.trialFrom, c.trialRef.rt
		c.resized()
		c.recent = append(c.recent, c.trialRef)
		if c.probe {
			c.changed = c.n - c.cfg.ProbeAfter // probe down next
		}
		d.Reason = Latency
	default:
		// The step down lost throughput: back up.
		c.size, c.ref = c.trialFrom, c.trialRef.rt
		c.resized()
		c.recent = append(c.recent, c.trialRef)
		d.Reason = Restored
	}
	return kept && p == trialUp
}

// shrinkSurplus shrinks a step toward what Little's law says the load
// keeps busy, with half as many again, once it has been below that for
// quietWindows in a row, then a step a window while it stays so.
func (c *Controller) shrinkSurplus(d *Decision) {
	if c.quiet < quietWindows || c.size <= c.cfg.Min {
		return
	}
	want := max(c.cfg.Min, int(math.Ceil(d.InUse*headroom))+1)
	if want >= c.size {
		return
	}
	c.size = max(want, c.size-step(c.size))
	quiet := c.quiet
	c.resized()
	c.quiet = quiet // still quiet: the next step at the next window
	d.Reason = Surplus
}
