package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// syscallTracepoint is the event perf counts: every system call's entry.
const syscallTracepoint = "raw_syscalls:sys_enter"

// findPerf returns the perf binary for counting system calls, or an
// error saying what is missing.
func findPerf() (string, error) {
	bin, err := exec.LookPath("perf")
	if err != nil {
		return "", errors.New("bench: counting system calls needs perf (apt-get install linux-perf)")
	}
	return bin, nil
}

// syscallCounter counts one process's system calls with `perf stat` on
// the raw_syscalls:sys_enter tracepoint (the threads it has when the
// count starts and those they start), from start until stop. A
// tracepoint that counts costs each call some tens of nanoseconds.
type syscallCounter struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan error
}

// startSyscallCount starts counting pid's system calls.
func startSyscallCount(ctx context.Context, perf string, pid int) (*syscallCounter, error) {
	c := &syscallCounter{done: make(chan error, 1)}
	c.cmd = exec.CommandContext(ctx, perf, "stat", "-e", syscallTracepoint, "-x", ",", "-p", strconv.Itoa(pid))
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: perf stat: %w", err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	return c, nil
}

// stop ends the count and returns it.
func (c *syscallCounter) stop() (uint64, error) {
	_ = c.cmd.Process.Signal(os.Interrupt)
	var werr error
	select {
	case werr = <-c.done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		werr = <-c.done
	}
	n, perr := parsePerfCount(c.stderr.Bytes())
	if perr != nil {
		var ee *exec.ExitError
		if werr != nil && !(errors.As(werr, &ee) && interrupted(ee)) {
			return 0, fmt.Errorf("bench: perf stat: %w: %s", werr, strings.TrimSpace(c.stderr.String()))
		}
		return 0, perr
	}
	return n, nil
}

// interrupted tells perf's exit on our SIGINT from a failure.
func interrupted(ee *exec.ExitError) bool {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGINT {
		return true
	}
	return ee.ExitCode() == 130 || ee.ExitCode() == 0
}

// parsePerfCount reads the count of syscallTracepoint from perf stat -x ,
// output: "COUNT,UNIT,EVENT,RUNTIME,PCT,,". "<not counted>" (the process
// never ran while counted) is 0.
func parsePerfCount(b []byte) (uint64, error) {
	for line := range bytes.Lines(b) {
		f := strings.Split(strings.TrimSpace(string(line)), ",")
		if len(f) < 3 || f[2] != syscallTracepoint {
			continue
		}
		if f[0] == "<not counted>" {
			return 0, nil
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: perf stat count %q: %w", f[0], err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("bench: perf stat printed no %s count: %s", syscallTracepoint, strings.TrimSpace(string(b)))
}
