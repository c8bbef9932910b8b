package main

import (
	"log/slog"
	"runtime"
	"testing"
)

func TestDefaultProcs(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
	log := slog.New(slog.DiscardHandler)

	t.Setenv("GOMAXPROCS", "")
	runtime.GOMAXPROCS(runtime.NumCPU())
	if !defaultProcs(log) && runtime.NumCPU() > 1 {
		t.Fatal("half the CPUs is not adaptive")
	}
	if got, want := runtime.GOMAXPROCS(0), max(1, runtime.NumCPU()/2); got != want {
		t.Fatalf("GOMAXPROCS = %d, want half the %d CPUs: %d", got, runtime.NumCPU(), want)
	}

	t.Setenv("GOMAXPROCS", "3")
	runtime.GOMAXPROCS(3)
	if defaultProcs(log) {
		t.Fatal("adaptive with $GOMAXPROCS set")
	}
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("GOMAXPROCS = %d with $GOMAXPROCS=3", got)
	}
}

func TestProcsGovernor(t *testing.T) {
	busy := loadSample{admitted: 1000, queued: 300}
	poolBusy := loadSample{admitted: 1000, acquires: 50, waits: 40} // transactions queue for a connection
	// Transactions queue for a pinned slot while few statements run.
	pinBusy := loadSample{admitted: 200, queued: 2, acquires: 200, pinTakes: 50, pinWaits: 45}
	quiet := loadSample{admitted: 1000, queued: 20, acquires: 1000, waits: 5, pinTakes: 100, pinWaits: 3}
	idle := loadSample{admitted: 3, queued: 3} // a trickle is never busy
	// A handshake flood: the one slot held for half the tick.
	handshakes := loadSample{admitted: 50, authBusy: procsTick / 2, authSlots: 1}
	someLogins := loadSample{admitted: 1000, authBusy: procsTick / 10, authSlots: 1}
	for _, s := range []loadSample{busy, poolBusy, pinBusy, handshakes} {
		if !s.busy() {
			t.Fatalf("%+v: not busy", s)
		}
	}
	for _, s := range []loadSample{quiet, idle, someLogins, {}} {
		if s.busy() {
			t.Fatalf("%+v: busy", s)
		}
	}

	g := newProcsGovernor(1, 4)
	steps := []struct {
		s    loadSample
		want int
	}{
		{busy, 1}, {quiet, 1}, {busy, 1}, // one busy tick is a burst
		{busy, 4}, // two in a row
		{poolBusy, 4}, {quiet, 4}, {idle, 4}, {quiet, 4}, {quiet, 4}, {quiet, 4}, {quiet, 4},
		{busy, 4}, // resets the quiet run
		{quiet, 4}, {quiet, 4}, {quiet, 4}, {quiet, 4}, {quiet, 4}, {quiet, 4}, {quiet, 4},
		{quiet, 1}, // the eighth quiet tick in a row
		{quiet, 1},
		{handshakes, 1}, {handshakes, 4}, // a handshake flood
		{someLogins, 4},
		{quiet, 4}, {quiet, 4}, {quiet, 4}, {quiet, 4}, {quiet, 4}, {quiet, 4}, {quiet, 1}, // someLogins was the first quiet tick
		{pinBusy, 1}, {pinBusy, 4}, // transactions waiting for pinned slots
	}
	for i, st := range steps {
		if got := g.observe(st.s); got != st.want {
			t.Fatalf("tick %d (%+v): GOMAXPROCS %d, want %d", i, st.s, got, st.want)
		}
	}
}
