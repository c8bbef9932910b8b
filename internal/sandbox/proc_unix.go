//go:build unix

package sandbox

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// sysProcAttr puts the server into its own process group, so a terminal's
// Ctrl-C aimed at the launcher does not reach it; without detach it also
// asks for SIGTERM when the launcher dies (Linux only, see setParentDeathSignal).
func sysProcAttr(detach bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if !detach {
		setParentDeathSignal(attr)
	}
	return attr
}

// signalPID sends sig to pid; a process that is already gone is not an error.
func signalPID(pid int, sig syscall.Signal) error {
	err := syscall.Kill(pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// pidRunning reports whether pid is a live (not zombie) process whose
// command line mentions marker (the datadir), which guards against a
// recycled pid. Where /proc is missing only existence is checked.
func pidRunning(pid int, marker string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		if _, serr := os.Stat("/proc/self"); serr != nil {
			return true // no procfs: trust kill(0)
		}
		return false
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	if marker == "" {
		return true
	}
	cmdline, err := os.ReadFile(dir + "/cmdline")
	return err == nil && bytes.Contains(cmdline, []byte(marker))
}
