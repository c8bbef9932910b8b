package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpproxy/tpproxy/bench/internal/sysstat"
	"github.com/tpproxy/tpproxy/internal/mysqlclient"
)

// Step is one measured load: Threads connections to Target, each running
// Workload's transactions back to back (a closed loop: a client waits for
// its answer before it sends the next transaction), for Warmup and then
// Duration.
type Step struct {
	Target   Target
	Workload Workload
	// Threads is the number of client connections, all opened before the
	// warmup starts and kept for the whole step.
	Threads int
	// Duration is the measured hold.
	Duration time.Duration
	// Warmup runs the load before the hold without measuring it.
	Warmup time.Duration
	// ServerDSN, when set, is a DSN of the server behind Target (root or
	// any user that may SHOW GLOBAL STATUS) for StepResult.Server. For a
	// proxy target it points at the backend, not at the proxy.
	ServerDSN string
	// Seed makes the clients' random choices repeatable; client i uses
	// Seed+i. Default 1.
	Seed uint64
	// ConnectPerTx opens a new connection for every transaction and
	// closes it afterwards (a connection storm, as PHP-style clients
	// make); its latency includes the connect. Otherwise each client
	// keeps its connection for the whole step.
	ConnectPerTx bool
	// ErrorPause, when positive, is how long a client waits after a
	// failed transaction before it starts the next: a client that backs
	// off when told the server is overloaded. 0: at once.
	ErrorPause time.Duration
	// Progress, when set, is called about once a second from Run's
	// goroutine. It must return quickly.
	Progress func(Progress)
	// Sample and OnSample, when both set, report the load's figures
	// every Sample from Run's goroutine, warmup included.
	Sample   time.Duration
	OnSample func(Interval)
	// Logger receives driver events at debug and warn level. Default:
	// discard.
	Logger *slog.Logger

	// monitor takes the host, process and proxy readings; Ramp sets it,
	// Run alone reads the local host only.
	monitor *monitor
	// start, when set, is called once the connections are open and
	// returns when the warmup may begin: the shards' barrier.
	start func(context.Context) error
}

// Progress is a live view of a running step.
type Progress struct {
	// Elapsed is the time since the connections were open.
	Elapsed time.Duration
	// Warmup is set while the hold has not begun.
	Warmup bool
	// Transactions and Errors count since the start, warmup included.
	Transactions uint64
	Errors       uint64
	// TPS is the rate over the last interval.
	TPS float64
	// P90 is the 90th percentile latency in ms over the last interval
	// (about 3 % resolution; NaN when none completed).
	P90 float64
}

// Interval is a step's figures over one sampling interval: a soak's time
// series. Percentiles have about 3 % resolution (see liveHist).
type Interval struct {
	// At is the end of the interval; Elapsed counts from the connections
	// being open.
	At      time.Time
	Elapsed time.Duration
	Seconds float64
	// Transactions and Errors in the interval.
	Transactions uint64
	Errors       uint64
	TPS          float64
	// Latency percentiles in ms; NaN when no transaction completed.
	P50, P90, P99 float64
}

// Validate reports a step Run cannot run.
func (s Step) Validate() error {
	switch {
	case s.Target.DSN == "":
		return fmt.Errorf("%w: target %q has no DSN", ErrBadStep, s.Target.Name)
	case s.Workload == nil:
		return fmt.Errorf("%w: no workload", ErrBadStep)
	case s.Threads < 1:
		return fmt.Errorf("%w: %d threads", ErrBadStep, s.Threads)
	case s.Duration <= 0:
		return fmt.Errorf("%w: duration %s", ErrBadStep, s.Duration)
	case s.Warmup < 0:
		return fmt.Errorf("%w: warmup %s", ErrBadStep, s.Warmup)
	}
	return nil
}

// stopGrace is how long transactions in flight at the end of the hold may
// take before the step's context cuts them off.
const stopGrace = 30 * time.Second

