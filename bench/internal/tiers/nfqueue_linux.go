//go:build linux

package tiers

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// delayerEnv, set in a process's environment, makes MaybeRunDelayer run
// the delayer instead of the program: "<delay ns>,<netns>,<netns>...".
const delayerEnv = "TPBENCH_TIERS_DELAYER"

// startDelayer runs this executable again as the delayer for the two
// namespaces' queue 0 and waits until it has bound both.
func (t *Tiers) startDelayer(ctx context.Context) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("tiers: delayer: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d,%s,%s", delayerEnv, t.Delay.Nanoseconds(), t.ServerNS, t.ProxyNS))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("tiers: delayer: %w", err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	t.delayed = make(chan struct{})
	started, ready := make(chan error, 1), make(chan error, 1)
	// The parent-death signal follows the thread that forked, not the
	// process, and Go ends a thread whose goroutine exits locked (as
	// ProbeRTT's once did): the goroutine that starts the delayer keeps its
	// thread until the delayer is reaped.
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(t.delayed)
			return
		}
		started <- nil
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("said %q", line)
		}
		ready <- err
		t.delayErr = cmd.Wait()
		close(t.delayed)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("tiers: start the delayer: %w", err)
	}
	t.delayer = cmd
	select {
	case err := <-ready:
		if err != nil {
			return fmt.Errorf("tiers: the delayer did not start: %w", err)
		}
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("tiers: the delayer (pid %d) did not bind its queues within 10 s", cmd.Process.Pid)
	}
}

// MaybeRunDelayer runs the delayer and exits when this process was started
// as one (by Setup); otherwise it returns at once. Programs and test
// binaries that call Setup call it first thing in main or TestMain.
func MaybeRunDelayer() {
	spec, ok := os.LookupEnv(delayerEnv)
	if !ok {
		return
	}
	err := runDelayer(spec)
	fmt.Fprintf(os.Stderr, "tiers delayer: %v\n", err)
	os.Exit(1)
}

func runDelayer(spec string) error {
	f := strings.Split(spec, ",")
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || len(f) < 2 {
		return fmt.Errorf("bad %s=%q", delayerEnv, spec)
	}
	delay := time.Duration(ns)
	// A P for each queue's thread and one for the rest.
	runtime.GOMAXPROCS(len(f))
	parent := os.Getppid()
	errs := make(chan error, len(f))
	bound := make(chan struct{}, len(f))
	for _, name := range f[1:] {
		go func() { errs <- delayQueue(name, delay, bound) }()
	}
	for range f[1:] {
		select {
		case <-bound:
		case err := <-errs:
			return err
		}
	}
	fmt.Println("ready")
	tick := time.NewTicker(500 * time.Millisecond)
	for {
		select {
		case err := <-errs:
			return err
		case <-tick.C:
			if os.Getppid() != parent {
				return errors.New("parent gone")
			}
		}
	}
}

// The netlink constants of nfnetlink_queue (linux/netfilter/nfnetlink_queue.h).
const (
	nfnlSubsysQueue      = 3
	nfqnlMsgPacket       = nfnlSubsysQueue<<8 | 0
	nfqnlMsgConfig       = nfnlSubsysQueue<<8 | 2
	nfqnlMsgVerdictBatch = nfnlSubsysQueue<<8 | 3
	nfqaPacketHdr        = 1
	nfqaVerdictHdr       = 2
	nfqaCfgCmd           = 1
	nfqaCfgParams        = 2
	nfqaCfgQueueMaxlen   = 3
	nfqnlCfgCmdBind      = 1
	nfqnlCopyMeta        = 1
	nfAccept             = 1
)

// delayQueue binds queue 0 in namespace name and holds each packet for
// delay before accepting it. It runs on a thread of its own, moved into
// the namespace, at a real-time priority, so that a packet leaves on time
// while the load keeps both CPUs busy; the thread never returns to Go's
// pool.
func delayQueue(name string, delay time.Duration, bound chan<- struct{}) error {
	runtime.LockOSThread() // for good: the thread is in another namespace
	nsf, err := os.Open(filepath.Join("/run/netns", name))
	if err != nil {
		return err
	}
	if err := unix.Setns(int(nsf.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns %s: %w", name, err)
	}
	nsf.Close()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 20}, 0); err != nil {
		fmt.Fprintf(os.Stderr, "tiers delayer: no real-time priority in %s (%v): delays may run late under load\n", name, err)
	}

	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return fmt.Errorf("netlink socket in %s: %w", name, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_NO_ENOBUFS, 1)
	seq := uint32(0)
	config := func(attr uint16, payload []byte) error {
		seq++
		msg := nlmsg(nfqnlMsgConfig, unix.NLM_F_REQUEST|unix.NLM_F_ACK, seq, attr, payload)
		if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return err
		}
		buf := make([]byte, 4096)
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return err
		}
		if n >= 20 && binary.NativeEndian.Uint16(buf[4:]) == unix.NLMSG_ERROR {
			if code := int32(binary.NativeEndian.Uint32(buf[16:])); code != 0 {
				return syscall.Errno(-code)
			}
		}
		return nil
	}
	if err := config(nfqaCfgCmd, []byte{nfqnlCfgCmdBind, 0, 0, 0}); err != nil {
		return fmt.Errorf("bind queue 0 in %s: %w", name, err)
	}
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, 0)
	params[4] = nfqnlCopyMeta
	if err := config(nfqaCfgParams, params); err != nil {
		return fmt.Errorf("queue 0 in %s: copy mode: %w", name, err)
	}
	maxlen := binary.BigEndian.AppendUint32(nil, 1<<16)
	if err := config(nfqaCfgQueueMaxlen, maxlen); err != nil {
		return fmt.Errorf("queue 0 in %s: length: %w", name, err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return err
	}
	bound <- struct{}{}
	return holdLoop(fd, delay)
}

