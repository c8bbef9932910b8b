package sessions

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// How a pin ends.
type pinKind int

const (
	pinEnds    pinKind = iota // a statement ends it (COMMIT, UNLOCK TABLES, ...)
	pinSticky                 // only COM_RESET_CONNECTION or disconnect end it
	pinOneShot                // it lasts for the next statement only
)

// pinEnv is what a pin case's checks may use.
type pinEnv struct {
	px     *proxytest.Proxy
	direct *session // a direct server connection, outside the proxy
	th     uint32   // backend thread the session is pinned to
}

type pinCase struct {
	reason string
	kind   pinKind
	pin    []string // statements that pin the session
	// hold checks, while the session is pinned, that the state it pinned
	// for is really there.
	hold func(t *testing.T, c querier, e *pinEnv)
	end  []string // pinEnds: the statements that end the pin
	// next runs the statement a one-statement pin is kept for and checks
	// its answer.
	next func(t *testing.T, c querier, e *pinEnv)
	// gone checks on a session that uses the backend after the state
	// should have been cleared (reset, disconnect) that nothing is left.
	gone func(t *testing.T, c querier, e *pinEnv)
	// keptByReset: COM_RESET_CONNECTION does not end the pin, as the
	// server keeps what it pins for (the profile history).
	keptByReset bool
	// noReset: the pin leaves nothing that needs COM_RESET_CONNECTION, or
	// something a reset would not clear, so the connection is closed
	// (retired) instead.
	noReset bool
}

const pinLock = "tpp_pin_lock"