// reconnectDelay is the pause after a failed attempt to replace a lost
// connection.
const reconnectDelay = 100 * time.Millisecond

// Run executes a step. It opens all connections first: if any cannot be
// opened, it returns an error wrapping ErrConnect and measures nothing.
// Errors during the step are results, not errors of Run; Run fails only
// on setup problems or when ctx ends.
func Run(ctx context.Context, st Step) (StepResult, error) {
	if err := st.Validate(); err != nil {
		return StepResult{}, err
	}
	log := st.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("target", st.Target.Name, "workload", st.Workload.Name(), "threads", st.Threads)
	if st.Seed == 0 {
		st.Seed = 1
	}
	if st.monitor == nil {
		st.monitor = &monitor{host: sysstat.LocalHost(), log: log}
	}

	var (
		sampler *serverSampler
		base    map[string]int64
	)
	if st.ServerDSN != "" {
		s, err := openSampler(ctx, st.ServerDSN, log)
		if err != nil {
			return StepResult{}, err
		}
		defer s.close()
		if base, err = s.read(ctx); err != nil {
			return StepResult{}, err
		}
		sampler = s
	}

	dial, err := newDialer(st.Target, st.Workload.Options())
	if err != nil {
		return StepResult{}, err
	}
	var sessions []*Session
	if !st.ConnectPerTx {
		if sessions, err = connectAll(ctx, dial, st.Threads); err != nil {
			return StepResult{}, fmt.Errorf("%w: target %s: %w", ErrConnect, st.Target.Name, err)
		}
	} else if err := dial.check(ctx); err != nil {
		return StepResult{}, fmt.Errorf("%w: target %s: %w", ErrConnect, st.Target.Name, err)
	}
	if st.start != nil {
		if err := st.start(ctx); err != nil {
			for _, s := range sessions {
				s.conn.Close()
			}
			return StepResult{}, fmt.Errorf("bench: step %s on %s: %w", stepLabel(st.Workload.Name(), st.Threads), st.Target.Name, err)
		}
	}

	t0 := time.Now()
	holdStart := t0.Add(st.Warmup)
	holdEnd := holdStart.Add(st.Duration)
	runCtx, cancel := context.WithDeadline(ctx, holdEnd.Add(stopGrace))
	defer cancel()
	stop := make(chan struct{})
	var live liveCounters
	workers := make([]*worker, st.Threads)
	shards := make([]*histShard, min(st.Threads, histShards))
	for i := range shards {
		shards[i] = &histShard{h: NewHistogram()}
	}
	var wg sync.WaitGroup
	for i := range st.Threads {
		w := &worker{
			dial: dial, index: i, perTx: st.ConnectPerTx, errorPause: st.ErrorPause, client: st.Workload.NewClient(st.Seed + uint64(i)),
			holdStart: holdStart, holdEnd: holdEnd,
			hist: shards[i%len(shards)], errors: map[string]uint64{}, live: &live, log: log,
		}
		if sessions != nil {
			w.setSession(sessions[i])
		}
		workers[i] = w
		wg.Go(func() { w.run(runCtx, stop) })
	}

	res, err := coordinate(ctx, st, sampler, base, t0, &live, stop, log)
	wg.Wait()
	if err != nil {
		return StepResult{}, err
	}
	res.Histogram = NewHistogram()
	for _, w := range workers {
		res.Transactions += w.tx
		res.Queries += w.queries
		res.Deadlocks += w.deadlocks
		res.LockWaitTimeouts += w.lockWaits
		res.Reconnects += w.reconnects
		for k, n := range w.errors {
			res.Errors[k] += n
			res.ErrorTotal += n
		}
	}
	for _, sh := range shards {
		res.Histogram.Merge(sh.h)
	}
	res.derive()
	return res, nil
}

// connectTimeout bounds opening a step's connections, handshakes
// included.
const connectTimeout = 30 * time.Second

// connectParallel is how many connections connectAll opens at once: more
// would overflow the server's listen backlog, and a dropped SYN costs a
// second.
const connectParallel = 64

