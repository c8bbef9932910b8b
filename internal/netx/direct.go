package netx

import (
	"io"
	"net"
	"os"
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

// Read reads into p what the socket has, waiting for at least one byte.
func (c *DirectConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(p) > maxRW {
		p = p[:maxRW]
	}
	c.rbuf, c.rn, c.rerr = p, 0, nil
	err := c.rc.Read(c.readFn)
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

// Write writes all of p, waiting for room as often as it takes.
func (c *DirectConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
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
