package bench

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// serverSampleInterval is how often Threads_connected is read during a
// step.
const serverSampleInterval = 200 * time.Millisecond

// ServerStatus is what the server behind a target did during a step's
// measured hold, from SHOW GLOBAL STATUS on a separate connection.
type ServerStatus struct {
	// Version is the server's VERSION().
	Version string `json:"version"`
	// ThreadsConnectedBase is Threads_connected before the step opened
	// its connections: the sampler's own, a proxy's pool and anyone
	// else's. The step's share is ThreadsConnectedMax minus this.
	ThreadsConnectedBase int64 `json:"threads_connected_base"`
	// ThreadsConnectedMax is the largest Threads_connected seen (sampled
	// every 200 ms), the sampler's own connection included.
	ThreadsConnectedMax int64 `json:"threads_connected_max"`
	// ThreadsCreated is the increase of Threads_created over the whole
	// step, connecting included: the threads the server had to create for
	// the step's clients (fewer when its thread cache had some).
	ThreadsCreated int64 `json:"threads_created"`
	// Questions is the increase of Questions in the hold, less the
	// sampler's own SHOW statements; compare it with the driver's Queries.
	Questions int64 `json:"questions"`
	// ThreadsRunningMax is the largest Threads_running seen (the
	// sampler's own statement included): statements the server ran at
	// once.
	ThreadsRunningMax int64 `json:"threads_running_max"`
	// AbortedConnects is the increase of Aborted_connects over the step:
	// failed logins and handshakes.
	AbortedConnects int64 `json:"aborted_connects"`
	// Samples is the number of successful reads during the hold; a
	// server too busy to answer shows here.
	Samples int `json:"samples"`
}

// statusVars are the variables a sample reads.
var statusVars = []string{"Threads_connected", "Threads_running", "Threads_created", "Questions", "Aborted_connects"}

// serverSampler reads SHOW GLOBAL STATUS over one connection of its own.
type serverSampler struct {
	db      *sql.DB
	conn    *sql.Conn
	version string
	queries int64 // statements this sampler sent since open
}

// openSampler connects to an admin DSN of the server behind the target.
func openSampler(ctx context.Context, dsn string, log *slog.Logger) (*serverSampler, error) {
	db, err := openDB(dsn, 1, log)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("bench: server sampler: %w", err)
	}
	s := &serverSampler{db: db, conn: conn}
	if err := conn.QueryRowContext(ctx, "SELECT VERSION()").Scan(&s.version); err != nil {
		s.close()
		return nil, fmt.Errorf("bench: server sampler: %w", err)
	}
	return s, nil
}

func (s *serverSampler) close() {
	s.conn.Close()
	s.db.Close()
}

// read returns the statusVars.
func (s *serverSampler) read(ctx context.Context) (map[string]int64, error) {
	s.queries++
	rows, err := s.conn.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('"+strings.Join(statusVars, "','")+"')")
	if err != nil {
		return nil, fmt.Errorf("bench: server status: %w", err)
	}
	defer rows.Close()
	vals := make(map[string]int64, len(statusVars))
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, fmt.Errorf("bench: server status: %w", err)
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bench: server status %s=%q: %w", name, value, err)
		}
		vals[strings.ToLower(name)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("bench: server status: %w", err)
	}
	return vals, nil
}

// watch samples until stop is closed and returns the hold's figures.
// base is the reading taken before the step opened its connections, start
// the one taken when the hold began. Failed samples are logged and
// skipped: the step goes on without them.
func (s *serverSampler) watch(ctx context.Context, base, start map[string]int64, stop <-chan struct{}, log *slog.Logger) ServerStatus {
	st := ServerStatus{
		Version:              s.version,
		ThreadsConnectedBase: base["threads_connected"],
		ThreadsConnectedMax:  start["threads_connected"],
		ThreadsRunningMax:    start["threads_running"],
		Samples:              1,
	}
	startQueries := s.queries
	last, lastQueries := start, s.queries
	sample := func() bool {
		v, err := s.read(ctx)
		if err != nil {
			log.Debug("server status sample", "err", err)
			return false
		}
		last, lastQueries = v, s.queries
		st.Samples++
		st.ThreadsConnectedMax = max(st.ThreadsConnectedMax, v["threads_connected"])
		st.ThreadsRunningMax = max(st.ThreadsRunningMax, v["threads_running"])
		return true
	}
	tick := time.NewTicker(serverSampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return st
		case <-tick.C:
			sample()
		case <-stop:
			if !sample() {
				log.Warn("no server status at the end of the hold; deltas end at the last sample")
			}
			st.ThreadsCreated = last["threads_created"] - base["threads_created"]
			st.AbortedConnects = last["aborted_connects"] - base["aborted_connects"]
			// Each of our reads counts itself in Questions.
			st.Questions = last["questions"] - start["questions"] - (lastQueries - startQueries)
			return st
		}
	}
}
