package bench

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrBadMerge marks shards' results that do not belong together.
var ErrBadMerge = errors.New("bench: cannot merge")

// MergeInfo is in a merged results.json: how the parts were combined.
type MergeInfo struct {
	// Shards is the number of parts.
	Shards int `json:"shards"`
	// MaxStartSkewMs is the largest StepShards.StartSkewMs of the run.
	MaxStartSkewMs float64 `json:"max_start_skew_ms"`
	// Sources are the parts' locations as given to the merge (by shard
	// index), when known.
	Sources []string `json:"sources,omitempty"`
}

// Merge combines the parts of a sharded ramp (tpbench compare --shard
// i/N), one report per shard in any order, into the report of the whole
// run. Per step (the i-th StepResult of every part):
//
//   - clients (Threads), transactions, queries, errors, retries and
//     reconnects are summed;
//   - the hold is the union of the shards' holds (earliest start to
//     latest end); TPS and QPS are the summed counts over it, so a skew
//     between the shards lowers them rather than inflating them, and the
//     skew is reported (StepShards.StartSkewMs);
//   - latency percentiles come from the merged HDR histograms, never from
//     the parts' percentiles;
//   - client CPU is summed (Pct: cores busy on all load hosts together);
//     host figures are the busiest shard's (by CPU), since each shard
//     reads its own load host unless they all read the database host's
//     node_exporter; server status, watched processes and tpproxy's own
//     figures are shard 0's (they describe the one server and proxy
//     every shard loads), and the relay's and server's CPU per statement
//     are shard 0's CPU time over all shards' statements;
//   - the stop conditions, which the shards did not apply, are checked
//     on the merged steps for Capacity; steps after a target's first
//     failing one ran anyway and are kept.
//
// Parts that do not belong together (another shard count or step list, a
// missing or repeated index, different workloads or steps, no
// histograms) are refused with an error wrapping ErrBadMerge.
func Merge(parts []*Report) (*Report, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: no results", ErrBadMerge)
	}
	byIndex := make([]*Report, len(parts))
	for i, p := range parts {
		switch {
		case p.Shard == nil:
			return nil, fmt.Errorf("%w: part %d is not a shard's result (run tpbench compare --shard i/N)", ErrBadMerge, i+1)
		case p.Shard.Count != len(parts):
			return nil, fmt.Errorf("%w: shard %d/%d of a %d-shard run, but %d parts given", ErrBadMerge,
				p.Shard.Index, p.Shard.Count, p.Shard.Count, len(parts))
		case p.Shard.Index < 0 || p.Shard.Index >= len(parts):
			return nil, fmt.Errorf("%w: shard index %d out of 0..%d", ErrBadMerge, p.Shard.Index, len(parts)-1)
		case byIndex[p.Shard.Index] != nil:
			return nil, fmt.Errorf("%w: shard %d given twice", ErrBadMerge, p.Shard.Index)
		}
		byIndex[p.Shard.Index] = p
	}
	first := byIndex[0]
	for _, p := range byIndex[1:] {
		if err := sameRun(first, p); err != nil {
			return nil, err
		}
	}

	n := len(byIndex)
	out := &Report{
		Title:       fmt.Sprintf("%s (%d shards merged)", first.Title, len(byIndex)),
		Started:     first.Started,
		Finished:    first.Finished,
		Environment: first.Environment,
		Proxy:       first.Proxy,
		Merged:      &MergeInfo{Shards: n},
	}
	for _, p := range byIndex {
		if p.Started.Before(out.Started) {
			out.Started = p.Started
		}
		if p.Finished.After(out.Finished) {
			out.Finished = p.Finished
		}
	}
	for j := range first.Steps {
		steps := make([]StepResult, n)
		for i, p := range byIndex {
			steps[i] = p.Steps[j]
		}
		m, err := mergeStep(steps)
		if err != nil {
			return nil, err
		}
		out.Merged.MaxStartSkewMs = max(out.Merged.MaxStartSkewMs, m.Shards.StartSkewMs)
		out.Steps = append(out.Steps, m)
	}
	if err := checkShardSteps(first.Shard.Steps, out.Steps); err != nil {
		return nil, err
	}
	out.Capacity = mergedCapacity(out.Steps, first.Shard.Stop, &out.Notes)
	targets := stepTargets(out.Steps)
	for _, t := range targets[min(1, len(targets)):] {
		out.Comparisons = append(out.Comparisons, Pair(out.Steps, targets[0], t)...)
	}
	out.Notes = append(out.Notes, fmt.Sprintf("Merged from %d shards (tpbench merge): counts summed over the union of the shards' holds, "+
		"latency from the merged histograms; largest start skew between shards %.1f ms. "+
		"Host figures are the busiest shard's, server, process and tpproxy figures shard 0's.", n, out.Merged.MaxStartSkewMs))
	return out, nil
}