// connectAll opens n sessions, connectParallel at a time.
func connectAll(ctx context.Context, d *dialer, n int) ([]*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	out := make([]*Session, n)
	errs := make([]error, n)
	sem := make(chan struct{}, connectParallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i], errs[i] = d.session(ctx, i)
		})
	}
	wg.Wait()
	var failed int
	var first error
	for _, err := range errs {
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if failed == 0 {
		return out, nil
	}
	for _, s := range out {
		if s != nil {
			s.conn.Close()
		}
	}
	return nil, fmt.Errorf("%d of %d connections failed: %w", failed, n, first)
}

// coordinate runs the step's clock from Run's goroutine: it begins the
// hold (CPU, host and server readings), reports progress, and ends the
// hold by closing stop. It returns the result's frame; Run adds the
// workers' figures.
func coordinate(ctx context.Context, st Step, sampler *serverSampler, base map[string]int64,
	t0 time.Time, live *liveCounters, stop chan struct{}, log *slog.Logger) (StepResult, error) {
	res := StepResult{
		Target: st.Target.Name, Workload: st.Workload.Name(), Threads: st.Threads,
		WarmupSec: st.Warmup.Seconds(), Errors: map[string]uint64{},
	}
	warm := time.NewTimer(st.Warmup)
	defer warm.Stop()
	var end <-chan time.Time // armed when the hold begins
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var sampleC <-chan time.Time
	if st.Sample > 0 && st.OnSample != nil {
		t := time.NewTicker(st.Sample)
		defer t.Stop()
		sampleC = t.C
	}
	var (
		progPrev, progCur, smpPrev, smpCur liveSnap
		smpTx, smpErr                      uint64
		smpAt                              = t0
	)

	var (
		holdBegan  time.Time
		ru0        rusage
		reading    *holdReading
		serverDone chan ServerStatus
		holdOver   = make(chan struct{})
	)
	stopAll := func() {
		close(stop)
		close(holdOver)
	}
	lastTx, lastAt := uint64(0), t0
	for {
		select {
		case <-ctx.Done():
			stopAll()
			if serverDone != nil {
				<-serverDone // it uses the sampler's connection, which Run closes
			}
			return res, fmt.Errorf("bench: step %s on %s: %w", res.Label(), st.Target.Name, context.Cause(ctx))

		case <-warm.C:
			ru0, _ = readRusage()
			reading = st.monitor.begin(ctx, st.Target.Name)
			holdBegan = time.Now()
			res.Started = holdBegan
			endTimer := time.NewTimer(st.Duration)
			defer endTimer.Stop()
			end = endTimer.C
			if sampler != nil {
				start, err := sampler.read(ctx)
				if err != nil {
					log.Warn("server status at the start of the hold", "err", err)
					break
				}
				serverDone = make(chan ServerStatus, 1)
				go func() { serverDone <- sampler.watch(ctx, base, start, holdOver, log) }()
			}

		case now := <-end:
			ru1, err := readRusage()
			if err == nil {
				res.ClientCPU = clientCPU(ru0, ru1, now.Sub(holdBegan))
			}
			st.monitor.end(ctx, st.Target.Name, reading, &res)
			res.DurationSec = now.Sub(holdBegan).Seconds()
			stopAll()
			if serverDone != nil {
				s := <-serverDone
				res.Server = &s
			}
			return res, nil

		case now := <-sampleC:
			live.hist.snapshot(&smpCur)
			q, _ := quantiles(&smpCur, &smpPrev, 0.5, 0.9, 0.99)
			smpPrev = smpCur
			tx, errs := live.tx.Load(), live.errors.Load()
			sec := now.Sub(smpAt).Seconds()
			st.OnSample(Interval{
				At: now, Elapsed: now.Sub(t0), Seconds: sec,
				Transactions: tx - smpTx, Errors: errs - smpErr, TPS: float64(tx-smpTx) / sec,
				P50: q[0], P90: q[1], P99: q[2],
			})
			smpTx, smpErr, smpAt = tx, errs, now

		case now := <-tick.C:
			if st.Progress == nil {
				continue
			}
			tx := live.tx.Load()
			live.hist.snapshot(&progCur)
			q, _ := quantiles(&progCur, &progPrev, 0.9)
			progPrev = progCur
			st.Progress(Progress{
				Elapsed:      now.Sub(t0),
				Warmup:       end == nil,
				Transactions: tx,
				Errors:       live.errors.Load(),
				TPS:          float64(tx-lastTx) / now.Sub(lastAt).Seconds(),
				P90:          q[0],
			})
			lastTx, lastAt = tx, now
		}
	}
}

