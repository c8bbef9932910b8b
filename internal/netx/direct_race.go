//go:build linux && race

package netx

import "syscall"

// directOS: reads and writes go straight to the kernel here.
const directOS = true

// Under the race detector the calls go through package syscall, whose
// read and write tell the detector that what one goroutine wrote to a
// socket happens before what another reads from it (raw system calls
// would hide that edge and make it report races that are none).

func rawRead(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), p)
	return max(n, 0), errnoOf(err)
}

func rawWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Write(int(fd), p)
	return max(n, 0), errnoOf(err)
}

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return err.(syscall.Errno)
}
