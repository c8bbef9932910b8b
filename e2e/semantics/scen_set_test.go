package semantics

// Class 3: lasting SETs that look statement-scoped, and statement-scoped
// ones that must not last. SET STATEMENT ... FOR and NOWAIT / WAIT n
// change variables for one statement; a SET SESSION inside them, or a
// NOWAIT that is only an alias, lasts.

const (
	lsProbe  = "SELECT @@sort_buffer_size, @@max_statement_time, @@lock_wait_timeout, @@innodb_lock_wait_timeout"
	lsProbe2 = "SELECT @@group_concat_max_len, @@sql_select_limit, @@time_zone, @@tx_isolation, @@sql_mode"
)

func lastingSetScenarios() []*scenario {
	c := "lasting-set"
	return []*scenario{
		{id: "ls01", class: c, desc: "SET STATEMENT max_statement_time=5 FOR SET SESSION sort_buffer_size=...: the inner SET lasts",
			steps: steps("S: SET STATEMENT max_statement_time = 5 FOR SET SESSION sort_buffer_size = 65536", rep("S", 5, lsProbe), rep("O", 5, lsProbe))},
		{id: "ls02", class: c, desc: "SET STATEMENT sort_buffer_size=... FOR SET SESSION sort_buffer_size=...: what the server keeps",
			steps: steps("S: SET STATEMENT sort_buffer_size = 100000 FOR SET SESSION sort_buffer_size = 70000", rep("S", 5, lsProbe), rep("O", 5, lsProbe))},
		{id: "ls03", class: c, desc: "SET STATEMENT ... FOR SELECT: nothing lasts",
			steps: steps("S: SET STATEMENT max_statement_time = 5, sort_buffer_size = 70000 FOR SELECT @@max_statement_time, @@sort_buffer_size",
				rep("S", 5, lsProbe), rep("O", 4, lsProbe))},
		{id: "ls04", class: c, desc: "SET SESSION x = (SELECT 65536 AS nowait): NOWAIT is only an alias, the SET lasts",
			steps: steps("S: SET SESSION sort_buffer_size = (SELECT 65536 AS nowait)", rep("S", 5, lsProbe), rep("O", 5, lsProbe))},
		{id: "ls05", class: c, desc: "SELECT ... FOR UPDATE NOWAIT leaves the lock wait timeouts as they were",
			steps: steps("S: SELECT v FROM t WHERE id = 1 FOR UPDATE NOWAIT", rep("S", 5, lsProbe), rep("O", 4, lsProbe))},
		{id: "ls06", class: c, desc: "SELECT ... FOR UPDATE WAIT 1 leaves the lock wait timeouts as they were",
			steps: steps("S: SELECT v FROM t WHERE id = 1 FOR UPDATE WAIT 1", rep("S", 5, lsProbe), rep("O", 4, lsProbe))},
		{id: "ls07", class: c, desc: "SET SESSION lock_wait_timeout = 5, then NOWAIT: the session's 5 stays",
			steps: steps("S: SET SESSION lock_wait_timeout = 5", "S: SELECT v FROM t WHERE id = 1 FOR UPDATE NOWAIT", rep("S", 5, lsProbe), rep("O", 5, lsProbe))},
		{id: "ls08", class: c, desc: "NOWAIT, then SET SESSION lock_wait_timeout = 5, then WAIT 1 again",
			steps: steps("S: SELECT v FROM t WHERE id = 2 FOR UPDATE NOWAIT", "S: SET SESSION lock_wait_timeout = 5", rep("S", 3, lsProbe),
				"S: SELECT v FROM t WHERE id = 2 FOR UPDATE WAIT 1", rep("S", 3, lsProbe), rep("O", 4, lsProbe))},
		{id: "ls09", class: c, desc: "SET STATEMENT lock_wait_timeout=3 FOR SET SESSION innodb_lock_wait_timeout=9 (a plugin variable)",
			steps: steps("S: SET STATEMENT lock_wait_timeout = 3 FOR SET SESSION innodb_lock_wait_timeout = 9", rep("S", 5, lsProbe), rep("O", 5, lsProbe))},
		{id: "ls10", class: c, desc: "SET STATEMENT ... FOR SET SESSION sql_mode: the new mode lasts and changes parsing",
			steps: steps("S: SET STATEMENT max_statement_time = 5 FOR SET SESSION sql_mode = 'ANSI_QUOTES,PIPES_AS_CONCAT'",
				rep("S", 5, "SELECT @@sql_mode ;; SELECT 'a' || 'b'"), rep("O", 5, "SELECT @@sql_mode ;; SELECT 'a' || 'b'"))},
		{id: "ls11", class: c, desc: "SET STATEMENT ... FOR SET @sem_v = 1: the user variable lasts",
			steps: steps("S: SET STATEMENT max_statement_time = 5 FOR SET @sem_v = 1", afterHidden(uvProbe, uvProbe))},
		{id: "ls12", class: c, desc: "SET STATEMENT sql_select_limit=1 FOR SELECT: the limit does not last",
			steps: steps("S: SET STATEMENT sql_select_limit = 1 FOR SELECT id FROM t", rep("S", 5, "SELECT id FROM t"), rep("O", 4, "SELECT id FROM t"))},
		{id: "ls13", class: c, desc: "SET SESSION group_concat_max_len = (SELECT 2048 nowait): alias without AS",
			steps: steps("S: SET SESSION group_concat_max_len = (SELECT 2048 nowait)", rep("S", 5, lsProbe2), rep("O", 5, lsProbe2))},
		{id: "ls14", class: c, desc: "LOCK TABLES ... WRITE NOWAIT then UNLOCK TABLES: timeouts unchanged",
			steps: steps("S: LOCK TABLES t WRITE NOWAIT", "S: UNLOCK TABLES", rep("S", 5, lsProbe), rep("O", 4, lsProbe))},
		{id: "ls15", class: c, desc: "ALTER TABLE ... NOWAIT: timeouts unchanged, the column is there",
			steps: steps("S: ALTER TABLE t NOWAIT ADD COLUMN c INT", rep("S", 5, lsProbe+" ;; SELECT * FROM t WHERE id = 1"), rep("O", 4, lsProbe))},
		{id: "ls16", class: c, desc: "SET STATEMENT sql_select_limit=1 FOR SET SESSION sql_select_limit = 2",
			steps: steps("S: SET STATEMENT sql_select_limit = 1 FOR SET SESSION sql_select_limit = 2", rep("S", 5, "SELECT id FROM t"),
				rep("O", 5, "SELECT id FROM t"))},
		{id: "ls17", class: c, desc: "SET STATEMENT ... FOR SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
			steps: steps("S: SET STATEMENT max_statement_time = 5 FOR SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
				rep("S", 3, lsProbe2), rcSteps("S", "1"), rcSteps("O", "2"), rep("O", 4, lsProbe2))},
		{id: "ls18", class: c, desc: "SET STATEMENT ... FOR UPDATE: nothing lasts",
			steps: steps("S: SET STATEMENT max_statement_time = 10, innodb_lock_wait_timeout = 2 FOR UPDATE t SET v = v + 1 WHERE id = 1",
				rep("S", 5, lsProbe), rep("O", 4, lsProbe))},
		{id: "ls19", class: c, desc: "SET STATEMENT ... FOR SET SESSION time_zone: the zone lasts",
			steps: steps("S: SET STATEMENT max_statement_time = 5 FOR SET SESSION time_zone = '-03:45'",
				rep("S", 5, "SELECT @@time_zone, FROM_UNIXTIME(1000000)"), rep("O", 5, "SELECT @@time_zone"))},
		{id: "ls20", class: c, desc: "LOCK IN SHARE MODE NOWAIT and SKIP LOCKED leave the timeouts unchanged",
			steps: steps("S: SELECT v FROM t WHERE id = 1 LOCK IN SHARE MODE NOWAIT", "S: SELECT v FROM t WHERE id = 2 FOR UPDATE SKIP LOCKED",
				rep("S", 5, lsProbe), rep("O", 4, lsProbe))},
		{id: "ls21", class: c, desc: "SET STATEMENT innodb_lock_wait_timeout=1 FOR SELECT ... FOR UPDATE: a plugin variable restored",
			steps: steps("S: SET STATEMENT innodb_lock_wait_timeout = 1 FOR SELECT v FROM t WHERE id = 1 FOR UPDATE", rep("S", 5, lsProbe), rep("O", 4, lsProbe))},
		{id: "ls22", class: c, desc: "a binary-protocol SELECT ... FOR UPDATE NOWAIT leaves the timeouts unchanged",
			steps: steps("S: !prepare p SELECT v FROM t WHERE id = ? FOR UPDATE NOWAIT", "S: !exec p 1", rep("S", 5, lsProbe), rep("O", 4, lsProbe))},
		{id: "ls23", class: c, desc: "a NOWAIT inside a string literal does not make a SET statement-scoped",
			steps: steps("S: SET SESSION sql_select_limit = 2, @sem_w = 'x FOR UPDATE NOWAIT'", rep("S", 5, "SELECT id FROM t ;; SELECT @sem_w"),
				rep("O", 4, "SELECT id FROM t ;; SELECT @sem_w"))},
		{id: "ls24", class: c, desc: "SET STATEMENT with a SET SESSION of two variables inside",
			steps: steps("S: SET STATEMENT max_statement_time = 5 FOR SET SESSION sort_buffer_size = 65536, group_concat_max_len = 4096",
				rep("S", 5, lsProbe+" ;; "+lsProbe2), rep("O", 5, lsProbe+" ;; "+lsProbe2))},
	}
}
