package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/bench/internal/barrier"
)

// TestShardedRampMatchesSingle runs a ramp of 8 and 24 clients on the
// sandbox as 3 shards (goroutines calling Ramp, as 3 tpbench processes
// would, meeting at a loopback barrier) and merges them, between two runs
// of the same ramp in one piece: the merged steps have the same client
// counts and a TPS within 25% of the single runs' mean (a lost or a
// doubled shard is off by a third), the merge's sums are exact, and the shards
// started each step within 100 ms of each other. The TPS is compared only
// with TPBENCH_QUIET_MACHINE=1: beside the other packages' tests (go test
// runs them at once) the single runs alone varied 7,842 to 21,682 TPS.
// scripts/test.sh runs it so after the rest, alone and without -race.
func TestShardedRampMatchesSingle(t *testing.T) {
	srv := server(t)
	ctx := t.Context()
	dsn := srv.DSN(testUser, testPassword, testDB)
	db, err := OpenDB(dsn, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := Schema{Tables: 1, TableSize: 1000}
	if err := Prepare(ctx, db, schema.Tables, schema.TableSize); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = Cleanup(ctx, db, schema.Tables) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	barrierAddr := ln.Addr().String()
	ln.Close()

	steps := []int{8, 24}
	cfg := func(shard *Shard) RampConfig {
		return RampConfig{Targets: []Target{{Name: "direct", DSN: dsn}}, Workload: "oltp_point_select", Schema: schema,
			Steps: steps, Warmup: 500 * time.Millisecond, StepDuration: 3 * time.Second, Shard: shard,
			Stop: StopConditions{P99: time.Minute}}
	}
	// A first load on freshly prepared data runs colder than the ones
	// after it; prime the server so that neither run pays for that.
	if _, err := Ramp(ctx, RampConfig{Targets: []Target{{Name: "direct", DSN: dsn}}, Workload: "oltp_point_select", Schema: schema,
		Steps: []int{8}, StepDuration: time.Second}); err != nil {
		t.Fatal(err)
	}
	// One comparison: single, sharded, single. off lists the steps whose
	// TPS is out of tolerance.
	compare := func() (merged *Report, off []string) {
		before, err := Ramp(ctx, cfg(nil))
		if err != nil {
			t.Fatal(err)
		}

		const n = 3
		parts := make([]*Report, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				parts[i], errs[i] = Ramp(ctx, cfg(&Shard{Index: i, Count: n, Barrier: barrierAddr, BarrierTimeout: 30 * time.Second}))
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		// The single run before and after the sharded one: the reference is
		// their mean, so that the machine's drift (it is shared) counts for
		// neither side.
		after, err := Ramp(ctx, cfg(nil))
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range parts {
			if p.Shard == nil || p.Shard.Index != i || len(p.Steps) != 2 || p.Steps[0].Threads != ShardShare(8, i, n) || p.Capacity != nil {
				t.Fatalf("shard %d: %+v, steps %d", i, p.Shard, len(p.Steps))
			}
		}
		merged, err = Merge(parts)
		if err != nil {
			t.Fatal(err)
		}
		// The merge's arithmetic is checked exactly: a merged step's
		// transactions are the shards' sum, its TPS is that sum over the
		// union of their holds, and so at most the sum of their TPS.
		for j, s := range merged.Steps {
			var tx, tps float64
			for _, p := range parts {
				tx += float64(p.Steps[j].Transactions)
				tps += p.Steps[j].TPS
			}
			if float64(s.Transactions) != tx || s.DurationSec <= 0 || math.Abs(s.TPS-tx/s.DurationSec) > 1e-6*s.TPS || s.TPS > tps*(1+1e-9) {
				t.Errorf("step %d: merged %d transactions, %.1f TPS over %.3f s; shards %.0f transactions, %.1f TPS summed",
					j, s.Transactions, s.TPS, s.DurationSec, tx, tps)
			}
		}
		// Against the single runs the comparison catches gross errors only
		// (a lost shard is 0.67, one counted twice 1.33): three sql.DB
		// pools of 8 clients contend on 2 CPUs unlike one pool of 24, and
		// a CI run measured the merged TPS 9-19% above the single runs'
		// mean in all three comparisons (1.109, 1.094, 1.185 at 8
		// clients), with the single runs 20% apart from each other.
		tolerance := 0.25
		for j, s := range merged.Steps {
			one, two := before.Steps[j], after.Steps[j]
			ref := (one.TPS + two.TPS) / 2
			ratio := s.TPS / ref
			t.Logf("%d clients: merged %.0f TPS (shards %v, skew %.2f ms, p99 %.2f ms), single %.0f and %.0f TPS (p99 %.2f, %.2f ms): ratio %.3f",
				s.Threads, s.TPS, s.Shards.Threads, s.Shards.StartSkewMs, s.Latency.P99, one.TPS, two.TPS, one.Latency.P99, two.Latency.P99, ratio)
			if s.Threads != one.Threads || s.Threads != steps[j] {
				t.Errorf("step %d: merged %d clients, single %d, want %d", j, s.Threads, one.Threads, steps[j])
			}
			if math.Abs(ratio-1) > tolerance {
				off = append(off, fmt.Sprintf("step %d: merged TPS %.0f is not within %.0f%% of the single runs' mean %.0f", j, s.TPS, tolerance*100, ref))
			}
			if s.Shards.StartSkewMs > 100 {
				t.Errorf("step %d: shards started %.1f ms apart", j, s.Shards.StartSkewMs)
			}
			if s.Latency.Count != int64(s.Transactions) || s.ErrorTotal != 0 {
				t.Errorf("step %d: %d latencies for %d transactions, %d errors", j, s.Latency.Count, s.Transactions, s.ErrorTotal)
			}
		}
		return merged, off
	}
	quiet := os.Getenv("TPBENCH_QUIET_MACHINE") == "1"
	merged, off := compare()
	// A 3 s hold on a 2-CPU machine drifts (measured 0.86 to 1.22): up
	// to three comparisons, one of which must pass. A sharded run that
	// lost or doubled a shard fails all three.
	for attempt := 2; quiet && len(off) > 0 && attempt <= 3; attempt++ {
		t.Logf("out of tolerance, comparison %d: %v", attempt, off)
		merged, off = compare()
	}
	if quiet {
		for _, o := range off {
			t.Error(o)
		}
	}
	if c := merged.Capacity; len(c) != 1 || c[0].Clients != 24 || c[0].PassedSteps != 2 {
		t.Errorf("merged capacity %+v", c)
	}
	if !strings.Contains(strings.Join(merged.Notes, " "), "Merged from 3 shards") {
		t.Errorf("notes %q", merged.Notes)
	}
}

// TestShardRampRefuses: a shard without a barrier, with --confirm, or
// with a step smaller than the shard count is refused before it runs;
// a shard whose peers never come fails with the barrier's timeout.
func TestShardRampRefuses(t *testing.T) {
	base := RampConfig{Targets: []Target{{Name: "a", DSN: "x"}}, Workload: "oltp_point_select", Steps: []int{8}, StepDuration: time.Second}
	for _, c := range []struct {
		mod  func(*RampConfig)
		want string
	}{
		{func(c *RampConfig) { c.Shard = &Shard{Index: 1, Count: 3} }, "needs --barrier"},
		{func(c *RampConfig) { c.Shard = &Shard{Index: 0, Count: 2, Barrier: "x:1"}; c.Confirm = time.Second }, "--confirm"},
		{func(c *RampConfig) { c.Shard = &Shard{Index: 0, Count: 9, Barrier: "x:1"} }, "8 clients cannot be split over 9"},
		{func(c *RampConfig) { c.Shard = &Shard{Index: 3, Count: 3, Barrier: "x:1"} }, "shard 3 of 3"},
	} {
		cfg := base
		c.mod(&cfg)
		if _, err := Ramp(t.Context(), cfg); !errors.Is(err, ErrBadRamp) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want it to mention %q", err, c.want)
		}
	}
}

// TestShardDiesMidRun: when one shard ends mid-run (its context is
// cancelled after the first step), the other fails at the next step's
// barrier at once, with barrier.ErrShardLost, instead of waiting for the
// barrier's timeout.
func TestShardDiesMidRun(t *testing.T) {
	srv := server(t)
	ctx := t.Context()
	dsn := srv.DSN(testUser, testPassword, testDB)
	db, err := OpenDB(dsn, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := Schema{Tables: 1, TableSize: 100}
	if err := Prepare(ctx, db, schema.Tables, schema.TableSize); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = Cleanup(ctx, db, schema.Tables) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := func(i int) RampConfig {
		return RampConfig{Targets: []Target{{Name: "direct", DSN: dsn}}, Workload: "oltp_point_select", Schema: schema,
			Steps: []int{2, 2, 2}, StepDuration: time.Second, Shard: &Shard{Index: i, Count: 2, Barrier: addr, BarrierTimeout: 30 * time.Second}}
	}
	dying, cancel := context.WithCancel(ctx)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	begin := time.Now()
	wg.Go(func() { _, errs[0] = Ramp(ctx, cfg(0)) })
	wg.Go(func() {
		c := cfg(1)
		c.Out = &cancelOnLine{cancel: cancel} // ends shard 1 after its first step
		_, errs[1] = Ramp(dying, c)
	})
	wg.Wait()
	t.Logf("shard 0: %v\nshard 1: %v", errs[0], errs[1])
	if !errors.Is(errs[0], barrier.ErrShardLost) {
		t.Errorf("shard 0: %v", errs[0])
	}
	if !errors.Is(errs[1], context.Canceled) {
		t.Errorf("shard 1: %v", errs[1])
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("took %s: shard 0 waited for the barrier's timeout", d)
	}
}

// cancelOnLine cancels when the ramp prints its first step's line.
type cancelOnLine struct{ cancel context.CancelFunc }

func (c *cancelOnLine) Write(p []byte) (int, error) {
	c.cancel()
	return len(p), nil
}
