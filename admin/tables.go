package admin

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tpproxy/tpproxy/internal/autosize"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// table is an information_schema view the admin port serves: its columns
// and a snapshot of its rows (values as the columns' types: int64,
// float64, string or nil).
type table struct {
	name string
	cols []column
	rows func(a *Server) [][]any
}

// ints lists int64 columns by name.
func ints(names ...string) []column {
	out := make([]column, len(names))
	for i, n := range names {
		out[i] = column{n, colInt}
	}
	return out
}

// tables are the views: MariaDB's THREAD_POOL_* tables with tpproxy's own
// columns after MariaDB's, PROCESSLIST with the thread group and pin
// reasons, the variables and status tables, and tpproxy's own TPPROXY_*.
var tables = []table{
	{
		name: "THREAD_POOL_GROUPS",
		cols: ints("GROUP_ID", "CONNECTIONS", "THREADS", "ACTIVE_THREADS", "STANDBY_THREADS", "QUEUE_LENGTH",
			"HAS_LISTENER", "IS_STALLED", "CAPACITY", "EXTRA", "PINNED", "STALLED_STATEMENTS", "QUEUE_HIGH", "QUEUE_LOW"),
		rows: (*Server).groupRows,
	},
	{
		name: "THREAD_POOL_QUEUES",
		cols: ints("GROUP_ID", "POSITION", "PRIORITY", "CONNECTION_ID", "QUEUEING_TIME_MICROSECONDS"),
		rows: (*Server).queueRows,
	},
	{
		name: "THREAD_POOL_STATS",
		cols: ints("GROUP_ID", "THREAD_CREATIONS", "THREAD_CREATIONS_DUE_TO_STALL", "WAKES", "WAKES_DUE_TO_STALL",
			"THROTTLES", "STALLS", "POLLS_BY_LISTENER", "POLLS_BY_WORKER", "DEQUEUES_BY_LISTENER", "DEQUEUES_BY_WORKER",
			"ADMITTED", "HIGH_PRIORITY_ADMITTED", "QUEUED", "QUEUE_WAIT_MICROSECONDS", "QUEUE_TIMEOUTS", "KICKUPS"),
		rows: (*Server).statsRows,
	},
	{
		name: "THREAD_POOL_WAITS",
		cols: []column{{"REASON", colString}, {"COUNT", colInt}},
		rows: (*Server).waitRows,
	},
	{
		// tpproxy's own: the backend connections by server account
		// (backend.identity passthrough), like PgBouncer's SHOW POOLS.
		name: "TPPROXY_POOLS",
		cols: []column{{"ACCOUNT", colString}, {"CONNECTIONS", colInt}, {"IDLE", colInt}, {"IN_USE", colInt}, {"WAITING", colInt}},
		rows: (*Server).poolRows,
	},
	{
		// tpproxy's own: the pinned-connection budget by client account
		// (slots held, statements waiting for one), and the account's
		// pinned sessions by reason, a row per reason (REASON and
		// SESSIONS NULL for an account with slots but no pinned
		// session: a statement that may pin is running).
		name: "TPPROXY_PINNED",
		cols: []column{{"ACCOUNT", colString}, {"CONNECTIONS", colInt}, {"WAITING", colInt}, {"ACCOUNT_LIMIT", colInt},
			{"REASON", colString}, {"SESSIONS", colInt}},
		rows: (*Server).pinnedRows,
	},
	{
		// tpproxy's own: the automatic pool size (backend.pool_size:
		// auto), a row per change, oldest first (KIND change, the first
		// reason start), then the latest window whatever it decided (KIND
		// latest). Empty for a fixed pool_size.
		name: "TPPROXY_POOL_SIZE",
		cols: []column{{"TIME", colString}, {"KIND", colString}, {"SIZE", colInt}, {"PREVIOUS", colInt},
			{"REASON", colString}, {"IN_USE", colFloat}, {"WAIT_SHARE", colFloat}, {"ROUND_TRIP_US", colFloat},
			{"REFERENCE_US", colFloat}, {"ROUND_TRIPS_PER_SECOND", colFloat}, {"MIN_SIZE", colInt}, {"MAX_SIZE", colInt}},
		rows: (*Server).poolSizeRows,
	},
	{
		// MariaDB's columns that the proxy knows, then tpproxy's: the
		// session's thread group, the backend connection's server thread
		// id, and why the session holds one between statements.
		name: "PROCESSLIST",
		cols: []column{{"ID", colInt}, {"USER", colString}, {"HOST", colString}, {"DB", colString},
			{"COMMAND", colString}, {"TIME", colInt}, {"STATE", colString}, {"INFO", colString}, {"TIME_MS", colFloat},
			{"GROUP_ID", colInt}, {"BACKEND_THREAD", colInt}, {"PINNED", colInt}, {"PIN_REASON", colString}},
		rows: (*Server).processlistRows,
	},
	{
		// tpproxy's own: the prepared statements the proxy knows, shared
		// by the sessions that prepare the same text as the same account
		// in the same schema and settings.
		name: "TPPROXY_STATEMENT_CACHE",
		cols: []column{{"STATEMENT_ID", colInt}, {"USER", colString}, {"SCHEMA_NAME", colString}, {"SQL_TEXT", colString},
			{"PARAMETERS", colInt}, {"COLUMNS", colInt}, {"SESSIONS", colInt}, {"SHARED", colInt}, {"VERIFIED_MS_AGO", colInt}},
		rows: (*Server).statementRows,
	},
	{name: "GLOBAL_VARIABLES", cols: nameValueCols, rows: (*Server).variableTableRows},
	{name: "SESSION_VARIABLES", cols: nameValueCols, rows: (*Server).variableTableRows},
	{name: "GLOBAL_STATUS", cols: nameValueCols, rows: (*Server).statusTableRows},
	{name: "SESSION_STATUS", cols: nameValueCols, rows: (*Server).statusTableRows},
}

