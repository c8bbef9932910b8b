package pool

import (
	"errors"
	"io"
	"syscall"
	"time"
)

// idleCheckAfter is how long a connection must have been idle before
// Acquire looks at its socket for a close by the server (a non-blocking
// peek, one syscall). Connections are reused within microseconds under
// load, when such a look is almost never useful; the caller checks a
// connection handed out without one (Verify) before a statement it could
// not repeat.
const idleCheckAfter = time.Second

// Unchecked reports whether the connection was handed out without a look
// at its socket, and nothing has been exchanged on it since.
func (c *Conn) Unchecked() bool { return c.unchecked }

// Verify looks at the socket of a connection handed out unchecked. It
// reports false when the server has closed it: the connection is then
// broken, and the caller releases it and acquires another.
func (c *Conn) Verify() bool {
	if !c.unchecked {
		return true
	}
	c.unchecked = false
	if c.alive() {
		return true
	}
	c.p.stats.healthFailures.Add(1)
	c.p.cfg.Logger.Info("idle backend connection was closed by the server; replacing it", "thread_id", c.threadID)
	c.broken = true
	return false
}

// DeadOnArrival reports whether err, from the first exchange on a
// connection handed out unchecked, says the server had already closed it:
// the answer ended before its first byte (EOF) or the socket was reset.
// The server may also have died while running the command, so the caller
// repeats on another connection only a command that is safe to run twice.
func (c *Conn) DeadOnArrival(err error) bool {
	return c.unchecked && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
}