func pinCases() []pinCase {
	return []pinCase{{
		reason: "transaction", kind: pinEnds,
		pin: []string{"BEGIN", "INSERT INTO pin_t (v) VALUES (101)"},
		hold: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, c, "SELECT COUNT(*) FROM pin_t WHERE v = 101", 1)
			wantInt(t, e.direct, "SELECT COUNT(*) FROM pin_t WHERE v = 101", 0)
		},
		end: []string{"ROLLBACK"},
		gone: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, c, "SELECT COUNT(*) FROM pin_t WHERE v = 101", 0)
			wantInt(t, e.direct, "SELECT COUNT(*) FROM pin_t WHERE v = 101", 0)
		},
	}, {
		reason: "lock_tables", kind: pinEnds,
		pin: []string{"LOCK TABLES pin_t WRITE"},
		hold: func(t *testing.T, c querier, e *pinEnv) {
			// The write lock keeps everyone else out of the table.
			mustExec(t, e.direct, "SET SESSION lock_wait_timeout = 1")
			wantErr(t, e.direct, "SELECT COUNT(*) FROM pin_t", 1205)
		},
		end: []string{"UNLOCK TABLES"},
		gone: func(t *testing.T, c querier, e *pinEnv) {
			mustExec(t, e.direct, "SET SESSION lock_wait_timeout = 2")
			mustInt(t, e.direct, "SELECT COUNT(*) FROM pin_t")
			mustExec(t, c, "INSERT INTO pin_other (v) VALUES (1)") // allowed again without a LOCK TABLES for it
		},
	}, {
		reason: "user_variable", kind: pinSticky,
		pin: []string{"SET @tpp_x = 42"},
		hold: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, c, "SELECT @tpp_x", 42)
		},
		gone: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, c, "SELECT @tpp_x IS NULL", 1)
		},
	}, {
		reason: "temporary_table", kind: pinSticky,
		pin: []string{"CREATE TEMPORARY TABLE pin_tmp (a INT)", "INSERT INTO pin_tmp VALUES (7)"},
		hold: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, c, "SELECT a FROM pin_tmp", 7)
		},
		gone: func(t *testing.T, c querier, e *pinEnv) {
			wantErr(t, c, "SELECT COUNT(*) FROM pin_tmp", erNoSuchTable)
		},
	}, {
		reason: "get_lock", kind: pinSticky,
		pin: []string{"SELECT GET_LOCK('" + pinLock + "', 0)"},
		hold: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, e.direct, "SELECT IS_USED_LOCK('"+pinLock+"')", int64(e.th))
		},
		gone: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, e.direct, "SELECT IS_USED_LOCK('"+pinLock+"') IS NULL", 1)
			wantInt(t, c, "SELECT IS_USED_LOCK('"+pinLock+"') IS NULL", 1)
		},
	}, {
		reason: "sql_prepare", kind: pinSticky,
		pin: []string{"PREPARE tpp_stmt FROM 'SELECT 42'"},
		hold: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, c, "EXECUTE tpp_stmt", 42)
		},
		gone: func(t *testing.T, c querier, e *pinEnv) {
			wantErr(t, c, "EXECUTE tpp_stmt", erUnknownStmtHandler)
		},
	}, {
		// A procedure changes a session variable: the server reports the
		// change for a statement that is not a SET.
		reason: "state_change", kind: pinSticky,
		pin: []string{"CALL pin_set_tz()"},
		hold: func(t *testing.T, c querier, e *pinEnv) {
			if got := mustRow(t, c, "SELECT @@time_zone").str(0); got != "+05:00" {
				t.Fatalf("@@time_zone after CALL = %q, want +05:00", got)
			}
		},
		gone: func(t *testing.T, c querier, e *pinEnv) {
			def := mustRow(t, e.direct, "SELECT @@time_zone").str(0)
			if got := mustRow(t, c, "SELECT @@time_zone").str(0); got != def {
				t.Fatalf("@@time_zone = %q after the session that set it left, want the default %q", got, def)
			}
		},
	}, {
		// A stored function assigns a user variable: the server reports
		// nothing, the catalog knows the function's body.
		reason: "stored_routine", kind: pinSticky,
		pin: []string{"SELECT pin_set_var()"},
		hold: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, c, "SELECT @tpp_fv", 7)
		},
		gone: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, c, "SELECT @tpp_fv IS NULL", 1)
		},
	}, {
		// COM_RESET_CONNECTION keeps the profile history: the connection is
		// closed instead.
		reason: "profiling", kind: pinSticky, noReset: true, keptByReset: true,
		pin: []string{"SET profiling = 1", "SELECT 1"},
		hold: func(t *testing.T, c querier, e *pinEnv) {
			if rows := mustRows(t, c, "SHOW PROFILES"); len(rows) == 0 {
				t.Fatal("SHOW PROFILES is empty after profiled statements")
			}
		},
		gone: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, c, "SELECT @@profiling", 0)
			if rows := mustRows(t, c, "SHOW PROFILES"); len(rows) != 0 {
				t.Fatalf("SHOW PROFILES shows %d statements of a session that left", len(rows))
			}
		},
	}, {
		reason: "sql_auto_is_null", kind: pinEnds,
		pin: []string{"SET sql_auto_is_null = 1"},
		hold: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, c, "SELECT @@sql_auto_is_null", 1)
		},
		end: []string{"SET sql_auto_is_null = 0"},
	}, {
		reason: "unreplayable_variable", kind: pinSticky,
		pin: []string{"SET insert_id = 777"},
		hold: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, c, "SELECT @@insert_id", 777)
		},
		gone: func(t *testing.T, c querier, e *pinEnv) {
			mustExec(t, c, "INSERT INTO pin_ai () VALUES ()")
			wantInt(t, e.direct, "SELECT COUNT(*) FROM pin_ai WHERE id = 777", 0)
		},
	}, {
		reason: "handler", kind: pinSticky,
		pin: []string{"HANDLER pin_t OPEN AS tpp_h"},
		hold: func(t *testing.T, c querier, e *pinEnv) {
			if rows := mustRows(t, c, "HANDLER tpp_h READ FIRST"); len(rows) != 1 {
				t.Fatalf("HANDLER READ FIRST returned %d rows, want 1", len(rows))
			}
		},
		gone: func(t *testing.T, c querier, e *pinEnv) {
			wantErr(t, c, "HANDLER tpp_h READ FIRST", erUnknownTableHandler)
		},
	}, {
		reason: "sequence", kind: pinSticky,
		pin: []string{"SELECT NEXTVAL(pin_seq)"},
		hold: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, c, "SELECT LASTVAL(pin_seq) IS NOT NULL", 1)
		},
		gone: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, c, "SELECT LASTVAL(pin_seq) IS NULL", 1)
		},
	}, {
		// The connection of a session that leaves in XA is closed, not
		// reset: the server keeps a prepared branch only for a
		// disconnected one.
		reason: "xa", kind: pinEnds, noReset: true,
		pin: []string{"XA START 'tpp_xa'", "INSERT INTO pin_t (v) VALUES (113)"},
		hold: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, c, "SELECT COUNT(*) FROM pin_t WHERE v = 113", 1)
			wantInt(t, e.direct, "SELECT COUNT(*) FROM pin_t WHERE v = 113", 0)
		},
		end: []string{"XA END 'tpp_xa'", "XA ROLLBACK 'tpp_xa'"},
		gone: func(t *testing.T, c querier, e *pinEnv) {
			wantInt(t, e.direct, "SELECT COUNT(*) FROM pin_t WHERE v = 113", 0)
			// The xid is free again: nothing holds it on any connection.
			mustExec(t, c, "XA START 'tpp_xa'", "XA END 'tpp_xa'", "XA ROLLBACK 'tpp_xa'")
		},
	}, {
		// It lasts until the transaction it applies to has run.
		reason: "next_transaction", kind: pinOneShot,
		pin: []string{"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"},
		next: func(t *testing.T, c querier, e *pinEnv) {
			mustExec(t, c, "START TRANSACTION")
			if in := waitPinned(t, e.px, sessionOf(t, c), "transaction"); in.BackendThread != e.th {
				t.Fatalf("the transaction runs on backend thread %d, SET TRANSACTION ran on %d", in.BackendThread, e.th)
			}
			mustExec(t, c, "SELECT COUNT(*) FROM pin_t")
			if got := trxIsolation(t, c); got != "SERIALIZABLE" {
				t.Fatalf("transaction after SET TRANSACTION ISOLATION LEVEL SERIALIZABLE runs at %q", got)
			}
			mustExec(t, c, "COMMIT")
		},
		gone: func(t *testing.T, c querier, e *pinEnv) {
			mustExec(t, c, "START TRANSACTION", "SELECT COUNT(*) FROM pin_t")
			def := mustRow(t, e.direct, "SELECT @@tx_isolation").str(0)
			if got := trxIsolation(t, c); got != strings.ReplaceAll(def, "-", " ") {
				t.Fatalf("a later session's transaction runs at %q, want the default %q", got, def)
			}
			mustExec(t, c, "COMMIT")
		},
	}}
}

