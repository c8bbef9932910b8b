package admin

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"modernc.org/sqlite"
)

// The admin views are answered by SQLite (modernc.org/sqlite, a
// translation of its C source to Go: no cgo). Each view is a table of an
// in-memory database attached as information_schema, so that
// information_schema.X and a bare X both name it. A query is compiled
// first; then the views it names are filled from the components'
// snapshots, in one transaction, and it runs. A query therefore sees one
// snapshot per view, taken right before it. SQLite's authorizer keeps a
// query to reading the views: no writes, no ATTACH (which could create
// files), no PRAGMA.

// Limits of one admin query.
const (
	// queryTimeout interrupts a query that runs longer (a runaway
	// recursive CTE or a cross join of large views).
	queryTimeout = 10 * time.Second
	// maxResultBytes caps the rows a query may return.
	maxResultBytes = 64 << 20
	// heapLimit caps the memory SQLite may allocate, for all its work.
	heapLimit = 256 << 20
	// maxValueBytes caps one string or blob (SQLITE_LIMIT_LENGTH): a
	// zeroblob(1e9) costs SQLite nothing but would become a 1 GB Go
	// value when read.
	maxValueBytes = 32 << 20
)

// sqliteLimitLength is SQLite's SQLITE_LIMIT_LENGTH.
const sqliteLimitLength = 0

// erStatementTimeout is MariaDB's ER_STATEMENT_TIMEOUT (max_statement_time).
const erStatementTimeout = 1969

// registerOnce registers the SQL functions the engine adds to SQLite's.
var registerOnce sync.Once

func registerFunctions() {
	// X REGEXP Y calls regexp(Y, X). MariaDB's REGEXP ignores case under
	// the default collation.
	sqlite.MustRegisterDeterministicScalarFunction("regexp", 2, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		if args[0] == nil || args[1] == nil {
			return nil, nil
		}
		re, err := regexp.Compile("(?i)" + fmt.Sprint(args[0]))
		if err != nil {
			return nil, fmt.Errorf("regexp: %w", err)
		}
		return b2i(re.MatchString(fmt.Sprint(args[1]))), nil
	})
}

// engine is one in-memory SQLite database with the views as tables. Its
// connection serves one query at a time.
type engine struct {
	views []table
	// timeout is queryTimeout, shorter in tests.
	timeout time.Duration

	mu   sync.Mutex
	db   *sql.DB
	conn *sql.Conn
	// Guarded by mu, read by the authorizer, which runs on the goroutine
	// preparing a statement.
	user   bool   // the statement being prepared is a client's
	denied string // the first table it may not read
	// fill are the statements that refill a view, by lower-case name.
	fill map[string]*filler
}

// newEngine opens the database and creates the views' tables.
func newEngine(views []table) (*engine, error) {
	registerOnce.Do(registerFunctions)
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	e := &engine{views: views, timeout: queryTimeout, db: db, conn: conn, fill: make(map[string]*filler)}
	if err := e.setup(ctx); err != nil {
		e.close()
		return nil, fmt.Errorf("admin: SQL engine: %w", err)
	}
	return e, nil
}

