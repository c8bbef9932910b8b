//go:build !linux

package proxy

import (
	"sync"
	"time"

	"github.com/tpproxy/tpproxy/internal/netx"
)

// poller: parked sessions wait in goroutines of their own here.
type poller struct {
	mu     sync.Mutex
	parked map[uint32]*Session
}

func newPoller() *poller                                   { return nil }
func (p *poller) add(*Session) bool                        { return false }
func (p *poller) take(uint32) *Session                     { return nil }
func (p *poller) run(*Server)                              {}
func (p *poller) expired(time.Time, []*Session) []*Session { return nil }
func (p *poller) wakeAll(*Server)                          {}
func (p *poller) close()                                   {}
func (p *poller) attach(*Server, *Session, *netx.Parkable) {}
