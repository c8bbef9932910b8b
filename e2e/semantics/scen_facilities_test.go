package semantics

// Class 7: per-connection server facilities: profiling, the optimizer
// trace, session status counters. The session must see its own
// statements only, the same ones as directly, and nobody else any.

const (
	profProbe  = "SHOW PROFILES ;; SELECT @@profiling"
	traceProbe = "SELECT QUERY FROM information_schema.OPTIMIZER_TRACE ;; SELECT @@optimizer_trace"
)

func facilityScenarios() []*scenario {
	c := "facilities"
	return []*scenario{
		{id: "pf01", class: c, desc: "SET profiling=1, statements, SHOW PROFILES lists exactly the session's own",
			steps: steps("S: SET profiling = 1", "S: SELECT 1", "S: SELECT COUNT(*) FROM t", "S: SELECT v FROM t WHERE id = 2", "S: SHOW PROFILES",
				"S: SELECT QUERY_ID, COUNT(*) > 0 FROM information_schema.PROFILING GROUP BY QUERY_ID", rep("O", 5, profProbe))},
		{id: "pf02", class: c, desc: "profiling on, then the socket drops: nobody sees the profiles",
			steps: steps("S: SET profiling = 1", "S: SELECT 1", "S: SELECT 2", "S: !abort", "S: !gone", rep("O", 5, profProbe), rep("W", 2, profProbe))},
		{id: "pf03", class: c, desc: "profiling on then off: the history stays the session's",
			steps: steps("S: SET profiling = 1", "S: SELECT 1", "S: SET profiling = 0", "S: SELECT 2", rep("S", 3, "SHOW PROFILES"), rep("O", 5, profProbe))},
		{id: "pf04", class: c, desc: "SET optimizer_trace='enabled=on', a SELECT, then its trace",
			steps: steps("S: SET optimizer_trace = 'enabled=on'", "S: SELECT * FROM t WHERE id = 1", "S: SELECT QUERY FROM information_schema.OPTIMIZER_TRACE",
				"S: SELECT v FROM t WHERE v > 1", "S: "+traceProbe, rep("O", 5, traceProbe))},
		{id: "pf05", class: c, desc: "the optimizer trace after the session disconnected belongs to nobody",
			steps: steps("S: SET optimizer_trace = 'enabled=on'", "S: SELECT * FROM t WHERE id = 1", rep("O", 5, "!connect ;; "+traceProbe),
				"S: !quit", "S: !gone", rep("O", 5, "!connect ;; "+traceProbe))},
		{id: "pf06", class: c, desc: "trace on then off: the last trace stays the session's own",
			steps: steps("S: SET optimizer_trace = 'enabled=on'", "S: SELECT * FROM t WHERE id = 3", "S: SET optimizer_trace = 'enabled=off'",
				rep("S", 3, traceProbe), rep("O", 4, traceProbe))},
		{id: "pf07", class: c, desc: "SHOW SESSION STATUS LIKE 'Com_select' deltas", limit: limStatus,
			steps: steps("S: SHOW SESSION STATUS LIKE 'Com_select'", "S: SELECT 1", "S: SELECT 2", "S: SHOW SESSION STATUS LIKE 'Com_select'")},
		{id: "pf08", class: c, desc: "SHOW SESSION STATUS LIKE 'Last_query_cost' after a table read", limit: limStatus,
			steps: steps("S: SELECT * FROM t WHERE v > 1", "S: SHOW SESSION STATUS LIKE 'Last_query_cost'")},
		{id: "pf09", class: c, desc: "profiling on, then COM_RESET_CONNECTION: profiling is off and the history stays", limit: limProfileReset,
			steps: steps("S: SET profiling = 1", "S: SELECT 1", "S: !reset", rep("S", 3, profProbe), rep("O", 4, profProbe))},
		{id: "pf10", class: c, desc: "profiling_history_size = 2 keeps the session's last two statements",
			steps: steps("S: SET profiling_history_size = 2", "S: SET profiling = 1", "S: SELECT 1", "S: SELECT 2", "S: SELECT 3", "S: SHOW PROFILES",
				rep("O", 4, profProbe+" ;; SELECT @@profiling_history_size"))},
		{id: "pf11", class: c, desc: "SHOW PROFILE for a query of the session",
			steps: steps("S: SET profiling = 1", "S: SELECT COUNT(*) FROM t", "S: SELECT COUNT(*) > 0 FROM information_schema.PROFILING WHERE QUERY_ID = 1",
				"S: SHOW PROFILES")},
		{id: "pf12", class: c, desc: "a trace of a statement in a transaction, read after COMMIT",
			steps: steps("S: SET optimizer_trace = 'enabled=on'", "S: BEGIN ;; SELECT v FROM t WHERE id = 2 ;; COMMIT", "S: "+traceProbe, rep("O", 4, traceProbe))},
	}
}