// nameValueCols are the columns of information_schema's variables and
// status tables.
var nameValueCols = []column{{"VARIABLE_NAME", colString}, {"VARIABLE_VALUE", colValue}}

// nameValueRows are rows as the variables and status tables have them:
// names in upper case, values as text.
func nameValueRows(list []nameValue) [][]any {
	rows := make([][]any, len(list))
	for i, nv := range list {
		rows[i] = []any{strings.ToUpper(nv.name), textValue(nv.value)}
	}
	return rows
}

func (a *Server) variableTableRows() [][]any { return nameValueRows(a.variables()) }
func (a *Server) statusTableRows() [][]any   { return nameValueRows(a.status()) }

func (a *Server) processlistRows() [][]any {
	queued := a.queuedSessions()
	now := time.Now()
	sessions := a.front.Sessions()
	rows := make([][]any, 0, len(sessions))
	for _, s := range sessions {
		p := a.process(s, queued[s.ID], now)
		rows = append(rows, []any{
			int64(s.ID), s.User, s.Host, nullIfEmpty(s.Schema), p.command, p.secs, p.state, nullIfEmpty(s.Info),
			float64(p.elapsed.Microseconds()) / 1000, int64(p.group), p.backend, b2i(s.Pinned), nullIfEmpty(s.PinReasons),
		})
	}
	return rows
}

// maxStatementText is how much of a statement TPPROXY_STATEMENT_CACHE
// shows.
const maxStatementText = 64 << 10

func (a *Server) statementRows() [][]any {
	now := time.Now()
	list := a.front.CachedStatements()
	rows := make([][]any, 0, len(list))
	for _, cs := range list {
		var ago any
		if !cs.Verified.IsZero() && cs.Verified.UnixNano() > 0 {
			ago = now.Sub(cs.Verified).Milliseconds()
		}
		sqlText := cs.SQL
		if len(sqlText) > maxStatementText {
			sqlText = sqlText[:maxStatementText]
		}
		rows = append(rows, []any{int64(cs.ID), cs.User, nullIfEmpty(cs.Schema), sqlText,
			int64(cs.Params), int64(cs.Columns), int64(cs.Sessions), b2i(cs.Shared), ago})
	}
	return rows
}

func (a *Server) poolRows() [][]any {
	var rows [][]any
	for _, ac := range a.pool.Accounts() {
		rows = append(rows, []any{ac.User, int64(ac.Open), int64(ac.Idle), int64(ac.InUse), int64(ac.Waiting)})
	}
	return rows
}

func (a *Server) poolSizeRows() [][]any {
	if a.cfg.Sizer == nil {
		return nil
	}
	st := a.cfg.Sizer.Status()
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	row := func(kind string, d autosize.Decision) []any {
		return []any{d.At.UTC().Format("2006-01-02 15:04:05.000"), kind, int64(d.Size), int64(d.Previous),
			string(d.Reason), d.InUse, d.WaitShare, us(d.RoundTrip), us(d.Reference), d.Rate,
			int64(st.Config.Min), int64(st.Config.Max)}
	}
	rows := make([][]any, 0, len(st.History)+1)
	for _, d := range st.History {
		rows = append(rows, row("change", d))
	}
	return append(rows, row("latest", st.Last))
}

func (a *Server) pinnedRows() [][]any {
	pst := a.front.PinStats()
	reasons := map[string][]proxy.PinnedCount{}
	for _, pc := range a.front.Metrics().PinnedByAccount {
		reasons[pc.Account] = append(reasons[pc.Account], pc)
	}
	held := map[string]proxy.PinAccount{}
	for _, ac := range pst.Accounts {
		held[ac.Account] = ac
	}
	var rows [][]any
	for _, acct := range slices.Sorted(maps.Keys(mergeKeys(held, reasons))) {
		h := held[acct]
		row := func(reason any, n any) []any {
			return []any{acct, int64(h.Held), int64(h.Waiting), int64(pst.Limits.PerAccount), reason, n}
		}
		if len(reasons[acct]) == 0 {
			rows = append(rows, row(nil, nil))
		}
		for _, pc := range reasons[acct] {
			rows = append(rows, row(pc.Reason, int64(pc.Sessions)))
		}
	}
	return rows
}

