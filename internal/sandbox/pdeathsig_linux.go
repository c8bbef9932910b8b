package sandbox

import "syscall"

// setParentDeathSignal makes the kernel send SIGTERM to the server when the
// thread that started it exits. Go only ends threads that a goroutine left
// locked, which the sandbox never does, so in practice this is process death.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGTERM
}
