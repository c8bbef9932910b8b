package sessions

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// TestLastInsertIDPerSession checks that LAST_INSERT_ID() returns the
// session's own value, in the form the proxy answers itself and in forms
// the backend answers, although other sessions insert on the same backend.
func TestLastInsertIDPerSession(t *testing.T) {
	root := env.Root(t)
	freshTable(t, root, "li_a", "(id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	freshTable(t, root, "li_b", "(id INT AUTO_INCREMENT PRIMARY KEY, v INT) AUTO_INCREMENT = 5000")

	t.Run("one_backend", func(t *testing.T) {
		px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
		a, b := openSession(t, px.DSN()), openSession(t, px.DSN())
		for range 3 {
			idA := insertID(t, a, "INSERT INTO li_a (v) VALUES (1)")
			idB := insertID(t, b, "INSERT INTO li_b (v) VALUES (2)")
			if idA == idB {
				t.Fatalf("test needs distinct ids, both got %d", idA)
			}
			for _, c := range []struct {
				s  *session
				id int64
			}{{a, idA}, {b, idB}, {a, idA}} {
				wantInt(t, c.s, "SELECT LAST_INSERT_ID()", c.id)
				wantInt(t, c.s, "SELECT LAST_INSERT_ID() AS id", c.id)
				wantInt(t, c.s, "SELECT LAST_INSERT_ID() + 0", c.id)
			}
		}
		// A session that never inserted has 0, whatever ran before on
		// its backend.
		c := openSession(t, px.DSN())
		wantInt(t, c, "SELECT LAST_INSERT_ID() AS id", 0)
		wantInt(t, c, "SELECT LAST_INSERT_ID()", 0)
	})

	t.Run("concurrent", func(t *testing.T) {
		px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 2 })
		const nSess, rounds = 8, 25
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		errs := make(chan error, nSess)
		var wg sync.WaitGroup
		for i := range nSess {
			s := openSession(t, px.DSN())
			wg.Go(func() {
				for r := range rounds {
					res, err := s.conn.ExecContext(ctx, fmt.Sprintf("INSERT INTO li_a (v) VALUES (%d)", i))
					if err != nil {
						errs <- err
						cancel()
						return
					}
					id, _ := res.LastInsertId()
					for _, q := range []string{"SELECT LAST_INSERT_ID()", "SELECT LAST_INSERT_ID() AS id"} {
						rows, err := s.RowsContext(ctx, q)
						if err == nil && (len(rows) != 1 || rows[0].str(0) != fmt.Sprint(id)) {
							err = fmt.Errorf("round %d: %s = %v, want %d", r, q, rows, id)
						}
						if err != nil {
							errs <- fmt.Errorf("session %d: %w", i, err)
							cancel()
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		reportFirst(t, errs)
	})

	t.Run("set_by_expression", func(t *testing.T) {
		// LAST_INSERT_ID(expr) sets the value the next LAST_INSERT_ID()
		// returns, whatever its form; compare with the server.
		px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
		d := openSession(t, env.DirectDSN(t))
		a := openSession(t, px.DSN())
		for _, c := range []*session{d, a} {
			insertID(t, c, "INSERT INTO li_a (v) VALUES (3)")
			mustExec(t, c, "SELECT LAST_INSERT_ID(4242)")
		}
		wantInt(t, d, "SELECT LAST_INSERT_ID()", 4242) // the server's answer
		wantInt(t, a, "SELECT LAST_INSERT_ID() AS id", 4242)
		wantInt(t, a, "SELECT LAST_INSERT_ID()", 4242)
	})
}

// insertID runs an INSERT and returns the id the OK packet reports.
func insertID(t *testing.T, s *session, q string) int64 {
	t.Helper()
	res, err := s.Exec(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestRowCountPerSession: ROW_COUNT() is the session's own previous
// statement's count, with another session updating on the same backend in
// between. The exact form SELECT ROW_COUNT() is answered by the proxy and
// holds even on a single shared backend; other forms run on the server and
// hold when the session gets its previous backend back, which the pool
// arranges while that backend is free (there is no way to set ROW_COUNT()
// on another connection; README documents this).
func TestRowCountPerSession(t *testing.T) {
	root := env.Root(t)
	freshTable(t, root, "rc_t", "(id INT AUTO_INCREMENT PRIMARY KEY, g INT, v INT)",
		"(g, v) VALUES (1, 0), (1, 0), (1, 0), (2, 0), (2, 0), (2, 0), (2, 0), (2, 0)")
	t.Run("exact form on one backend", func(t *testing.T) {
		px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
		a, b := openSession(t, px.DSN()), openSession(t, px.DSN())
		for i := 0; i < 3; i++ {
			mustExec(t, a, "UPDATE rc_t SET v = v + 1 WHERE g = 1") // 3 rows
			mustExec(t, b, "UPDATE rc_t SET v = v + 1 WHERE g = 2") // 5 rows
			wantInt(t, a, "SELECT ROW_COUNT()", 3)
			wantInt(t, b, "SELECT ROW_COUNT()", 5)
			mustExec(t, b, "SELECT 1")
			wantInt(t, b, "SELECT ROW_COUNT()", -1)
		}
	})
	t.Run("other forms with the previous backend free", func(t *testing.T) {
		px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 2 })
		a, b := openSession(t, px.DSN()), openSession(t, px.DSN())
		// Put each session on a backend of its own once.
		mustExec(t, a, "BEGIN")
		mustExec(t, b, "SELECT 1")
		mustExec(t, a, "COMMIT")
		for i := 0; i < 3; i++ {
			mustExec(t, a, "UPDATE rc_t SET v = v + 1 WHERE g = 1")
			mustExec(t, b, "UPDATE rc_t SET v = v + 1 WHERE g = 2")
			wantInt(t, a, "SELECT ROW_COUNT() AS n", 3)
			wantInt(t, b, "SELECT ROW_COUNT() AS n", 5)
		}
	})
}

// TestFoundRowsPerSession: FOUND_ROWS() counts the session's own previous
// SELECT, with SQL_CALC_FOUND_ROWS and without, while other sessions
// select other row counts on the same backends.
func TestFoundRowsPerSession(t *testing.T) {
	root := env.Root(t)
	var vals []string
	for i := 1; i <= 40; i++ {
		vals = append(vals, fmt.Sprintf("(%d)", i))
	}
	freshTable(t, root, "fr_t", "(id INT AUTO_INCREMENT PRIMARY KEY, g INT)", "(g) VALUES "+strings.Join(vals, ", "))

	t.Run("calc_found_rows_concurrent", func(t *testing.T) {
		px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 2 })
		const nSess, rounds = 6, 30
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		errs := make(chan error, nSess)
		var wg sync.WaitGroup
		for i := range nSess {
			s := openSession(t, px.DSN())
			k := 5 + 5*i // rows with g <= k
			wg.Go(func() {
				for r := range rounds {
					_, err := s.RowsContext(ctx, fmt.Sprintf("SELECT SQL_CALC_FOUND_ROWS id FROM fr_t WHERE g <= %d LIMIT 2", k))
					var rows []row
					if err == nil {
						rows, err = s.RowsContext(ctx, "SELECT FOUND_ROWS()")
					}
					if err == nil && (len(rows) != 1 || rows[0].str(0) != fmt.Sprint(k)) {
						err = fmt.Errorf("round %d: FOUND_ROWS() = %v, want %d", r, rows, k)
					}
					if err != nil {
						errs <- fmt.Errorf("session %d: %w", i, err)
						cancel()
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		reportFirst(t, errs)
	})

	t.Run("calc_found_rows_one_backend", func(t *testing.T) {
		// With one backend, A's count is read with its SELECT, so A
		// holds nothing while B counts on the same connection; each gets
		// its own count.
		px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
		a, b := openSession(t, px.DSN()), openSession(t, px.DSN())
		mustExec(t, a, "SELECT SQL_CALC_FOUND_ROWS id FROM fr_t WHERE g <= 7 LIMIT 1")
		waitUnpinned(t, px, a.ID)
		mustExec(t, b, "SELECT SQL_CALC_FOUND_ROWS id FROM fr_t WHERE g <= 30 LIMIT 1")
		wantInt(t, a, "SELECT FOUND_ROWS()", 7)
		wantInt(t, b, "SELECT FOUND_ROWS()", 30)
		// LIMIT with an offset counts offset + rows, as the server does.
		mustExec(t, a, "SELECT id FROM fr_t WHERE g <= 30 LIMIT 2,1")
		wantInt(t, a, "SELECT FOUND_ROWS()", 3)
	})

	t.Run("plain_select", func(t *testing.T) {
		// Without SQL_CALC_FOUND_ROWS, FOUND_ROWS() is the number of rows
		// the previous SELECT returned.
		px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
		d := openSession(t, env.DirectDSN(t))
		a, b := openSession(t, px.DSN()), openSession(t, px.DSN())
		mustRows(t, d, "SELECT id FROM fr_t WHERE g <= 4")
		wantInt(t, d, "SELECT FOUND_ROWS()", 4) // the server's answer
		mustRows(t, a, "SELECT id FROM fr_t WHERE g <= 4")
		mustRows(t, b, "SELECT id FROM fr_t WHERE g <= 9")
		wantInt(t, a, "SELECT FOUND_ROWS()", 4)
	})

	t.Run("transaction_then_other_session", func(t *testing.T) {
		// A transaction's last SELECT counts, across the DML after it and
		// the COMMIT, also when another session has used the connection
		// since; with LIMIT the count is the server's, read at COMMIT.
		px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
		d := openSession(t, env.DirectDSN(t))
		a, b := openSession(t, px.DSN()), openSession(t, px.DSN())
		for _, c := range []struct {
			sel  string
			want int64
		}{
			{"SELECT id FROM fr_t WHERE g <= 6", 6},
			{"SELECT id FROM fr_t WHERE g <= 6 ORDER BY id LIMIT 4,1", 5},
			{"SELECT SQL_CALC_FOUND_ROWS id FROM fr_t WHERE g <= 11 LIMIT 1", 11},
		} {
			for _, s := range []*session{d, a} {
				mustExec(t, s, "BEGIN")
				mustRows(t, s, c.sel)
				mustExec(t, s, "UPDATE fr_t SET g = g WHERE id = 1")
				mustExec(t, s, "COMMIT")
				if s == a {
					waitUnpinned(t, px, a.ID)
					mustRows(t, b, "SELECT id FROM fr_t WHERE g <= 2")
				}
				wantInt(t, s, "SELECT FOUND_ROWS()", c.want)
			}
		}
	})
}

// TestWarningsPerSession: SHOW WARNINGS shows the session's own previous
// statement's warnings, never another session's.
func TestWarningsPerSession(t *testing.T) {
	root := env.Root(t)
	freshTable(t, root, "w_t", "(id INT PRIMARY KEY)", "VALUES (1)")

	t.Run("interleaved", func(t *testing.T) {
		px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 2 })
		const nSess, rounds = 4, 20
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		errs := make(chan error, nSess)
		var wg sync.WaitGroup
		for i := range nSess {
			s := openSession(t, px.DSN())
			marker := fmt.Sprintf("tpp_w%d", i)
			wg.Go(func() {
				err := func() error {
					for r := range rounds {
						if _, err := s.RowsContext(ctx, "SELECT CAST('"+marker+"' AS SIGNED)"); err != nil {
							return err
						}
						for _, q := range []string{"SHOW WARNINGS", "SHOW WARNINGS"} {
							rows, err := s.RowsContext(ctx, q)
							if err != nil {
								return err
							}
							if len(rows) != 1 || !strings.Contains(rows[0].str(2), marker) {
								return fmt.Errorf("round %d: SHOW WARNINGS = %v, want one warning about %s", r, rows, marker)
							}
						}
						if _, err := s.RowsContext(ctx, "SELECT COUNT(*) FROM w_t"); err != nil {
							return err
						}
						rows, err := s.RowsContext(ctx, "SHOW WARNINGS")
						if err != nil {
							return err
						}
						if len(rows) != 0 {
							return fmt.Errorf("round %d: SHOW WARNINGS after a clean statement = %v", r, rows)
						}
					}
					return nil
				}()
				if err != nil {
					errs <- fmt.Errorf("session %d: %w", i, err)
					cancel()
				}
			})
		}
		wg.Wait()
		close(errs)
		reportFirst(t, errs)
	})

	// A session whose previous statement left no warnings must see none,
	// even right after another session left warnings (or an error) on the
	// only backend, by disconnecting or by moving on with a statement that
	// reads no table (which keeps the diagnostics on the server). The
	// previous statement is either one that reads a table or one that does
	// not: on the server neither shows diagnostics the session never
	// produced.
	for _, tc := range []struct{ name, clean, bad, leave, show string }{
		{"warning_after_table_statement", "SELECT COUNT(*) FROM w_t", "SELECT CAST('tpp_zzz' AS SIGNED)", "", "SHOW WARNINGS"},
		{"warning_after_tableless_statement", "SELECT 1", "SELECT CAST('tpp_zzz' AS SIGNED)", "", "SHOW WARNINGS"},
		{"warning_count", "SELECT 1", "SELECT CAST('tpp_zzz' AS SIGNED)", "", "SELECT @@warning_count"},
		{"error_after_tableless_statement", "SELECT 1", "SELECT * FROM tpp_no_such_table", "", "SHOW ERRORS"},
		{"warning_left_by_live_session", "SELECT COUNT(*) FROM w_t", "SELECT CAST('tpp_zzz' AS SIGNED)", "SELECT 1", "SHOW WARNINGS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
			a := openSession(t, px.DSN())
			d := openSession(t, env.DirectDSN(t))
			mustExec(t, a, tc.clean)
			b := openSession(t, px.DSN())
			_, _ = b.Rows(tc.bad)
			if tc.leave != "" {
				mustExec(t, b, tc.leave)
				wantUnpinned(t, px, b.ID)
			} else {
				b.Close()
				waitGone(t, px, b.ID)
			}

			// The oracle: the same on a server connection of its own.
			mustExec(t, d, tc.clean)
			want := mustRows(t, d, tc.show)
			got := mustRows(t, a, tc.show)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s after %q = %v; the server says %v (another session's diagnostics leaked)", tc.show, tc.clean, got, want)
			}
		})
	}
}