// mergeKeys is the union of two maps' keys.
func mergeKeys[A, B any](a map[string]A, b map[string]B) map[string]struct{} {
	out := make(map[string]struct{}, len(a)+len(b))
	for k := range a {
		out[k] = struct{}{}
	}
	for k := range b {
		out[k] = struct{}{}
	}
	return out
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (a *Server) groupRows() [][]any {
	groups := a.sched.Groups()
	conns := make(map[int]int64)
	for _, s := range a.front.Sessions() {
		conns[a.sched.GroupOf(s.ID)]++
	}
	rows := make([][]any, 0, len(groups))
	for _, g := range groups {
		rows = append(rows, []any{
			int64(g.ID), conns[g.ID], int64(g.Active + g.Stalled + g.Pinned), int64(g.Active - g.Waiting), int64(g.Waiting),
			int64(g.QueuedHigh + g.QueuedLow), int64(1), b2i(g.Extra > 0 || g.Stalled > 0),
			int64(g.Capacity), int64(g.Extra), int64(g.Pinned), int64(g.Stalled), int64(g.QueuedHigh), int64(g.QueuedLow),
		})
	}
	return rows
}

func (a *Server) queueRows() [][]any {
	qs := a.sched.Queues()
	rows := make([][]any, 0, len(qs))
	for _, q := range qs {
		rows = append(rows, []any{int64(q.Group), int64(q.Position), 1 - b2i(q.High), int64(q.ConnID), q.Waited.Microseconds()})
	}
	return rows
}

func (a *Server) statsRows() [][]any {
	generic := a.sched.Config().Algorithm == scheduler.Generic
	groups := a.sched.Groups()
	rows := make([][]any, 0, len(groups))
	for _, g := range groups {
		st := g.Stats
		var stallCreations uint64
		if generic {
			stallCreations = st.Stalls
		}
		rows = append(rows, []any{
			int64(g.ID), int64(0), int64(stallCreations), int64(st.Admitted), int64(st.Stalls),
			int64(st.Queued), int64(st.Stalls), int64(0), int64(0), int64(0), int64(st.Queued - min(st.Timeouts, st.Queued)),
			int64(st.Admitted), int64(st.HighAdmitted), int64(st.Queued), st.QueueWait.Microseconds(), int64(st.Timeouts), int64(st.KickUps),
		})
	}
	return rows
}

func (a *Server) waitRows() [][]any {
	st := a.sched.Stats()
	return [][]any{
		{"BACKEND_CONNECTION", int64(a.pool.Stats().Waits)},
		{"QUEUE", int64(st.Waited)},
		{"QUEUE_TIMEOUT", int64(st.Timeouts)},
	}
}

// viewSchema checks that db names information_schema ("" does: the admin
// port has no other database and no USE).
func viewSchema(db string) error {
	if db != "" && !strings.EqualFold(db, "information_schema") {
		return newErr(errBadDB, "Unknown database '%s'", db)
	}
	return nil
}

// showViews answers SHOW TABLES: the views by name.
func showViews(st showTables) (*mysql.Result, error) {
	if err := viewSchema(st.db); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(tables))
	for _, t := range tables {
		if st.like == nil || likeMatch(t.name, *st.like) {
			names = append(names, t.name)
		}
	}
	slices.Sort(names)
	rows := make([][]any, len(names))
	for i, n := range names {
		rows[i] = []any{n}
	}
	return resultSet([]column{{"Tables_in_information_schema", colString}}, rows), nil
}

// showViewColumns answers SHOW COLUMNS and DESCRIBE of a view.
func showViewColumns(st showColumns) (*mysql.Result, error) {
	if err := viewSchema(st.db); err != nil {
		return nil, err
	}
	i := slices.IndexFunc(tables, func(t table) bool { return strings.EqualFold(t.name, st.table) })
	if i < 0 {
		return nil, unknownTable(st.table, "information_schema")
	}
	var rows [][]any
	for _, c := range tables[i].cols {
		if st.like != nil && !likeMatch(c.name, *st.like) {
			continue
		}
		typ := "bigint(21)"
		switch c.typ {
		case colFloat:
			typ = "double"
		case colString, colValue:
			typ = "varchar(4096)"
		}
		rows = append(rows, []any{c.name, typ, "YES", "", nil, ""})
	}
	cols := []column{{"Field", colString}, {"Type", colString}, {"Null", colString}, {"Key", colString},
		{"Default", colString}, {"Extra", colString}}
	return resultSet(cols, rows), nil
}
