package pool

import (
	"context"
	"strconv"
	"sync"
)

// control is the pool's one extra server connection, used for KILL QUERY
// of a statement running on a pool connection. It is dialed on first use
// and counts as one of the proxy's own control connections.
type control struct {
	p *Pool
	// mu serialises use of c; it is held across the round trip.
	mu sync.Mutex
	c  *Conn
}

// Kill sends KILL QUERY (or KILL CONNECTION when query is false) for a
// server thread over the control connection. The caller guarantees the
// thread still belongs to the statement it means to stop.
func (p *Pool) Kill(ctx context.Context, threadID uint32, query bool) error {
	p.stats.kills.Add(1)
	stmt := "KILL CONNECTION " + strconv.FormatUint(uint64(threadID), 10)
	if query {
		stmt = "KILL QUERY " + strconv.FormatUint(uint64(threadID), 10)
	}
	return p.ctrl.exec(ctx, stmt)
}

func (k *control) exec(ctx context.Context, stmt string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if k.c == nil {
			c, err := k.p.dial(ctx, false)
			if err != nil {
				return err
			}
			k.c = c
		}
		_, err := k.c.Exec(ctx, stmt)
		if err == nil || !k.c.broken {
			return err
		}
		// A stale control connection: dial again once.
		k.c.close()
		k.c = nil
		if attempt == 1 {
			return err
		}
	}
}

func (k *control) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.c != nil {
		k.c.close()
		k.c = nil
	}
}