// histShards bounds the exact histograms of a step: an HDR histogram
// over 1 µs..60 s is about 140 KB, too much to give each of 10,000
// clients one. Workers share them round-robin, each behind a mutex that
// is rarely contended.
const histShards = 32

// histShard is one of a step's exact latency histograms.
type histShard struct {
	mu sync.Mutex
	h  *Histogram
}

func (s *histShard) record(d time.Duration) {
	s.mu.Lock()
	s.h.Record(d)
	s.mu.Unlock()
}

// liveCounters feed Progress; workers add to them after every
// transaction.
type liveCounters struct {
	tx, errors atomic.Uint64
	hist       liveHist
}

// worker is one simulated client and its figures. Only its goroutine
// touches it until Run has waited for it, except cur, which the step's
// cancellation reads to interrupt a blocked read.
type worker struct {
	dial  *dialer
	index int
	perTx bool
	// errorPause is Step.ErrorPause.
	errorPause time.Duration
	client     Client
	log        *slog.Logger
	live       *liveCounters

	sess *Session // nil when lost (or between transactions with perTx)
	cur  atomic.Pointer[mysqlclient.Conn]

	holdStart, holdEnd time.Time

	hist                 *histShard
	tx, queries          uint64
	deadlocks, lockWaits uint64
	reconnects           uint64
	errors               map[string]uint64
}

// inHold reports whether t lies in the measured hold.
func (w *worker) inHold(t time.Time) bool {
	return !t.Before(w.holdStart) && t.Before(w.holdEnd)
}

// setSession makes s the worker's connection (nil: none).
func (w *worker) setSession(s *Session) {
	w.sess = s
	if s == nil {
		w.cur.Store(nil)
	} else {
		w.cur.Store(s.conn)
	}
}

// txOutcome is how a transaction ended.
type txOutcome int

const (
	txCommitted txOutcome = iota
	// txFailed: counted under its error key.
	txFailed
	// txAbandoned: the step stopped or was cancelled mid-transaction;
	// not counted.
	txAbandoned
	// txCutOff: the step's hard deadline ended it; counted as
	// ErrKeyTimeout even after the hold, since it means a hang.
	txCutOff
)

// run runs transactions until stop is closed or ctx ends.
func (w *worker) run(ctx context.Context, stop <-chan struct{}) {
	// The step's end interrupts a read that would otherwise wait for a
	// hung server.
	unwatch := context.AfterFunc(ctx, func() {
		if c := w.cur.Load(); c != nil {
			c.Interrupt()
		}
	})
	defer func() {
		unwatch()
		w.drop()
	}()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		begin := time.Now()
		if w.sess == nil {
			if w.perTx {
				if !w.connect(ctx) {
					if ctx.Err() != nil {
						return
					}
					w.count(begin, time.Now(), 0, txFailed, ErrKeyConnect)
					// A refusing or dead target must not turn the
					// client into a busy loop.
					if !w.pause(ctx, stop) {
						return
					}
					continue
				}
			} else if !w.reconnect(ctx, stop) {
				return
			}
		}
		q0 := w.sess.queries
		outcome, key := w.transaction(ctx, stop)
		end := time.Now()
		queries := 0
		if w.sess != nil {
			queries = w.sess.queries - q0
			if w.perTx {
				w.drop()
			}
		}
		switch outcome {
		case txAbandoned:
			return
		case txCutOff:
			w.errors[ErrKeyTimeout]++
			w.log.Warn("transaction cut off by the step deadline", "after", end.Sub(begin).Round(time.Millisecond))
			return
		}
		w.count(begin, end, queries, outcome, key)
		if outcome == txFailed && w.errorPause > 0 && !w.sleep(ctx, stop, w.errorPause) {
			return
		}
	}
}

