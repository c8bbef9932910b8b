package admin

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tpproxy/tpproxy/proxy"
)

// infoLen is how much of a statement SHOW PROCESSLIST shows without FULL.
const infoLen = 100

var processlistCols = []column{
	{"Id", colInt}, {"User", colString}, {"Host", colString}, {"db", colString}, {"Command", colString},
	{"Time", colInt}, {"State", colString}, {"Info", colString}, {"Group", colInt},
	{"Backend_thread", colInt}, {"Pin_reason", colString},
}

// nullIfEmpty is NULL for "", as the server shows a missing db or Info.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// queuedSessions are the sessions with a statement in a queue.
func (a *Server) queuedSessions() map[uint32]bool {
	queued := make(map[uint32]bool)
	for _, q := range a.sched.Queues() {
		queued[q.ConnID] = true
	}
	return queued
}

// showProcesslist lists the proxy's client sessions (not admin sessions)
// ordered by id.
func (a *Server) showProcesslist(st showProcesslist) *mysql.Result {
	queued := a.queuedSessions()
	now := time.Now()
	sessions := a.front.Sessions()
	rows := make([][]any, 0, len(sessions))
	for _, s := range sessions {
		rows = append(rows, a.processRow(s, queued[s.ID], st.full, now))
	}
	return resultSet(processlistCols, rows)
}

// process is what the processlist shows of a session besides its
// SessionInfo.
type process struct {
	command string
	state   string
	secs    int64         // seconds the statement has run, 0 when idle
	elapsed time.Duration // the same, exactly
	group   int
	backend any // the server thread id, or nil
}

func (a *Server) process(s proxy.SessionInfo, queued bool, now time.Time) process {
	p := process{command: s.Command, state: "idle", group: a.sched.GroupOf(s.ID)}
	switch {
	case queued:
		p.state = "queued"
	case s.Executing:
		p.state = "executing"
	case s.Pinned:
		p.state = "pinned"
	}
	if p.command == "" {
		p.command = "Sleep"
	}
	if s.Executing {
		p.elapsed = now.Sub(s.Since)
		p.secs = int64(p.elapsed / time.Second)
	}
	if s.BackendThread != 0 {
		p.backend = int64(s.BackendThread)
	}
	return p
}

func (a *Server) processRow(s proxy.SessionInfo, queued, full bool, now time.Time) []any {
	p := a.process(s, queued, now)
	info := s.Info
	if !full && len(info) > infoLen {
		cut := infoLen
		for cut > 0 && !utf8.RuneStart(info[cut]) {
			cut-- // do not split a character
		}
		info = info[:cut]
	}
	return []any{
		int64(s.ID), s.User, s.Host, nullIfEmpty(s.Schema), p.command, p.secs, p.state, nullIfEmpty(info),
		int64(p.group), p.backend, nullIfEmpty(s.PinReasons),
	}
}

// showStatus answers SHOW STATUS.
func (a *Server) showStatus(st showStatus) *mysql.Result { return nameValues(a.status(), st.like) }

// status are the counters of the scheduler, front end and pool under the
// names of the server's status variables where one fits, in name order.
func (a *Server) status() []nameValue {
	ss := a.sched.Stats()
	var threads, idle int
	for _, g := range a.sched.Groups() {
		threads += g.Active + g.Stalled + g.Pinned
		idle += g.Waiting
	}
	fs := a.front.Stats()
	ps := a.pool.Stats()
	pst := a.front.PinStats()
	rows := []nameValue{
		{"Aborted_connects", int64(fs.AuthFailures)},
		{"Backend_pool_idle", int64(ps.Idle)},
		{"Backend_pool_in_use", int64(ps.InUse)},
		{"Backend_pool_size", int64(ps.Size)},
		{"Backend_pool_waits", int64(ps.Waits)},
		{"Pinned_connections", int64(pst.Held)},
		{"Pinned_connections_limit", int64(pst.Limits.Total)},
		{"Pinned_overdrafts", int64(pst.Overdrafts)},
		{"Pinned_per_account_limit", int64(pst.Limits.PerAccount)},
		{"Pinned_refusals", int64(pst.RefusedTotal + pst.RefusedAccount + pst.RefusedSticky)},
		{"Pinned_shed", int64(pst.Shed)},
		{"Pinned_sticky", int64(pst.Sticky)},
		{"Pinned_sticky_limit", int64(pst.Limits.Sticky)},
		{"Pinned_waiting", int64(pst.Waiting)},
		{"Pinned_waits", int64(pst.Waits)},
		{"Pins_total", int64(fs.Pins)},
		{"Prepared_stmt_backend", ps.PreparedOpen},
		{"Prepared_stmt_client", fs.ClientStatements},
		{"Questions", int64(fs.Statements)},
		{"Sessions_pinned", int64(fs.Pinned)},
		{"Threadpool_admitted", int64(ss.Admitted)},
		{"Threadpool_idle_threads", int64(idle)},
		{"Threadpool_kickups", int64(ss.KickUps)},
		{"Threadpool_queue_timeouts", int64(ss.Timeouts)},
		{"Threadpool_queue_wait_us", ss.QueueWait.Microseconds()},
		{"Threadpool_queued", int64(ss.Queued)},
		{"Threadpool_shed", int64(ss.Shed)},
		{"Threadpool_stalls", int64(ss.Stalls)},
		{"Threadpool_threads", int64(threads)},
		{"Threadpool_waited", int64(ss.Waited)},
		{"Threads_connected", int64(fs.Sessions)},
		{"Threads_running", int64(ss.Active + ss.Pinned)},
	}
	return rows
}