func (e *engine) setup(ctx context.Context) error {
	stmts := []string{
		"ATTACH DATABASE ':memory:' AS information_schema",
		fmt.Sprintf("PRAGMA hard_heap_limit = %d", heapLimit),
	}
	for _, v := range e.views {
		var cols []string
		for _, c := range v.cols {
			typ := "INTEGER"
			switch c.typ {
			case colString:
				// Compared and sorted ignoring case, as under MariaDB's
				// default collation.
				typ = "TEXT COLLATE NOCASE"
			case colFloat:
				typ = "REAL"
			case colValue:
				// NUMERIC stores '12' as 12 and compares it with 5 or '12'
				// as a number; 'ON' stays text.
				typ = "NUMERIC COLLATE NOCASE"
			}
			cols = append(cols, fmt.Sprintf("%q %s", c.name, typ))
		}
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE information_schema.%q (%s)", v.name, strings.Join(cols, ", ")))
	}
	for _, s := range stmts {
		if _, err := e.conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	for _, v := range e.views {
		f := &filler{}
		row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(v.cols)), ", ") + ")"
		for k, n := range []int{1, fillBatch} {
			rows := strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
			st, err := e.conn.PrepareContext(ctx, fmt.Sprintf("INSERT INTO information_schema.%q VALUES %s", v.name, rows))
			if err != nil {
				return err
			}
			f.stmts[k] = st
		}
		e.fill[strings.ToLower(v.name)] = f
	}
	if _, err := sqlite.Limit(e.conn, sqliteLimitLength, maxValueBytes); err != nil {
		return err
	}
	return e.conn.Raw(func(dc any) error {
		r, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("the driver has no authorizer")
		}
		return r.RegisterAuthorizer(e.authorize)
	})
}

func (e *engine) close() {
	for _, f := range e.fill {
		for _, st := range f.stmts {
			if st != nil {
				_ = st.Close()
			}
		}
	}
	if e.conn != nil {
		_ = e.conn.Close()
	}
	_ = e.db.Close()
}

// authorize is SQLite's authorizer. The engine's own statements may do
// anything; a client's may select, read the views, call functions and
// recurse.
func (e *engine) authorize(action sqlite.AuthorizerActionCode, arg1, _, db, _ string) sqlite.AuthorizerReturnCode {
	if !e.user {
		return sqlite.AuthorizerOK
	}
	switch action {
	case sqlite.AuthSelect, sqlite.AuthFunction, sqlite.AuthRecursive:
		return sqlite.AuthorizerOK
	case sqlite.AuthRead:
		// SQLite names the database, except when a query reads no column
		// of the table (SELECT COUNT(*) FROM t): then it is "". Which
		// views a query reads is known from its words (viewsOf): SQLite
		// does not report every table here (the left table of a JOIN
		// USING may go unnamed).
		if db == "" || strings.EqualFold(db, "information_schema") && e.fill[strings.ToLower(arg1)] != nil {
			return sqlite.AuthorizerOK
		}
		if e.denied == "" {
			e.denied = db + "." + arg1
		}
	}
	return sqlite.AuthorizerDeny
}

// query runs a translated SELECT: rows fills the views it reads.
func (e *engine) query(ctx context.Context, q string, tr translation, rows func(*table) [][]any) (*mysql.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	e.mu.Lock()
	defer e.mu.Unlock()

	e.user, e.denied = true, ""
	st, err := e.conn.PrepareContext(ctx, tr.sql)
	e.user = false
	if err != nil {
		return nil, e.sqlError(ctx, q, tr, err)
	}
	defer st.Close()
	if err := e.refresh(ctx, e.viewsOf(tr), rows); err != nil {
		return nil, fmt.Errorf("admin: filling the views: %w", err)
	}
	rs, err := st.QueryContext(ctx)
	if err != nil {
		return nil, e.sqlError(ctx, q, tr, err)
	}
	defer rs.Close()
	res, err := readRows(rs, tr.headers)
	if err != nil {
		return nil, e.sqlError(ctx, q, tr, err)
	}
	return res, nil
}

// fillBatch is how many rows one INSERT of a refill writes: one
// statement per row costs most of a refill.
const fillBatch = 64

// filler inserts a view's rows: one row and fillBatch rows at a time.
type filler struct {
	stmts [2]*sql.Stmt
	args  []any
}

func (f *filler) insert(ctx context.Context, rows [][]any) error {
	for len(rows) >= fillBatch {
		f.args = f.args[:0]
		for _, r := range rows[:fillBatch] {
			f.args = append(f.args, r...)
		}
		if _, err := f.stmts[1].ExecContext(ctx, f.args...); err != nil {
			return err
		}
		rows = rows[fillBatch:]
	}
	for _, r := range rows {
		if _, err := f.stmts[0].ExecContext(ctx, r...); err != nil {
			return err
		}
	}
	return nil
}

