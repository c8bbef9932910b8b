//go:build !linux

package netx

// parkOS: connections do not detach here.
const parkOS = false

func dupCloexec(int) (int, error) { return -1, ErrNotParkable }
