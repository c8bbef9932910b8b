package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tpproxy/tpproxy/bench/internal/barrier"
)

// Shard makes a ramp one part of a distributed run (tpbench compare
// --shard i/N): it runs its share of each step's clients, and the
// shards' results.json are merged afterwards (Merge).
type Shard struct {
	// Index and Count: this is shard Index of Count (0-based).
	Index, Count int
	// Barrier is the address shard 0 listens on and the others connect
	// to, so that every step starts on all shards at once. Required when
	// Count > 1.
	Barrier string
	// BarrierTimeout bounds each wait at the barrier (default 2 min).
	BarrierTimeout time.Duration
}

// ParseShard reads "i/N" (0 ≤ i < N).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("%w: --shard %q: want INDEX/COUNT with 0 <= INDEX < COUNT, e.g. 0/3", ErrBadRamp, s)
	}
	return Shard{Index: i, Count: n}, nil
}

// String is the "i/N" form.
func (s Shard) String() string { return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count) }

// ShardShare is shard index's part of total clients split over count
// shards: total/count, one more for the first total%count shards.
func ShardShare(total, index, count int) int {
	n := total / count
	if index < total%count {
		n++
	}
	return n
}

// shardFirst is the number of clients of the shards before index: shard
// index's clients are clients shardFirst.. of the whole step, and use
// the same seeds as they would in one process.
func shardFirst(total, index, count int) int {
	first := 0
	for i := range index {
		first += ShardShare(total, i, count)
	}
	return first
}

func (s *Shard) validate(cfg *RampConfig) error {
	switch {
	case s.Count < 1 || s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("%w: shard %d of %d", ErrBadRamp, s.Index, s.Count)
	case s.Count > 1 && s.Barrier == "":
		return fmt.Errorf("%w: --shard %s needs --barrier ADDR (shard 0 listens there, the others connect) so that steps start together", ErrBadRamp, s)
	case cfg.Confirm > 0:
		return fmt.Errorf("%w: --confirm cannot be used with --shard: which step to confirm is known only after tpbench merge", ErrBadRamp)
	}
	for _, n := range cfg.Steps {
		if n < s.Count {
			return fmt.Errorf("%w: a step of %d clients cannot be split over %d shards (each needs at least one)", ErrBadRamp, n, s.Count)
		}
	}
	return nil
}

// ShardInfo is in a shard's results.json: what Merge needs to check that
// the parts belong together and to finish the run.
type ShardInfo struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Steps are the whole run's client counts (all shards together).
	Steps []int `json:"steps"`
	// Stop is the ramp's stop conditions; shards do not apply them (they
	// would stop at different steps), Merge does on the merged steps.
	Stop StopConditions `json:"stop"`
}

// StepShards describes a merged step.
type StepShards struct {
	// Count is the number of shards merged.
	Count int `json:"count"`
	// Threads are each shard's clients, by shard index.
	Threads []int `json:"threads"`
	// StartSkewMs is the largest difference between the shards' hold
	// starts (by their clocks).
	StartSkewMs float64 `json:"start_skew_ms"`
}

// shardGate numbers the barrier rounds of a sharded ramp: one before
// each step on each target, in the same order on every shard.
type shardGate struct {
	b     *barrier.Barrier
	round int
}

// joinShards enters the shards' barrier; nil when the ramp is not
// sharded.
func joinShards(ctx context.Context, s *Shard) (*shardGate, error) {
	if s == nil {
		return nil, nil
	}
	b, err := barrier.Join(ctx, barrier.Config{Addr: s.Barrier, Index: s.Index, Count: s.Count, Timeout: s.BarrierTimeout})
	if err != nil {
		return nil, fmt.Errorf("bench: shard %s: %w", s, err)
	}
	return &shardGate{b: b}, nil
}

// next returns the wait of the next round.
func (g *shardGate) next() func(context.Context) error {
	round := g.round
	g.round++
	return func(ctx context.Context) error { return g.b.Wait(ctx, round) }
}

func (g *shardGate) close() {
	if g != nil {
		g.b.Close()
	}
}
