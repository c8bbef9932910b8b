package bench

import "syscall"

// setParentDeathSignal makes the kernel send SIGTERM to the child when
// the thread that started it exits. Go only ends threads that a goroutine
// left locked, which this package never does, so in practice this is
// tpbench's death.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGTERM
}