// count records a finished transaction.
func (w *worker) count(begin, end time.Time, queries int, outcome txOutcome, key string) {
	if outcome == txCommitted {
		w.live.tx.Add(1)
		w.live.hist.record(end.Sub(begin))
	} else {
		w.live.errors.Add(1)
	}
	if !w.inHold(end) {
		return
	}
	w.queries += uint64(queries)
	if outcome == txFailed {
		w.errors[key]++
		return
	}
	w.tx++
	w.hist.record(end.Sub(begin))
}

// transaction runs one transaction, retrying it after a deadlock or lock
// wait timeout. It returns how it ended and, for txFailed, the error key.
func (w *worker) transaction(ctx context.Context, stop <-chan struct{}) (txOutcome, string) {
	for {
		err := w.client.Tx(w.sess)
		if err == nil {
			return txCommitted, ""
		}
		if ctx.Err() != nil {
			// The step's context ended and interrupted the connection.
			w.drop()
			if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				return txCutOff, ErrKeyTimeout
			}
			return txAbandoned, ""
		}
		class, key := classify(err)
		switch class {
		case classServer:
			w.rollback()
			return txFailed, key
		case classRetry:
			if w.inHold(time.Now()) {
				if key == strconv.Itoa(ErLockDeadlock) {
					w.deadlocks++
				} else {
					w.lockWaits++
				}
			}
			if !w.rollback() {
				return txFailed, ErrKeyConn
			}
			select {
			case <-stop:
				return txAbandoned, ""
			default:
			}
		default: // classConn
			w.drop()
			return txFailed, ErrKeyConn
		}
	}
}

// rollback ends a failed transaction. When even that fails the connection
// is dropped and rollback returns false.
func (w *worker) rollback() bool {
	_, err := w.sess.conn.ExecString("ROLLBACK")
	if err == nil {
		return true
	}
	if class, _ := classify(err); class == classServer || class == classRetry {
		return true // answered: the connection is usable
	}
	w.drop()
	return false
}

// drop closes the worker's connection, if any.
func (w *worker) drop() {
	if w.sess != nil {
		w.sess.conn.Close()
		w.setSession(nil)
	}
}

// connect opens the worker's connection; false when it failed.
func (w *worker) connect(ctx context.Context) bool {
	s, err := w.dial.session(ctx, w.index)
	if err != nil {
		w.log.Debug("connect failed", "err", err)
		return false
	}
	w.setSession(s)
	if ctx.Err() != nil { // the step ended while connecting: AfterFunc may have missed it
		w.drop()
		return false
	}
	return true
}

// reconnect replaces a lost connection, trying until it succeeds or the
// step stops. Failed attempts in the hold count as ErrKeyReconnect.
func (w *worker) reconnect(ctx context.Context, stop <-chan struct{}) bool {
	for {
		if w.connect(ctx) {
			if w.inHold(time.Now()) {
				w.reconnects++
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if w.inHold(time.Now()) {
			w.errors[ErrKeyReconnect]++
		}
		w.live.errors.Add(1)
		if !w.pause(ctx, stop) {
			return false
		}
	}
}

// pause waits reconnectDelay; false when the step stops meanwhile.
func (w *worker) pause(ctx context.Context, stop <-chan struct{}) bool {
	return w.sleep(ctx, stop, reconnectDelay)
}

// sleep waits d; false when the step stops meanwhile.
func (w *worker) sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	case <-ctx.Done():
		return false
	}
}
