package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tpproxy/tpproxy/bench/internal/tiers"
)

// ErrChildExited means a process the benchmark runs beside the load
// (tpproxy, haproxy) exited before it was stopped; the error carries the
// tail of its log.
var ErrChildExited = errors.New("bench: process exited")

// child is a process the benchmark runs beside the load: tpproxy or
// haproxy. Its output goes to a log file. It runs in its own process
// group, so that a terminal's Ctrl-C reaches only tpbench, which then
// stops it in order; on Linux it also gets SIGTERM should tpbench die.
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	// exited is closed once the process has been reaped; waitErr is
	// valid from then.
	exited  chan struct{}
	waitErr error

	stopOnce sync.Once
	stopErr  error
}

// startChild starts bin with args, its output appended to logPath. env
// nil means this process's environment.
func startChild(name, logPath string, env []string, bin string, args ...string) (*child, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("bench: %s log: %w", name, err)
	}
	defer logf.Close() // the child has its own descriptor
	// Not CommandContext: the process lives until stop, even when the
	// run's context ends first (Ctrl-C), so that it is stopped in order.
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
	c := &child{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	// The parent-death signal follows the thread that forked, not the
	// process: the goroutine that starts the child keeps its thread
	// until the child is reaped, so that no thread exit can send it.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("bench: start %s: %w", name, err)
	}
	return c, nil
}

// pid is the process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// exitError describes a process that exited on its own.
func (c *child) exitError() error {
	return fmt.Errorf("%w: %s (pid %d): %v; the end of %s:\n%s", ErrChildExited, c.name, c.pid(), c.waitErr, c.logPath, c.logTail(20))
}

// stop sends SIGTERM and waits up to grace for the process to exit, then
// kills it. A process that had already exited, or that did not exit
// cleanly, is an error.
func (c *child) stop(grace time.Duration) error {
	c.stopOnce.Do(func() {
		select {
		case <-c.exited:
			c.stopErr = c.exitError()
			return
		default:
		}
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			c.stopErr = fmt.Errorf("bench: stop %s: %w", c.name, err)
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-c.exited:
			if !exitedByTERM(c.waitErr) {
				c.stopErr = errors.Join(c.stopErr, fmt.Errorf("bench: %s (pid %d) after SIGTERM: %v; the end of %s:\n%s",
					c.name, c.pid(), c.waitErr, c.logPath, c.logTail(10)))
			}
		case <-t.C:
			_ = c.cmd.Process.Kill()
			<-c.exited
			c.stopErr = errors.Join(c.stopErr, fmt.Errorf("bench: %s (pid %d) did not exit within %s of SIGTERM and was killed", c.name, c.pid(), grace))
		}
	})
	return c.stopErr
}

// exitedByTERM reports a clean exit or one by the SIGTERM itself.
func exitedByTERM(err error) bool {
	if err == nil {
		return true
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM
}

// logTail returns the last n lines of the log.
func (c *child) logTail(n int) string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	lines = lines[max(0, len(lines)-n):]
	var out strings.Builder
	for _, l := range lines {
		out.WriteString("  ")
		out.Write(l)
		out.WriteByte('\n')
	}
	return out.String()
}

// placement is where a relay runs: in this network namespace on
// loopback (the zero value), or in a namespace of a network's tiers on
// its address there.
type placement struct {
	// NS is the namespace's name (ip netns), "" for this one.
	NS string
	// Host is the address the relay listens on; "" is 127.0.0.1.
	Host string
}

func (p placement) host() string {
	if p.Host == "" {
		return "127.0.0.1"
	}
	return p.Host
}

// command is bin with args as run in the namespace: through nsenter,
// which execs bin, so that the process keeps its pid.
func (p placement) command(bin string, args ...string) (string, []string) {
	if p.NS == "" {
		return bin, args
	}
	return tiers.Command(p.NS, bin, args...)
}
