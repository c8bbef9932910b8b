//go:build unix && !linux

package sandbox

import "syscall"

// setParentDeathSignal is Linux-only; elsewhere an undetached server must be
// stopped explicitly.
func setParentDeathSignal(*syscall.SysProcAttr) {}
