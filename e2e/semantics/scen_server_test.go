package semantics

// Class 15: what the server's own test suite (mysql-test-run's main
// suite: sp, sp-vars, sp-error, trigger, xa, user_var, sql_mode,
// set_statement) exercises beyond the classes above: stored programs with
// handlers, cursors, SIGNAL and warnings, triggers, XA in every form, user
// variables with character sets, and SQL modes that limit statements.

func serverSuiteScenarios() []*scenario {
	c := "server-suite"
	return []*scenario{
		{id: "sv01", class: c, desc: "a BEFORE INSERT trigger truncates a value: the INSERT's warnings, and a user variable it sets",
			steps: steps("S: CREATE TABLE n (a CHAR(2), b INT)",
				"S: CREATE TRIGGER sem_tr BEFORE INSERT ON n FOR EACH ROW BEGIN SET NEW.a = CONCAT(NEW.a, 'xyz'); SET @sem_v = NEW.b; END",
				"S: INSERT INTO n VALUES ('a', 5) ;; SHOW WARNINGS", "S: INSERT INTO n VALUES ('b', 6), ('c', 7) ;; SHOW WARNINGS ;; SELECT @@warning_count",
				"S: SELECT * FROM n ORDER BY b", afterHidden(uvProbe, uvProbe))},
		{id: "sv02", class: c, desc: "an AFTER UPDATE trigger writes a log table; the subject's UPDATE and the log",
			steps: steps("S: CREATE TABLE lg (id INT, old INT, new INT)",
				"S: CREATE TRIGGER sem_tr AFTER UPDATE ON t FOR EACH ROW INSERT INTO lg VALUES (NEW.id, OLD.v, NEW.v)",
				"S: UPDATE t SET v = v * 10 WHERE id <= 2", "S: SELECT * FROM lg ORDER BY id", rep("O", 2, "SELECT COUNT(*) FROM lg"))},
		{id: "sv03", class: c, desc: "a stored function with a cursor loop and a NOT FOUND handler, called in a SELECT",
			steps: steps("S: CREATE FUNCTION sem_sum() RETURNS INT READS SQL DATA BEGIN DECLARE done INT DEFAULT 0; DECLARE x, s INT DEFAULT 0; "+
				"DECLARE cur CURSOR FOR SELECT v FROM t; DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1; OPEN cur; "+
				"l: LOOP FETCH cur INTO x; IF done THEN LEAVE l; END IF; SET s = s + x; END LOOP; CLOSE cur; RETURN s; END",
				rep("S", 3, "SELECT sem_sum()"), rep("O", 2, "SELECT sem_sum()"))},
		{id: "sv04", class: c, desc: "SIGNAL, RESIGNAL and GET DIAGNOSTICS in a procedure: the CALL's error and the diagnostics after it",
			steps: steps("S: CREATE PROCEDURE sem_sig(i INT) BEGIN DECLARE EXIT HANDLER FOR SQLSTATE '45000' BEGIN GET DIAGNOSTICS CONDITION 1 @sem_v = MESSAGE_TEXT; "+
				"RESIGNAL SET MESSAGE_TEXT = 'resignalled'; END; IF i > 0 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'raised', MYSQL_ERRNO = 1644; END IF; END",
				"S: CALL sem_sig(0)", "S: CALL sem_sig(1) ;; SHOW WARNINGS ;; SELECT @sem_v", "S: CALL sem_sig(1) ;; GET DIAGNOSTICS CONDITION 1 @sem_w = MESSAGE_TEXT ;; SELECT @sem_w")},
		{id: "sv05", class: c, desc: "a procedure with an EXIT handler for a duplicate key, and warnings it leaves",
			steps: steps("S: CREATE TABLE u (a INT PRIMARY KEY)", "S: CREATE PROCEDURE sem_dup() BEGIN DECLARE EXIT HANDLER FOR 1062 SELECT 'dup' AS r; "+
				"INSERT INTO u VALUES (1); INSERT INTO u VALUES (1); SELECT 'not reached'; END",
				rep("S", 2, "CALL sem_dup() ;; SHOW WARNINGS ;; SELECT COUNT(*) FROM u"))},
		{id: "sv06", class: c, desc: "XA in every form: two-phase commit, rollback after prepare, one-phase commit, XA RECOVER",
			steps: steps("S: XA START 'sem_x1'", "S: INSERT INTO t (v) VALUES (81)", "S: XA END 'sem_x1'", "S: XA PREPARE 'sem_x1'",
				"W: SELECT COUNT(*) FROM t WHERE v = 81", "S: XA COMMIT 'sem_x1'", "W: SELECT COUNT(*) FROM t WHERE v = 81",
				"S: XA START 'sem_x2'", "S: INSERT INTO t (v) VALUES (82)", "S: XA END 'sem_x2'", "S: XA PREPARE 'sem_x2'", "S: XA ROLLBACK 'sem_x2'",
				"S: XA START 'sem_x3'", "S: INSERT INTO t (v) VALUES (83)", "S: XA END 'sem_x3'", "S: XA COMMIT 'sem_x3' ONE PHASE",
				"S: SELECT v FROM t WHERE v > 80 ORDER BY v", rep("O", 2, "SELECT v FROM t WHERE v > 80 ORDER BY v"))},
		{id: "sv07", class: c, desc: "XA START while a transaction is active, and a statement in an idle XA branch: the server's errors",
			steps: steps("S: BEGIN", "S: XA START 'sem_x4'", "S: ROLLBACK", "S: XA START 'sem_x4'", "S: XA END 'sem_x4'", "S: INSERT INTO t (v) VALUES (84)",
				"S: XA ROLLBACK 'sem_x4'", "S: SELECT COUNT(*) FROM t WHERE v = 84")},
		{id: "sv08", class: c, desc: "user variables: assignment in expressions, character sets and collations kept",
			steps: steps("S: SELECT @sem_v := 1, @sem_v + 1", "S: SET @sem_w = _latin1'caf\xe9' COLLATE latin1_german1_ci",
				"S*2: SELECT 1", rep("S", 3, "SELECT @sem_v, CHARSET(@sem_w), COLLATION(@sem_w), HEX(@sem_w)"),
				rep("O", 3, "SELECT @sem_v, CHARSET(@sem_w), COLLATION(@sem_w)"))},
		{id: "sv09", class: c, desc: "STRICT_ALL_TABLES and ERROR_FOR_DIVISION_BY_ZERO refuse what the default mode only warns about",
			steps: steps("S: CREATE TABLE n (a TINYINT, d DATE)", "S: SET sql_mode = 'STRICT_ALL_TABLES,ERROR_FOR_DIVISION_BY_ZERO'",
				rep("S", 2, "INSERT INTO n VALUES (1000, NULL)"), rep("S", 2, "INSERT INTO n VALUES (1 / 0, NULL)"),
				rep("O", 2, "INSERT INTO n VALUES (1000, NULL) ;; SHOW WARNINGS"), "S: SELECT COUNT(*) FROM n")},
		{id: "sv10", class: c, desc: "ONLY_FULL_GROUP_BY refuses a GROUP BY the default mode accepts",
			steps: steps("S: SET sql_mode = CONCAT(@@sql_mode, ',ONLY_FULL_GROUP_BY')", rep("S", 3, "SELECT id, v FROM t GROUP BY v"),
				rep("O", 3, "SELECT COUNT(*) FROM (SELECT id, v FROM t GROUP BY v) x"))},
		{id: "sv11", class: c, desc: "a procedure that sets @@autocommit = 0: the subject's later writes wait for COMMIT, nobody else's",
			steps: steps("S: CREATE PROCEDURE sem_ac() SET @@autocommit = 0", "S: CALL sem_ac()", "S: INSERT INTO t (v) VALUES (91)",
				rep("O", 3, "SELECT @@autocommit ;; "+trxProbe), "W: SELECT COUNT(*) FROM t WHERE v = 91", "S: COMMIT",
				"W: SELECT COUNT(*) FROM t WHERE v = 91", "S: SET autocommit = 1", rep("O", 2, "SELECT @@autocommit"))},
		{id: "sv12", class: c, desc: "a procedure that changes sql_mode: the server restores the caller's after it",
			steps: steps("S: CREATE PROCEDURE sem_m() BEGIN SET sql_mode = 'ANSI_QUOTES'; SELECT @@sql_mode; END", rep("S", 3, "CALL sem_m() ;; SELECT @@sql_mode"),
				"S: SELECT \"v\" FROM t WHERE id = 1", rep("O", 2, "SELECT @@sql_mode"))},
		{id: "sv13", class: c, desc: "sql_select_limit inside and outside a procedure and a prepared statement",
			steps: steps("S: CREATE PROCEDURE sem_sl() SELECT id FROM t", "S: SET sql_select_limit = 1", rep("S", 2, "CALL sem_sl()"),
				"S: !prepare p SELECT id FROM t", rep("S", 2, "!exec p"), "S: SELECT id FROM t", rep("O", 2, "SELECT id FROM t"))},
		{id: "sv14", class: c, desc: "a temporary table created under LOCK TABLES, used after UNLOCK TABLES",
			steps: steps("S: LOCK TABLES t WRITE", "S: CREATE TEMPORARY TABLE sem_tmp (a INT)", "S: INSERT INTO sem_tmp SELECT id FROM t",
				"S: UNLOCK TABLES", rep("S", 3, "SELECT * FROM sem_tmp ORDER BY a"), rep("O", 3, "SELECT * FROM sem_tmp"))},
	}
}
