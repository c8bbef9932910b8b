package semantics

import "fmt"

// Class 5: LAST_INSERT_ID in every form, after every way of changing it,
// while other sessions insert on the same backend connections.

// liForms reads the session's LAST_INSERT_ID in forms the proxy may or may
// not answer itself; all must agree with the server.
const liForms = "SELECT LAST_INSERT_ID() ;; SELECT @@last_insert_id ;; SELECT @@identity ;; SELECT LAST_INSERT_ID() + 0 ;; " +
	"SELECT LAST_INSERT_ID() AS x ;; SELECT LAST_INSERT_ID() FROM DUAL"

// obsInsert makes the observer insert into t2 (ids from 1000), so that
// its value and the subject's differ.
const obsInsert = "O: INSERT INTO t2 (v) VALUES (7)"

// liSweep checks deterministically that no backend connection hands a
// new session another session's LAST_INSERT_ID: once the scenario's
// clients have left, three sessions each hold one backend connection (so
// all of them) in a transaction and insert; they commit and leave (a
// transaction that ended needs no reset); three new sessions hold them
// again and read the value, which directly is 0 for a new connection.
func liSweep() []string {
	ss := []string{"S: !quit", "S: !gone", "O: !quit", "O: !gone", "W: !quit", "W: !gone"}
	for i, r := range []string{"A", "B", "C"} {
		ss = append(ss, fmt.Sprintf("%s: BEGIN ;; INSERT INTO t2 (v) VALUES (%d)", r, 90+i))
	}
	for _, r := range []string{"A", "B", "C"} {
		ss = append(ss, r+": COMMIT ;; !quit")
	}
	for _, r := range []string{"A", "B", "C"} {
		ss = append(ss, r+": !connect ;; BEGIN ;; SELECT @@last_insert_id, @@identity, LAST_INSERT_ID() + 0")
	}
	for _, r := range []string{"A", "B", "C"} {
		ss = append(ss, r+": ROLLBACK")
	}
	return ss
}

// obsOwn: the observer inserts and reads its own value in every form,
// then a new observer connection, which has inserted nothing, reads it
// on whatever backend its statement lands.
const obsOwn = "INSERT INTO t2 (v) VALUES (8) ;; " + liForms + " ;; !connect ;; SELECT @@last_insert_id, @@identity, LAST_INSERT_ID() + 0"

