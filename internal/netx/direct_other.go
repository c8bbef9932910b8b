//go:build !linux

package netx

import "syscall"

// directOS: elsewhere Direct leaves connections as they are.
const directOS = false

func rawRead(uintptr, []byte) (int, syscall.Errno)  { return 0, syscall.ENOSYS }
func rawWrite(uintptr, []byte) (int, syscall.Errno) { return 0, syscall.ENOSYS }
