package proxy

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/scheduler"
)

// Parking. A goroutine's stack keeps the size its deepest call needed
// (the handshake, a statement), so 10,000 idle sessions blocked in a read
// would hold 10,000 grown stacks. A session that waits for its client
// instead parks: its goroutine ends; on Linux the poller (parkpoll_linux.go)
// watches its socket with no goroutine at all, elsewhere (or when the
// poller cannot take it) a new goroutine with the runtime's smallest stack
// waits; either starts the session again when the client's socket is
// readable (Server.resume). A session parks right after
// its handshake and after parkAfter without a command; the reaper asks it
// to. Sessions on TLS or compressed connections, whose layers buffer
// bytes of their own, never park.
const parkAfter = time.Second

// wireParts are what a session needs only while it is not parked: its
// packet reader and writer, the reader's resident buffer and the
// processlist's copy of the running statement's text. They are
// one allocation, kept in wires while sessions park.
type wireParts struct {
	r     mysqlwire.Reader
	w     mysqlwire.Writer
	small [smallBufSize]byte
	// info is the running statement's text for the processlist
	// (inflight.curInfo).
	info [infoLen]byte
}

var wires = sync.Pool{New: func() any { return new(wireParts) }}

// takeWire gives cc a reader and writer on its socket from wires, told
// what giveWire kept; the reader borrows packet buffers from bufs beyond
// its resident one and is charged to budget.
func (cc *clientConn) takeWire(bufs *mysqlwire.BufferPool, budget *mysqlwire.Budget) {
	wp := wires.Get().(*wireParts)
	wp.r.Init(cc.nc, wp.small[:], bufs)
	wp.r.Budget, wp.r.MaxPacket = budget, int(cc.maxPacket)
	wp.w.Init(cc.nc, bufs)
	wp.w.ExtMetadata = cc.extMetadata
	cc.wire, cc.r, cc.w = wp, &wp.r, &wp.w
}

// giveWire returns cc's reader and writer, which hold nothing but the
// resident buffer, to wires; what they were told stays in cc.
func (cc *clientConn) giveWire() {
	cc.maxPacket, cc.extMetadata = int32(cc.r.MaxPacket), cc.w.ExtMetadata
	cc.r.SetSmall(nil)
	cc.w.Release()
	wp := cc.wire
	cc.wire, cc.r, cc.w = nil, nil, nil
	wires.Put(wp)
}

// waiter is a session's wait for its client's next command: whether it
// waits, since when, and its parking.
type waiter struct {
	// wait is the state of the wait for the client's next command
	// (waitBusy...), waitSince when it began (unix ns): the reaper parks
	// sessions idle for long.
	wait atomic.Uint32
	// idle is set while the session waits for the client's next command.
	idle      atomic.Bool
	waitSince atomic.Int64
	// parkDeadline is when a parked session's wait_timeout ends (unix
	// ns; 0: none).
	parkDeadline int64
}

// park gives back what a session needs only while it runs (the reader,
// writer and read buffer of cc, its client connection, and the wait
// channel and timer of task; resume takes them again), and notes when its
// wait_timeout ends.
func (w *waiter) park(s *clientConn, task *scheduler.Task) {
	w.wait.Store(waitParked)
	s.giveWire()
	task.Trim()
	w.parkDeadline = 0
	if d := s.idleDeadline(); !d.IsZero() {
		w.parkDeadline = d.UnixNano()
	}
}

// parkPoller returns the server's poller of parked sessions, started on
// first use; nil where there is none.
func (srv *Server) parkPoller() *poller {
	srv.pollOnce.Do(func() {
		srv.poll = newPoller()
		if srv.poll != nil {
			go srv.poll.run(srv)
		}
	})
	return srv.poll
}

// unpark wakes a session the poller holds, so that it sees what another
// goroutine did to it (closed its connection, set a read deadline).
func (srv *Server) unpark(s *Session) {
	if p := srv.parkPoller(); p != nil && p.take(s.id) != nil {
		go srv.resume(s, false)
	}
}

// wakeExpired wakes the parked sessions whose wait_timeout has passed:
// they find their read deadline passed and end. The reaper calls it.
func (srv *Server) wakeExpired(now time.Time, buf []*Session) []*Session {
	p := srv.parkPoller()
	if p == nil {
		return buf
	}
	buf = p.expired(now, buf[:0])
	for _, s := range buf {
		go srv.resume(s, false)
	}
	clear(buf)
	return buf
}

// Wait states of a session's read for its next command (Session.wait).
const (
	waitBusy   = iota // serving a command
	waitIdle          // waiting for the next command
	waitParkAt        // the reaper set a read deadline to make it park
	waitParked        // parked: a small goroutine waits for the client
)

// maybePark asks a session waiting for a command on cc since before
// now-parkAfter to park: its read is interrupted with a deadline, which
// the session takes back (parkWoken). mu (the session's inflight.mu) is
// held while the deadline is set, so that a session that already left its
// read can wait for the deadline to be set before it takes it back.
func (w *waiter) maybePark(now time.Time, cc *clientConn, mu *sync.Mutex) {
	if w.wait.Load() != waitIdle || now.UnixNano()-w.waitSince.Load() < int64(parkAfter) || !cc.parkableConn() {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if w.wait.CompareAndSwap(waitIdle, waitParkAt) {
		_ = cc.nc.SetReadDeadline(time.Unix(1, 0))
	}
}

// parkWoken undoes the read deadline maybePark set on cc: it puts back
// the wait_timeout deadline, or none.
func parkWoken(cc *clientConn, mu *sync.Mutex) {
	mu.Lock() // maybePark has set the deadline
	mu.Unlock()
	_ = cc.nc.SetReadDeadline(cc.idleDeadline())
}

// resume is a parked session's new goroutine: it waits for the client
// (when wait is set; the poller has waited otherwise), then serves it,
// and parks again or ends.
func (srv *Server) resume(s *Session, wait bool) {
	if pk := s.parkable(); pk != nil && pk.Detached() {
		srv.poll.attach(srv, s, pk)
	}
	if wait {
		if rc := s.rawConn(); rc != nil {
			waitReadable(rc)
		}
	}
	s.takeWire(srv.bufs, srv.budget)
	s.resumed = true
	srv.serveSession(s, s.serve)
}