// viewsOf are the views a statement names, by lower-case name: any
// word of it that is a view's name (a column alias that is one only
// costs a refill).
func (e *engine) viewsOf(tr translation) map[string]bool {
	names := make(map[string]bool)
	for _, t := range tr.toks {
		name := strings.ToLower(strings.Trim(t.text, "`"))
		if e.fill[name] != nil {
			names[name] = true
		}
	}
	return names
}

// refresh fills the views named.
func (e *engine) refresh(ctx context.Context, names map[string]bool, rows func(*table) [][]any) error {
	if len(names) == 0 {
		return nil
	}
	if _, err := e.conn.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = e.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	for i := range e.views {
		v := &e.views[i]
		name := strings.ToLower(v.name)
		if !names[name] {
			continue
		}
		if _, err := e.conn.ExecContext(ctx, fmt.Sprintf("DELETE FROM information_schema.%q", v.name)); err != nil {
			return err
		}
		if err := e.fill[name].insert(ctx, rows(v)); err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
	}
	if _, err := e.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	committed = true
	return nil
}

// readRows reads a result into a result set: the column types are the
// views' where a column is one, else what the values are.
func readRows(rs *sql.Rows, headers []string) (*mysql.Result, error) {
	names, err := rs.Columns()
	if err != nil {
		return nil, err
	}
	types, err := rs.ColumnTypes()
	if err != nil {
		return nil, err
	}
	cols := make([]column, len(names))
	declared := make([]bool, len(names))
	for i, n := range names {
		cols[i].name = n
		if len(headers) == len(names) && headers[i] != "" {
			cols[i].name = headers[i]
		}
		switch strings.ToUpper(types[i].DatabaseTypeName()) {
		case "INTEGER":
			cols[i].typ, declared[i] = colInt, true
		case "TEXT":
			cols[i].typ, declared[i] = colString, true
		case "REAL":
			cols[i].typ, declared[i] = colFloat, true
		}
	}
	// seen marks a column whose type has been read from a value.
	seen := make([]bool, len(names))
	var out [][]any
	size := 0
	for rs.Next() {
		row := make([]any, len(names))
		ptrs := make([]any, len(names))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range row {
			switch x := v.(type) {
			case []byte:
				row[i] = string(x)
				size += len(x)
			case string:
				size += len(x)
			case float64:
				if math.IsInf(x, 0) || math.IsNaN(x) {
					row[i] = nil // MariaDB has neither
				}
			case bool:
				row[i] = b2i(x)
			case time.Time:
				row[i] = x.Format(time.DateTime)
			}
			size += 8
			if !declared[i] && row[i] != nil {
				cols[i].typ, seen[i] = widen(cols[i].typ, seen[i], row[i]), true
			}
		}
		if size > maxResultBytes {
			return nil, newErr(errTooBig, "tpproxy admin: the result is over %d MB; add a WHERE or a LIMIT", maxResultBytes>>20)
		}
		out = append(out, row)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	for i := range cols {
		if !declared[i] && !seen[i] {
			cols[i].typ = colString // only NULLs, or no rows
		}
	}
	return resultSet(cols, out), nil
}

// widen is the type of a column that holds values of type t so far and
// now v: integers, then reals if one is real, then strings if one is.
func widen(t colType, seen bool, v any) colType {
	var vt colType
	switch v.(type) {
	case int64:
		vt = colInt
	case float64:
		vt = colFloat
	default:
		vt = colString
	}
	if !seen {
		return vt
	}
	return max(t, vt)
}

// sqliteMessage is SQLite's message of err without the driver's prefix
// and result code.
func sqliteMessage(err error) (string, bool) {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return "", false
	}
	msg := se.Error()
	if i := strings.LastIndex(msg, " ("); i > 0 && strings.HasSuffix(msg, ")") {
		msg = msg[:i]
	}
	if s, ok := strings.CutPrefix(msg, "SQL logic error: "); ok {
		msg = s
	}
	return msg, true
}

