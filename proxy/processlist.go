package proxy

import (
	"slices"
	"time"
)

// SessionInfo describes a client session, as SHOW PROCESSLIST shows it.
type SessionInfo struct {
	ID     uint32
	User   string
	Host   string
	Schema string
	// Executing is set while a statement runs on a backend; Since is when
	// it started, Command its command (Query, Execute, Fetch, Field List,
	// ...) and Info the start of its SQL text (at most 100 bytes).
	Executing bool
	Since     time.Time
	Command   string
	Info      string
	// BackendThread is the server thread id of the connection running the
	// statement or pinned to the session; 0 when there is none.
	BackendThread uint32
	// Pinned reports a backend connection held between statements, and
	// PinReasons why ("transaction,user_variable").
	Pinned     bool
	PinReasons string
}

// Sessions returns a snapshot of the client sessions ordered by id.
func (srv *Server) Sessions() []SessionInfo {
	srv.mu.Lock()
	list := make([]*Session, 0, len(srv.sessions))
	for _, s := range srv.sessions {
		list = append(list, s)
	}
	srv.mu.Unlock()
	out := make([]SessionInfo, 0, len(list))
	for _, s := range list {
		out = append(out, s.info(s.id, s.remote))
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return int(a.ID) - int(b.ID) })
	return out
}

// info snapshots session id of client host. Fields owned by the session
// goroutine are copied under mu when they change (see publish).
func (s *inflight) info(id uint32, host string) SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := SessionInfo{ID: id, User: s.pubUser, Host: host, Schema: s.pubSchema, Pinned: s.pubPinned, BackendThread: s.pubThread}
	if s.pubPinned {
		in.PinReasons = s.pubPins.String()
	}
	if s.cur != nil {
		in.Executing = true
		in.Since = s.curSince.Time()
		in.BackendThread = s.cur.ThreadID()
		in.Command = commandName(s.curCmd)
		in.Info = string(s.curInfo[:s.curInfoLen])
	}
	return in
}

// infoLen is how much of a statement's text the processlist shows.
const infoLen = 100

// inflight.curInfoLen is a uint8: infoLen must fit it.
const _ = uint8(infoLen)

// commandName names a command as SHOW PROCESSLIST does.
func commandName(cmd byte) string {
	switch cmd {
	case comQuery:
		return "Query"
	case comStmtExecute, comStmtBulkExecute:
		return "Execute"
	case comStmtFetch:
		return "Fetch"
	case comStmtPrepare:
		return "Prepare"
	case comFieldList:
		return "Field List"
	case comStatistics:
		return "Statistics"
	case comRefresh:
		return "Refresh"
	case comProcessInfo:
		return "Processlist"
	case comDebug:
		return "Debug"
	}
	return "Sleep"
}

// publish copies the session goroutine's view (its user and m) for
// Sessions.
func (s *inflight) publish(user string, m *mirror) {
	s.mu.Lock()
	s.pubPins = m.pins
	s.pubUser = user
	s.pubAccount = m.state.Account
	s.pubSchema = m.state.Schema
	s.pubPinned = m.pinned != nil
	s.pubThread = 0
	if m.pinned != nil {
		s.pubThread = m.pinned.ThreadID()
	}
	s.mu.Unlock()
}
