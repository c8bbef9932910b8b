package bench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
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
	// Progress, when set, is called about once a second from Run's
	// goroutine. It must return quickly.
	Progress func(Progress)
	// Logger receives driver events at debug and warn level. Default:
	// discard.
	Logger *slog.Logger
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

	pw, _ := st.Workload.(preparedWorkload)
	db, err := openDBPS(st.Target.DSN, st.Threads, pw != nil && pw.PreparedStatements(), log)
	if err != nil {
		return StepResult{}, err
	}
	defer db.Close()
	conns, err := connectAll(ctx, db, st.Threads)
	if err != nil {
		return StepResult{}, fmt.Errorf("%w: target %s: %w", ErrConnect, st.Target.Name, err)
	}

	t0 := time.Now()
	holdStart := t0.Add(st.Warmup)
	holdEnd := holdStart.Add(st.Duration)
	runCtx, cancel := context.WithDeadline(ctx, holdEnd.Add(stopGrace))
	defer cancel()
	stop := make(chan struct{})
	var live liveCounters
	workers := make([]*worker, st.Threads)
	var wg sync.WaitGroup
	for i, conn := range conns {
		w := &worker{
			db: db, conn: conn, client: st.Workload.NewClient(st.Seed + uint64(i)),
			holdStart: holdStart, holdEnd: holdEnd,
			hist: NewHistogram(), errors: map[string]uint64{}, live: &live, log: log,
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
		res.Histogram.Merge(w.hist)
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
	res.Latency = res.Histogram.Summary()
	if res.DurationSec > 0 {
		res.TPS = float64(res.Transactions) / res.DurationSec
		res.QPS = float64(res.Queries) / res.DurationSec
	}
	if n := res.Transactions + res.ErrorTotal; n > 0 {
		res.SuccessPct = float64(res.Transactions) / float64(n) * 100
	}
	return res, nil
}

// connectTimeout bounds opening a step's connections, handshakes
// included (the driver's dial timeout covers only TCP).
const connectTimeout = 30 * time.Second

// connectAll opens n connections in parallel.
func connectAll(ctx context.Context, db *sql.DB, n int) ([]*sql.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	conns := make([]*sql.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { conns[i], errs[i] = db.Conn(ctx) })
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
		return conns, nil
	}
	for _, c := range conns {
		if c != nil {
			c.Close()
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

	var (
		holdBegan  time.Time
		ru0        rusage
		ps0        procStat
		psErr      error
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
			ps0, psErr = readProcStat()
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
			if psErr == nil {
				if ps1, err := readProcStat(); err == nil {
					u := hostUsage(ps0, ps1)
					res.Host = &u
				}
			}
			res.DurationSec = now.Sub(holdBegan).Seconds()
			stopAll()
			if serverDone != nil {
				s := <-serverDone
				res.Server = &s
			}
			return res, nil

		case now := <-tick.C:
			if st.Progress == nil {
				continue
			}
			tx := live.tx.Load()
			st.Progress(Progress{
				Elapsed:      now.Sub(t0),
				Warmup:       end == nil,
				Transactions: tx,
				Errors:       live.errors.Load(),
				TPS:          float64(tx-lastTx) / now.Sub(lastAt).Seconds(),
			})
			lastTx, lastAt = tx, now
		}
	}
}

// liveCounters feed Progress; workers add to them after every
// transaction.
type liveCounters struct {
	tx, errors atomic.Uint64
}

// worker is one client connection and its figures. Only its goroutine
// touches it until Run has waited for it.
type worker struct {
	db     *sql.DB
	conn   *sql.Conn // nil once it was lost and could not be replaced
	client Client
	log    *slog.Logger
	live   *liveCounters

	holdStart, holdEnd time.Time

	hist                 *Histogram
	tx, queries          uint64
	deadlocks, lockWaits uint64
	reconnects           uint64
	errors               map[string]uint64
}

// inHold reports whether t lies in the measured hold.
func (w *worker) inHold(t time.Time) bool {
	return !t.Before(w.holdStart) && t.Before(w.holdEnd)
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
	defer func() {
		if w.conn != nil {
			w.conn.Close()
		}
	}()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		if w.conn == nil && !w.reconnect(ctx, stop) {
			return
		}
		begin := time.Now()
		queries, outcome, key := w.transaction(ctx, stop)
		end := time.Now()
		switch outcome {
		case txAbandoned:
			return
		case txCutOff:
			w.errors[ErrKeyTimeout]++
			w.log.Warn("transaction cut off by the step deadline", "after", end.Sub(begin).Round(time.Millisecond))
			return
		case txCommitted:
			w.live.tx.Add(1)
		case txFailed:
			w.live.errors.Add(1)
		}
		if !w.inHold(end) {
			continue
		}
		w.queries += uint64(queries)
		if outcome == txFailed {
			w.errors[key]++
			continue
		}
		w.tx++
		w.hist.Record(end.Sub(begin))
	}
}

// transaction runs one transaction, retrying it after a deadlock or lock
// wait timeout. It returns the statements sent (all attempts), how it
// ended, and for txFailed the error key.
func (w *worker) transaction(ctx context.Context, stop <-chan struct{}) (queries int, outcome txOutcome, key string) {
	for {
		n, err := w.client.Tx(ctx, w.conn)
		queries += n
		if err == nil {
			return queries, txCommitted, ""
		}
		if ctx.Err() != nil {
			// Whatever the driver made of it (context error, bad
			// connection), the step's context ended. The driver has
			// closed a connection whose query it cancelled.
			w.dropConn()
			if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				return queries, txCutOff, ErrKeyTimeout
			}
			return queries, txAbandoned, ""
		}
		class, key := classify(err)
		switch class {
		case classServer:
			w.rollback(ctx)
			return queries, txFailed, key
		case classRetry:
			if w.inHold(time.Now()) {
				if key == strconv.Itoa(ErLockDeadlock) {
					w.deadlocks++
				} else {
					w.lockWaits++
				}
			}
			if !w.rollback(ctx) {
				return queries, txFailed, ErrKeyConn
			}
			select {
			case <-stop:
				return queries, txAbandoned, ""
			default:
			}
		default: // classConn; classCanceled without our context ending
			w.dropConn()
			return queries, txFailed, ErrKeyConn
		}
	}
}

// rollback ends a failed transaction. When even that fails the connection
// is dropped and rollback returns false.
func (w *worker) rollback(ctx context.Context) bool {
	_, err := w.conn.ExecContext(ctx, "ROLLBACK")
	if err == nil {
		return true
	}
	if class, _ := classify(err); class == classServer || class == classRetry {
		return true // answered: the connection is usable
	}
	w.dropConn()
	return false
}

// dropConn discards the connection so that the pool does not hand it out
// again (a *sql.Conn returned with a driver error other than ErrBadConn
// would be kept).
func (w *worker) dropConn() {
	_ = w.conn.Raw(func(any) error { return driver.ErrBadConn })
	w.conn.Close()
	w.conn = nil
}

// reconnect replaces a lost connection, trying until it succeeds or the
// step stops. Failed attempts in the hold count as ErrKeyReconnect.
func (w *worker) reconnect(ctx context.Context, stop <-chan struct{}) bool {
	for {
		conn, err := w.db.Conn(ctx)
		if err == nil {
			w.conn = conn
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
		w.log.Debug("reconnect failed", "err", err)
		t := time.NewTimer(reconnectDelay)
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
			return false
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}