// sessionOf returns the proxy session id of a client.
func sessionOf(t *testing.T, c querier) uint32 {
	switch s := c.(type) {
	case *session:
		return s.ID
	case *rawSession:
		return s.ID
	}
	t.Fatalf("unknown client %T", c)
	return 0
}

// trxIsolation is the isolation level of the client's running InnoDB
// transaction.
func trxIsolation(t *testing.T, c querier) string {
	t.Helper()
	var level string
	eventuallyEvery(t, waitTimeout, innodbPoll, "the transaction in INNODB_TRX", func() bool {
		rows := mustRows(t, c, `SELECT trx_isolation_level FROM information_schema.INNODB_TRX
			WHERE trx_mysql_thread_id = `+threadExpr())
		if len(rows) == 1 {
			level = rows[0].str(0)
		}
		return len(rows) == 1
	})
	return level
}

func pinFixtures(t *testing.T, root *sql.DB) {
	freshTable(t, root, "pin_t", "(id INT AUTO_INCREMENT PRIMARY KEY, v INT)", "(v) VALUES (1), (2), (3)")
	freshTable(t, root, "pin_other", "(id INT AUTO_INCREMENT PRIMARY KEY, v INT)", "(v) VALUES (1)")
	freshTable(t, root, "pin_ai", "(id INT AUTO_INCREMENT PRIMARY KEY)")
	db := proxytest.DB
	rootExec(t, root,
		"DROP SEQUENCE IF EXISTS "+db+".pin_seq", "CREATE SEQUENCE "+db+".pin_seq",
		"DROP PROCEDURE IF EXISTS "+db+".pin_set_tz",
		"CREATE PROCEDURE "+db+".pin_set_tz() SET SESSION time_zone = '+05:00'",
		"DROP FUNCTION IF EXISTS "+db+".pin_set_var",
		"CREATE FUNCTION "+db+".pin_set_var() RETURNS INT BEGIN SET @tpp_fv = 7; RETURN 1; END")
	t.Cleanup(func() {
		_, _ = root.Exec("DROP SEQUENCE IF EXISTS " + db + ".pin_seq")
		_, _ = root.Exec("DROP PROCEDURE IF EXISTS " + db + ".pin_set_tz")
		_, _ = root.Exec("DROP FUNCTION IF EXISTS " + db + ".pin_set_var")
	})
}

