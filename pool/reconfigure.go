package pool

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"
)

// settings are the Dynamic values in force. They are atomics so that the
// paths reading them (dial, the acquire timer, the maintain loop, the
// prepared-statement limit) take no lock. All of them are stored with
// Pool.mu held, so that decisions made under mu (filler, put, shrink) see
// one size throughout and Config returns one consistent set.
type settings struct {
	size           atomic.Int64
	acquireTimeout atomic.Int64 // time.Duration
	connectTimeout atomic.Int64 // time.Duration
	healthInterval atomic.Int64 // time.Duration
	maxLifetime    atomic.Int64 // time.Duration
}

func (s *settings) store(d Dynamic) {
	s.size.Store(int64(d.Size))
	s.acquireTimeout.Store(int64(d.AcquireTimeout))
	s.connectTimeout.Store(int64(d.ConnectTimeout))
	s.healthInterval.Store(int64(d.HealthInterval))
	s.maxLifetime.Store(int64(d.MaxLifetime))
}

func (s *settings) load() Dynamic {
	return Dynamic{
		Size:           int(s.size.Load()),
		AcquireTimeout: time.Duration(s.acquireTimeout.Load()),
		ConnectTimeout: time.Duration(s.connectTimeout.Load()),
		HealthInterval: time.Duration(s.healthInterval.Load()),
		MaxLifetime:    time.Duration(s.maxLifetime.Load()),
	}
}

func (p *Pool) size() int { return int(p.set.size.Load()) }

// Size is the pool size in force.
func (p *Pool) Size() int { return p.size() }

// AcquireTimeout is the acquire_timeout in force.
func (p *Pool) AcquireTimeout() time.Duration { return p.acquireTimeout() }

func (p *Pool) acquireTimeout() time.Duration { return time.Duration(p.set.acquireTimeout.Load()) }
func (p *Pool) connectTimeout() time.Duration { return time.Duration(p.set.connectTimeout.Load()) }
func (p *Pool) healthInterval() time.Duration { return time.Duration(p.set.healthInterval.Load()) }
func (p *Pool) maxLifetime() time.Duration    { return time.Duration(p.set.maxLifetime.Load()) }

// Reconfigure applies d while the pool runs, for a configuration reload.
// Nobody is disconnected in the middle of a statement:
//
//   - A larger Size wakes the filler, which dials the new connections.
//   - A smaller Size closes surplus idle connections at once (the least
//     recently used first) and connections in use when they are released,
//     as long as the pool is above its size; waiters are served by the
//     releases that follow once it is not.
//   - AcquireTimeout applies to Acquire calls that start waiting afterwards,
//     ConnectTimeout to dials that start afterwards.
//   - A changed HealthInterval restarts the health-check ticker.
//   - MaxLifetime applies to connections dialed afterwards; open ones keep
//     the expiry they got when dialed.
//   - The automatic prepared-statement limit (Config.MaxPreparedPerConn 0)
//     follows the new size, so the pool's share of the server's
//     max_prepared_stmt_count stays the same; a lower limit is enforced on a
//     connection the next time it prepares a statement.
//
// An invalid d (see Dynamic.Validate) changes nothing. Reconfigure after
// Close returns ErrClosed.
func (p *Pool) Reconfigure(d Dynamic) error {
	if err := d.Validate(); err != nil {
		return err
	}
	p.reconf.Lock()
	defer p.reconf.Unlock()
	var old Dynamic
	closed, err := p.applySize(d.Size, func() {
		old = p.set.load()
		p.set.store(d)
		p.wg.Add(1) // for the globals' refresh below, while the pool is known open
	})
	if err != nil {
		return err
	}
	if d.HealthInterval != old.HealthInterval {
		select {
		case p.retick <- struct{}{}:
		default: // maintain has not seen the previous change yet; it reads the latest
		}
	}
	p.logChanges(old, d, closed)
	// A reload also reads the server's globals again (wg was added while
	// the pool was known open).
	go func() {
		defer p.wg.Done()
		ctx, cancel := context.WithTimeout(p.bg, p.connectTimeout())
		defer cancel()
		if _, err := p.RefreshGlobals(ctx); err != nil && p.bg.Err() == nil {
			p.cfg.Logger.Debug("cannot read the backend's globals", "err", err)
		}
	}()
	return nil
}

// shed takes the idle connections beyond size out of the pool, for the
// caller to close once mu is released. The rest of the surplus is in use
// or being dialed; put closes it when it comes back. Called with mu held.
func (p *Pool) shed(size int) []*Conn {
	n := min(p.open-size, len(p.idle))
	if n <= 0 {
		return nil
	}
	// The front of the idle list was used longest ago: the coldest server
	// threads, which takeIdle would pick last anyway.
	surplus := slices.Clone(p.idle[:n])
	rest := copy(p.idle, p.idle[n:])
	clear(p.idle[rest:])
	p.idle = p.idle[:rest]
	p.open -= n
	return surplus
}

// Resize sets the number of connections to n as Reconfigure does for Size
// (surplus idle connections close at once, busy ones when released; new
// ones are dialed by the filler) without the rest of a reload: no globals
// read, a debug line instead of an info one. It is the automatic sizer's
// way to change the size (backend.pool_size: auto, internal/autosize),
// several times a minute at most.
func (p *Pool) Resize(n int) error {
	if n < 1 {
		return fmt.Errorf("%w: size %d", ErrBadConfig, n)
	}
	p.reconf.Lock()
	defer p.reconf.Unlock()
	old := p.size()
	closed, err := p.applySize(n, func() { p.set.size.Store(int64(n)) })
	if err == nil && n != old {
		p.cfg.Logger.Debug("backend pool resized", "size", n, "was", old, "closed_idle", closed)
	}
	return err
}

// applySize stores new settings with store (mu held) and makes the pool
// follow their size: the idle surplus closes, a larger size wakes the
// filler. It returns how many idle connections it closed; ErrClosed (and
// nothing stored) after Close. Called with reconf held.
func (p *Pool) applySize(size int, store func()) (closed int, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, ErrClosed
	}
	old := p.size()
	store()
	surplus := p.shed(size)
	p.mu.Unlock()
	for _, c := range surplus {
		c.close()
	}
	if size > old {
		p.wakeFiller()
	}
	return len(surplus), nil
}

// logChanges writes one line with the old and new value of every setting
// Reconfigure changed; nothing when none did, so that reloading an
// unrelated part of the configuration stays quiet.
func (p *Pool) logChanges(old, d Dynamic, closed int) {
	var attrs []any
	change := func(name string, from, to any) {
		attrs = append(attrs, slog.String(name, slog.AnyValue(from).String()+" → "+slog.AnyValue(to).String()))
	}
	if old.Size != d.Size {
		change("size", old.Size, d.Size)
	}
	if old.AcquireTimeout != d.AcquireTimeout {
		change("acquire_timeout", old.AcquireTimeout, d.AcquireTimeout)
	}
	if old.ConnectTimeout != d.ConnectTimeout {
		change("connect_timeout", old.ConnectTimeout, d.ConnectTimeout)
	}
	if old.HealthInterval != d.HealthInterval {
		change("health_interval", old.HealthInterval, d.HealthInterval)
	}
	if old.MaxLifetime != d.MaxLifetime {
		change("max_lifetime", old.MaxLifetime, d.MaxLifetime)
	}
	if len(attrs) == 0 {
		return
	}
	if closed > 0 {
		attrs = append(attrs, slog.Int("closed_idle", closed))
	}
	p.cfg.Logger.Info("backend pool reconfigured", attrs...)
}
