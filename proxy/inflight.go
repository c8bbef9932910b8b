package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/tpproxy/tpproxy/pool"
)

// inflight is the part of a session other goroutines see and touch: the
// statement running now (for KILL, the processlist and the disconnect
// watcher), the watcher itself, and the marks KILL CONNECTION and a
// vanished client leave. mu guards all of it. A KILL QUERY is sent while
// mu is held, so the backend thread it names cannot be handed to another
// session meanwhile.
type inflight struct {
	mu       sync.Mutex
	cur      *pool.Conn // backend running this session's statement
	curSince monoTime   // when it began
	// curInfo is the start of its SQL text, for the processlist: kept in
	// the session's wireParts (a parked session has no statement), set
	// and cleared with cur.
	curInfo    *[infoLen]byte
	watchDone  chan struct{} // non-nil while a watcher goroutine runs
	curCmd     byte          // its command
	curInfoLen uint8         // ≤ infoLen
	noWatch    bool          // the session goroutine reads from the client mid-statement
	killed     bool          // KILL CONNECTION: end after the current statement
	gone       bool          // the watcher saw the client disconnect
	// The published view of the goroutine-owned fields (see publish).
	pubPinned  bool          // it holds a backend
	pubPins    pinReason     // the session's pin reasons
	pubThread  uint32        // that backend's thread id
	pubUser    string        // the user it logged in as
	pubSchema  string        // its default schema
	pubAccount *pool.Account // the server account the session runs as
}

// beginExec records that c runs a statement of this session, so KILL and
// the disconnect watcher can find it; the start of q, its text, is kept
// in info (the session's wireParts) for the processlist.
func (f *inflight) beginExec(c *pool.Conn, cmd byte, q []byte, info *[infoLen]byte) {
	f.mu.Lock()
	f.cur = c
	f.curSince = monoNow()
	f.curCmd = cmd
	f.curInfo = info
	f.curInfoLen = uint8(copy(info[:], q))
	f.mu.Unlock()
}

// endExec clears the running statement and stops a watcher. It reports
// whether the client disconnected or the session was killed meanwhile.
func (f *inflight) endExec(nc net.Conn) (ended bool) {
	f.mu.Lock()
	f.cur, f.curInfo = nil, nil
	done := f.watchDone
	f.watchDone = nil
	ended = f.gone || f.killed
	f.mu.Unlock()
	if done != nil {
		f.stopWatcher(done, nc)
	}
	return ended
}

// stopWatcher ends a watcher blocked reading the client and waits for it,
// after which the session goroutine owns the reader again.
func (f *inflight) stopWatcher(done chan struct{}, nc net.Conn) {
	_ = nc.SetReadDeadline(time.Unix(1, 0))
	<-done
	_ = nc.SetReadDeadline(time.Time{})
}

// stopWatching stops a running watcher and keeps new ones from starting
// while the session goroutine itself reads from the client mid-statement
// (LOAD DATA LOCAL).
func (f *inflight) stopWatching(nc net.Conn) {
	f.mu.Lock()
	f.noWatch = true
	done := f.watchDone
	f.watchDone = nil
	f.mu.Unlock()
	if done != nil {
		f.stopWatcher(done, nc)
	}
}

func (f *inflight) allowWatching() {
	f.mu.Lock()
	f.noWatch = false
	f.mu.Unlock()
}

// maybeWatch starts a disconnect watcher for a statement running longer
// than watchAfter. The server's reaper calls it once a second.
func (f *inflight) maybeWatch(now time.Time, cc *clientConn, p *pool.Pool, log *slog.Logger, id uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur == nil || f.watchDone != nil || f.noWatch || f.gone || now.Sub(f.curSince.Time()) < watchAfter {
		return
	}
	done := make(chan struct{})
	f.watchDone = done
	go f.watch(done, cc, p, log, id)
}

// watch blocks reading the client while the session goroutine waits for
// the backend. Bytes that arrive stay buffered for the session; an error
// other than the deadline set by stopWatcher means the client is gone, and
// its statement is killed so that nothing keeps running for nobody.
func (f *inflight) watch(done chan struct{}, cc *clientConn, p *pool.Pool, log *slog.Logger, id uint32) {
	defer close(done)
	err := cc.r.Fill()
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gone = true
	if f.cur != nil {
		f.killLocked(p, log, id)
	}
}

// killCurrent stops the statement running on c, for example because the
// client stopped reading its result.
func (f *inflight) killCurrent(c *pool.Conn, p *pool.Pool, log *slog.Logger, id uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur == c {
		f.killLocked(p, log, id)
	}
}

// killLocked sends KILL QUERY for the running statement of session id on
// p's control connection. mu is held, so the backend thread cannot change
// hands before the KILL arrives.
func (f *inflight) killLocked(p *pool.Pool, log *slog.Logger, id uint32) {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	if err := p.Kill(ctx, f.cur.ThreadID(), true); err != nil {
		log.Warn("kill on backend failed", "conn_id", id, "thread_id", f.cur.ThreadID(), "err", err)
	}
}

// monoTime is an instant on the monotonic clock as 8 bytes (a time.Time
// takes 24): nanoseconds since the process's monoBase.
type monoTime int64

// monoBase is the instant monoTime counts from.
var monoBase = time.Now()

// monoNow returns the current monoTime.
func monoNow() monoTime { return monoTime(time.Since(monoBase)) }

// Time returns t as a time.Time, which carries the monotonic reading.
func (t monoTime) Time() time.Time { return monoBase.Add(time.Duration(t)) }

// Since returns the time elapsed since t.
func (t monoTime) Since() time.Duration { return time.Duration(monoNow() - t) }