// sqlError turns an error of SQLite into MariaDB's for the same mistake.
func (e *engine) sqlError(ctx context.Context, q string, tr translation, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return newErr(errTimeout, "Query execution was interrupted (max_statement_time exceeded)")
	}
	if errors.Is(err, context.Canceled) {
		return newErr(errInterrupted, "Query execution was interrupted")
	}
	var st *stmtError
	if errors.As(err, &st) {
		return err
	}
	msg, ok := sqliteMessage(err)
	if !ok {
		return err
	}
	if e.denied != "" || strings.Contains(msg, "not authorized") {
		if schema, name, ok := strings.Cut(e.denied, "."); ok {
			return noSuchTable(schema, name)
		}
		return newErr(errUnsupported, "tpproxy admin: only SELECT over the admin views is allowed")
	}
	switch {
	case strings.HasPrefix(msg, "no such table: "):
		name := strings.TrimPrefix(msg, "no such table: ")
		schema, table, ok := strings.Cut(name, ".")
		if !ok {
			schema, table = "information_schema", name
		} else if strings.EqualFold(schema, "information_schema") {
			return unknownTable(table, schema)
		}
		return noSuchTable(schema, table)
	case strings.HasPrefix(msg, "no such column: "):
		name := strings.TrimPrefix(msg, "no such column: ")
		return unknownColumn(name, clauseOf(q, name))
	case strings.HasPrefix(msg, "ambiguous column name: "):
		name := strings.TrimPrefix(msg, "ambiguous column name: ")
		return newErr(errAmbiguous, "Column '%s' in %s is ambiguous", name, clauseOf(q, name))
	case strings.HasPrefix(msg, "near \""):
		return syntaxError(q, e.syntaxPos(ctx, tr))
	case strings.HasPrefix(msg, "unrecognized token: \""):
		near := strings.TrimSuffix(strings.TrimPrefix(msg, "unrecognized token: \""), "\"")
		return syntaxError(q, tr.origin(near))
	case msg == "incomplete input":
		return syntaxError(q, len(q))
	case strings.Contains(msg, "BY term out of range"):
		// "2nd ORDER BY term out of range - should be between 1 and 1"
		n, _ := strconv.Atoi(strings.TrimRight(msg[:strings.IndexByte(msg+" ", ' ')], "stndrdth"))
		clause := "order clause"
		if strings.Contains(msg, "GROUP BY") {
			clause = "group statement"
		}
		return unknownColumn(byTerm(q, clause, n), clause)
	case strings.HasPrefix(msg, "no such function: "):
		return newErr(errNoFunction, "FUNCTION information_schema.%s does not exist", strings.TrimPrefix(msg, "no such function: "))
	case strings.HasPrefix(msg, "wrong number of arguments to function "):
		fn := strings.TrimSuffix(strings.TrimPrefix(msg, "wrong number of arguments to function "), "()")
		return newErr(errParamCount, "Incorrect parameter count in the call to native function '%s'", fn)
	case strings.HasPrefix(msg, "misuse of aggregate"), strings.HasPrefix(msg, "misuse of window function"):
		return newErr(errGroupFunc, "Invalid use of group function")
	case strings.HasPrefix(msg, "sub-select returns"), strings.HasPrefix(msg, "row value misused"):
		return newErr(errOperand, "Operand should contain 1 column(s)")
	case strings.Contains(msg, "do not have the same number of result columns"):
		return newErr(errColumnCount, "The used SELECT statements have a different number of columns")
	case msg == "interrupted":
		return newErr(errTimeout, "Query execution was interrupted (max_statement_time exceeded)")
	case strings.Contains(msg, "string or blob too big"):
		return newErr(errTooBig, "tpproxy admin: a value over %d MB", maxValueBytes>>20)
	case strings.Contains(msg, "out of memory"):
		return newErr(errResources, "Out of memory; the admin engine has %d MB", heapLimit>>20)
	}
	return fmt.Errorf("%s", msg)
}