// TestPinReasons takes a session through every pin reason: it must hold
// its backend (the same server thread) while the state lives, even with
// other sessions competing for the pool, and let it go when the state
// ends; COM_RESET_CONNECTION ends the sticky ones.
func TestPinReasons(t *testing.T) {
	root := env.Root(t)
	pinFixtures(t, root)
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 2 })
	for _, tc := range pinCases() {
		t.Run(tc.reason, func(t *testing.T) {
			e := &pinEnv{px: px, direct: openSession(t, env.DirectDSN(t))}
			a := openRaw(t, px.Addr, proxytest.User, proxytest.Password, proxytest.DB)
			waitUnpinned(t, px, a.ID)
			stopNoise := startNoise(t, px, 2, "SELECT COUNT(*) FROM pin_other")
			defer stopNoise()

			mustExec(t, a, tc.pin...)
			e.th = waitPinned(t, px, a.ID, tc.reason).BackendThread
			if tc.kind != pinOneShot {
				for i := range 5 {
					if got := backendThread(t, a); got != int64(e.th) {
						t.Fatalf("statement %d after pinning ran on backend thread %d, pinned to %d", i, got, e.th)
					}
					if in := waitPinned(t, px, a.ID, tc.reason); in.BackendThread != e.th {
						t.Fatalf("pinned backend changed from %d to %d", e.th, in.BackendThread)
					}
				}
				tc.hold(t, a, e)
				if in := waitPinned(t, px, a.ID, tc.reason); in.BackendThread != e.th {
					t.Fatalf("pinned backend changed from %d to %d", e.th, in.BackendThread)
				}
			}
			switch tc.kind {
			case pinEnds:
				mustExec(t, a, tc.end...)
				waitUnpinned(t, px, a.ID)
			case pinOneShot:
				tc.next(t, a, e)
				waitUnpinned(t, px, a.ID)
			case pinSticky:
				before := px.Pool.Stats()
				if err := a.Reset(); err != nil {
					t.Fatalf("COM_RESET_CONNECTION: %v", err)
				}
				if tc.keptByReset {
					if in := waitPinned(t, px, a.ID, tc.reason); in.BackendThread != e.th {
						t.Fatalf("after the reset the session is pinned to %d, was %d", in.BackendThread, e.th)
					}
					break
				}
				waitUnpinned(t, px, a.ID)
				after := px.Pool.Stats()
				if !tc.noReset && after.Resets <= before.Resets {
					t.Errorf("pool resets %d -> %d: the backend that held the state was not reset", before.Resets, after.Resets)
				}
				if tc.noReset && after.Retired <= before.Retired {
					t.Errorf("pool retired %d -> %d: the backend that held the state was not closed", before.Retired, after.Retired)
				}
				tc.gone(t, a, e)
			}
			stopNoise()
		})
	}
}

// TestPinStateDoesNotLeak pins a session, disconnects it while pinned and
// checks on the only backend connection that the next session finds none
// of its state.
func TestPinStateDoesNotLeak(t *testing.T) {
	root := env.Root(t)
	pinFixtures(t, root)
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
	for _, tc := range pinCases() {
		if tc.gone == nil {
			continue
		}
		t.Run(tc.reason, func(t *testing.T) {
			e := &pinEnv{px: px, direct: openSession(t, env.DirectDSN(t))}
			a := openSession(t, px.DSN())
			mustExec(t, a, tc.pin...)
			e.th = waitPinned(t, px, a.ID, tc.reason).BackendThread
			before := px.Pool.Stats()
			a.Close()
			waitGone(t, px, a.ID)
			eventually(t, waitTimeout, "the pool to reset or close the backend of a disconnected pinned session", func() bool {
				st := px.Pool.Stats()
				return st.Resets > before.Resets || st.Retired > before.Retired || tc.noReset && tc.kind == pinEnds
			})
			b := openSession(t, px.DSN())
			if got := backendThread(t, b); got != int64(e.th) {
				t.Logf("backend thread %d replaced by %d", e.th, got)
			} else {
				t.Logf("next session runs on the same backend thread %d", got)
			}
			tc.gone(t, b, e)
		})
	}
}
