package sysstat_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/bench/internal/sysstat"
)

// fakeHost hands the Sampler the samples a test feeds it. entered is sent
// the Sample's context when the Sampler calls Sample, which then returns
// what the test sends on results: while the test holds a call, the
// Sampler is inside it, so the series is known exactly.
type fakeHost struct {
	entered chan context.Context
	results chan result
	stop    <-chan struct{} // the Sampler's context: Sample gives up
}

type result struct {
	s   sysstat.HostSample
	err error
}

var errStopped = errors.New("fake host stopped")

func (f *fakeHost) Sample(ctx context.Context) (sysstat.HostSample, error) {
	select {
	case f.entered <- ctx:
	case <-f.stop:
		return sysstat.HostSample{}, errStopped
	}
	select {
	case r := <-f.results:
		return r.s, r.err
	case <-f.stop:
		return sysstat.HostSample{}, errStopped
	}
}

// hostAt is a 1-CPU host k seconds in, busy 0.25 s a second, with 100
// context switches a second.
func hostAt(t0 time.Time, k int) sysstat.HostSample {
	return sysstat.HostSample{
		At:              t0.Add(time.Duration(k) * time.Second),
		CPU:             sysstat.CPUTimes{User: 0.25 * float64(k), Idle: 0.75 * float64(k)},
		CPUs:            1,
		MemTotal:        100,
		MemAvailable:    uint64(100 - k),
		ContextSwitches: uint64(100 * k),
	}
}

// TestSampler feeds samples one at a time: each interval gives one Point
// with the usage since the previous good sample, a failed sample gives a
// Point with Err, processes are sampled alongside, and cancelling the
// context ends the goroutine.
func TestSampler(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fakeHost{entered: make(chan context.Context), results: make(chan result), stop: ctx.Done()}
	s := sysstat.StartSampler(ctx, f, time.Millisecond, os.Getpid())
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	step := func(r result, wantPoints int) {
		t.Helper()
		sctx := <-f.entered
		if _, ok := sctx.Deadline(); !ok {
			t.Error("Sample's context has no deadline")
		}
		if n := len(s.Series()); n != wantPoints {
			t.Fatalf("%d points before the sample, want %d", n, wantPoints)
		}
		f.results <- r
	}
	step(result{s: hostAt(t0, 0)}, 0)
	if _, ok := s.Last(); ok {
		t.Error("Last before the first interval reported a point")
	}
	step(result{s: hostAt(t0, 1)}, 0)
	boom := errors.New("scrape failed")
	step(result{err: boom}, 1)
	step(result{s: hostAt(t0, 3)}, 2)
	step(result{s: hostAt(t0, 4)}, 3)
	<-f.entered // the fifth sample is in: the fourth point is appended

	series := s.Series()
	if len(series) != 4 {
		t.Fatalf("%d points, want 4", len(series))
	}
	for i, wantSec := range []float64{1, 0, 2, 1} {
		p := series[i]
		if i == 1 {
			if !errors.Is(p.Err, boom) || p.Host != (sysstat.HostUsage{}) {
				t.Errorf("point 1 = %+v, want Err and no usage", p)
			}
			continue
		}
		if p.Err != nil || !near(p.Host.Seconds, wantSec) || !near(p.Host.CPUPct, 25) || !near(p.Host.ContextSwitchesPerSec, 100) {
			t.Errorf("point %d = %+v, want %v s, 25%% CPU, 100 switches/s", i, p.Host, wantSec)
		}
	}
	if !series[2].At.Equal(t0.Add(3 * time.Second)) {
		t.Errorf("point 2 At %v, want the sample's", series[2].At)
	}
	last, ok := s.Last()
	if !ok || last.Host != series[3].Host || !near(last.Host.MemUsedPct, 4) {
		t.Errorf("Last = %+v, %v, want %+v", last, ok, series[3])
	}
	if runtime.GOOS == "linux" {
		pu, ok := last.Procs[os.Getpid()]
		if !ok || pu.Threads < 1 || pu.RSS == 0 || pu.Seconds <= 0 {
			t.Errorf("Procs = %+v, want this process", last.Procs)
		}
	}

	cancel()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Sampler still running 10 s after cancel")
	}
	if n := len(s.Series()); n != 4 {
		t.Errorf("%d points after the cancelled sample, want 4", n)
	}
}

// TestSamplerHungHost: a Sample that does not return is cut off at the
// interval, so a hung scrape shows as errors instead of stalling.
func TestSamplerHungHost(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fakeHost{entered: make(chan context.Context), results: make(chan result), stop: ctx.Done()}
	s := sysstat.StartSampler(ctx, f, 5*time.Millisecond)
	for range 2 {
		sctx := <-f.entered
		<-sctx.Done()
		f.results <- result{err: sctx.Err()}
	}
	<-f.entered
	series := s.Series()
	if len(series) != 2 || !errors.Is(series[1].Err, context.DeadlineExceeded) {
		t.Fatalf("series = %+v, want two DeadlineExceeded points", series)
	}
	cancel()
	<-s.Done()
}
