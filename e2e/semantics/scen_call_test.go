package semantics

// Class 14: what a CALL shows of the statement before it. The server keeps
// two values of a connection's last statement for the next one: ROW_COUNT(),
// which a procedure's first statement may read, and the row number that
// warnings raised outside row processing name ("Data truncated for column
// 'y' at row 0" for a procedure's parameter), which statements that open a
// table reset and a SELECT moves. Through tpproxy the CALL may run on
// another connection than the statement before it: the connection is given
// the session's ROW_COUNT() first where it can be (-1 or 0), and
// tpproxy's own statements before a CALL move neither.

const (
	clParam = "CREATE PROCEDURE sem_p1(x VARCHAR(10), y CHAR(3)) READS SQL DATA SELECT x, y"
	clRC    = "CREATE PROCEDURE sem_rc() SELECT ROW_COUNT()"
	clCall  = "CALL sem_p1('alpha', 'abcdef') ;; SHOW WARNINGS"
)

func callScenarios() []*scenario {
	c := "call"
	return []*scenario{
		{id: "cl01", class: c, desc: "a CALL's parameter truncated after DO, SET and INSERT: the warning names the row the connection's previous statement left",
			limit: limEcho,
			steps: steps("S: "+clParam, repeat(2, "S: DO 1", "S: "+clCall, "S: SET @@sql_notes = 1", "S: "+clCall, "S: "+insT, "S: "+clCall,
				"S: CALL sem_p1('a', 'b')", "S: "+clCall))},
		{id: "cl02", class: c, desc: "a CALL's parameter truncated after a SELECT: the warning names the SELECT's row",
			limit: limEcho,
			steps: steps("S: "+clParam, repeat(2, "S: SELECT 1", "S: "+clCall, "S: SELECT v FROM t", "S: "+clCall))},
		{id: "cl03", class: c, desc: "ROW_COUNT() after CALL of a procedure whose last statement is an UPDATE, or a SELECT",
			steps: steps("S: CREATE PROCEDURE sem_u() UPDATE t SET v = v + 1", "S: CREATE PROCEDURE sem_us() BEGIN UPDATE t SET v = v + 1; SELECT 1; END",
				"S: CREATE PROCEDURE sem_su() BEGIN SELECT 1; UPDATE t SET v = v + 1; END",
				repeat(2, "S: CALL sem_u()", "S: SELECT ROW_COUNT()", "S: CALL sem_us()", "S: SELECT ROW_COUNT()",
					"S: CALL sem_su()", "S: SELECT ROW_COUNT()"))},
		{id: "cl04", class: c, desc: "ROW_COUNT() read by a procedure's first statement after SELECT, DO and a failed statement",
			steps: steps("S: "+clRC, repeat(3, "S: SELECT 1", "S: CALL sem_rc()", "S: DO 1", "S: CALL sem_rc()",
				"S: SELECT * FROM no_such_table", "S: CALL sem_rc()", "S: SET @@sql_notes = 1", "S: CALL sem_rc()"))},
		{id: "cl05", class: c, desc: "ROW_COUNT() read by a procedure's first statement after an UPDATE of 3 rows",
			limit: limEcho,
			steps: steps("S: "+clRC, repeat(2, "S: UPDATE t SET v = v + 1", "S: CALL sem_rc()"))},
		{id: "cl06", class: c, desc: "ROW_COUNT() inside a procedure after its own statements",
			steps: steps("S: CREATE PROCEDURE sem_in() BEGIN UPDATE t SET v = v + 1; SELECT ROW_COUNT(); DELETE FROM t WHERE id > 100; SELECT ROW_COUNT(); END",
				rep("S", 4, "CALL sem_in()"))},
		{id: "cl07", class: c, desc: "a procedure with a handler and warnings: SHOW WARNINGS after the CALL",
			steps: steps("S: CREATE TABLE n (a TINYINT)",
				"S: CREATE PROCEDURE sem_h() BEGIN DECLARE CONTINUE HANDLER FOR SQLWARNING BEGIN END; INSERT INTO n VALUES (1000); INSERT INTO n VALUES (5); END",
				rep("S", 3, "CALL sem_h() ;; SHOW WARNINGS ;; SELECT @@warning_count"), "S: SELECT * FROM n ORDER BY a")},
		{id: "cl08", class: c, desc: "a procedure's error: the CALL's ERR and SHOW WARNINGS after it",
			steps: steps("S: CREATE TABLE n (a TINYINT NOT NULL)", "S: CREATE PROCEDURE sem_e() BEGIN INSERT INTO n VALUES (NULL); END",
				rep("S", 3, "CALL sem_e() ;; SHOW WARNINGS ;; SHOW ERRORS"))},
	}
}
