//go:build linux

package tiers

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// ProbeRTT measures the round trip to addr from namespace ns ("" for this
// one) n times, as the time a TCP connect takes: connect returns when the
// SYN-ACK is back, one round trip, whatever the listener does after.
func ProbeRTT(ctx context.Context, ns, addr string, n int) (RTT, error) {
	type result struct {
		rtt RTT
		err error
	}
	done := make(chan result, 1)
	go func() {
		if ns != "" {
			restore, err := enterNS(ns)
			if err != nil {
				done <- result{err: fmt.Errorf("tiers: probe from %s: %w", ns, err)}
				return
			}
			defer restore()
		}
		samples := make([]time.Duration, 0, n)
		for range n {
			begin := time.Now()
			c, err := connectRaw(addr)
			if err != nil {
				done <- result{err: fmt.Errorf("tiers: probe %s from %q: %w", addr, ns, err)}
				return
			}
			samples = append(samples, time.Since(begin))
			unix.Close(c)
			if ctx.Err() != nil {
				done <- result{err: context.Cause(ctx)}
				return
			}
		}
		done <- result{rtt: summarize(samples)}
	}()
	r := <-done
	return r.rtt, r.err
}

// connectRaw connects a blocking TCP socket on the calling thread (Go's
// net package could move the wait to another thread, outside ns).
func connectRaw(addr string) (int, error) {
	tcp, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	sa := &unix.SockaddrInet4{Port: tcp.Port}
	copy(sa.Addr[:], tcp.IP.To4())
	// No TIME_WAIT pile-up on the listener's side: reset on close.
	_ = unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	if err := unix.Connect(fd, sa); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// enterNS moves the calling goroutine's thread into namespace ns, locked
// to it; restore moves it back and unlocks it. A thread that cannot be
// moved back is not given back to Go's pool: the goroutine ends locked
// and the thread with it. Ending threads is to be avoided: a child
// started with a parent-death signal (the sandbox's servers, the relays)
// gets it when the thread that forked it ends.
func enterNS(ns string) (restore func(), err error) {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	f, err := os.Open(filepath.Join("/run/netns", ns))
	if err == nil {
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		f.Close()
	}
	if err != nil {
		orig.Close()
		runtime.UnlockOSThread()
		return nil, err
	}
	return func() {
		err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET)
		orig.Close()
		if err == nil {
			runtime.UnlockOSThread()
		}
	}, nil
}
