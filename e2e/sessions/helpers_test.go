package sessions

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/proxy"
)

// Time bounds. Every client call is bounded so that a proxy bug fails the
// test instead of hanging it.
const (
	opTimeout   = 15 * time.Second // one client round trip
	waitTimeout = 5 * time.Second  // for the proxy or server to reach a state
)

// Server error codes the tests expect.
const (
	erNoSuchTable         = 1146
	erUnknownStmtHandler  = 1243
	erUnknownTableHandler = 1109
	erNoSuchThread        = 1094
	erKillDenied          = 1095
	erLockDeadlock        = 1213
)

// eventually polls cond until it holds or timeout passes, then fails the
// test naming what it waited for.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	eventuallyEvery(t, timeout, 10*time.Millisecond, what, cond)
}

// eventuallyEvery is eventually with a polling interval. InnoDB's
// information_schema tables need one above 100ms: they are refreshed only
// when nobody read them for that long.
func eventuallyEvery(t testing.TB, timeout, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	if !proxytest.Poll(timeout, interval, cond) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// row is one result row as text; NULL is an invalid NullString.
type row []sql.NullString

func (r row) str(i int) string { return r[i].String }
func (r row) null(i int) bool  { return !r[i].Valid }
func (r row) int(i int) int64 {
	n, err := strconv.ParseInt(r[i].String, 10, 64)
	if err != nil || !r[i].Valid {
		panic(fmt.Sprintf("column %d is %v, not an integer", i, r[i]))
	}
	return n
}

func (r row) String() string {
	parts := make([]string, len(r))
	for i, v := range r {
		if v.Valid {
			parts[i] = strconv.Quote(v.String)
		} else {
			parts[i] = "NULL"
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// querier runs one query and returns all its rows (none for statements
// without a result set). Sessions of both client libraries implement it.
type querier interface {
	Rows(q string) ([]row, error)
}

var errNoRows = errors.New("query returned no rows")

func firstRow(c querier, q string) (row, error) {
	rows, err := c.Rows(q)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errNoRows
	}
	return rows[0], nil
}

func mustExec(t testing.TB, c querier, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := c.Rows(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func mustRow(t testing.TB, c querier, q string) row {
	t.Helper()
	r, err := firstRow(c, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return r
}

func mustRows(t testing.TB, c querier, q string) []row {
	t.Helper()
	rows, err := c.Rows(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rows
}

func mustInt(t testing.TB, c querier, q string) int64 {
	t.Helper()
	r := mustRow(t, c, q)
	if r.null(0) {
		t.Fatalf("%s: NULL, want an integer", q)
	}
	n, err := strconv.ParseInt(r.str(0), 10, 64)
	if err != nil {
		t.Fatalf("%s: %q is not an integer", q, r.str(0))
	}
	return n
}

// wantInt fails the test unless q returns want.
func wantInt(t testing.TB, c querier, q string, want int64) {
	t.Helper()
	if got := mustInt(t, c, q); got != want {
		t.Fatalf("%s = %d, want %d", q, got, want)
	}
}

// wantErr fails the test unless q fails with the server error code.
func wantErr(t testing.TB, c querier, q string, code uint16) {
	t.Helper()
	_, err := c.Rows(q)
	if got := errCode(err); got != code {
		t.Fatalf("%s: error %v (code %d), want code %d", q, err, got, code)
	}
}

// errCode is the MySQL error number of err from either client library, 0
// for nil or an error that is not a server error.
func errCode(err error) uint16 {
	var me *mysqldrv.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	var ge *gomysql.MyError
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// session is one client session over go-sql-driver: a handle of its own
// holding exactly one connection, so that closing it disconnects.
type session struct {
	db   *sql.DB
	conn *sql.Conn
	// ID is CONNECTION_ID() as the client sees it: the proxy's session id
	// through the proxy, the server thread id directly.
	ID   uint32
	once sync.Once
}

// openSession connects one session; it is closed when t ends.
func openSession(t testing.TB, dsn string) *session {
	t.Helper()
	s, err := dialSession(dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// dialSession connects one session and learns its connection id.
func dialSession(dsn string) (*session, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	s := &session{db: db, conn: conn}
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&s.ID); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close disconnects the session (COM_QUIT, then the socket closes).
func (s *session) Close() {
	s.once.Do(func() {
		_ = s.conn.Close()
		_ = s.db.Close()
	})
}

// Exec runs a statement and returns its OK result.
func (s *session) Exec(q string, args ...any) (sql.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return s.conn.ExecContext(ctx, q, args...)
}

// Rows runs q and reads every row as text.
func (s *session) Rows(q string) ([]row, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return s.RowsContext(ctx, q)
}

// RowsContext is Rows bounded by ctx.
func (s *session) RowsContext(ctx context.Context, q string) ([]row, error) {
	rs, err := s.conn.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return nil, err
	}
	var out []row
	for rs.Next() {
		r, err := scanRow(rs, len(cols))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// scanRow scans the current row of rs, of n columns.
func scanRow(rs *sql.Rows, n int) (row, error) {
	r := make(row, n)
	dest := make([]any, n)
	for i := range r {
		dest[i] = &r[i]
	}
	return r, rs.Scan(dest...)
}

// rawSession is one client session over go-mysql's client, for what
// go-sql-driver cannot do: COM_RESET_CONNECTION and dropping the socket
// without COM_QUIT.
type rawSession struct {
	c  *client.Conn
	ID uint32
}

// openRaw connects a go-mysql client session, closed when t ends.
func openRaw(t testing.TB, addr, user, password, db string) *rawSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	c, err := client.ConnectWithContext(ctx, addr, user, password, db, opTimeout, func(c *client.Conn) error {
		c.ReadTimeout = opTimeout
		c.WriteTimeout = opTimeout
		return nil
	})
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	r := &rawSession{c: c}
	t.Cleanup(func() { _ = r.c.Close() })
	id := mustInt(t, r, "SELECT CONNECTION_ID()")
	r.ID = uint32(id)
	return r
}

// Rows runs q and reads every row as text.
func (r *rawSession) Rows(q string) ([]row, error) {
	res, err := r.c.Execute(q)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	if res.Resultset == nil {
		return nil, nil
	}
	out := make([]row, 0, len(res.Values))
	for _, vals := range res.Values {
		rr := make(row, len(vals))
		for j := range vals {
			rr[j] = fieldText(&vals[j])
		}
		out = append(out, rr)
	}
	return out, nil
}

func fieldText(v *gomysql.FieldValue) sql.NullString {
	switch v.Type {
	case gomysql.FieldValueTypeNull:
		return sql.NullString{}
	case gomysql.FieldValueTypeString:
		return sql.NullString{String: string(v.AsString()), Valid: true}
	}
	return sql.NullString{String: v.String(), Valid: true}
}

// Reset sends COM_RESET_CONNECTION and reads the OK.
func (r *rawSession) Reset() error {
	r.c.ResetSequence()
	if err := r.c.WritePacket([]byte{1, 0, 0, 0, 0x1f}); err != nil {
		return err
	}
	_, err := r.c.ReadOKPacket()
	return err
}

// Abort drops the TCP connection without COM_QUIT; the peer sees a reset.
func (r *rawSession) Abort() {
	if tc, ok := r.c.Conn.Conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = r.c.Conn.Conn.Close()
}

// sessionInfo finds a proxy session by id.
func sessionInfo(px *proxytest.Proxy, id uint32) (proxy.SessionInfo, bool) {
	for _, in := range px.Server.Sessions() {
		if in.ID == id {
			return in, true
		}
	}
	return proxy.SessionInfo{}, false
}

// hasReason reports whether a PinReasons list names reason.
func hasReason(list, reason string) bool {
	return slices.Contains(strings.Split(list, ","), reason)
}

// waitPinned waits until session id is pinned with reason (the published
// view trails the client's answer by a moment) and returns its info.
func waitPinned(t testing.TB, px *proxytest.Proxy, id uint32, reason string) proxy.SessionInfo {
	t.Helper()
	return waitInfo(t, px, id, "pinned for "+reason, func(in proxy.SessionInfo) bool {
		return in.Pinned && hasReason(in.PinReasons, reason) && in.BackendThread != 0
	})
}

// waitUnpinned waits until session id holds no backend between statements.
func waitUnpinned(t testing.TB, px *proxytest.Proxy, id uint32) {
	t.Helper()
	waitInfoWithin(t, px, id, waitTimeout, "unpinned", func(in proxy.SessionInfo) bool {
		return !in.Pinned && in.PinReasons == "" && !in.Executing
	})
}

// waitGone waits until the proxy has torn session id down.
func waitGone(t testing.TB, px *proxytest.Proxy, id uint32) {
	t.Helper()
	eventually(t, waitTimeout, fmt.Sprintf("session %d gone from the proxy", id), func() bool {
		_, ok := sessionInfo(px, id)
		return !ok
	})
}

// waitExecuting waits until session id runs a statement on a backend and
// returns the backend thread.
func waitExecuting(t testing.TB, px *proxytest.Proxy, id uint32) uint32 {
	t.Helper()
	return waitInfo(t, px, id, "executing", func(in proxy.SessionInfo) bool {
		return in.Executing && in.BackendThread != 0
	}).BackendThread
}

// waitInfo waits until the proxy shows session id in a state cond accepts,
// and fails the test with the last state seen otherwise.
func waitInfo(t testing.TB, px *proxytest.Proxy, id uint32, what string, cond func(proxy.SessionInfo) bool) proxy.SessionInfo {
	t.Helper()
	return waitInfoWithin(t, px, id, waitTimeout, what, cond)
}

// notPinnedAfter is how long a test gives the proxy to publish that a
// session is unpinned when the test expects it already is: the published
// view trails the client's answer by microseconds.
const notPinnedAfter = time.Second

// wantUnpinned fails the test unless session id is, or very soon is, not
// pinned.
func wantUnpinned(t testing.TB, px *proxytest.Proxy, id uint32) {
	t.Helper()
	waitInfoWithin(t, px, id, notPinnedAfter, "unpinned", func(in proxy.SessionInfo) bool {
		return !in.Pinned && in.PinReasons == "" && !in.Executing
	})
}

// waitInfoWithin is waitInfo with its own time bound.
func waitInfoWithin(t testing.TB, px *proxytest.Proxy, id uint32, timeout time.Duration, what string, cond func(proxy.SessionInfo) bool) proxy.SessionInfo {
	t.Helper()
	var in proxy.SessionInfo
	var ok bool
	if !proxytest.Poll(timeout, 10*time.Millisecond, func() bool {
		in, ok = sessionInfo(px, id)
		return ok && cond(in)
	}) {
		if !ok {
			t.Fatalf("waiting for session %d %s: the proxy has no such session", id, what)
		}
		t.Fatalf("timed out after %s waiting for session %d %s; last seen %+v", timeout, id, what, in)
	}
	return in
}

// waitPoolIdle waits until every backend connection is back in the pool.
func waitPoolIdle(t testing.TB, px *proxytest.Proxy) {
	t.Helper()
	eventually(t, waitTimeout, "all backend connections idle", func() bool {
		st := px.Pool.Stats()
		return st.InUse == 0 && st.Idle == st.Size
	})
}

// rootExec runs statements as root on the server.
func rootExec(t testing.TB, root *sql.DB, stmts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	for _, q := range stmts {
		if _, err := root.ExecContext(ctx, q); err != nil {
			t.Fatalf("root: %s: %v", q, err)
		}
	}
}

func rootInt(t testing.TB, root *sql.DB, q string, args ...any) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var n sql.NullInt64
	if err := root.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		t.Fatalf("root: %s: %v", q, err)
	}
	return n.Int64
}

// innodbPoll is how often tests read InnoDB's information_schema tables,
// which InnoDB refreshes only after 100ms without readers.
const innodbPoll = 150 * time.Millisecond

// runningLike counts server threads of the service account whose current
// statement text matches the LIKE pattern.
func runningLike(t testing.TB, root *sql.DB, pattern string) int64 {
	t.Helper()
	return rootInt(t, root, `SELECT COUNT(*) FROM information_schema.PROCESSLIST
		WHERE USER = ? AND ID <> CONNECTION_ID() AND INFO LIKE ?`, proxytest.User, pattern)
}

// killLeftovers makes sure no statement matching pattern survives the
// test: a proxy that failed to stop one would otherwise keep the proxy's
// shutdown waiting for it. Register it after StartProxy so it runs first.
func killLeftovers(t testing.TB, root *sql.DB, pattern string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		rows, err := root.QueryContext(ctx, `SELECT ID FROM information_schema.PROCESSLIST
			WHERE USER = ? AND ID <> CONNECTION_ID() AND INFO LIKE ?`, proxytest.User, pattern)
		if err != nil {
			t.Logf("leftover check: %v", err)
			return
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if rows.Scan(&id) == nil {
				ids = append(ids, id)
			}
		}
		_ = rows.Close()
		for _, id := range ids {
			t.Logf("killing leftover server thread %d running %q", id, pattern)
			_, _ = root.ExecContext(ctx, "KILL QUERY "+strconv.FormatInt(id, 10))
		}
	})
}

// startNoise runs n extra sessions through px that keep querying table
// until the returned stop is called; stop reports their first error.
func startNoise(t testing.TB, px *proxytest.Proxy, n int, q string) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		s := openSession(t, px.DSN())
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := s.Rows(q); err != nil {
					errs <- fmt.Errorf("noise session %d: %s: %w", s.ID, q, err)
					return
				}
			}
		})
	}
	var once sync.Once
	return func() {
		t.Helper()
		once.Do(func() {
			close(done)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// freshTable (re)creates a table in the test database as root and drops it
// when the test ends.
func freshTable(t testing.TB, root *sql.DB, name, def string, inserts ...string) {
	t.Helper()
	rootExec(t, root, "DROP TABLE IF EXISTS "+proxytest.DB+"."+name,
		"CREATE TABLE "+proxytest.DB+"."+name+" "+def)
	for _, ins := range inserts {
		rootExec(t, root, "INSERT INTO "+proxytest.DB+"."+name+" "+ins)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		_, _ = root.ExecContext(ctx, "DROP TABLE IF EXISTS "+proxytest.DB+"."+name)
	})
}

// reportFirst reports the errors of cancelled workers: the ones that are
// not merely the cancellation, or the cancellation if that is all.
func reportFirst(t testing.TB, errs <-chan error) {
	t.Helper()
	var cancelled []error
	for err := range errs {
		if errors.Is(err, context.Canceled) {
			cancelled = append(cancelled, err)
			continue
		}
		t.Error(err)
	}
	if !t.Failed() && len(cancelled) > 0 {
		t.Error(cancelled[0])
	}
}

// threadMarks numbers the markers threadExpr puts in statements.
var threadMarks atomic.Uint64

// threadExpr returns an SQL expression whose value is the server thread the
// statement runs on. CONNECTION_ID() cannot tell: through tpproxy it is the
// session's own id in every form. The statement finds itself in the
// processlist by a marker unique to this call.
func threadExpr() string {
	return fmt.Sprintf("(SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE '%%tpp_thread_%d_%%' LIMIT 1)", threadMarks.Add(1))
}

// backendThread returns the server thread c's next statement runs on.
func backendThread(t testing.TB, c querier) int64 {
	t.Helper()
	return mustInt(t, c, "SELECT "+threadExpr()+" AS th")
}
