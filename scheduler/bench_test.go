package scheduler

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkAdmit measures one Admit+Release with 1, 64 and 4,096 sessions
// competing for 4 thread groups of 4 slots (defaults but size 4): with
// more sessions than slots most admissions queue and are handed over by
// a releasing session. ns/op is per statement over all sessions.
func BenchmarkAdmit(b *testing.B) {
	for _, sessions := range []int{1, 64, 4096} {
		b.Run("sessions="+strconv.Itoa(sessions), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Size = 4
			cfg.QueueTimeout = time.Minute
			s, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			var left atomic.Int64
			left.Store(int64(b.N))
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range sessions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					task := &Task{ConnID: uint32(i)}
					<-start
					for left.Add(-1) >= 0 {
						if err := s.Admit(context.Background(), task); err != nil {
							b.Error(err)
							return
						}
						s.Release(task)
					}
				}()
			}
			b.ReportAllocs()
			b.ResetTimer()
			close(start)
			wg.Wait()
		})
	}
}