// sameRun refuses a part whose run differs from shard 0's.
func sameRun(a, b *Report) error {
	ea, eb := a.Environment, b.Environment
	switch {
	case ea.Workload != eb.Workload || ea.Tables != eb.Tables || ea.TableSize != eb.TableSize || ea.Schemas != eb.Schemas ||
		ea.Scale != eb.Scale || ea.Distribution != eb.Distribution || ea.PSMode != eb.PSMode || ea.ConnectPerTx != eb.ConnectPerTx:
		return fmt.Errorf("%w: shard %d ran %s on %d×%d rows (ps-mode %s), shard %d %s on %d×%d rows (ps-mode %s)", ErrBadMerge,
			a.Shard.Index, ea.Workload, ea.Tables, ea.TableSize, ea.PSMode, b.Shard.Index, eb.Workload, eb.Tables, eb.TableSize, eb.PSMode)
	case ea.WarmupSec != eb.WarmupSec || ea.DurationSec != eb.DurationSec:
		return fmt.Errorf("%w: shard %d held steps %s after %s warmup, shard %d %s after %s", ErrBadMerge,
			a.Shard.Index, secs(ea.DurationSec), secs(ea.WarmupSec), b.Shard.Index, secs(eb.DurationSec), secs(eb.WarmupSec))
	case !slices.Equal(a.Shard.Steps, b.Shard.Steps):
		return fmt.Errorf("%w: shard %d ran steps %v, shard %d %v", ErrBadMerge, a.Shard.Index, a.Shard.Steps, b.Shard.Index, b.Shard.Steps)
	case a.Shard.Stop != b.Shard.Stop:
		return fmt.Errorf("%w: shards %d and %d have different stop conditions", ErrBadMerge, a.Shard.Index, b.Shard.Index)
	case len(a.Steps) != len(b.Steps):
		return fmt.Errorf("%w: shard %d has %d steps, shard %d %d (did one stop early?)", ErrBadMerge,
			a.Shard.Index, len(a.Steps), b.Shard.Index, len(b.Steps))
	}
	for j := range a.Steps {
		sa, sb := a.Steps[j], b.Steps[j]
		if sa.Target != sb.Target || sa.Workload != sb.Workload || sa.Confirm != sb.Confirm {
			return fmt.Errorf("%w: step %d is %s on %s in shard %d but %s on %s in shard %d", ErrBadMerge,
				j+1, sa.Workload, sa.Target, a.Shard.Index, sb.Workload, sb.Target, b.Shard.Index)
		}
	}
	return nil
}