// kill runs KILL [QUERY] on a client session of the proxy.
func (a *Server) kill(st kill) error {
	id, err := strconv.ParseUint(st.id, 10, 64)
	if err != nil || id > math.MaxUint32 {
		return noSuchThread(st.id)
	}
	if err := a.front.Kill(uint32(id), st.query); err != nil {
		if errors.Is(err, proxy.ErrNoSuchSession) {
			return noSuchThread(st.id)
		}
		return err
	}
	what := "connection"
	if st.query {
		what = "query"
	}
	a.log.Info("admin: kill", "what", what, "conn_id", id)
	return nil
}

// run executes one parsed statement for the admin connection c.
func (a *Server) run(ctx context.Context, c *handler, st statement) (*mysql.Result, error) {
	switch st := st.(type) {
	case showVariables:
		return a.showVariables(st), nil
	case showStatus:
		return a.showStatus(st), nil
	case showProcesslist:
		return a.showProcesslist(st), nil
	case showTables:
		return showViews(st)
	case showColumns:
		return showViewColumns(st)
	case selectVars:
		return a.selectVars(st)
	case selectSQL:
		return a.selectSQL(ctx, c, st.q)
	case setStmt:
		return okResult(), a.set(st)
	case flushStats:
		a.sched.FlushStats()
		a.log.Info("admin: thread pool stats flushed")
		return okResult(), nil
	case flushHosts:
		n := a.front.FlushHosts()
		a.log.Info("admin: client hosts unblocked", "blocked", n)
		return okResult(), nil
	case kill:
		return okResult(), a.kill(st)
	}
	return nil, unsupported()
}

// okResult is an OK packet.
func okResult() *mysql.Result { return &mysql.Result{} }

// query parses and runs one COM_QUERY of the admin connection c.
func (a *Server) query(ctx context.Context, c *handler, q string) (*mysql.Result, error) {
	st, err := parse(strings.TrimSpace(q))
	if err != nil {
		return nil, err
	}
	return a.run(ctx, c, st)
}

// selectSQL runs a SELECT over the views on the SQL engine, which is
// opened at the first one.
func (a *Server) selectSQL(ctx context.Context, c *handler, q string) (*mysql.Result, error) {
	a.engineMu.Lock()
	if a.engine == nil {
		e, err := newEngine(tables)
		if err != nil {
			a.engineMu.Unlock()
			return nil, err
		}
		a.engine = e
	}
	e := a.engine
	a.engineMu.Unlock()

	cfg := a.sched.Config()
	tr, err := translate(q, translateEnv{
		sysVar:  func(sc scope, name string) (any, error) { return a.sysVarValue(cfg, sc, name) },
		connID:  c.id,
		user:    a.cfg.User + "@" + c.host,
		version: serverVersion,
		now:     func() string { return time.Now().Format(time.DateTime) },
		unix:    func() int64 { return time.Now().Unix() },
	})
	if err != nil {
		return nil, err
	}
	return e.query(ctx, q, tr, func(t *table) [][]any { return t.rows(a) })
}
