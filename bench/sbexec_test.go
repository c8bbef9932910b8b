package bench

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSysbenchParser reads sysbench 1.0.20's output with a warmup
// checkpoint: the measurement starts at the checkpoint, and the figures
// are the final report's, not the checkpoint's.
func TestSysbenchParser(t *testing.T) {
	b, err := os.ReadFile("testdata/sysbench-checkpoint.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, warmup := range []bool{true, false} {
		p := newSysbenchParser(warmup)
		var events []sbEvent
		for _, l := range strings.Split(string(b), "\n") {
			if e := p.line(l); e != sbNothing {
				events = append(events, e)
			}
		}
		want := []sbEvent{sbInterval, sbMeasuring, sbInterval, sbInterval, sbFinal}
		if !warmup {
			// Without a warmup the measurement starts with the threads
			// (a checkpoint is not expected then, but would restart it).
			want = append([]sbEvent{sbMeasuring}, want...)
		}
		if !slices.Equal(events, want) {
			t.Errorf("warmup %v: events %v, want %v", warmup, events, want)
		}
		want1 := SysbenchResult{Transactions: 19936, Queries: 19936, TPS: 9959.12, QPS: 9959.12, IgnoredErrors: 3,
			AvgMs: 0.20, P95Ms: 0.35, MaxMs: 4.84}
		if !p.done || p.res != want1 {
			t.Errorf("warmup %v: result %+v (done %v), want %+v", warmup, p.res, p.done, want1)
		}
	}
}

func TestSysbenchArgs(t *testing.T) {
	r := SysbenchRun{Workload: "oltp_read_write", DSN: "app:secret@tcp(127.0.0.1:3307)/sbtest?timeout=10s",
		Tables: 4, TableSize: 100000, Threads: 1000, Warmup: 5 * time.Second, Duration: 20 * time.Second, PSMode: "disable"}
	args, err := r.args("run")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	for _, want := range []string{"oltp_read_write ", "--mysql-host=127.0.0.1 ", "--mysql-port=3307 ", "--mysql-user=app ",
		"--mysql-password=secret ", "--mysql-db=sbtest ", "--tables=4 ", "--table-size=100000 ", "--db-ps-mode=disable ",
		"--threads=1000 ", "--time=25 ", "--events=0 ", "--report-interval=1 ", "--report-checkpoints=5 "} {
		if !strings.Contains(got, want) {
			t.Errorf("args %q lack %q", got, want)
		}
	}
	if !strings.HasSuffix(got, " run") {
		t.Errorf("args %q do not end with the command", got)
	}
	r.Warmup = 0
	if args, _ := r.args("run"); slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--report-checkpoints") }) {
		t.Errorf("no warmup, yet %q", args)
	}
	if _, err := (SysbenchRun{DSN: "app@unix(/tmp/s)/db"}).args("run"); err == nil {
		t.Error("a unix-socket DSN was accepted")
	}
}
