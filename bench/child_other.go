//go:build !linux

package bench

import "syscall"

// setParentDeathSignal is Linux only; elsewhere a crashed tpbench leaves
// its children running.
func setParentDeathSignal(*syscall.SysProcAttr) {}
