package semantics

// Class 13: conditions inside tpproxy that a direct session never meets
// must not reach the client as errors of tpproxy's own: each is handled
// (another connection, the server's own answer) or ends as the server
// would end it.

func internalScenarios() []*scenario {
	c := "internal"
	return []*scenario{
		{id: "ie01", class: c, desc: "a statement prepared in one schema, executed after the session's later schema was dropped",
			setup: []string{"CREATE DATABASE {{db}}_y", "CREATE TABLE {{db}}_y.tt (a INT)", "INSERT INTO {{db}}_y.tt VALUES (1), (2)",
				"CREATE DATABASE {{db}}_z"},
			teardown: []string{"DROP DATABASE IF EXISTS {{db}}_y", "DROP DATABASE IF EXISTS {{db}}_z"},
			steps: steps("S: USE {{db}}_y", "S: !prepare p SELECT COUNT(*) FROM tt", "S: !exec p", "S: USE {{db}}_z", "S: !exec p",
				"S: DROP DATABASE {{db}}_z", "S: SELECT DATABASE()", rep("S", 3, "!exec p"), "S: SELECT DATABASE()", "S: SELECT 1",
				rep("O", 2, "SELECT DATABASE()"))},
		{id: "ie02", class: c, desc: "a statement prepared without a schema, executed after USE",
			setup:    []string{"CREATE DATABASE {{db}}_y", "CREATE TABLE {{db}}_y.tt (a INT)"},
			teardown: []string{"DROP DATABASE IF EXISTS {{db}}_y"},
			steps: steps("S: USE {{db}}_y", "S: DROP DATABASE {{db}}", "S: CREATE DATABASE {{db}}", "S: USE {{db}}_y",
				"S: !prepare p SELECT COUNT(*) FROM {{db}}_y.tt", "S: DROP DATABASE {{db}}_y", "S: SELECT DATABASE()",
				"S: CREATE DATABASE {{db}}_y", "S: CREATE TABLE {{db}}_y.tt (a INT)", rep("S", 3, "!exec p"), "S: USE {{db}}", rep("S", 2, "!exec p"))},
		{id: "ie03", class: c, desc: "as ie01 with the session pinned (a user variable): its own connection re-prepares",
			setup: []string{"CREATE DATABASE {{db}}_y", "CREATE TABLE {{db}}_y.tt (a INT)", "INSERT INTO {{db}}_y.tt VALUES (1), (2)",
				"CREATE DATABASE {{db}}_z"},
			teardown: []string{"DROP DATABASE IF EXISTS {{db}}_y", "DROP DATABASE IF EXISTS {{db}}_z"},
			steps: steps("S: SET @sem_v = 1", "S: USE {{db}}_y", "S: !prepare p SELECT COUNT(*) FROM {{db}}_y.tt", "S: !exec p", "S: USE {{db}}_z",
				"S: DROP DATABASE {{db}}_z", "S: SELECT DATABASE()", "S: ALTER TABLE {{db}}_y.tt ADD COLUMN b INT", rep("S", 3, "!exec p"),
				"S: SELECT DATABASE(), @sem_v", rep("O", 2, "SELECT DATABASE(), @sem_v"))},
	}
}
