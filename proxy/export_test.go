package proxy

import "unsafe"

// ParkedSessions is the number of sessions the poller holds (-1: no
// poller on this system).
func ParkedSessions(srv *Server) int {
	p := srv.parkPoller()
	if p == nil {
		return -1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.parked)
}

// SessionSize is the size of a Session value.
const SessionSize = unsafe.Sizeof(Session{})
