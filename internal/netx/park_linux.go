package netx

import "syscall"

// parkOS: connections detach here.
const parkOS = true

// dupCloexec duplicates fd, close-on-exec.
func dupCloexec(fd int) (int, error) {
	for {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return -1, e
		}
		return int(r), nil
	}
}
