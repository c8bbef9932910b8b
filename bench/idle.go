package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// IdleOptions describe a crowd of idle sessions: Sessions connections to
// DSN, opened by Workers at a time; every other one runs a statement
// first, as a driver's first queries do, and then all sit idle.
type IdleOptions struct {
	DSN      string
	Sessions int
	Workers  int
}

// IdleHold is a crowd of idle sessions held open (HoldIdle).
type IdleHold struct {
	db    *sql.DB
	conns []*sql.Conn
}

// HoldIdle opens o.Sessions sessions and returns them held. It fails, with
// every session it opened closed, when one cannot connect or answer.
func HoldIdle(ctx context.Context, o IdleOptions) (*IdleHold, error) {
	if o.Sessions < 1 {
		return nil, fmt.Errorf("idle sessions: %d, want at least 1", o.Sessions)
	}
	workers := max(1, min(o.Workers, o.Sessions))
	db, err := sql.Open("mysql", o.DSN)
	if err != nil {
		return nil, err
	}
	// Every connection stays with its sql.Conn: the pool keeps none idle.
	db.SetMaxIdleConns(0)
	h := &IdleHold{db: db, conns: make([]*sql.Conn, o.Sessions)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	fail := func(err error) {
		once.Do(func() { first = err; cancel() })
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				c, err := db.Conn(ctx)
				if err != nil {
					fail(fmt.Errorf("session %d: connect: %w", i+1, err))
					continue
				}
				h.conns[i] = c
				if i%2 == 0 {
					var comment string
					var id int64
					if err := c.QueryRowContext(ctx, "SELECT @@version_comment, CONNECTION_ID()").Scan(&comment, &id); err != nil {
						fail(fmt.Errorf("session %d: first statement: %w", i+1, err))
					}
				}
			}
		}()
	}
feed:
	for i := range h.conns {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	if first != nil {
		_ = h.Close()
		return nil, first
	}
	return h, nil
}

// Len returns the number of sessions held.
func (h *IdleHold) Len() int { return len(h.conns) }

// Ping runs a statement on every held session, to show that each still
// answers after its wait.
func (h *IdleHold) Ping(ctx context.Context) error {
	for i, c := range h.conns {
		if err := c.PingContext(ctx); err != nil {
			return fmt.Errorf("session %d after idling: %w", i+1, err)
		}
	}
	return nil
}

// Close closes every session.
func (h *IdleHold) Close() error {
	var errs []error
	for _, c := range h.conns {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	errs = append(errs, h.db.Close())
	return errors.Join(errs...)
}