// syntaxPos is the offset in the original query of the token SQLite
// found a syntax error at. SQLite names the token's text only, which
// may appear more than once; the token is the first k whose statement
// up to it fails with "near": shorter ones are incomplete or valid.
// mu is held.
func (e *engine) syntaxPos(ctx context.Context, tr translation) int {
	fails := func(k int) bool {
		end := len(tr.sql)
		if k < len(tr.toks) {
			end = tr.toks[k].at
		}
		e.user = true
		st, err := e.conn.PrepareContext(ctx, tr.sql[:end])
		e.user = false
		if err == nil {
			_ = st.Close()
			return false
		}
		msg, _ := sqliteMessage(err)
		return strings.HasPrefix(msg, "near \"")
	}
	// The smallest k in [1, len] with fails(k).
	lo, hi := 1, len(tr.toks)
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo < 1 || lo > len(tr.toks) {
		return math.MaxInt
	}
	return tr.toks[lo-1].pos
}

// origin is the offset in the original query of the emitted token whose
// text is text; the end of the query if none is.
func (tr translation) origin(text string) int {
	for _, t := range tr.toks {
		if strings.TrimSpace(t.text) == text {
			return t.pos
		}
	}
	return math.MaxInt
}

// clauseOf names, as MariaDB's ER_BAD_FIELD_ERROR does, the clause where
// the column name first appears in q.
func clauseOf(q, name string) string {
	toks, err := lex(q)
	if err != nil {
		return "field list"
	}
	col := name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		col = name[i+1:]
	}
	clause := "field list"
	for i, t := range toks {
		switch {
		case t.isWord("select"):
			clause = "field list"
		case t.isWord("where"):
			clause = "where clause"
		case t.isWord("on"):
			clause = "on clause"
		case t.isWord("group") && i+1 < len(toks) && toks[i+1].isWord("by"):
			clause = "group statement"
		case t.isWord("having"):
			clause = "having clause"
		case t.isWord("order") && i+1 < len(toks) && toks[i+1].isWord("by"):
			clause = "order clause"
		case (t.kind == tokWord || t.kind == tokQuoted) && strings.EqualFold(t.text, col):
			return clause
		}
	}
	return clause
}

// byTerm is the text of the n-th term (from 1) of q's last ORDER BY
// ("order clause") or GROUP BY ("group statement").
func byTerm(q, clause string, n int) string {
	toks, err := lex(q)
	if err != nil {
		return strconv.Itoa(n)
	}
	kw := "order"
	if clause == "group statement" {
		kw = "group"
	}
	start := -1
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].isWord(kw) && toks[i+1].isWord("by") {
			start = i + 2
		}
	}
	if start < 0 {
		return strconv.Itoa(n)
	}
	term, depth, from := 1, 0, start
	for i := start; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.is("("):
			depth++
		case t.is(")"):
			depth--
		}
		last := t.kind == tokEOF || depth == 0 && (t.is(",") || t.isWord("limit") || t.isWord("having") ||
			t.isWord("order") || t.isWord("asc") || t.isWord("desc") || t.is(";"))
		if !last {
			continue
		}
		if term == n && i > from {
			return q[toks[from].pos:toks[i-1].end]
		}
		if !t.is(",") {
			if t.isWord("asc") || t.isWord("desc") {
				continue
			}
			break
		}
		term++
		from = i + 1
	}
	return strconv.Itoa(n)
}

// formatFloat writes a REAL as MariaDB writes a DOUBLE.
func formatFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
