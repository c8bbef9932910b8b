package sysstat

import (
	"context"
	"sync"
	"time"
)

// Point is one interval of a Sampler's series.
type Point struct {
	// At is the end of the interval: the host sample's time.
	At time.Time
	// Host is the host's usage since the previous successful sample.
	Host HostUsage
	// Procs is the usage of each sampled process readable at both ends of
	// the interval, by PID. It is never modified after the Point is made.
	Procs map[int]ProcUsage
	// Err is why the host could not be sampled at At; Host is zero then,
	// and the next point covers the gap.
	Err error
}

// Sampler samples a Host, and optionally local processes, at a fixed
// interval in a goroutine of its own, keeping every interval's usage: the
// time series of a soak run and the input of a ramp's stop conditions.
//
// Sampling errors do not stop it: a failed host sample becomes a Point
// with Err, and a process that cannot be read (it exited) is left out of
// Procs until it can be again. The series grows by one Point per
// interval, about 200 bytes each, so a day at one second is some 20 MB.
type Sampler struct {
	host     Host
	interval time.Duration
	pids     []int
	done     chan struct{}

	// mu guards series. It is held only to append or copy, never while
	// sampling.
	mu     sync.Mutex
	series []Point
}

// StartSampler samples h and the processes pids now and then every
// interval, which must be positive, until ctx ends. Each host sample is
// bounded by the interval: one that takes longer is late anyway, and a
// hung scrape must not stall the series. A slow sample delays the next;
// ticks are not queued.
func StartSampler(ctx context.Context, h Host, interval time.Duration, pids ...int) *Sampler {
	s := &Sampler{host: h, interval: interval, pids: pids, done: make(chan struct{})}
	t := time.NewTicker(interval) // panics here, in the caller, on interval <= 0
	go s.run(ctx, t)
	return s
}

// Done is closed when the sampling goroutine has returned, after ctx
// ended.
func (s *Sampler) Done() <-chan struct{} { return s.done }

// Last returns the latest Point, and false when there is none yet (the
// first interval has not passed).
func (s *Sampler) Last() (Point, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.series) == 0 {
		return Point{}, false
	}
	return s.series[len(s.series)-1], true
}

// Series returns a copy of every Point so far, oldest first.
func (s *Sampler) Series() []Point {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Point, len(s.series))
	copy(out, s.series)
	return out
}

func (s *Sampler) run(ctx context.Context, t *time.Ticker) {
	defer close(s.done)
	defer t.Stop()
	var prev HostSample
	havePrev := false
	prevProcs := make(map[int]ProcSample, len(s.pids))
	for {
		sctx, cancel := context.WithTimeout(ctx, s.interval)
		cur, err := s.host.Sample(sctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		procs := s.sampleProcs(prevProcs)
		if havePrev || err != nil {
			p := Point{At: cur.At, Procs: procs, Err: err}
			if err != nil {
				p.At = time.Now()
			} else {
				p.Host = Usage(prev, cur)
			}
			s.mu.Lock()
			s.series = append(s.series, p)
			s.mu.Unlock()
		}
		if err == nil {
			prev, havePrev = cur, true
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sampleProcs reads every pid and returns the usage of those read at the
// previous call too; prev is updated.
func (s *Sampler) sampleProcs(prev map[int]ProcSample) map[int]ProcUsage {
	if len(s.pids) == 0 {
		return nil
	}
	usage := make(map[int]ProcUsage, len(s.pids))
	for _, pid := range s.pids {
		cur, err := ReadProc(pid)
		if err != nil {
			delete(prev, pid)
			continue
		}
		if p, ok := prev[pid]; ok {
			usage[pid] = ProcDelta(p, cur)
		}
		prev[pid] = cur
	}
	return usage
}
