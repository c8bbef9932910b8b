package main

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// defaultProcs sets GOMAXPROCS to half the CPUs (at least one) unless
// $GOMAXPROCS says otherwise, and reports whether tpproxy may change it
// with the load (see procsGovernor). tpproxy mostly waits on sockets; with
// a P per CPU, Go's idle Ps spin and steal on every network wake-up (a
// futex or a 3 µs nanosleep per statement), CPU taken from the database
// server that usually shares the machine. Measured on 2 CPUs with tpbench
// peers (sysbench oltp_point_select, 8 clients): 19.1–23.7 µs of proxy CPU
// per statement with GOMAXPROCS=1 against 27.6–29.1 µs with 2, and more
// TPS with 1.
func defaultProcs(log *slog.Logger) (adaptive bool) {
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		log.Debug("GOMAXPROCS from the environment", "gomaxprocs", runtime.GOMAXPROCS(0))
		return false
	}
	n := max(1, runtime.NumCPU()/2)
	runtime.GOMAXPROCS(n)
	log.Info("GOMAXPROCS set to half the CPUs while statements do not queue, all of them while they do (set $GOMAXPROCS to fix it)",
		"gomaxprocs", n, "cpus", runtime.NumCPU())
	return n < runtime.NumCPU()
}

// procsGovernor decides GOMAXPROCS from the load: half the CPUs while
// statements go straight to a backend connection, all of them while they
// queue for one (in the thread pool, the connection pool or the
// pinned-connection budget, where transactions wait once it is full: with
// 1,000 read/write clients on a pool of 16 they queue there and nowhere
// else, and a governor blind to it left them one P, 0.92× the TPS of the
// build before the budget in a paired peers run). Where
// statements queue, sessions outnumber what can run and the proxy's work
// per second is what limits them; a second P then wins more than its
// spinning costs (tpbench peers, 1,000-client read/write on 2 CPUs:
// 538 / 598 TPS with GOMAXPROCS 2 against 453 / 480 with 1, p95 2.16 / 1.97
// against 2.41 / 2.41 s). Where they do not, one P per two CPUs costs less
// per statement and loses nothing (above).
//
// Handshakes count as load too: while their private-key operations keep
// the handshake CPU budget's slots (proxy.authWork, half the CPUs) busy
// for at least authBusyShare of a tick, a flood of logins or TLS
// handshakes is burning up to those CPUs, and statements get the other
// Ps only with GOMAXPROCS high (issue #36: on one P a flood of 3,000 slow
// and 500 fuzzed handshakes made honest statements wait behind it).
//
// Each tick it is given the counters since the previous one. It goes up
// after upTicks busy ticks in a row and down after downTicks quiet ones,
// so a burst does not flip it and a steady load does not flap.
type procsGovernor struct {
	low, high int
	busy      int // consecutive busy ticks (> 0) or quiet ones (< 0)
	current   int
}

const (
	// A tick is busy when at least this share of the statements admitted
	// (or of the backend acquires) had to wait in a queue, and at least
	// minPerTick statements were admitted.
	busyShare  = 0.10
	minPerTick = 20
	// A tick is busy, too, when the handshake budget's slots were held for
	// at least this share of it.
	authBusyShare = 0.25
	upTicks       = 2
	downTicks     = 8
	procsTick     = 250 * time.Millisecond
)

func newProcsGovernor(low, high int) *procsGovernor {
	return &procsGovernor{low: low, high: high, current: low}
}

// loadSample is what a tick saw: deltas of the scheduler's and the pool's
// counters.
type loadSample struct {
	admitted, queued uint64 // scheduler: Admit calls, those that queued
	acquires, waits  uint64 // pool: Acquire calls, those that waited
	// pinned-connection budget: statements that asked for a slot, those
	// that waited for one (proxy.Server.PinQueue)
	pinTakes, pinWaits uint64
	// authBusy is the time the handshake budget's authSlots slots were
	// held (proxy.HandshakeWork), over a tick of procsTick.
	authBusy  time.Duration
	authSlots int
}

func (s loadSample) busy() bool {
	if s.authBusy > 0 && float64(s.authBusy) >= authBusyShare*float64(procsTick)*float64(max(s.authSlots, 1)) {
		return true
	}
	queues := func(n, waited uint64) bool {
		return n >= minPerTick && float64(waited) >= busyShare*float64(n)
	}
	return queues(s.admitted, s.queued) || queues(s.acquires, s.waits) || queues(s.pinTakes, s.pinWaits)
}

// observe takes one tick's sample and returns the GOMAXPROCS wanted now.
func (g *procsGovernor) observe(s loadSample) int {
	if s.busy() {
		g.busy = max(g.busy, 0) + 1
	} else {
		g.busy = min(g.busy, 0) - 1
	}
	switch {
	case g.current != g.high && g.busy >= upTicks:
		g.current = g.high
	case g.current != g.low && -g.busy >= downTicks:
		g.current = g.low
	}
	return g.current
}

// governProcs runs the governor until ctx ends, changing GOMAXPROCS when
// it says so (a change stops the world for some microseconds; at most a
// few per second, usually a few per run). It leaves GOMAXPROCS low on
// return.
func governProcs(ctx context.Context, log *slog.Logger, srv *proxy.Server, sched *scheduler.Scheduler, p *pool.Pool) {
	low := runtime.GOMAXPROCS(0)
	g := newProcsGovernor(low, runtime.NumCPU())
	t := time.NewTicker(procsTick)
	defer t.Stop()
	defer runtime.GOMAXPROCS(low)
	read := func() loadSample {
		ss, ps, hw := sched.Counters(), p.Counters(), srv.HandshakeWork()
		takes, waits := srv.PinQueue()
		return loadSample{admitted: ss.Admitted, queued: ss.Waited, acquires: ps.Acquires, waits: ps.Waits,
			pinTakes: takes, pinWaits: waits, authBusy: hw.Busy, authSlots: hw.Slots}
	}
	prev := read()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := read()
		d := loadSample{admitted: cur.admitted - prev.admitted, queued: cur.queued - prev.queued,
			acquires: cur.acquires - prev.acquires, waits: cur.waits - prev.waits,
			pinTakes: cur.pinTakes - prev.pinTakes, pinWaits: cur.pinWaits - prev.pinWaits,
			authBusy: cur.authBusy - prev.authBusy, authSlots: cur.authSlots}
		prev = cur
		if n := g.observe(d); n != runtime.GOMAXPROCS(0) {
			runtime.GOMAXPROCS(n)
			log.Debug("GOMAXPROCS changed with the load", "gomaxprocs", n,
				"admitted", d.admitted, "queued", d.queued, "acquires", d.acquires, "waits", d.waits,
				"pin_takes", d.pinTakes, "pin_waits", d.pinWaits,
				"handshake_busy", d.authBusy)
		}
	}
}
