package admin

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tpproxy/tpproxy/scheduler"
)

// table is an information_schema table the admin port serves.
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

// tables are MariaDB's THREAD_POOL_* tables, with tpproxy's own columns
// after MariaDB's.
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
}

func (a *Server) poolRows() [][]any {
	var rows [][]any
	for _, ac := range a.pool.Accounts() {
		rows = append(rows, []any{ac.User, int64(ac.Open), int64(ac.Idle), int64(ac.InUse), int64(ac.Waiting)})
	}
	return rows
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

// lookupTable finds a table by name, in any case.
func lookupTable(name string) *table {
	for i := range tables {
		if strings.EqualFold(tables[i].name, name) {
			return &tables[i]
		}
	}
	return nil
}

// colIndex finds a column by name, in any case; -1 if there is none.
func colIndex(cols []column, name string) int {
	return slices.IndexFunc(cols, func(c column) bool { return strings.EqualFold(c.name, name) })
}

// selectTable answers SELECT ... FROM information_schema.table.
func (a *Server) selectTable(st selectTable) (*mysql.Result, error) {
	if st.schema != "" && !strings.EqualFold(st.schema, "information_schema") {
		return nil, unknownTable(st.table, st.schema)
	}
	t := lookupTable(st.table)
	if t == nil {
		return nil, unknownTable(st.table, "information_schema")
	}
	// Resolve every name before reading anything.
	proj := make([]int, 0, len(t.cols))
	var cols []column
	if st.star {
		for i, c := range t.cols {
			proj = append(proj, i)
			cols = append(cols, c)
		}
	}
	for _, c := range st.cols {
		i := colIndex(t.cols, c.name)
		if i < 0 {
			return nil, unknownColumn(c.name, "field list")
		}
		proj = append(proj, i)
		cols = append(cols, column{c.header, t.cols[i].typ})
	}
	where := make([]int, len(st.where))
	for k, c := range st.where {
		if where[k] = colIndex(t.cols, c.col); where[k] < 0 {
			return nil, unknownColumn(c.col, "where clause")
		}
	}
	order := make([]int, len(st.order))
	for k, o := range st.order {
		switch {
		case o.col == "":
			if o.pos < 1 || o.pos > len(proj) {
				return nil, unknownColumn(strconv.Itoa(o.pos), "order clause")
			}
			order[k] = proj[o.pos-1]
		default:
			// An alias of the select list first, then a column of the table.
			i := slices.IndexFunc(st.cols, func(c selectCol) bool { return c.header != c.name && strings.EqualFold(c.header, o.col) })
			if i >= 0 {
				order[k] = proj[len(proj)-len(st.cols)+i]
			} else if order[k] = colIndex(t.cols, o.col); order[k] < 0 {
				return nil, unknownColumn(o.col, "order clause")
			}
		}
	}

	var rows [][]any
	for _, row := range t.rows(a) {
		ok := true
		for k, c := range st.where {
			if !c.matches(row[where[k]]) {
				ok = false
				break
			}
		}
		if ok {
			rows = append(rows, row)
		}
	}
	if len(order) > 0 {
		slices.SortStableFunc(rows, func(x, y []any) int {
			for k, i := range order {
				if c := compareValues(x[i], y[i]); c != 0 {
					if st.order[k].desc {
						return -c
					}
					return c
				}
			}
			return 0
		})
	}
	rows = st.limit.apply(rows)
	out := make([][]any, len(rows))
	for r, row := range rows {
		p := make([]any, len(proj))
		for k, i := range proj {
			p[k] = row[i]
		}
		out[r] = p
	}
	return resultSet(cols, out), nil
}

// apply cuts rows to the limit.
func (l limit) apply(rows [][]any) [][]any {
	if l.offset >= int64(len(rows)) {
		return nil
	}
	rows = rows[l.offset:]
	if l.count >= 0 && l.count < int64(len(rows)) {
		rows = rows[:l.count]
	}
	return rows
}

// compareValues orders NULL first, then numbers, then strings ignoring case.
func compareValues(x, y any) int {
	switch x := x.(type) {
	case nil:
		if y == nil {
			return 0
		}
		return -1
	case int64:
		switch y := y.(type) {
		case nil:
			return 1
		case int64:
			return cmp.Compare(x, y)
		}
		return -1
	case string:
		if y, ok := y.(string); ok {
			return strings.Compare(strings.ToLower(x), strings.ToLower(y))
		}
		return 1
	}
	return 0
}

// matches evaluates the condition against a value. Numbers compare as
// numbers, a string against a number as the number MySQL would read from
// it, strings ignoring case; NULL matches nothing.
func (c condition) matches(v any) bool {
	if v == nil {
		return false
	}
	if c.op == "like" {
		s, ok := v.(string)
		if !ok {
			s = strconv.FormatInt(v.(int64), 10)
		}
		return likeMatch(s, c.value.text)
	}
	var r int
	switch v := v.(type) {
	case int64:
		r = cmp.Compare(float64(v), leadingNumber(c.value.text))
		if n, err := strconv.ParseInt(c.value.text, 10, 64); err == nil {
			r = cmp.Compare(v, n)
		}
	case string:
		if c.value.kind == tokNumber {
			r = cmp.Compare(leadingNumber(v), leadingNumber(c.value.text))
		} else {
			r = strings.Compare(strings.ToLower(v), strings.ToLower(c.value.text))
		}
	}
	switch c.op {
	case "=":
		return r == 0
	case "!=":
		return r != 0
	case "<":
		return r < 0
	case "<=":
		return r <= 0
	case ">":
		return r > 0
	case ">=":
		return r >= 0
	}
	return false
}

// leadingNumber reads the number at the start of s as MySQL converts a
// string to a number: "12abc" is 12, "abc" is 0.
func leadingNumber(s string) float64 {
	s = strings.TrimLeft(s, " \t\n\r")
	end := 0
	if end < len(s) && (s[end] == '-' || s[end] == '+') {
		end++
	}
	end = scanNumber(s, end)
	f, err := strconv.ParseFloat(s[:end], 64)
	if err != nil {
		return 0
	}
	return f
}
