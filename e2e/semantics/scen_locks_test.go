package semantics

// Class 12: sessions that hold LOCK TABLES, and statements whose settings
// limit what the server runs (max_join_size, sql_select_limit). The
// server's own test suite (main.lock, main.lock_multi, main.sp-lock) runs
// them; through tpproxy the catalog's lookup before a statement must
// neither wait for the session's own table locks nor run under its
// limits, and must never replace the statement's answer.

const (
	// semDefiner is the suite's account, as a DEFINER clause names it.
	semDefiner = "'" + semUser + "'@'%'"
	lkSetup1   = "CREATE TABLE m1 (a INT) ENGINE=MyISAM"
	lkSetup2   = "CREATE TABLE m2 (a INT) ENGINE=MyISAM"
)

func lockScenarios() []*scenario {
	c := "locks"
	return []*scenario{
		{id: "lk01", class: c, desc: "LOCK TABLES two MyISAM tables, REPAIR TABLE ... USE_FRM twice each, then UNLOCK TABLES",
			setup: []string{lkSetup1, lkSetup2, "INSERT INTO m1 VALUES (1), (2)"},
			steps: steps("S: LOCK TABLES m1 WRITE, m2 WRITE", "S: REPAIR TABLE m1 USE_FRM", "S: REPAIR TABLE m1 USE_FRM",
				"S: SELECT * FROM m1", "S: SELECT * FROM m2", "S: REPAIR TABLE m2 USE_FRM", "S: REPAIR TABLE m2 USE_FRM",
				"S: SELECT * FROM m1", "S: UNLOCK TABLES", "S: SELECT COUNT(*) FROM m1", "S: INSERT INTO m2 VALUES (3)",
				rep("O", 3, "SELECT COUNT(*) FROM m2"))},
		{id: "lk02", class: c, desc: "LOCK TABLES, ALTER TABLE of a locked table, statements, UNLOCK TABLES",
			setup: []string{lkSetup1, lkSetup2},
			steps: steps("S: LOCK TABLES m1 WRITE, m2 READ", "S: ALTER TABLE m1 ADD COLUMN b INT", "S: INSERT INTO m1 VALUES (1, 2)",
				"S: SELECT * FROM m1", "S: SELECT * FROM m2", "S: INSERT INTO m2 VALUES (1)", "S: SELECT * FROM t",
				"S: UNLOCK TABLES", "S: SELECT * FROM t WHERE id = 1", rep("O", 3, "SELECT COUNT(*) FROM m1"))},
		{id: "lk03", class: c, desc: "a stored procedure that locks tables, and one that reads them, under LOCK TABLES",
			setup: []string{lkSetup1, "INSERT INTO m1 VALUES (5)"},
			steps: steps("S: CREATE PROCEDURE sem_pl() SELECT COUNT(*) FROM m1", "S: CALL sem_pl()", "S: LOCK TABLES m1 READ",
				"S: CALL sem_pl()", "S: CALL sem_pl()", "S: SELECT * FROM m1", "S: UNLOCK TABLES", "S: CALL sem_pl()",
				"S: LOCK TABLES m1 WRITE", "S: INSERT INTO m1 VALUES (6)", "S: CALL sem_pl()", "S: UNLOCK TABLES",
				rep("O", 3, "SELECT COUNT(*) FROM m1"))},
		{id: "lk04", class: c, desc: "under LOCK TABLES a stored function that sets a user variable: the session keeps it after UNLOCK",
			setup: []string{lkSetup1},
			steps: steps("S: "+fnSetVar, "S: LOCK TABLES m1 READ", "S: SELECT sem_f()", "S: SELECT * FROM m1", "S: UNLOCK TABLES",
				afterHidden(uvProbe, uvProbe))},
		{id: "lk05", class: c, desc: "a writer waits for the subject's LOCK TABLES ... WRITE, and goes on after UNLOCK TABLES",
			setup: []string{lkSetup1},
			steps: steps("S: LOCK TABLES m1 WRITE", "W: SET STATEMENT lock_wait_timeout = 1 FOR INSERT INTO m1 VALUES (1)",
				"S: INSERT INTO m1 VALUES (2)", "S: UNLOCK TABLES", "W: INSERT INTO m1 VALUES (3)", "S: SELECT * FROM m1 ORDER BY a")},
		{id: "lk06", class: c, desc: "LOCK TABLES then BEGIN releases the locks implicitly",
			setup: []string{lkSetup1},
			steps: steps("S: LOCK TABLES m1 WRITE", "S: BEGIN", "W: SET STATEMENT lock_wait_timeout = 1 FOR INSERT INTO m1 VALUES (1)",
				"S: SELECT * FROM t WHERE id = 1", "S: COMMIT", "S: SELECT COUNT(*) FROM m1")},
		{id: "lk07", class: c, desc: "max_join_size = 9: a statement gets exactly the server's answer, whatever the catalog reads",
			steps: steps("S: SET max_join_size = 9", "S: !sleep 1100ms", "S: SELECT v FROM t WHERE id = 1", "S: SELECT COUNT(*) FROM t a JOIN t b",
				"S: "+insT, "S: SELECT v FROM t WHERE id = 2", rep("O", 3, "SELECT COUNT(*) FROM t a JOIN t b"))},
		{id: "lk08", class: c, desc: "sql_select_limit = 1 does not hide a stateful stored function from the catalog",
			// Created by root for the suite's account, which may read
			// their bodies; created by the subject they would pin it
			// already (the '@' of @sem_v).
			setup: []string{"CREATE DEFINER = " + semDefiner + " FUNCTION sem_a() RETURNS INT RETURN 1",
				"CREATE DEFINER = " + semDefiner + " FUNCTION sem_f() RETURNS INT BEGIN SET @sem_v = 1; RETURN 1; END"},
			steps: steps("S: SET sql_select_limit = 1", "S: !sleep 1100ms", "S: SELECT sem_a()", "S: SELECT sem_f()", afterHidden(uvProbe, uvProbe))},
		{id: "lk10", class: c, desc: "FLUSH TABLES WITH READ LOCK then UNLOCK TABLES", quiet: true,
			steps: steps("S: FLUSH TABLES WITH READ LOCK", "S: SELECT v FROM t WHERE id = 1", "S: "+insT, "S: UNLOCK TABLES", "S: "+insT,
				"S: SELECT COUNT(*) FROM t")},
		{id: "lk11", class: c, desc: "LOCK TABLES ... WRITE, a trigger on the locked table that sets a user variable",
			setup: []string{lkSetup1},
			steps: steps("S: CREATE TRIGGER sem_tr BEFORE INSERT ON m1 FOR EACH ROW SET @sem_v = NEW.a", "S: LOCK TABLES m1 WRITE",
				"S: INSERT INTO m1 VALUES (7)", "S: UNLOCK TABLES", afterHidden(uvProbe, uvProbe))},
	}
}
