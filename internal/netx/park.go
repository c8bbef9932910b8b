package netx

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Parkable is a client socket that can let go of the Go runtime's
// structures while its session is idle. An open net.Conn costs more than
// its bytes on the heap: the runtime's poll descriptor with its two
// deadline timers (about 580 bytes outside the heap, never freed, only
// reused), the netFD, both addresses and the wrappers (about 500 on it).
// For a proxy that holds thousands of idle sessions that is half of what
// one costs.
//
// Detach keeps a duplicate of the socket's descriptor, hands it to the
// caller's poller and closes the net.Conn (the socket stays open: the
// duplicate holds it); Attach makes a net.Conn of the descriptor again.
// Both cost a dozen system calls (dup, getsockname, getpeername, the
// socket options Go sets on a new connection, epoll), so they are for
// sessions idle for a while, not between statements.
//
// Read and Write are the owner's (the goroutine that detaches and
// attaches); Close and the deadlines may come from any goroutine: while
// detached, Close closes the descriptor (and with it the poller's
// registration, the descriptor being the socket's last) and a deadline is
// kept for Attach to set. The deadlines in force are tracked so that
// Attach puts them back.
type Parkable struct {
	mu     sync.Mutex
	c      net.Conn // nil while detached
	fd     int32    // the duplicate while detached
	closed bool
	// rdl and wdl are the read and write deadlines (unix ns; 0: none).
	rdl, wdl int64
}

// ErrNotParkable is Detach's answer where the system or the connection
// cannot detach.
var ErrNotParkable = errors.New("netx: connection cannot detach")

// NewParkable wraps nc (Direct(nc) while attached).
func NewParkable(nc net.Conn) *Parkable { return &Parkable{c: Direct(nc)} }

// Detached reports whether the connection is detached.
func (p *Parkable) Detached() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.c == nil
}

func (p *Parkable) Read(b []byte) (int, error) {
	if c := p.c; c != nil {
		return c.Read(b)
	}
	return 0, p.detachedErr("read")
}

func (p *Parkable) Write(b []byte) (int, error) {
	if c := p.c; c != nil {
		return c.Write(b)
	}
	return 0, p.detachedErr("write")
}

// detachedErr is a read or write of a detached connection: a closed one
// (a closed connection is left detached), or a caller's mistake.
func (p *Parkable) detachedErr(op string) error {
	return &net.OpError{Op: op, Err: net.ErrClosed}
}

// Close closes the connection, attached or not.
func (p *Parkable) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if p.c == nil {
		return syscall.Close(int(p.fd))
	}
	return p.c.Close()
}

// LocalAddr is the attached connection's (nil while detached).
func (p *Parkable) LocalAddr() net.Addr {
	if c := p.c; c != nil {
		return c.LocalAddr()
	}
	return nil
}

// RemoteAddr is the attached connection's (nil while detached).
func (p *Parkable) RemoteAddr() net.Addr {
	if c := p.c; c != nil {
		return c.RemoteAddr()
	}
	return nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func (p *Parkable) SetDeadline(t time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rdl, p.wdl = unixNano(t), unixNano(t)
	if p.c == nil {
		return nil
	}
	return p.c.SetDeadline(t)
}

func (p *Parkable) SetReadDeadline(t time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rdl = unixNano(t)
	if p.c == nil {
		return nil
	}
	return p.c.SetReadDeadline(t)
}

func (p *Parkable) SetWriteDeadline(t time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wdl = unixNano(t)
	if p.c == nil {
		return nil
	}
	return p.c.SetWriteDeadline(t)
}

// SyscallConn is the attached connection's (an error while detached).
func (p *Parkable) SyscallConn() (syscall.RawConn, error) {
	c := p.c
	if c == nil {
		return nil, ErrNotParkable
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, ErrNotParkable
	}
	return sc.SyscallConn()
}

// Detach duplicates the socket's descriptor, gives the duplicate to
// register (the caller's poller; it runs under the connection's lock, so
// a Close cannot close the descriptor before it is registered) and closes
// the net.Conn. When register fails the duplicate is closed and the
// connection stays attached. The owner must not have a write kept behind
// (DirectConn.WriteBehind) or anything buffered above the socket.
func (p *Parkable) Detach(register func(fd int) error) error {
	if !parkOS {
		return ErrNotParkable
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.c == nil {
		return net.ErrClosed
	}
	sc, ok := p.c.(syscall.Conn)
	if !ok {
		return ErrNotParkable
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	dup := -1
	var derr error
	if err := rc.Control(func(fd uintptr) {
		dup, derr = dupCloexec(int(fd))
	}); err != nil {
		return err
	}
	if derr != nil {
		return derr
	}
	if err := register(dup); err != nil {
		_ = syscall.Close(dup)
		return err
	}
	_ = p.c.Close() // the duplicate keeps the socket open
	p.c, p.fd = nil, int32(dup)
	return nil
}

// Attach makes a net.Conn of a detached socket again; unregister (run
// under the connection's lock) takes the descriptor out of the caller's
// poller once the new connection is made. A connection closed while
// detached is not attached: net.ErrClosed, and its reads fail as a closed
// connection's do. Any other error (EMFILE, say) leaves it detached, to be
// tried again. Attach of an attached connection does nothing.
func (p *Parkable) Attach(unregister func(fd int)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c != nil {
		return nil
	}
	if p.closed {
		return net.ErrClosed
	}
	fd := int(p.fd)
	// net.FileConn takes an *os.File, which owns its descriptor: give it a
	// duplicate, so that a failure leaves fd as it was.
	fd2, err := dupCloexec(fd)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd2), "")
	nc, err := net.FileConn(f) // a duplicate of fd2
	_ = f.Close()
	if err != nil {
		return err
	}
	unregister(fd)
	_ = syscall.Close(fd)
	if p.rdl != 0 {
		_ = nc.SetReadDeadline(fromNano(p.rdl))
	}
	if p.wdl != 0 {
		_ = nc.SetWriteDeadline(fromNano(p.wdl))
	}
	p.c = Direct(nc)
	return nil
}
