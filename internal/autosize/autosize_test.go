package autosize

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// server is a model backend behind the pool: clients sessions that each
// want a connection all the time (a closed loop without think time), and
// a server whose throughput at c concurrent connections follows the
// Universal Scalability Law, X(c) = μc / (1 + α(c−1) + βc(c−1)), peaking
// at c* = √((1−α)/β). Its round trip is c/X(c) (Little's law).
type server struct {
	clients     int
	mu, a, b    float64 // statements per second of one connection; contention; coherency
	noise       float64 // ± share of multiplicative noise on the measured throughput
	stmtsPerAcq float64
	rng         *rand.Rand
}

func newServer(clients, peak int, noise float64) *server {
	a := 0.05
	return &server{clients: clients, mu: 1000, a: a, b: (1 - a) / float64(peak*peak), noise: noise,
		stmtsPerAcq: 10, rng: rand.New(rand.NewPCG(1, 2))}
}

func (m *server) x(c int) float64 {
	f := float64(c)
	return m.mu * f / (1 + m.a*(f-1) + m.b*f*(f-1))
}

// window is one second at pool size s.
func (m *server) window(s int) Window {
	c := min(s, m.clients)
	x := m.x(c) * (1 + m.noise*(2*m.rng.Float64()-1)) // as measured
	rt := float64(c) / x
	acq := x / m.stmtsPerAcq
	waits := 0.0
	if m.clients > s {
		waits = acq * float64(m.clients-s) / float64(m.clients)
	}
	return Window{Elapsed: time.Second, Acquires: uint64(acq), Waits: uint64(waits),
		Held: time.Duration(float64(c) * float64(time.Second)), RoundTrips: uint64(x),
		RoundTripTime: time.Duration(x * rt * float64(time.Second))}
}

// best is the size with the most throughput for the model's clients.
func (m *server) best(maxSize int) (size int, x float64) {
	for s := 1; s <= maxSize; s++ {
		if v := m.x(min(s, m.clients)); v > x {
			size, x = s, v
		}
	}
	return size, x
}

// run drives a Controller for n windows of a fake clock and returns the
// sizes it ran each window at and whether that window was a probe down
// (a deliberate excursion, every ProbeAfter windows at a steady size).
func run(c *Controller, m *server, n int) (sizes []int, probing []bool) {
	now := time.Unix(1_000_000, 0)
	down := false
	for range n {
		now = now.Add(time.Second)
		s := c.Size()
		d := c.Observe(m.window(s), now)
		sizes, probing = append(sizes, s), append(probing, down)
		switch d.Reason {
		case Probe:
			down = true
		case Trial:
		default:
			down = false
		}
	}
	return sizes, probing
}

func newController(t *testing.T, minSize, maxSize int) *Controller {
	t.Helper()
	cfg := Config{Min: minSize, Max: maxSize}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return New(cfg)
}

// TestConvergesNearTheBestSize: from Min, within 30 one-second windows the
// pool is at a size whose throughput is within 10% of the best size's, and
// stays in that band for the next 90 (probes of a larger size included;
// probes of a smaller one, at most one window in ten, are excursions).
func TestConvergesNearTheBestSize(t *testing.T) {
	for _, tc := range []struct {
		name           string
		clients, peak  int
		noise          float64
		minSize, maxSz int
	}{
		{"64 clients, peak 16", 64, 16, 0, 4, 200},
		{"1000 clients, peak 24", 1000, 24, 0, 4, 200},
		{"1000 clients, peak 48", 1000, 48, 0, 4, 200},
		{"64 clients, peak 16, 10% noise", 64, 16, 0.10, 4, 200},
		{"1000 clients, peak 32, 10% noise", 1000, 32, 0.10, 4, 200},
		{"max below the peak", 1000, 48, 0, 4, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newServer(tc.clients, tc.peak, tc.noise)
			bestSize, bestX := m.best(tc.maxSz)
			sizes, probing := run(newController(t, tc.minSize, tc.maxSz), m, 120)
			probes := 0
			for i, s := range sizes[29:] {
				if probing[29+i] {
					probes++
					continue
				}
				if x := m.x(min(s, tc.clients)); x < 0.9*bestX {
					t.Fatalf("window %d: size %d gives %.0f/s, best %d gives %.0f/s; sizes %v",
						30+i, s, x, bestSize, bestX, sizes)
				}
			}
			if probes > 90/10 {
				t.Fatalf("%d of 90 windows probing down; sizes %v", probes, sizes)
			}
			t.Logf("best %d; sizes %v", bestSize, sizes[:40])
		})
	}
}

