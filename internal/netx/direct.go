package netx

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// DirectConn is a socket whose reads and writes try the system call
// directly before they wait: the relay's hot path. A net.Conn's Read and
// Write enter the system call through the Go scheduler (entersyscall and
// exitsyscall), which wakes the runtime's monitor thread whenever the
// process was idle and lets it hand the processor to another thread when a
// loopback write takes a while: at tens of thousands of statements a
// second on two cores those wake-ups and hand-offs cost more than the
// copy. A non-blocking socket never blocks in read or write, so the call is
// made without telling the scheduler; when the socket has nothing to read
// (or no room to write) the goroutine waits in the netpoller exactly as
// net.Conn does, deadlines included.
//
// The file descriptor is used only inside syscall.RawConn's Read and
// Write, which hold the connection's reference: a Close from another
// goroutine waits for them or makes them fail, never reads another
// socket. Errors are what net.Conn returns: io.EOF, or a *net.OpError
// around an *os.SyscallError, os.ErrDeadlineExceeded or net.ErrClosed.
type DirectConn struct {
	net.Conn
	rc syscall.RawConn

	// The current call's buffer, progress and error, set before RawConn
	// invokes the prepared functions (method values bound once, so a call
	// allocates nothing).
	rbuf    []byte
	rn      int
	rerr    error
	readFn  func(fd uintptr) bool
	wbuf    []byte
	wn      int
	werr    error
	writeFn func(fd uintptr) bool

	// Write-behind (WriteBehind): behindNext says the next Write is kept
	// in behind (a pooled buffer) for the next Read to send; while pairing
	// that Read's function sends it first (pairSent; pairStuck: the socket
	// took only part of it) and reads once the socket has an answer.
	behindNext bool
	pairing    bool
	pairSent   bool
	pairStuck  bool
	behind     *[]byte
}

// Direct returns nc with direct reads and writes where the system has
// them and nc is a plain socket (TCP or Unix); otherwise nc itself.
func Direct(nc net.Conn) net.Conn {
	if !directOS {
		return nc
	}
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return nc
	}
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		return nc
	}
	c := &DirectConn{Conn: nc, rc: rc}
	c.readFn = c.tryRead
	c.writeFn = c.tryWrite
	return c
}

// WriteBehind says that the next Write, a request or an answer after which
// this side reads the peer's next message, need not reach the socket
// before that read: the Write keeps the bytes (up to MaxBehind) and the
// next Read writes them in the callback that then waits for the peer,
// without first trying a read. A read tried before it waits finds nothing
// after a request the peer has yet to answer: it is a system call per
// message saved on each side (the write itself cannot be saved).
//
// That wait comes after the netpoller's readiness was reset (RawConn.Read
// resets it first), so the answer's arrival, which can only follow the
// write, always wakes it. Bytes the peer sent unasked before the reset
// would wait unread (their readiness is what the reset drops), so it is
// for a peer that only answers, a server: the caller asks for it when its
// reader holds nothing of the peer's. Not for a client, which may send its
// next command before it has the answer to this one (MariaDB Connector/J
// pipelines its connection set-up): arriving after the caller looked and
// before the read began, that command would never be read. A peer that
// closes meanwhile is no such case: the write draws its RST, which wakes
// the wait. A kept write goes out with the next Read, or first in the next
// Write; nothing else sends it (not the raw connection, not Close), so
// only the goroutine that reads and writes the connection may ask, and
// only when its next call on it is that Read.
func (c *DirectConn) WriteBehind() { c.behindNext = true }

// MaxBehind bounds a write kept for the next read; a larger one is written
// at once.
const MaxBehind = 16 << 10

var behindPool = sync.Pool{New: func() any { b := make([]byte, 0, MaxBehind); return &b }}

