package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
)

// sysbench's string columns: c is ten groups of eleven digits joined by
// '-' (119 chars), pad five groups (59 chars).
const (
	cGroups   = 10
	padGroups = 5
)

// insertBatch is the number of rows per multi-row INSERT in Prepare
// (about 200 KB per statement, far below max_allowed_packet).
const insertBatch = 1000

// tableName is sysbench's name of table n (1-based).
func tableName(n int) string { return "sbtest" + strconv.Itoa(n) }

// appendDigits appends sysbench's ###########-... pattern with groups
// groups of random digits.
func appendDigits(b []byte, r *rand.Rand, groups int) []byte {
	for g := range groups {
		if g > 0 {
			b = append(b, '-')
		}
		for range 11 {
			b = append(b, byte('0'+r.IntN(10)))
		}
	}
	return b
}

// Prepare (re)creates the sysbench tables sbtest1..sbtest<tables> in db's
// database with tableSize rows each, like `sysbench prepare`: existing
// tables of those names are dropped first. Tables load in parallel, one
// connection each, with multi-row INSERTs; the secondary index k_<n> is
// built after the load, which is faster than maintaining it row by row.
func Prepare(ctx context.Context, db *sql.DB, tables, tableSize int) error {
	if err := (Schema{Tables: tables, TableSize: tableSize}).validate(); err != nil {
		return err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for n := 1; n <= tables; n++ {
		wg.Go(func() {
			if err := prepareTable(ctx, db, n, tableSize); err != nil {
				mu.Lock()
				if first == nil {
					first = err
					cancel()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

func prepareTable(ctx context.Context, db *sql.DB, n, size int) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("bench: prepare %s: %w", tableName(n), err)
	}
	defer conn.Close()
	t := tableName(n)
	stmts := []string{
		"DROP TABLE IF EXISTS " + t,
		"CREATE TABLE " + t + ` (
  id INTEGER NOT NULL AUTO_INCREMENT,
  k INTEGER DEFAULT '0' NOT NULL,
  c CHAR(120) DEFAULT '' NOT NULL,
  pad CHAR(60) DEFAULT '' NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB`,
	}
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("bench: prepare %s: %w", t, err)
		}
	}
	r := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	prefix := "INSERT INTO " + t + " (id, k, c, pad) VALUES "
	buf := make([]byte, 0, len(prefix)+insertBatch*(cGroups*12+padGroups*12+32))
	for start := 1; start <= size; start += insertBatch {
		buf = append(buf[:0], prefix...)
		for id := start; id < start+insertBatch && id <= size; id++ {
			if id > start {
				buf = append(buf, ',')
			}
			buf = append(buf, '(')
			buf = strconv.AppendInt(buf, int64(id), 10)
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, int64(1+r.IntN(size)), 10)
			buf = append(buf, ",'"...)
			buf = appendDigits(buf, r, cGroups)
			buf = append(buf, "','"...)
			buf = appendDigits(buf, r, padGroups)
			buf = append(buf, "')"...)
		}
		if _, err := conn.ExecContext(ctx, string(buf)); err != nil {
			return fmt.Errorf("bench: load %s: %w", t, err)
		}
	}
	idx := "CREATE INDEX k_" + strconv.Itoa(n) + " ON " + t + " (k)"
	if _, err := conn.ExecContext(ctx, idx); err != nil {
		return fmt.Errorf("bench: index %s: %w", t, err)
	}
	return nil
}

// Cleanup drops sbtest1..sbtest<tables>, like `sysbench cleanup`.
func Cleanup(ctx context.Context, db *sql.DB, tables int) error {
	names := make([]string, tables)
	for i := range names {
		names[i] = tableName(i + 1)
	}
	if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+strings.Join(names, ", ")); err != nil {
		return fmt.Errorf("bench: cleanup: %w", err)
	}
	return nil
}

// tableStmts are one table's statements, built once per client so that a
// transaction does no string formatting.
type tableStmts struct {
	pointSelect, simpleRange, sumRange, orderRange, distinctRange string
	indexUpdate, nonIndexUpdate, deleteRow, insertRow             string
}

func newTableStmts(n int) tableStmts {
	t := tableName(n)
	return tableStmts{
		pointSelect:    "SELECT c FROM " + t + " WHERE id=?",
		simpleRange:    "SELECT c FROM " + t + " WHERE id BETWEEN ? AND ?",
		sumRange:       "SELECT SUM(k) FROM " + t + " WHERE id BETWEEN ? AND ?",
		orderRange:     "SELECT c FROM " + t + " WHERE id BETWEEN ? AND ? ORDER BY c",
		distinctRange:  "SELECT DISTINCT c FROM " + t + " WHERE id BETWEEN ? AND ? ORDER BY c",
		indexUpdate:    "UPDATE " + t + " SET k=k+1 WHERE id=?",
		nonIndexUpdate: "UPDATE " + t + " SET c=? WHERE id=?",
		deleteRow:      "DELETE FROM " + t + " WHERE id=?",
		insertRow:      "INSERT INTO " + t + " (id, k, c, pad) VALUES (?, ?, ?, ?)",
	}
}

// sbClient is the per-connection state shared by the sysbench workloads.
type sbClient struct {
	s      Schema
	r      *rand.Rand
	tables []tableStmts // index n-1 for sbtest<n>
	buf    []byte

	// With Schema.Prepared: the statements prepared on stmtConn, by text.
	// A new connection (after a reconnect) starts a new set.
	stmtConn *sql.Conn
	stmts    map[string]*sql.Stmt
}

// stmt returns q prepared on conn, preparing it the first time.
func (c *sbClient) stmt(ctx context.Context, conn *sql.Conn, q string) (*sql.Stmt, error) {
	if c.stmtConn != conn {
		for _, st := range c.stmts {
			_ = st.Close()
		}
		c.stmtConn, c.stmts = conn, make(map[string]*sql.Stmt)
	}
	if st := c.stmts[q]; st != nil {
		return st, nil
	}
	st, err := conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	c.stmts[q] = st
	return st, nil
}

// exec runs a statement that returns no rows.
func (c *sbClient) exec(ctx context.Context, conn *sql.Conn, q string, args ...any) error {
	if !c.s.Prepared {
		_, err := conn.ExecContext(ctx, q, args...)
		return err
	}
	st, err := c.stmt(ctx, conn, q)
	if err == nil {
		_, err = st.ExecContext(ctx, args...)
	}
	return err
}

// query runs a statement and reads its rows without keeping them.
func (c *sbClient) query(ctx context.Context, conn *sql.Conn, q string, args ...any) error {
	if !c.s.Prepared {
		return drain(ctx, conn, q, args...)
	}
	st, err := c.stmt(ctx, conn, q)
	if err != nil {
		return err
	}
	return drainRows(st.QueryContext(ctx, args...))
}

func newSBClient(s Schema, seed uint64) *sbClient {
	c := &sbClient{s: s, r: rand.New(rand.NewPCG(seed, 0x7362)), tables: make([]tableStmts, s.Tables)}
	for i := range c.tables {
		c.tables[i] = newTableStmts(i + 1)
	}
	return c
}

// table picks a table uniformly, as sysbench's get_table_num does once per
// statement group.
func (c *sbClient) table() *tableStmts { return &c.tables[c.r.IntN(len(c.tables))] }

// id picks a row id uniformly in 1..TableSize.
func (c *sbClient) id() int { return 1 + c.r.IntN(c.s.TableSize) }

// digits returns a fresh c or pad value.
func (c *sbClient) digits(groups int) string {
	c.buf = appendDigits(c.buf[:0], c.r, groups)
	return string(c.buf)
}

// sysbenchWorkload is one of sysbench's OLTP workloads with its default
// options: a name and the transaction each client runs.
type sysbenchWorkload struct {
	name   string
	schema Schema
	tx     func(c *sbClient, ctx context.Context, conn *sql.Conn) (int, error)
}

// Name implements Workload.
func (w sysbenchWorkload) Name() string { return w.name }

// PreparedStatements reports Schema.Prepared.
func (w sysbenchWorkload) PreparedStatements() bool { return w.schema.Prepared }

// NewClient implements Workload.
func (w sysbenchWorkload) NewClient(seed uint64) Client {
	return sysbenchClient{c: newSBClient(w.schema, seed), tx: w.tx}
}

type sysbenchClient struct {
	c  *sbClient
	tx func(c *sbClient, ctx context.Context, conn *sql.Conn) (int, error)
}

func (c sysbenchClient) Tx(ctx context.Context, conn *sql.Conn) (int, error) {
	return c.tx(c.c, ctx, conn)
}

// Sysbench's oltp_common defaults.
const (
	pointSelects   = 10
	rangeSize      = 100
	readWriteStmts = 20 // with BEGIN and COMMIT
)

// sysbenchTx are the transactions of sysbench's OLTP workloads:
//   - oltp_point_select: one primary-key lookup, autocommit;
//   - oltp_read_write: in one transaction, 10 point selects, one each of the
//     simple, sum, order and distinct range selects over 100 rows, an update
//     of the indexed column k, one of the non-indexed column c, and a delete
//     plus re-insert of one row (20 statements with BEGIN and COMMIT);
//   - oltp_read_only: its reads in a transaction (16 statements);
//   - oltp_write_only: its writes in a transaction (6 statements);
//   - oltp_update_index: one UPDATE of k by primary key, autocommit;
//   - oltp_insert (auto_inc): one INSERT of a new row (id 0: the next
//     AUTO_INCREMENT value), autocommit; the tables grow.
var sysbenchTx = map[string]func(c *sbClient, ctx context.Context, conn *sql.Conn) (int, error){
	"oltp_point_select": func(c *sbClient, ctx context.Context, conn *sql.Conn) (int, error) {
		return 1, c.query(ctx, conn, c.table().pointSelect, c.id())
	},
	"oltp_read_write": func(c *sbClient, ctx context.Context, conn *sql.Conn) (int, error) {
		return c.oltp(ctx, conn, true, true)
	},
	"oltp_read_only": func(c *sbClient, ctx context.Context, conn *sql.Conn) (int, error) {
		return c.oltp(ctx, conn, true, false)
	},
	"oltp_write_only": func(c *sbClient, ctx context.Context, conn *sql.Conn) (int, error) {
		return c.oltp(ctx, conn, false, true)
	},
	"oltp_update_index": func(c *sbClient, ctx context.Context, conn *sql.Conn) (int, error) {
		return 1, c.exec(ctx, conn, c.table().indexUpdate, c.id())
	},
	"oltp_insert": func(c *sbClient, ctx context.Context, conn *sql.Conn) (int, error) {
		return 1, c.exec(ctx, conn, c.table().insertRow, 0, c.id(), c.digits(cGroups), c.digits(padGroups))
	},
}

// oltp runs sysbench's oltp_common transaction: BEGIN, the reads (10
// point selects, then the simple, sum, order and distinct ranges), the
// writes (index update, non-index update, delete and re-insert of one
// row), COMMIT. It returns the statements sent.
func (c *sbClient) oltp(ctx context.Context, conn *sql.Conn, reads, writes bool) (n int, err error) {
	exec := func(q string, args ...any) error {
		n++
		return c.exec(ctx, conn, q, args...)
	}
	query := func(q string, args ...any) error {
		n++
		return c.query(ctx, conn, q, args...)
	}
	if err := exec("BEGIN"); err != nil {
		return n, err
	}
	if reads {
		t := c.table()
		for range pointSelects {
			if err := query(t.pointSelect, c.id()); err != nil {
				return n, err
			}
		}
		for _, q := range []string{c.table().simpleRange, c.table().sumRange, c.table().orderRange, c.table().distinctRange} {
			from := c.id()
			if err := query(q, from, from+rangeSize-1); err != nil {
				return n, err
			}
		}
	}
	if writes {
		if err := exec(c.table().indexUpdate, c.id()); err != nil {
			return n, err
		}
		if err := exec(c.table().nonIndexUpdate, c.digits(cGroups), c.id()); err != nil {
			return n, err
		}
		t := c.table()
		id := c.id()
		if err := exec(t.deleteRow, id); err != nil {
			return n, err
		}
		if err := exec(t.insertRow, id, c.id(), c.digits(cGroups), c.digits(padGroups)); err != nil {
			return n, err
		}
	}
	return n, exec("COMMIT")
}
