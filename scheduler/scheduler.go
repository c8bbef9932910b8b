// Package scheduler decides when a client statement may execute. Every
// statement that needs the backend passes Admit first, so the thread-group
// model (groups, oversubscribe, stall detection, priorities) lives here
// without the proxy or the pool changing.
//
// For now it provides a global bound on concurrently executing statements
// (thread_pool_max_threads) with a FIFO queue and a bounded wait.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrQueueTimeout is returned by Admit when a statement waited longer than
// Config.QueueTimeout for a slot.
var ErrQueueTimeout = errors.New("scheduler: statement waited too long in the queue")

// Config configures a Scheduler.
type Config struct {
	// MaxThreads caps concurrently executing statements over all
	// sessions; 0 means no cap (the backend pool still bounds execution).
	MaxThreads int
	// QueueTimeout bounds the wait for a slot. Default 30s.
	QueueTimeout time.Duration
}

// Validate checks the config and fills in defaults.
func (c *Config) Validate() error {
	if c.MaxThreads < 0 {
		return fmt.Errorf("scheduler: max_threads %d < 0", c.MaxThreads)
	}
	if c.QueueTimeout <= 0 {
		c.QueueTimeout = 30 * time.Second
	}
	return nil
}

// Task describes the statement asking for admission.
type Task struct {
	ConnID uint32
	// Pinned is set when the session holds a backend connection of its own
	// (open transaction, locks). Such a statement is admitted at once: it
	// needs no pool connection to finish, and holding it back could stall
	// every session waiting for that connection.
	Pinned bool
}

// Slot is an admission; pass it to Release when the statement is done.
type Slot struct {
	counted bool
}

// Scheduler admits statements.
type Scheduler struct {
	cfg Config

	mu      sync.Mutex // guards active and waiters
	active  int
	waiters []chan struct{}

	admitted atomic.Uint64
	queued   atomic.Uint64
	timeouts atomic.Uint64
}

// New returns a scheduler for cfg.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Scheduler{cfg: cfg}, nil
}

// Admit returns when the statement may execute, or with an error when the
// wait exceeded the queue timeout or ctx ended.
func (s *Scheduler) Admit(ctx context.Context, t Task) (Slot, error) {
	s.admitted.Add(1)
	if s.cfg.MaxThreads == 0 || t.Pinned {
		return Slot{}, nil
	}
	s.mu.Lock()
	if s.active < s.cfg.MaxThreads && len(s.waiters) == 0 {
		s.active++
		s.mu.Unlock()
		return Slot{counted: true}, nil
	}
	ch := make(chan struct{}, 1)
	s.waiters = append(s.waiters, ch)
	s.mu.Unlock()
	s.queued.Add(1)

	timer := time.NewTimer(s.cfg.QueueTimeout)
	defer timer.Stop()
	var err error
	select {
	case <-ch:
		return Slot{counted: true}, nil
	case <-timer.C:
		err = fmt.Errorf("%w (%s)", ErrQueueTimeout, s.cfg.QueueTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.mu.Lock()
	for i, w := range s.waiters {
		if w == ch {
			s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
			s.mu.Unlock()
			if errors.Is(err, ErrQueueTimeout) {
				s.timeouts.Add(1)
			}
			return Slot{}, err
		}
	}
	s.mu.Unlock()
	// Admitted while giving up: take the slot.
	<-ch
	return Slot{counted: true}, nil
}

// Release ends an admission.
func (s *Scheduler) Release(sl Slot) {
	if !sl.counted {
		return
	}
	s.mu.Lock()
	if len(s.waiters) > 0 {
		ch := s.waiters[0]
		s.waiters = s.waiters[1:]
		s.mu.Unlock()
		ch <- struct{}{}
		return
	}
	s.active--
	s.mu.Unlock()
}

// Stats is a snapshot of the scheduler.
type Stats struct {
	Active   int
	Queued   int
	Admitted uint64
	Waited   uint64
	Timeouts uint64
}

// Stats returns a snapshot.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	st := Stats{Active: s.active, Queued: len(s.waiters)}
	s.mu.Unlock()
	st.Admitted = s.admitted.Load()
	st.Waited = s.queued.Load()
	st.Timeouts = s.timeouts.Load()
	return st
}