// Read reads into p what the socket has, waiting for at least one byte.
// A write kept by WriteBehind goes first.
func (c *DirectConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(p) > maxRW {
		p = p[:maxRW]
	}
	c.rbuf, c.rn, c.rerr = p, 0, nil
	var err error
	if c.behind != nil {
		var werr error
		if err, werr = c.readPaired(); werr != nil {
			c.rbuf, c.rerr = nil, nil
			return 0, werr
		}
	} else {
		err = c.rc.Read(c.readFn)
	}
	n, rerr := c.rn, c.rerr
	c.rbuf, c.rerr = nil, nil
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case rerr != nil:
		return 0, c.opError("read", os.NewSyscallError("read", rerr))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting for room as often as it takes; after
// WriteBehind a small p is only kept, for the next Read to send.
func (c *DirectConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.behindNext {
		c.behindNext = false
		if c.behind == nil && len(p) <= MaxBehind {
			c.behind = behindPool.Get().(*[]byte)
			*c.behind = append((*c.behind)[:0], p...)
			return len(p), nil
		}
	}
	if err := c.sendBehind(); err != nil {
		return 0, err
	}
	return c.write(p)
}

// write writes all of p to the socket.
func (c *DirectConn) write(p []byte) (int, error) {
	c.wbuf, c.wn, c.werr = p, 0, nil
	err := c.rc.Write(c.writeFn)
	n, werr := c.wn, c.werr
	c.wbuf, c.werr = nil, nil
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case werr != nil:
		return n, c.opError("write", os.NewSyscallError("write", werr))
	}
	return n, nil
}

// sendBehind writes a kept write, if any, waiting for room as Write does.
func (c *DirectConn) sendBehind() error {
	if c.behind == nil {
		return nil
	}
	b := c.behind
	_, err := c.write(*b)
	c.dropBehind()
	return err
}

// dropBehind gives the kept write's buffer back.
func (c *DirectConn) dropBehind() {
	if c.behind != nil {
		*c.behind = (*c.behind)[:0]
		behindPool.Put(c.behind)
		c.behind = nil
	}
}

// tryPair is tryRead for a read that first sends the
// write kept by WriteBehind: the write, then (false) a wait for the
// answer without a read that would find nothing, then reads. A write the
// socket cannot take whole ends the call (pairStuck) for endPair to finish.
func (c *DirectConn) tryPair(fd uintptr) bool {
	c.pairSent = true
	if !c.tryWrite(fd) {
		c.pairStuck = true
		return true
	}
	return c.werr != nil
}

// readPaired is Read's call after WriteBehind: the kept write, a wait,
// the read (tryPair). werr is the write's error.
func (c *DirectConn) readPaired() (err, werr error) {
	c.wbuf, c.wn, c.werr = *c.behind, 0, nil
	c.pairing, c.pairSent, c.pairStuck = true, false, false
	err = c.rc.Read(c.readFn)
	c.pairing = false
	stuck := c.pairStuck
	if werr = c.endPair(); werr != nil {
		return nil, werr
	}
	if stuck && err == nil {
		// The write is out now; the read is still to do.
		err = c.rc.Read(c.readFn)
	}
	return err, nil
}

// endPair ends a paired read's write: what the socket did not take is
// written now (waiting for room), and a write the call never reached (a
// deadline or Close came first) is written the usual way. The error is
// the write's, as Write reports it.
func (c *DirectConn) endPair() error {
	b := c.behind
	defer c.dropBehind()
	switch {
	case c.werr != nil:
		err := c.opError("write", os.NewSyscallError("write", c.werr))
		c.wbuf, c.werr = nil, nil
		return err
	case !c.pairSent:
		_, err := c.write(*b)
		return err
	case c.pairStuck:
		_, err := c.write((*b)[c.wn:])
		return err
	}
	c.wbuf = nil
	return nil
}

// SyscallConn returns the socket's raw connection (the parked-session
// poller waits on it).
func (c *DirectConn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }

// opError wraps err as net.Conn's methods do, under their operation's
// name (RawConn reports "raw-read" and "raw-write").
func (c *DirectConn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// tryRead is RawConn.Read's function: false asks it to wait for the
// socket to become readable.
func (c *DirectConn) tryRead(fd uintptr) bool {
	if c.pairing && !c.pairSent {
		return c.tryPair(fd)
	}
	for {
		n, errno := rawRead(fd, c.rbuf)
		switch errno {
		case 0:
			c.rn = n
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		c.rerr = errno
		return true
	}
}

// tryWrite is RawConn.Write's function: it writes until wbuf is out or
// the socket is full (false: wait until it is writable, then again).
func (c *DirectConn) tryWrite(fd uintptr) bool {
	for c.wn < len(c.wbuf) {
		b := c.wbuf[c.wn:]
		if len(b) > maxRW {
			b = b[:maxRW]
		}
		n, errno := rawWrite(fd, b)
		switch errno {
		case 0:
			c.wn += n
			continue
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		c.werr = errno
		return true
	}
	return true
}

// maxRW bounds one system call's bytes, as internal/poll does.
const maxRW = 1 << 30
