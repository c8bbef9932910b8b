//go:build linux

package proxy

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/tpproxy/tpproxy/internal/netx"
)

// poller watches the sockets of parked sessions with an epoll set of its
// own, so that a parked session holds no goroutine at all: one goroutine
// waits for all of them and starts a session's goroutine again when its
// client sends (or hangs up). Level-triggered one-shot registrations: a
// socket that is readable when it is armed fires at once.
type poller struct {
	mu     sync.Mutex
	epfd   int
	parked map[uint32]*Session
	closed bool
	done   chan struct{}
}

// pollWait bounds each epoll_wait so that the poller notices Close.
const pollWait = 500 * time.Millisecond

func newPoller() *poller {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	return &poller{epfd: fd, parked: map[uint32]*Session{}, done: make(chan struct{})}
}

// add hands s to the poller with its socket detached from the Go runtime
// (addDetached); false means the poller cannot take it (the caller waits
// in a goroutine instead): a socket that is not a netx.Parkable, or one
// that could not detach.
func (p *poller) add(s *Session) bool {
	pk := s.parkable()
	if pk == nil {
		return false
	}
	return p.addDetached(s, pk)
}

// addDetached hands s to the poller with its socket detached from the Go
// runtime (netx.Parkable: the runtime's poll descriptor and the netFD go
// back while it is parked); resume attaches it again (attach).
func (p *poller) addDetached(s *Session, pk *netx.Parkable) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	err := pk.Detach(func(fd int) error {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(s.id)}
		return syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, fd, &ev)
	})
	if err != nil {
		return false
	}
	p.parked[s.id] = s
	return true
}

// attach gives a detached parked session's socket back to the Go runtime
// and takes it out of the epoll set. At the open-file limit it tries
// again for a while (the session's descriptor is held meanwhile); a
// session that cannot attach is closed and ends as a closed one does.
func (p *poller) attach(srv *Server, s *Session, pk *netx.Parkable) {
	unregister := func(fd int) { _ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, fd, nil) }
	for i := 0; ; i++ {
		err := pk.Attach(unregister)
		if err == nil || errors.Is(err, net.ErrClosed) {
			return
		}
		if i < attachTries && (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) {
			time.Sleep(attachRetry)
			continue
		}
		srv.log.Warn("a parked session could not take its socket back; closing it", "conn_id", s.id, "err", err)
		_ = pk.Close()
		return
	}
}

// attachTries × attachRetry bound attach's wait at the open-file limit.
const (
	attachTries = 100
	attachRetry = 10 * time.Millisecond
)

// take removes s from the parked set; it reports whether s was there (so
// that exactly one of the poller, the reaper, KILL and shutdown wakes it).
func (p *poller) take(id uint32) *Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.parked[id]
	delete(p.parked, id)
	return s
}

// run waits for parked sockets until close.
func (p *poller) run(srv *Server) {
	evs := make([]syscall.EpollEvent, 128)
	for {
		select {
		case <-p.done:
			return
		default:
		}
		n, err := syscall.EpollWait(p.epfd, evs, int(pollWait/time.Millisecond))
		if err != nil {
			if err == syscall.EINTR {
				continue
			}
			select {
			case <-p.done:
				return
			default:
			}
			srv.log.Error("parked sessions' poller failed; waking them all", "err", err)
			p.wakeAll(srv)
			return
		}
		for _, ev := range evs[:n] {
			if s := p.take(uint32(ev.Fd)); s != nil {
				go srv.resume(s, false)
			}
		}
	}
}

// expired returns the parked sessions whose wait_timeout has passed.
func (p *poller) expired(now time.Time, out []*Session) []*Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, s := range p.parked {
		if d := s.parkDeadline; d != 0 && now.UnixNano() >= d {
			delete(p.parked, id)
			out = append(out, s)
		}
	}
	return out
}

func (p *poller) wakeAll(srv *Server) {
	p.mu.Lock()
	all := p.parked
	p.parked = map[uint32]*Session{}
	p.mu.Unlock()
	for _, s := range all {
		go srv.resume(s, false)
	}
}

func (p *poller) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	close(p.done)
	_ = syscall.Close(p.epfd)
}
