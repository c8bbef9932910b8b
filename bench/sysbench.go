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
	pointSelect, simpleRange, sumRange, orderRange, distinctRange *sqlStmt
	indexUpdate, nonIndexUpdate, deleteRow, insertRow             *sqlStmt
}

func newTableStmts(n int) tableStmts {
	t := tableName(n)
	return tableStmts{
		pointSelect:    newStmt("SELECT c FROM " + t + " WHERE id=?"),
		simpleRange:    newStmt("SELECT c FROM " + t + " WHERE id BETWEEN ? AND ?"),
		sumRange:       newStmt("SELECT SUM(k) FROM " + t + " WHERE id BETWEEN ? AND ?"),
		orderRange:     newStmt("SELECT c FROM " + t + " WHERE id BETWEEN ? AND ? ORDER BY c"),
		distinctRange:  newStmt("SELECT DISTINCT c FROM " + t + " WHERE id BETWEEN ? AND ? ORDER BY c"),
		indexUpdate:    newStmt("UPDATE " + t + " SET k=k+1 WHERE id=?"),
		nonIndexUpdate: newStmt("UPDATE " + t + " SET c=? WHERE id=?"),
		deleteRow:      newStmt("DELETE FROM " + t + " WHERE id=?"),
		insertRow:      newStmt("INSERT INTO " + t + " (id, k, c, pad) VALUES (?, ?, ?, ?)"),
	}
}

// sbClient is the per-connection state shared by the sysbench workloads.
type sbClient struct {
	s      Schema
	r      *rand.Rand
	tables []tableStmts // index n-1 for sbtest<n>
	c, pad []byte       // the last c and pad values drawn
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

// id picks a row id in 1..TableSize from the schema's distribution.
func (c *sbClient) id() int { return c.s.Dist.pick(c.r, c.s.TableSize) }

// newC and newPad draw fresh c and pad values into reused buffers.
func (c *sbClient) newC() []byte {
	c.c = appendDigits(c.c[:0], c.r, cGroups)
	return c.c
}

func (c *sbClient) newPad() []byte {
	c.pad = appendDigits(c.pad[:0], c.r, padGroups)
	return c.pad
}

// sysbenchWorkload is one of sysbench's OLTP workloads with its default
// options: a name and the transaction each client runs.
type sysbenchWorkload struct {
	name   string
	schema Schema
	tx     func(c *sbClient, s *Session) error
}

// Name implements Workload.
func (w sysbenchWorkload) Name() string { return w.name }

// Options implements Workload.
func (w sysbenchWorkload) Options() Schema { return w.schema }

// NewClient implements Workload.
func (w sysbenchWorkload) NewClient(seed uint64) Client {
	return sysbenchClient{c: newSBClient(w.schema, seed), tx: w.tx}
}

type sysbenchClient struct {
	c  *sbClient
	tx func(c *sbClient, s *Session) error
}

func (c sysbenchClient) Tx(s *Session) error { return c.tx(c.c, s) }

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
var sysbenchTx = map[string]func(c *sbClient, s *Session) error{
	"oltp_point_select": func(c *sbClient, s *Session) error {
		return s.run(c.table().pointSelect, intArg(c.id()))
	},
	"oltp_read_write": func(c *sbClient, s *Session) error { return c.oltp(s, true, true) },
	"oltp_read_only":  func(c *sbClient, s *Session) error { return c.oltp(s, true, false) },
	"oltp_write_only": func(c *sbClient, s *Session) error { return c.oltp(s, false, true) },
	"oltp_update_index": func(c *sbClient, s *Session) error {
		return s.run(c.table().indexUpdate, intArg(c.id()))
	},
	"oltp_insert": func(c *sbClient, s *Session) error {
		return s.run(c.table().insertRow, intArg(0), intArg(c.id()), bytesArg(c.newC()), bytesArg(c.newPad()))
	},
}

// oltp runs sysbench's oltp_common transaction: BEGIN, the reads (10
// point selects, then the simple, sum, order and distinct ranges), the
// writes (index update, non-index update, delete and re-insert of one
// row), COMMIT.
func (c *sbClient) oltp(s *Session, reads, writes bool) error {
	if err := s.text("BEGIN"); err != nil {
		return err
	}
	if reads {
		t := c.table()
		for range pointSelects {
			if err := s.run(t.pointSelect, intArg(c.id())); err != nil {
				return err
			}
		}
		for _, st := range [...]*sqlStmt{c.table().simpleRange, c.table().sumRange, c.table().orderRange, c.table().distinctRange} {
			from := c.id()
			if err := s.run(st, intArg(from), intArg(from+rangeSize-1)); err != nil {
				return err
			}
		}
	}
	if writes {
		if err := s.run(c.table().indexUpdate, intArg(c.id())); err != nil {
			return err
		}
		if err := s.run(c.table().nonIndexUpdate, bytesArg(c.newC()), intArg(c.id())); err != nil {
			return err
		}
		t := c.table()
		id := c.id()
		if err := s.run(t.deleteRow, intArg(id)); err != nil {
			return err
		}
		if err := s.run(t.insertRow, intArg(id), intArg(c.id()), bytesArg(c.newC()), bytesArg(c.newPad())); err != nil {
			return err
		}
	}
	return s.text("COMMIT")
}
