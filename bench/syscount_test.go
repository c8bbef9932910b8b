package bench

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestParsePerfCount reads perf stat -x , output.
func TestParsePerfCount(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		err  bool
	}{
		{in: "1234567,,raw_syscalls:sys_enter,15002345678,100.00,,\n", want: 1234567},
		{in: "<not counted>,,raw_syscalls:sys_enter,0,100.00,,\n", want: 0},
		{in: "\n  1,,cycles,1,100.00,,\n", err: true},
		{in: "x,,raw_syscalls:sys_enter,1,100.00,,\n", err: true},
		{in: "", err: true},
	} {
		n, err := parsePerfCount([]byte(c.in))
		if (err != nil) != c.err || n != c.want {
			t.Errorf("parsePerfCount(%q) = %d, %v; want %d, error %v", c.in, n, err, c.want, c.err)
		}
	}
}

// TestSyscallCounterCountsAProcess counts a child that makes a known
// number of system calls at least: dd copying 2,000 blocks makes 2,000
// reads and 2,000 writes.
func TestSyscallCounterCountsAProcess(t *testing.T) {
	perf, err := findPerf()
	if err != nil {
		t.Skip(err)
	}
	if os.Geteuid() != 0 {
		t.Skip("perf stat on a tracepoint needs root here")
	}
	// The child waits on stdin so that the count starts before its work.
	cmd := exec.Command("sh", "-c", "read x; dd if=/dev/zero of=/dev/null bs=1 count=2000 2>/dev/null; sleep 0.3")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := startSyscallCount(ctx, perf, cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // perf attaches
	_, _ = in.Write([]byte("go\n"))
	time.Sleep(200 * time.Millisecond)
	n, err := c.stop()
	if err != nil {
		if strings.Contains(err.Error(), "ermission") || strings.Contains(err.Error(), "not supported") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Logf("%d system calls", n)
	if n < 4000 {
		t.Errorf("counted %d system calls, want at least dd's 4,000", n)
	}
}
