//go:build linux && !race

package netx

import (
	"syscall"
	"unsafe"
)

// directOS: reads and writes go straight to the kernel here.
const directOS = true

// rawRead is read(2) without the scheduler's syscall bookkeeping: the
// socket is non-blocking, so it returns at once.
func rawRead(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(n), errno
}

// rawWrite is write(2) likewise.
func rawWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(n), errno
}
