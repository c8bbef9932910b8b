package semantics

// Class 1: next-transaction characteristics. SET TRANSACTION without a
// scope keyword applies to the session's next transaction only, whichever
// statements come before it; it must never apply to anyone else's.

const (
	insT   = "INSERT INTO t (v) VALUES (10)"
	rwTrx  = "BEGIN ;; INSERT INTO t (v) VALUES (10) ;; ROLLBACK"
	rwTrx2 = "BEGIN ;; INSERT INTO t (v) VALUES (11) ;; ROLLBACK"
)

// rcSteps checks that role's next transaction runs at READ COMMITTED (it
// sees a row root changed meanwhile) or not (REPEATABLE READ: it does
// not); id is the row it reads.
func rcSteps(role, id string) []string {
	return []string{
		role + ": BEGIN ;; SELECT v FROM t WHERE id = " + id,
		"R: UPDATE t SET v = v + 100 WHERE id = " + id,
		role + ": SELECT v FROM t WHERE id = " + id + " ;; COMMIT",
	}
}

func steps(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			out = append(out, v)
		case []string:
			out = append(out, v...)
		}
	}
	return out
}

func nextTransactionScenarios() []*scenario {
	c := "next-transaction"
	return []*scenario{
		{id: "tx01", class: c, desc: "SET TRANSACTION READ ONLY survives autocommit SELECT 1; the next BEGIN is read-only, the one after not",
			steps: repeat(2, "S: SET TRANSACTION READ ONLY", rep("O", 2, trxProbe), "S*3: SELECT 1", "S: "+rwTrx, "S: "+rwTrx2, rep("O", 2, trxProbe))},
		{id: "tx02", class: c, desc: "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE: the next transaction's reads take shared locks",
			steps: steps("S: SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", rep("O", 2, trxProbe), "S*2: SELECT 1",
				"S: BEGIN ;; SELECT v FROM t WHERE id = 1",
				"W: SELECT v FROM t WHERE id = 1 FOR UPDATE NOWAIT",
				"S: COMMIT",
				"S: BEGIN ;; SELECT v FROM t WHERE id = 1",
				"W: SELECT v FROM t WHERE id = 1 FOR UPDATE NOWAIT",
				"S: COMMIT")},
		{id: "tx03", class: c, desc: "SET TRANSACTION ISOLATION LEVEL READ COMMITTED applies to the subject's next transaction, not an observer's",
			steps: steps("S: SET TRANSACTION ISOLATION LEVEL READ COMMITTED", rcSteps("O", "3"), "S: SELECT 1",
				rcSteps("S", "2"), rcSteps("S", "1"))},
		{id: "tx04", class: c, desc: "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY: both apply to the next transaction",
			steps: repeat(2, "S: SET TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY", "S*2: SELECT 1",
				"S: BEGIN ;; "+insT+" ;; SELECT v FROM t WHERE id = 1",
				"W: SELECT v FROM t WHERE id = 1 FOR UPDATE NOWAIT", "S: ROLLBACK", rep("O", 2, trxProbe), "S: "+rwTrx)},
		{id: "tx05", class: c, desc: "SET TRANSACTION READ WRITE after READ ONLY overrides it",
			steps: repeat(2, "S: SET TRANSACTION READ ONLY", "S: SET TRANSACTION READ WRITE", "S*2: SELECT 1", "S: "+rwTrx, rep("O", 2, trxProbe))},
		{id: "tx06", class: c, desc: "SET @@tx_isolation without scope is next-transaction only on MariaDB",
			steps: steps("S: SET @@tx_isolation = 'READ-COMMITTED'", "S: SELECT @@tx_isolation, @@session.tx_isolation",
				rcSteps("O", "3"), "S: SELECT 1", rcSteps("S", "2"), rcSteps("S", "1"), "S: SELECT @@tx_isolation")},
		{id: "tx07", class: c, desc: "SET @@tx_read_only = 1 without scope makes only the next transaction read-only",
			steps: repeat(2, "S: SET @@tx_read_only = 1", "S: SELECT @@tx_read_only, @@session.tx_read_only", "S*2: SELECT 1",
				rep("O", 2, trxProbe), "S: "+rwTrx, "S: "+rwTrx2)},
		{id: "tx08", class: c, desc: "@@transaction_read_only / @@transaction_isolation (unknown on 10.11) fail the same way",
			steps: steps("S: SET @@transaction_read_only = 1", "S: SET @@transaction_isolation = 'SERIALIZABLE'",
				"S: SELECT @@transaction_isolation", "S: SELECT @@tx_isolation, @@tx_read_only", "S: "+rwTrx, rep("O", 2, trxProbe))},
		{id: "tx09", class: c, desc: "a table-reading autocommit SELECT right after SET TRANSACTION READ ONLY consumes it",
			steps: repeat(2, "S: SET TRANSACTION READ ONLY", "S: SELECT COUNT(*) FROM t", "S: "+rwTrx, rep("O", 2, trxProbe))},
		{id: "tx10", class: c, desc: "SELECT 1 then a table-reading SELECT: the characteristics are consumed by the second",
			steps: repeat(2, "S: SET TRANSACTION READ ONLY", "S: SELECT 1", "S: SELECT COUNT(*) FROM t", "S: "+rwTrx, rep("O", 3, trxProbe))},
		{id: "tx11", class: c, desc: "a failing statement between SET TRANSACTION READ ONLY and BEGIN does not consume it",
			steps: repeat(2, "S: SET TRANSACTION READ ONLY", "S: SELECT * FROM sem_nosuch", "S: SELECT 1", "S: "+rwTrx, "S: "+rwTrx2, rep("O", 2, trxProbe))},
		{id: "tx12", class: c, desc: "a statement with a warning between SET TRANSACTION READ ONLY and BEGIN",
			steps: repeat(2, "S: SET TRANSACTION READ ONLY", "S: SELECT 1/0", "S: SHOW WARNINGS", "S: "+rwTrx, rep("O", 2, trxProbe))},
		{id: "tx13", class: c, desc: "the subject drops its socket with READ ONLY pending: nobody's next transaction is read-only",
			steps: steps("S: SET TRANSACTION READ ONLY", "S: !abort", "S: !gone", rep("O", 5, trxProbe), "W: "+rwTrx)},
		{id: "tx14", class: c, desc: "the subject quits with READ COMMITTED pending: the observer's transactions stay REPEATABLE READ",
			steps: steps("S: SET TRANSACTION ISOLATION LEVEL READ COMMITTED", "S: !quit", "S: !gone",
				rcSteps("O", "3"), rcSteps("O", "2"))},
		{id: "tx15", class: c, desc: "SET SESSION TRANSACTION READ ONLY lasts for every transaction until READ WRITE",
			steps: steps("S: SET SESSION TRANSACTION READ ONLY", "S: SELECT @@tx_read_only", "S: "+rwTrx,
				"S: SELECT COUNT(*) FROM t", "S*2: "+rwTrx2, "S: "+insT, rep("O", 2, trxProbe),
				"S: SET SESSION TRANSACTION READ WRITE", "S: "+insT, "S: SELECT @@tx_read_only")},
		{id: "tx16", class: c, desc: "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED lasts for every transaction",
			steps: steps("S: SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "S: SELECT @@tx_isolation",
				rcSteps("S", "1"), "S: SELECT 1", rcSteps("S", "2"), rcSteps("O", "3"))},
		{id: "tx17", class: c, desc: "reading the isolation and read-only variables while characteristics are pending",
			steps: repeat(2, "S: SET TRANSACTION READ ONLY, ISOLATION LEVEL SERIALIZABLE",
				"S: SELECT @@tx_read_only, @@tx_isolation, @@session.tx_read_only, @@session.tx_isolation",
				"S: SELECT @@transaction_isolation", "S: SELECT @@global.tx_isolation, @@global.tx_read_only",
				"S: "+rwTrx, "S: "+rwTrx2)},
		{id: "tx18", class: c, desc: "START TRANSACTION READ WRITE with READ ONLY pending",
			steps: repeat(2, "S: SET TRANSACTION READ ONLY", "S: SELECT 1", "S: START TRANSACTION READ WRITE ;; "+insT+" ;; ROLLBACK",
				"S: "+rwTrx, rep("O", 2, trxProbe))},
		{id: "tx19", class: c, desc: "SET TRANSACTION READ ONLY then autocommit=0: the implicit transaction",
			steps: repeat(2, "S: SET TRANSACTION READ ONLY", "S: SET autocommit = 0", "S: "+insT, "S: ROLLBACK", "S: "+insT,
				"S: ROLLBACK", "S: SET autocommit = 1", rep("O", 2, trxProbe))},
		{id: "tx20", class: c, desc: "COM_RESET_CONNECTION discards pending characteristics",
			steps: repeat(2, "S: SET TRANSACTION READ ONLY", "S: !reset", "S: SELECT 1", "S: "+rwTrx, rep("O", 2, trxProbe))},
		{id: "tx21", class: c, desc: "COM_CHANGE_USER discards pending characteristics",
			steps: repeat(2, "S: SET TRANSACTION READ ONLY", "S: !changeuser", "S: SELECT 1", "S: "+rwTrx, rep("O", 2, trxProbe))},
		{id: "tx22", class: c, desc: "SET TRANSACTION in lower case behind a comment",
			steps: repeat(2, "S: /* pending */ set transaction read only", "S: SELECT 1", "S: "+rwTrx, "S: "+rwTrx2, rep("O", 2, trxProbe))},
		{id: "tx23", class: c, desc: "SET TRANSACTION inside an executable comment",
			steps: repeat(2, "S: /*!50000 SET TRANSACTION READ ONLY */", "S: SELECT 1", "S: "+rwTrx, "S: "+rwTrx2, rep("O", 2, trxProbe))},
		{id: "tx24", class: c, desc: "SET TRANSACTION READ ONLY as a binary-protocol prepared statement",
			steps: repeat(2, "S: !prepare p SET TRANSACTION READ ONLY", "S: !exec p", "S: SELECT 1", "S: "+rwTrx, "S: "+rwTrx2, rep("O", 2, trxProbe))},
		{id: "tx25", class: c, desc: "SET TRANSACTION READ ONLY through SQL PREPARE/EXECUTE",
			steps: repeat(2, "S: PREPARE sem_stmt FROM 'SET TRANSACTION READ ONLY'", "S: EXECUTE sem_stmt", "S: SELECT 1", "S: "+rwTrx,
				"S: "+rwTrx2, rep("O", 2, trxProbe))},
		{id: "tx26", class: c, desc: "SET TRANSACTION READ ONLY in a multi-statement query", multi: true,
			steps: repeat(2, "S: SET TRANSACTION READ ONLY; SELECT 1", "S: SELECT 2", "S: "+rwTrx, "S: "+rwTrx2, rep("O", 2, trxProbe))},
		{id: "tx27", class: c, desc: "SET TRANSACTION READ ONLY inside a stored procedure",
			setup: []string{"CREATE PROCEDURE sem_ptx() SET TRANSACTION READ ONLY"},
			steps: repeat(2, "S: CALL sem_ptx()", "S: SELECT 1", "S: "+rwTrx, "S: "+rwTrx2, rep("O", 2, trxProbe))},
		{id: "tx28", class: c, desc: "SET tx_read_only = 1 (no @@, no scope keyword) and back",
			steps: repeat(2, "S: SET tx_read_only = 1", "S: SELECT @@tx_read_only", "S: SELECT 1", "S: "+rwTrx, "S: "+rwTrx2,
				rep("O", 2, trxProbe), "S: SET tx_read_only = 0", "S: "+rwTrx)},
		{id: "tx29", class: c, desc: "another SET between SET TRANSACTION READ ONLY and BEGIN",
			steps: repeat(2, "S: SET TRANSACTION READ ONLY", "S: SET SESSION sql_select_limit = 10", "S: "+rwTrx, "S: "+rwTrx2, rep("O", 2, trxProbe))},
		{id: "tx30", class: c, desc: "USE another schema between SET TRANSACTION READ ONLY and BEGIN",
			setup: []string{"CREATE DATABASE {{db}}_b", "CREATE TABLE {{db}}_b.t LIKE t"},
			steps: repeat(2, "S: SET TRANSACTION READ ONLY", "S: USE {{db}}_b", "S: "+rwTrx, "S: "+rwTrx2, rep("O", 2, trxProbe))},
	}
}