// mergeStep combines the shards' parts of one step, by shard index.
func mergeStep(parts []StepResult) (StepResult, error) {
	n := len(parts)
	p0 := parts[0]
	m := StepResult{
		Target: p0.Target, Workload: p0.Workload, WarmupSec: p0.WarmupSec, Confirm: p0.Confirm, Params: p0.Params,
		Errors: map[string]uint64{}, Server: p0.Server, Proxy: p0.Proxy, Processes: slices.Clone(p0.Processes),
		Histogram: NewHistogram(), Shards: &StepShards{Count: n, Threads: make([]int, n)},
	}
	start, end := p0.Started, p0.Started.Add(secDuration(p0.DurationSec))
	latest := p0.Started
	for i, p := range parts {
		if p.Histogram == nil {
			return StepResult{}, fmt.Errorf("%w: shard %d's %s on %s has no latency histogram (results.json of an older tpbench?)",
				ErrBadMerge, i, p.Label(), p.Target)
		}
		m.Threads += p.Threads
		m.Shards.Threads[i] = p.Threads
		m.Transactions += p.Transactions
		m.Queries += p.Queries
		for k, v := range p.Errors {
			m.Errors[k] += v
		}
		m.ErrorTotal += p.ErrorTotal
		m.Deadlocks += p.Deadlocks
		m.LockWaitTimeouts += p.LockWaitTimeouts
		m.Reconnects += p.Reconnects
		m.Histogram.Merge(p.Histogram)
		m.ClientCPU.UserSec += p.ClientCPU.UserSec
		m.ClientCPU.SystemSec += p.ClientCPU.SystemSec
		m.ClientCPU.Pct += p.ClientCPU.Pct
		m.ClientCPU.Cores += p.ClientCPU.Cores
		if p.Host != nil && (m.Host == nil || p.Host.CPUBusyPct > m.Host.CPUBusyPct) {
			h := *p.Host
			m.Host = &h
		}
		if p.Started.Before(start) {
			start = p.Started
		}
		if p.Started.After(latest) {
			latest = p.Started
		}
		if e := p.Started.Add(secDuration(p.DurationSec)); e.After(end) {
			end = e
		}
	}
	m.Started = start
	m.DurationSec = end.Sub(start).Seconds()
	m.Shards.StartSkewMs = float64(latest.Sub(start)) / float64(time.Millisecond)
	m.derive()
	return m, nil
}

func secDuration(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// checkShardSteps checks that every merged step has the whole step's
// clients and that each shard ran its share of them.
func checkShardSteps(totals []int, steps []StepResult) error {
	for _, s := range steps {
		if s.Confirm {
			continue
		}
		if !slices.Contains(totals, s.Threads) {
			return fmt.Errorf("%w: %s on %s sums to %d clients, not one of the run's steps %v", ErrBadMerge, s.Label(), s.Target, s.Threads, totals)
		}
		for i, th := range s.Shards.Threads {
			if want := ShardShare(s.Threads, i, s.Shards.Count); th != want {
				return fmt.Errorf("%w: shard %d ran %d of %s's clients, its share is %d", ErrBadMerge, i, th, s.Label(), want)
			}
		}
	}
	return nil
}

// stepTargets lists the targets in the order they first ran.
func stepTargets(steps []StepResult) []string {
	var out []string
	for _, s := range steps {
		if !slices.Contains(out, s.Target) {
			out = append(out, s.Target)
		}
	}
	return out
}

// mergedCapacity applies the stop conditions to the merged steps as Ramp
// does to a single run's, adding a note where a target stopped.
func mergedCapacity(steps []StepResult, stop StopConditions, notes *[]string) []Capacity {
	targets := stepTargets(steps)
	caps := make([]Capacity, len(targets))
	for k, t := range targets {
		caps[k].Target = t
		for _, s := range steps {
			if s.Target != t || s.Confirm {
				continue
			}
			if why := stop.Check(s); why != "" {
				caps[k].StoppedBy = why
				*notes = append(*notes, fmt.Sprintf("%s stopped at %d clients: %s (checked after the merge; later steps ran on every shard and are listed).",
					t, s.Threads, why))
				break
			}
			caps[k].PassedSteps++
			caps[k].Clients, caps[k].TPS, caps[k].P90 = s.Threads, s.TPS, s.Latency.P90
		}
	}
	return caps
}