// holdLoop reads queued packets' ids, each with the time it is due, and
// accepts, with one batch verdict, every packet that is due: the delay is
// the same for all, so they fall due in id order.
func holdLoop(fd int, delay time.Duration) error {
	type held struct {
		id  uint32
		due time.Duration
	}
	start := time.Now()
	now := func() time.Duration { return time.Since(start) }
	var q []held
	head := 0
	buf := make([]byte, 1<<16)
	verdict := nlmsg(nfqnlMsgVerdictBatch, unix.NLM_F_REQUEST, 0, nfqaVerdictHdr, make([]byte, 8))
	binary.BigEndian.PutUint32(verdict[len(verdict)-8:], nfAccept)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	// Packets due within grain of each other leave in one verdict, a
	// little early rather than with a wake-up each: the thread sleeps
	// until the first is due, and a wake-up itself runs some microseconds
	// late.
	const grain = 5 * time.Microsecond
	for {
		var ts *unix.Timespec
		if head < len(q) {
			wait := q[head].due - now() - grain
			if wait < 0 {
				wait = 0
			}
			t := unix.NsecToTimespec(int64(wait))
			ts = &t
		}
		if err := rawPpoll(fds, ts); err != 0 && err != unix.EINTR {
			return fmt.Errorf("ppoll: %w", err)
		}
		for {
			n, err := rawRecv(fd, buf)
			if err == unix.EAGAIN || err == unix.EWOULDBLOCK {
				break
			}
			if err == unix.EINTR || err == unix.ENOBUFS {
				continue
			}
			if err != 0 {
				return fmt.Errorf("recv: %w", err)
			}
			t := now()
			for b := buf[:n]; len(b) >= unix.NLMSG_HDRLEN; {
				l := int(binary.NativeEndian.Uint32(b))
				if l < unix.NLMSG_HDRLEN || l > len(b) {
					break
				}
				if binary.NativeEndian.Uint16(b[4:]) == nfqnlMsgPacket {
					if id, ok := packetID(b[unix.NLMSG_HDRLEN+4 : l]); ok {
						q = append(q, held{id, t + delay})
					}
				}
				b = b[min(len(b), (l+3)&^3):]
			}
		}
		if head == len(q) {
			continue
		}
		t := now() + grain
		last := -1
		for i := head; i < len(q) && q[i].due <= t; i++ {
			last = i
		}
		if last < 0 {
			continue
		}
		binary.BigEndian.PutUint32(verdict[len(verdict)-4:], q[last].id)
		if err := rawSend(fd, verdict); err != 0 && err != unix.EAGAIN {
			return fmt.Errorf("verdict: %w", err)
		}
		head = last + 1
		if head == len(q) {
			q, head = q[:0], 0
		} else if head > 4096 && head > len(q)/2 {
			q, head = append(q[:0], q[head:]...), 0
		}
	}
}

// The loop's system calls are raw: the thread is the loop's alone (its
// goroutine holds a P of its own, see runDelayer's GOMAXPROCS), so the
// runtime need not hear of each blocking call and hand that P off. It
// saves little: 79% of one CPU instead of 83% for point selects over
// 0.2 ms tiers; the rest is the kernel's (wake-ups, and the delivery of
// each packet let go).

func rawPpoll(fds []unix.PollFd, ts *unix.Timespec) syscall.Errno {
	_, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	return e
}

func rawRecv(fd int, b []byte) (int, syscall.Errno) {
	n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
	return int(n), e
}

// rawSend sends to the kernel: an unconnected netlink socket's default
// destination.
func rawSend(fd int, b []byte) syscall.Errno {
	_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
	return e
}

// packetID finds NFQA_PACKET_HDR's packet id among a packet message's
// attributes.
func packetID(attrs []byte) (uint32, bool) {
	for len(attrs) >= 4 {
		l := int(binary.NativeEndian.Uint16(attrs))
		typ := binary.NativeEndian.Uint16(attrs[2:]) & 0x3fff
		if l < 4 || l > len(attrs) {
			return 0, false
		}
		if typ == nfqaPacketHdr && l >= 8 {
			return binary.BigEndian.Uint32(attrs[4:]), true
		}
		attrs = attrs[min(len(attrs), (l+3)&^3):]
	}
	return 0, false
}

// nlmsg is a netfilter netlink message for queue 0 with one attribute.
func nlmsg(typ uint16, flags uint16, seq uint32, attr uint16, payload []byte) []byte {
	alen := 4 + len(payload)
	total := unix.NLMSG_HDRLEN + 4 + (alen+3)&^3
	b := make([]byte, total)
	binary.NativeEndian.PutUint32(b[0:], uint32(total))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], seq)
	// nfgenmsg: AF_UNSPEC, NFNETLINK_V0, queue 0 (big-endian).
	a := b[unix.NLMSG_HDRLEN+4:]
	binary.NativeEndian.PutUint16(a[0:], uint16(alen))
	binary.NativeEndian.PutUint16(a[2:], attr)
	copy(a[4:], payload)
	return b
}