// TestFewClientsDoNotGrowThePool: 8 sessions never need more than 8
// connections; Little's law keeps the pool near them, not at the server's
// peak.
func TestFewClientsDoNotGrowThePool(t *testing.T) {
	m := newServer(8, 32, 0)
	sizes, _ := run(newController(t, 4, 200), m, 60)
	for i, s := range sizes {
		if s > 8+step(8) {
			t.Fatalf("window %d: size %d for 8 clients; sizes %v", i+1, s, sizes)
		}
	}
	if last := sizes[len(sizes)-1]; last < 8 {
		t.Fatalf("8 clients left queueing on %d connections; sizes %v", last, sizes)
	}
}

// TestIdleShrinksToMin: a load that stops leaves the pool at Min within a
// minute, a step at a time.
func TestIdleShrinksToMin(t *testing.T) {
	c := newController(t, 4, 200)
	m := newServer(1000, 32, 0)
	run(c, m, 40)
	if c.Size() < 16 {
		t.Fatalf("size %d after the load", c.Size())
	}
	from := c.Size()
	now := time.Unix(2_000_000, 0)
	prev := from
	for i := range 60 {
		now = now.Add(time.Second)
		d := c.Observe(Window{Elapsed: time.Second}, now)
		if prev-d.Size > step(prev) {
			t.Fatalf("window %d: %d → %d, more than a step", i+1, prev, d.Size)
		}
		if d.Size != prev && d.Reason != Surplus {
			t.Fatalf("window %d: %d → %d for %q", i+1, prev, d.Size, d.Reason)
		}
		prev = d.Size
	}
	if c.Size() != 4 {
		t.Fatalf("size %d a minute after the load stopped (from %d), want Min 4", c.Size(), from)
	}
}

// TestSlowerServerStepsBack: at a steady size, a server that gets three
// times slower (someone else's load) makes the pool step back.
func TestSlowerServerStepsBack(t *testing.T) {
	c := newController(t, 4, 200)
	m := newServer(1000, 24, 0)
	run(c, m, 40)
	before := c.Size()
	m.mu /= 3
	m.b *= 4 // and its peak moves down, to half
	sizes, _ := run(c, m, 20)
	if c.Size() >= before {
		t.Fatalf("size %d → %v on a slower server", before, sizes)
	}
}

// TestSetBoundsClamps: a reload's new bounds clamp the size at once.
func TestSetBoundsClamps(t *testing.T) {
	c := newController(t, 4, 200)
	run(c, newServer(1000, 32, 0), 40)
	d, changed := c.SetBounds(2, 8, time.Now())
	if !changed || d.Size != 8 || c.Size() != 8 || d.Reason != Bounds {
		t.Fatalf("SetBounds(2, 8): %+v changed %v, size %d", d, changed, c.Size())
	}
	if _, changed := c.SetBounds(2, 8, time.Now()); changed {
		t.Fatal("the same bounds again changed the size")
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{{Min: 0, Max: 4}, {Min: 5, Max: 4}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	c := Config{Min: 1, Max: 1}
	if err := c.Validate(); err != nil || c.Interval != DefaultInterval || c.ProbeAfter != DefaultProbeAfter {
		t.Errorf("%+v: %v", c, err)
	}
}

// TestSizerAppliesAndRecords drives a Sizer with a fake clock over a model
// pool: each decided size is applied, each change recorded with its
// reason, and the counters are differenced between steps.
func TestSizerAppliesAndRecords(t *testing.T) {
	m := newServer(1000, 16, 0)
	var total Window
	applied := []int{}
	size := 0
	read := func() Window { return total }
	resize := func(n int) error { applied = append(applied, n); size = n; return nil }
	now := time.Unix(1_000_000, 0)
	z, err := NewSizer(Config{Min: 4, Max: 64}, read, resize, now)
	if err != nil {
		t.Fatal(err)
	}
	if size != 4 {
		t.Fatalf("NewSizer applied %v", applied)
	}
	for range 30 {
		w := m.window(size)
		total.Acquires += w.Acquires
		total.Waits += w.Waits
		total.Held += w.Held
		total.RoundTrips += w.RoundTrips
		total.RoundTripTime += w.RoundTripTime
		now = now.Add(time.Second)
		d := z.Step(now)
		if math.Abs(d.InUse-float64(min(d.Previous, 1000))) > 0.01 {
			t.Fatalf("window's InUse %.2f at size %d: the counters were not differenced", d.InUse, d.Previous)
		}
	}
	st := z.Status()
	if len(st.History) != len(applied) || st.History[0].Reason != Start {
		t.Fatalf("history %d entries for %d resizes: %+v", len(st.History), len(applied), st.History)
	}
	var n uint64
	for _, v := range st.Changes {
		n += v
	}
	if n != uint64(len(applied)) || st.Changes[Queueing] == 0 {
		t.Fatalf("changes %v for %d resizes", st.Changes, len(applied))
	}
	for i, h := range st.History {
		if h.Size != applied[i] {
			t.Fatalf("history[%d] size %d, applied %d", i, h.Size, applied[i])
		}
	}
	if size < 12 || size > 24 {
		t.Fatalf("size %d after 30 s on a server peaking at 16; history %+v", size, st.History)
	}
}
