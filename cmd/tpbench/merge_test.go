package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/bench"
)

// TestShardFlags: --shard and --barrier are checked before anything runs,
// and sweep and soak refuse them with the reason.
func TestShardFlags(t *testing.T) {
	const target = "a=root@tcp(127.0.0.1:1)/x"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", "--target", target, "--shard", "3/3"}, "want INDEX/COUNT"},
		{[]string{"compare", "--target", target, "--shard", "1/3"}, "needs --barrier"},
		{[]string{"compare", "--target", target, "--barrier", "127.0.0.1:7070"}, "--barrier needs --shard"},
		{[]string{"compare", "--target", target, "--shard", "0/2", "--barrier", "127.0.0.1:1", "--confirm", "1s"}, "--confirm cannot be used with --shard"},
		{[]string{"compare", "--target", target, "--shard", "0/4", "--barrier", "127.0.0.1:1", "--threads", "2,8"}, "2 clients cannot be split over 4"},
		{[]string{"sweep", "--target", target, "--proxy-admin", "admin@tcp(127.0.0.1:1)/", "--shard", "0/2"}, "sweep does not take --shard"},
		{[]string{"soak", "--target", target, "--shard", "0/2"}, "soak does not take --shard"},
		{[]string{"merge", "x"}, "--out"},
	} {
		out, err := tpbench(t.Context(), c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want it to mention %q\n%s", c.args, err, c.want, out)
		}
	}
}

// writeShard writes shard i of n's results.json (one step of total
// clients) into a new directory.
func writeShard(t *testing.T, i, n, total int) string {
	t.Helper()
	h := bench.NewHistogram()
	for k := range 100 * (i + 1) {
		h.Record(time.Duration(k+1) * 10 * time.Microsecond * time.Duration(i+1))
	}
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	rep := &bench.Report{Title: "tpbench compare", Started: t0, Finished: t0.Add(10 * time.Second),
		Environment: bench.Environment{Workload: "oltp_point_select", Tables: 1, TableSize: 1000, DurationSec: 3},
		Shard:       &bench.ShardInfo{Index: i, Count: n, Steps: []int{total}},
		Steps: []bench.StepResult{{Target: "direct", Workload: "oltp_point_select", Threads: bench.ShardShare(total, i, n),
			Started: t0.Add(time.Duration(i) * time.Millisecond), DurationSec: 3,
			Transactions: uint64(h.Count()), Queries: uint64(h.Count()), Latency: h.Summary(), Histogram: h}}}
	dir := t.TempDir()
	if _, _, err := rep.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMergeCmd: tpbench merge writes the whole run's files from the
// shards' directories, tpbench report can regenerate them, and parts of
// an incomplete run are refused.
func TestMergeCmd(t *testing.T) {
	d0, d1 := writeShard(t, 0, 2, 5), writeShard(t, 1, 2, 5)
	out := filepath.Join(t.TempDir(), "merged")
	if o, err := tpbench(t.Context(), "merge", d1, d0, "--out", out); err != nil {
		t.Fatalf("%v\n%s", err, o)
	}
	rep, err := bench.ReadReport(filepath.Join(out, bench.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Steps[0]
	if len(rep.Steps) != 1 || s.Threads != 5 || s.Transactions != 300 || s.Latency.Count != 300 || s.Shards.StartSkewMs != 1 {
		t.Errorf("merged step %+v", s)
	}
	if rep.Merged == nil || rep.Merged.Shards != 2 || rep.Merged.Sources[0] != d0 || rep.Merged.Sources[1] != d1 {
		t.Errorf("merge info %+v", rep.Merged)
	}
	for _, f := range []string{bench.SummaryFile, bench.HTMLFile, bench.CSVFile} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if o, err := tpbench(t.Context(), "report", out); err != nil {
		t.Errorf("report of the merge: %v\n%s", err, o)
	}
	if _, err := tpbench(t.Context(), "merge", d0, "--out", t.TempDir()); err == nil || !strings.Contains(err.Error(), "2-shard run, but 1 parts") {
		t.Errorf("one of two shards: %v", err)
	}
	if _, err := tpbench(t.Context(), "merge", d0, d0, "--out", t.TempDir()); err == nil || !strings.Contains(err.Error(), "shard 0 given twice") {
		t.Errorf("a shard twice: %v", err)
	}
}