func lastInsertIDScenarios() []*scenario {
	c := "last-insert-id"
	return []*scenario{
		{id: "li01", class: c, desc: "every form of LAST_INSERT_ID after an INSERT, with the observer inserting in between",
			steps: steps("S: INSERT INTO t (v) VALUES (1)", rep("S", 2, liForms), obsInsert, rep("S", 2, liForms), rep("O", 2, obsOwn), liSweep())},
		{id: "li02", class: c, desc: "INSERT parent; BEGIN; INSERT child (pid) VALUES (LAST_INSERT_ID())",
			setup: []string{"CREATE TABLE c (id INT AUTO_INCREMENT PRIMARY KEY, pid INT) AUTO_INCREMENT = 500"},
			steps: steps("S: INSERT INTO t (v) VALUES (1)", obsInsert, "S: BEGIN ;; INSERT INTO c (pid) VALUES (LAST_INSERT_ID()) ;; SELECT pid FROM c ;; COMMIT",
				"S: SELECT pid FROM c", rep("S", 2, liForms), liSweep())},
		{id: "li03", class: c, desc: "a pin began before the INSERT (user variable set earlier)",
			steps: steps("S: SET @sem_v = 1", "S: INSERT INTO t (v) VALUES (1)", obsInsert, rep("S", 2, liForms), rep("O", 2, obsOwn), liSweep())},
		{id: "li04", class: c, desc: "a pin began after the INSERT, on whatever backend the session got",
			steps: steps("S: INSERT INTO t (v) VALUES (1)", obsInsert, "S: SET @sem_v = 1", rep("S", 2, liForms), rep("O", 2, obsOwn), liSweep())},
		{id: "li05", class: c, desc: "SQL PREPARE/EXECUTE of SELECT LAST_INSERT_ID()",
			steps: steps("S: PREPARE sem_stmt FROM 'SELECT LAST_INSERT_ID(), @@last_insert_id'", "S: INSERT INTO t (v) VALUES (1)", obsInsert,
				rep("S", 2, "EXECUTE sem_stmt"), rep("O", 2, obsOwn), liSweep())},
		{id: "li06", class: c, desc: "binary-protocol prepared SELECT LAST_INSERT_ID() and @@last_insert_id",
			steps: steps("S: !prepare a SELECT LAST_INSERT_ID()", "S: !prepare b SELECT @@last_insert_id, LAST_INSERT_ID() + 0",
				"S: INSERT INTO t (v) VALUES (1)", obsInsert, rep("S", 2, "!exec a ;; !exec b"), rep("O", 2, obsOwn), liSweep())},
		{id: "li07", class: c, desc: "an explicit id into an AUTO_INCREMENT column keeps the old LAST_INSERT_ID",
			steps: steps("S: INSERT INTO t (v) VALUES (1)", "S: INSERT INTO t (id, v) VALUES (100, 1)", obsInsert, rep("S", 2, liForms), liSweep())},
		{id: "li08", class: c, desc: "INSERT ... ON DUPLICATE KEY UPDATE, plain and with id = LAST_INSERT_ID(id)",
			steps: steps("S: INSERT INTO t (v) VALUES (1)", "S: INSERT INTO t (id, v) VALUES (1, 5) ON DUPLICATE KEY UPDATE v = v + 1",
				"S: "+liForms, "S: INSERT INTO t (id, v) VALUES (2, 5) ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id), v = v + 1",
				obsInsert, rep("S", 2, liForms), rep("O", 2, obsOwn), liSweep())},
		{id: "li09", class: c, desc: "SET LAST_INSERT_ID = 77",
			steps: steps("S: SET LAST_INSERT_ID = 77", obsInsert, rep("S", 2, liForms), rep("O", 2, obsOwn), liSweep())},
		{id: "li10", class: c, desc: "SET @@last_insert_id = 78",
			steps: steps("S: SET @@last_insert_id = 78", obsInsert, rep("S", 2, liForms), rep("O", 2, obsOwn), liSweep())},
		{id: "li11", class: c, desc: "LAST_INSERT_ID(expr) sets it, a later INSERT replaces it",
			steps: steps("S: SELECT LAST_INSERT_ID(500)", obsInsert, rep("S", 2, liForms), "S: INSERT INTO t (v) VALUES (1)", rep("S", 2, liForms), rep("O", 2, obsOwn), liSweep())},
		{id: "li12", class: c, desc: "SET insert_id = 500 then INSERT",
			steps: steps("S: SET insert_id = 500", "S: SELECT @@insert_id", obsInsert, "S: INSERT INTO t (v) VALUES (1)", rep("S", 2, liForms),
				"S: SELECT MAX(id) FROM t ;; SELECT @@insert_id", rep("O", 2, liForms+" ;; SELECT @@insert_id"), liSweep())},
		{id: "li13", class: c, desc: "CALL of a procedure that inserts",
			setup: []string{"CREATE PROCEDURE sem_pi() INSERT INTO t (v) VALUES (99)"},
			steps: steps("S: CALL sem_pi()", obsInsert, rep("S", 2, liForms), rep("O", 2, obsOwn), liSweep())},
		{id: "li14", class: c, desc: "a multi-row INSERT: LAST_INSERT_ID is the first row's",
			steps: steps("S: INSERT INTO t (v) VALUES (1), (2), (3)", obsInsert, rep("S", 2, liForms), liSweep())},
		{id: "li15", class: c, desc: "sql_auto_is_null = 1: WHERE id IS NULL finds the last inserted row",
			steps: steps("S: SET sql_auto_is_null = 1", repeat(2, "S: INSERT INTO t (v) VALUES (44)", obsInsert,
				rep("S", 4, "SELECT id, v FROM t WHERE id IS NULL")), rep("O", 2, "SELECT id, v FROM t2 WHERE id IS NULL ;; SELECT @@sql_auto_is_null"), liSweep())},
		{id: "li16", class: c, desc: "a failed INSERT (duplicate key) keeps the old value",
			steps: steps("S: INSERT INTO t (v) VALUES (1)", "S: INSERT INTO t (id, v) VALUES (1, 1)", obsInsert, rep("S", 2, liForms), liSweep())},
		{id: "li17", class: c, desc: "INSERT IGNORE of a duplicate and REPLACE",
			steps: steps("S: INSERT INTO t (v) VALUES (1)", "S: INSERT IGNORE INTO t (id, v) VALUES (1, 1)", "S: "+liForms,
				"S: REPLACE INTO t (v) VALUES (8)", obsInsert, rep("S", 2, liForms), liSweep())},
		{id: "li18", class: c, desc: "LAST_INSERT_ID() in a WHERE clause and in an UPDATE",
			steps: steps("S: INSERT INTO t (v) VALUES (21)", obsInsert, rep("S", 2, "SELECT v FROM t WHERE id = LAST_INSERT_ID()"),
				"S: UPDATE t SET v = 22 WHERE id = LAST_INSERT_ID()", "S: SELECT ROW_COUNT()", "S: SELECT v FROM t WHERE id = 4", liSweep())},
		{id: "li19", class: c, desc: "an observer that never inserted sees 0 in every form",
			steps: steps("S: INSERT INTO t (v) VALUES (1)", "S: SELECT LAST_INSERT_ID(12345)", rep("O", 4, "!connect ;; "+liForms), liSweep())},
		{id: "li20", class: c, desc: "INSERT ... SELECT",
			steps: steps("S: INSERT INTO t (v) SELECT v FROM t WHERE id <= 2", obsInsert, rep("S", 2, liForms), liSweep())},
		{id: "li21", class: c, desc: "COM_RESET_CONNECTION resets LAST_INSERT_ID in every form",
			steps: steps("S: INSERT INTO t (v) VALUES (1)", "S: !reset", obsInsert, rep("S", 3, liForms+" ;; !reset"), liSweep())},
		{id: "li22", class: c, desc: "an INSERT in a rolled-back transaction still sets LAST_INSERT_ID",
			steps: steps("S: BEGIN ;; INSERT INTO t (v) VALUES (1) ;; ROLLBACK", obsInsert, rep("S", 2, liForms), liSweep())},
		{id: "li23", class: c, desc: "a binary-protocol INSERT, then the text forms",
			steps: steps("S: !prepare p INSERT INTO t (v) VALUES (?)", "S: !exec p 5", "S: !exec p 6", obsInsert, rep("S", 2, liForms), liSweep())},
		{id: "li24", class: c, desc: "SET @@identity = 79 and SET identity = 80",
			steps: steps("S: SET @@identity = 79", "S: "+liForms, "S: SET identity = 80", obsInsert, rep("S", 2, liForms), rep("O", 2, obsOwn), liSweep())},
		{id: "li25", class: c, desc: "SET insert_id = 900 must not reach the observer's INSERT",
			steps: steps("S: SET insert_id = 900", rep("O", 3, "INSERT INTO t2 (v) VALUES (1) ;; SELECT LAST_INSERT_ID() ;; SELECT @@insert_id"),
				"S: INSERT INTO t (v) VALUES (1)", "S: SELECT id FROM t ORDER BY id", liSweep())},
		{id: "li27", class: c, desc: "no backend connection hands a new session another session's LAST_INSERT_ID (all three checked)",
			steps: steps("S: INSERT INTO t (v) VALUES (1)", obsInsert, liSweep())},
		{id: "li28", class: c, desc: "explicit ids in every row of a multi-row INSERT keep the old value, also inside a transaction",
			steps: steps("S: INSERT INTO t (v) VALUES (1)", "S: INSERT INTO t (id, v) VALUES (200, 1), (201, 2)", obsInsert, rep("S", 2, liForms),
				"S: BEGIN ;; INSERT INTO `t` (`v`, `ID`) VALUE (3, 202) ;; "+liForms+" ;; COMMIT", obsInsert, rep("S", 2, liForms), liSweep())},
		{id: "li29", class: c, desc: "an explicit 0, NULL or DEFAULT for the AUTO_INCREMENT column generates an id",
			steps: steps("S: INSERT INTO t (v) VALUES (1)", "S: INSERT INTO t (id, v) VALUES (0, 1)", obsInsert, rep("S", 2, liForms),
				"S: INSERT INTO t (id, v) VALUES (NULL, 2)", obsInsert, rep("S", 2, liForms),
				"S: INSERT INTO t (id, v) VALUES (DEFAULT, 3)", obsInsert, rep("S", 2, liForms), liSweep())},
		{id: "li30", class: c, desc: "a multi-row INSERT whose later row generates (explicit, then NULL)",
			steps: steps("S: INSERT INTO t (v) VALUES (1)", "S: INSERT INTO t (id, v) VALUES (300, 1), (NULL, 2), (302, 3)", obsInsert, rep("S", 2, liForms), liSweep())},
		{id: "li31", class: c, desc: "an AUTO_INCREMENT column not named id, given and not given; a literal in another column",
			setup: []string{"CREATE TABLE a2 (k INT, n INT AUTO_INCREMENT PRIMARY KEY) AUTO_INCREMENT = 700"},
			steps: steps("S: INSERT INTO a2 (k) VALUES (5)", "S: INSERT INTO a2 (k, n) VALUES (5, 750)", obsInsert, rep("S", 2, liForms),
				"S: INSERT INTO a2 (n, k) VALUES (NULL, 760)", obsInsert, rep("S", 2, liForms),
				"S: INSERT INTO {{db}}.a2 (k, n) VALUES (1, 780) ON DUPLICATE KEY UPDATE k = 2", obsInsert, rep("S", 2, liForms), liSweep())},
		{id: "li32", class: c, desc: "an explicit id into a table that has no AUTO_INCREMENT column reports no id",
			setup: []string{"CREATE TABLE a3 (id INT PRIMARY KEY, v INT)"},
			steps: steps("S: INSERT INTO t (v) VALUES (1)", "S: INSERT INTO a3 (id, v) VALUES (5, 1)", obsInsert, rep("S", 2, liForms), liSweep())},
		{id: "li26", class: c, desc: "LAST_INSERT_ID after the subject's backend was used by an inserting observer in a transaction",
			steps: steps("S: INSERT INTO t (v) VALUES (1)", "O: BEGIN ;; INSERT INTO t2 (v) VALUES (1) ;; INSERT INTO t2 (v) VALUES (2) ;; COMMIT",
				rep("S", 2, liForms), rep("O", 2, obsOwn), liSweep())},
	}
}
