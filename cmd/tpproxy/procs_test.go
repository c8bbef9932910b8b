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
	defaultProcs(log)
	if got, want := runtime.GOMAXPROCS(0), max(1, runtime.NumCPU()/2); got != want {
		t.Fatalf("GOMAXPROCS = %d, want half the %d CPUs: %d", got, runtime.NumCPU(), want)
	}

	t.Setenv("GOMAXPROCS", "3")
	runtime.GOMAXPROCS(3)
	defaultProcs(log)
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("GOMAXPROCS = %d with $GOMAXPROCS=3", got)
	}
}
