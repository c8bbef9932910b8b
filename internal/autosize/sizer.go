package autosize

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// HistoryLen is how many size changes a Sizer remembers.
const HistoryLen = 64

// Sizer runs a Controller against a pool: every Interval it reads the
// cumulative counters, gives the Controller their differences and applies
// the size it decides. It is safe for concurrent use (the admin port and
// the metrics read it while it runs).
type Sizer struct {
	read   func() Window
	resize func(int) error

	mu      sync.Mutex
	ctl     *Controller
	prev    Window
	prevAt  time.Time
	last    Decision
	history []Decision // size changes, oldest first, at most HistoryLen
	changes map[Reason]uint64
}

// NewSizer returns a Sizer at cfg.Min. read returns the pool's cumulative
// counters (Elapsed unused); resize applies a size. It calls resize with
// cfg.Min before it returns.
func NewSizer(cfg Config, read func() Window, resize func(int) error, now time.Time) (*Sizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	z := &Sizer{read: read, resize: resize, ctl: New(cfg), changes: map[Reason]uint64{}}
	if err := resize(cfg.Min); err != nil {
		return nil, err
	}
	z.prev, z.prevAt = read(), now
	z.last = Decision{At: now, Size: cfg.Min, Reason: Start}
	z.record(z.last)
	return z, nil
}

// Run steps the Sizer every Interval until ctx ends.
func (z *Sizer) Run(ctx context.Context) {
	t := time.NewTicker(z.Config().Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			z.Step(now)
		}
	}
}

// Step decides on the window since the previous Step (or NewSizer) and
// applies the size. Run calls it; tests call it with a fake clock.
func (z *Sizer) Step(now time.Time) Decision {
	cur := z.read()
	z.mu.Lock()
	defer z.mu.Unlock()
	w := Window{
		Elapsed:       now.Sub(z.prevAt),
		Acquires:      cur.Acquires - z.prev.Acquires,
		Waits:         cur.Waits - z.prev.Waits,
		Held:          cur.Held - z.prev.Held,
		RoundTrips:    cur.RoundTrips - z.prev.RoundTrips,
		RoundTripTime: cur.RoundTripTime - z.prev.RoundTripTime,
	}
	z.prev, z.prevAt = cur, now
	d := z.ctl.Observe(w, now)
	z.apply(d)
	return d
}

// SetBounds changes Min and Max (a configuration reload).
func (z *Sizer) SetBounds(minSize, maxSize int, now time.Time) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if d, changed := z.ctl.SetBounds(minSize, maxSize, now); changed {
		z.apply(d)
	}
}

// apply resizes the pool to d.Size when it changed, and records d.
// Called with mu held.
func (z *Sizer) apply(d Decision) {
	z.last = d
	if d.Size == d.Previous {
		return
	}
	if z.resize(d.Size) != nil {
		return // the pool is closed: the stack is stopping the Sizer too
	}
	z.record(d)
}

func (z *Sizer) record(d Decision) {
	z.changes[d.Reason]++
	if len(z.history) == HistoryLen {
		copy(z.history, z.history[1:])
		z.history = z.history[:HistoryLen-1]
	}
	z.history = append(z.history, d)
}

// Status is a Sizer's state for the admin port and the metrics.
type Status struct {
	Config Config
	// Last is the latest window's decision, whatever it was.
	Last Decision
	// History holds the size changes, oldest first (the first is Start).
	History []Decision
	// Changes counts size changes by reason.
	Changes map[Reason]uint64
}

// Status returns a copy of the Sizer's state.
func (z *Sizer) Status() Status {
	z.mu.Lock()
	defer z.mu.Unlock()
	return Status{Config: z.ctl.Config(), Last: z.last, History: slices.Clone(z.history), Changes: maps.Clone(z.changes)}
}

// Config is the configuration in force.
func (z *Sizer) Config() Config {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.ctl.Config()
}
