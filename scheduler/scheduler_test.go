package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestUnboundedAdmitsAtOnce(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		sl, err := s.Admit(context.Background(), Task{ConnID: uint32(i)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Release(sl)
	}
	if st := s.Stats(); st.Admitted != 100 || st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestMaxThreadsQueuesFIFO(t *testing.T) {
	s, _ := New(Config{MaxThreads: 1, QueueTimeout: 10 * time.Second})
	ctx := context.Background()
	first, err := s.Admit(ctx, Task{ConnID: 1})
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan uint32, 3)
	for id := uint32(2); id <= 4; id++ {
		go func(id uint32) {
			sl, err := s.Admit(ctx, Task{ConnID: id})
			if err != nil {
				t.Error(err)
				return
			}
			order <- id
			s.Release(sl)
		}(id)
		waitQueued(t, s, int(id-1))
	}
	// A session holding a pinned backend is never queued.
	pinned, err := s.Admit(ctx, Task{ConnID: 9, Pinned: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Release(pinned)
	s.Release(first)
	for want := uint32(2); want <= 4; want++ {
		if got := <-order; got != want {
			t.Fatalf("admitted %d before %d", got, want)
		}
	}
	if st := s.Stats(); st.Active != 0 || st.Queued != 0 || st.Waited != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestQueueTimeoutAndCancel(t *testing.T) {
	s, _ := New(Config{MaxThreads: 1, QueueTimeout: 50 * time.Millisecond})
	held, _ := s.Admit(context.Background(), Task{})
	if _, err := s.Admit(context.Background(), Task{}); !errors.Is(err, ErrQueueTimeout) {
		t.Fatalf("got %v, want ErrQueueTimeout", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Admit(ctx, Task{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	s.Release(held)
	if st := s.Stats(); st.Active != 0 || st.Queued != 0 || st.Timeouts != 1 {
		t.Fatalf("a waiter that gave up left a trace: %+v", st)
	}
	sl, err := s.Admit(context.Background(), Task{})
	if err != nil {
		t.Fatalf("slot lost: %v", err)
	}
	s.Release(sl)
}

func waitQueued(t *testing.T, s *Scheduler, n int) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for s.Stats().Queued != n {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("queue never reached %d", n)
		}
	}
}
