package proxy

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// maxTrackedHosts bounds the hosts hostGuard remembers: past it, hosts
// that are not blocked are forgotten first, and a new one is not counted
// while only blocked hosts fill it.
const maxTrackedHosts = 100_000

// hostGuard is the proxy's max_connect_errors: it counts the failed
// logins and broken handshakes of each client address since its last
// successful login, and once a host reaches the limit turns its new
// connections away with ERR 1129 until FLUSH HOSTS (admin port) or a
// restart. A successful login resets the host's count, as on the server.
type hostGuard struct {
	limit atomic.Int64 // 0: off
	n     atomic.Int64 // len(errs), read without the lock on the login path
	mu    sync.Mutex
	errs  map[string]int64
}

func newHostGuard(limit int) *hostGuard {
	g := &hostGuard{errs: map[string]int64{}}
	g.limit.Store(int64(max(limit, 0)))
	return g
}

// blocked reports whether host has reached the limit.
func (g *hostGuard) blocked(host string) bool {
	lim := g.limit.Load()
	if lim == 0 || g.n.Load() == 0 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.errs[host] >= lim
}

// fail counts a failed login or handshake of host.
func (g *hostGuard) fail(host string) {
	lim := g.limit.Load()
	if lim == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.errs[host]; !ok && len(g.errs) >= maxTrackedHosts {
		for h, n := range g.errs {
			if n < lim {
				delete(g.errs, h)
			}
		}
		if len(g.errs) >= maxTrackedHosts {
			return
		}
	}
	g.errs[host]++
	g.n.Store(int64(len(g.errs)))
}

// ok resets host's count after a successful login.
func (g *hostGuard) ok(host string) {
	if g.n.Load() == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.errs, host)
	g.n.Store(int64(len(g.errs)))
}

// flush forgets every count (FLUSH HOSTS) and returns how many hosts
// were blocked.
func (g *hostGuard) flush() int {
	lim := g.limit.Load()
	g.mu.Lock()
	defer g.mu.Unlock()
	blocked := 0
	for _, n := range g.errs {
		if lim > 0 && n >= lim {
			blocked++
		}
	}
	clear(g.errs)
	g.n.Store(0)
	return blocked
}

// blockedHosts counts the hosts blocked now.
func (g *hostGuard) blockedHosts() int {
	lim := g.limit.Load()
	if lim == 0 || g.n.Load() == 0 {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, c := range g.errs {
		if c >= lim {
			n++
		}
	}
	return n
}

// errHostBlocked is the server's ERR 1129 for a blocked client address.
func errHostBlocked(host string) *mysqlwire.Error {
	return &mysqlwire.Error{Code: erHostIsBlocked, State: "HY000",
		Message: fmt.Sprintf("Host '%s' is blocked because of many connection errors; unblock with 'FLUSH HOSTS' on the tpproxy admin port", host)}
}

// FlushHosts unblocks every client address (FLUSH HOSTS) and returns how
// many were blocked.
func (srv *Server) FlushHosts() int { return srv.hosts.flush() }

// SetMaxConnectErrors changes the limit of failed logins per client
// address (0: off); counts so far are kept.
func (srv *Server) SetMaxConnectErrors(n int) { srv.hosts.limit.Store(int64(max(n, 0))) }

// SetMaxBufferMemory changes max_buffer_memory (0: no bound).
func (srv *Server) SetMaxBufferMemory(n int64) { srv.budget.SetLimit(n) }

// BufferMemory is what the sessions' packet buffers hold beyond their
// resident ones now, and the bound (0: none).
func (srv *Server) BufferMemory() (used, limit int64) { return srv.budget.Used(), srv.budget.Limit() }
