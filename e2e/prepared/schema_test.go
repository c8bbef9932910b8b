package prepared

import (
	"context"
	"sync"
	"testing"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

const (
	schemaA = "tpproxy_ps_a"
	schemaB = "tpproxy_ps_b"
	// schemaQuery names table t without a schema: which t it reads is
	// decided when the statement is prepared.
	schemaQuery = "SELECT v FROM t WHERE id = ?"
)

// TestStatementKeepsPrepareSchema covers an application that prepares a
// statement, then changes the default database (USE) and executes it: the
// server resolved the unqualified table at prepare time, so the statement
// keeps reading the first schema's table, while the same SQL text prepared
// after USE reads the second's. Through the proxy the statement is
// prepared again on every backend connection it lands on, whatever schema
// the session has by then, and other sessions prepare the same text in
// either schema all the while.
func TestStatementKeepsPrepareSchema(t *testing.T) {
	root := env.Root(t)
	for db, v := range map[string]string{schemaA: "A", schemaB: "B"} {
		freshDatabase(t, root, db,
			"CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(10))",
			"INSERT INTO {db}.t VALUES (1, '"+v+"')")
	}
	px := env.StartProxy(t) // pool of 4
	for _, tg := range []struct {
		name string
		dsn  func(db string) string
	}{
		{"direct", func(db string) string { return env.Server(t).DSN(proxytest.User, proxytest.Password, db, psParams) }},
		{"proxy", func(db string) string { return px.DSNFor(proxytest.User, proxytest.Password, db, psParams) }},
	} {
		t.Run(tg.name, func(t *testing.T) {
			s := openSession(t, tg.dsn(schemaA))
			stA := s.prepare(t, schemaQuery)
			if got, err := queryString(stA, 1); err != nil || got != "A" {
				t.Fatalf("before USE: %q, %v; want A", got, err)
			}
			s.mustExec(t, "USE "+schemaB)
			stB := s.prepare(t, schemaQuery)

			var stop func()
			if tg.name == "proxy" {
				stop = startSchemaNoise(t, tg.dsn, 6)
				defer stop()
			}
			for i := range 100 {
				if got, err := queryString(stA, 1); err != nil || got != "A" {
					t.Fatalf("execute %d of the statement prepared in %s, after USE %s: %q, %v; want A", i, schemaA, schemaB, got, err)
				}
				if got, err := queryString(stB, 1); err != nil || got != "B" {
					t.Fatalf("execute %d of the statement prepared in %s: %q, %v; want B", i, schemaB, got, err)
				}
			}
			if stop != nil {
				stop()
			}
			var db string
			ctx, cancel := opCtx()
			defer cancel()
			if err := s.conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&db); err != nil || db != schemaB {
				t.Fatalf("SELECT DATABASE() = %q, %v; want %s", db, err, schemaB)
			}
		})
	}
}

// startSchemaNoise runs n sessions, half in each schema, that prepare,
// execute and close schemaQuery until stop is called; each checks it reads
// its own schema's row. stop reports their errors.
func startSchemaNoise(t *testing.T, dsn func(string) string, n int) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		db, want := schemaA, "A"
		if i%2 == 1 {
			db, want = schemaB, "B"
		}
		s := openSession(t, dsn(db))
		wg.Go(func() {
			for ctx.Err() == nil {
				var got string
				qctx, qcancel := context.WithTimeout(ctx, opTimeout)
				err := s.conn.QueryRowContext(qctx, schemaQuery, 1).Scan(&got)
				qcancel()
				switch {
				case ctx.Err() != nil:
					return
				case err != nil:
					errs <- errorf(i, "in %s: %w", db, err)
					return
				case got != want:
					errs <- errorf(i, "in %s read %q, want %q", db, got, want)
					return
				}
			}
		})
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}
