package semantics

// Class 4: state the server does not report — user variables, named
// locks, sequence values — created where a lexical scan may not see it:
// executable comments, sql_mode and character set tricks, stored
// functions, procedures, triggers, views and column defaults.

const (
	uvProbe = "SELECT @sem_v"
	// uvList shows a session's user variables without naming one, which
	// would pin it in tpproxy.
	uvList    = "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.USER_VARIABLES ORDER BY 1"
	lockProbe = "SELECT IS_FREE_LOCK('sem_lock'), IS_USED_LOCK('sem_lock') IS NOT NULL"
	// obsLock: an observer must find the lock taken by someone else, and
	// must not be able to release it.
	obsLock  = "SELECT IS_FREE_LOCK('sem_lock') ;; SELECT RELEASE_LOCK('sem_lock')"
	obsLockF = "SELECT IS_FREE_LOCK('sem_lock_f') ;; SELECT RELEASE_LOCK('sem_lock_f')"
	seqProbe = "SELECT LASTVAL(sem_seq) ;; SELECT PREVIOUS VALUE FOR sem_seq"
	fnSetVar = "CREATE FUNCTION sem_f() RETURNS INT BEGIN SET @sem_v = 1; RETURN 1; END"
	seqSetup = "CREATE SEQUENCE sem_seq START WITH 100"
)

// afterHidden are the steps after a statement that leaves state the
// proxy may not notice: the subject first moves on with statements that
// mention no state (so that it leaves the backend holding it), observers
// probe, and only then the subject probes. A probe that names a user
// variable pins the subject wherever it lands: probing first would pin it
// to the backend holding the state by luck and hide the leak.
func afterHidden(sProbe, oProbe string) []string {
	return []string{"S*2: SELECT 1", rep("O", 3, uvList), rep("S", 4, uvList), rep("O", 2, oProbe), rep("S", 2, sProbe), "O: " + uvList}
}

// hiddenVar: the statement assigns @sem_v, which the subject sees on every
// statement afterwards and an observer never does.
func hiddenVar(id, desc, q string, pre ...string) *scenario {
	return &scenario{id: id, class: "hidden-state", desc: desc,
		steps: steps(pre, "S: "+q, afterHidden(uvProbe, uvProbe))}
}

// hiddenLock: the statement takes 'sem_lock'; the subject holds it until
// it releases it, and an observer can neither take nor release it.
func hiddenLock(id, desc, q string, pre ...string) *scenario {
	return &scenario{id: id, class: "hidden-state", desc: desc,
		steps: steps(pre, "S: "+q, "S*2: SELECT 1", rep("O", 5, obsLock), rep("S", 3, lockProbe), "S: SELECT RELEASE_LOCK('sem_lock')", rep("O", 4, lockProbe))}
}

func hiddenStateScenarios() []*scenario {
	c := "hidden-state"
	return []*scenario{
		hiddenVar("hs01", "SELECT @sem_v := 1 then SELECT @sem_v", "SELECT @sem_v := 1"),
		{id: "hs02", class: c, desc: "GET_LOCK, IS_USED_LOCK, RELEASE_LOCK",
			steps: steps("S: SELECT GET_LOCK('sem_lock', 0)", rep("S", 3, lockProbe), rep("O", 5, obsLock),
				"S: SELECT RELEASE_LOCK('sem_lock')", "S: SELECT RELEASE_LOCK('sem_lock')", rep("O", 4, lockProbe))},
		hiddenVar("hs03", "an assignment inside /*!50000 ... */", "SELECT 1 /*!50000 , @sem_v := 2 */"),
		hiddenVar("hs04", "an assignment inside /*M!100000 ... */", "SELECT 1 /*M!100000 , @sem_v := 3 */"),
		hiddenVar("hs05", "a non-executed /*!99999 ' */ hides a quote; the assignment after it is real", "SELECT 1 /*!99999 ' */ , @sem_v:=1 -- '"),
		hiddenVar("hs06", "a non-executed /*M!999999 ' */ hides a quote; the assignment after it is real", "SELECT 1 /*M!999999 ' */ , @sem_v:=1 -- '"),
		hiddenLock("hs07", "GET_LOCK inside an executable comment", "SELECT 1 /*!50000 , GET_LOCK('sem_lock', 0) */"),
		hiddenLock("hs08", "GET_LOCK after a non-executed comment hiding a quote", "SELECT 1 /*!99999 ' */ , GET_LOCK('sem_lock', 0) -- '"),
		hiddenVar("hs09", "NO_BACKSLASH_ESCAPES: 'a\\' ends the string, the assignment is real",
			`SELECT 'a\', @sem_v:=1 -- '`, "S: SET sql_mode = 'NO_BACKSLASH_ESCAPES'"),
		hiddenLock("hs10", "NO_BACKSLASH_ESCAPES: GET_LOCK after 'a\\'",
			`SELECT 'a\', GET_LOCK('sem_lock', 0) -- '`, "S: SET sql_mode = 'NO_BACKSLASH_ESCAPES'"),
		hiddenVar("hs11", "ANSI_QUOTES: a backslash does not escape inside a \"quoted\" identifier",
			`SELECT 1 AS "x\", @sem_v := 1 -- "`, "S: SET sql_mode = 'ANSI_QUOTES'"),
		hiddenVar("hs12", "SET NAMES gbk: 0xbf5c is one character, the quote after it ends the string",
			"SELECT '\xbf\x5c', @sem_v := 1 -- '", "S: SET NAMES gbk"),
		hiddenLock("hs13", "SET NAMES gbk: GET_LOCK after a 0xbf5c character",
			"SELECT '\xbf\x5c', GET_LOCK('sem_lock', 0) -- '", "S: SET NAMES gbk"),
		{id: "hs14", class: c, desc: "a stored function called in a SELECT sets a user variable",
			setup: []string{fnSetVar},
			steps: steps("S: SELECT sem_f()", afterHidden(uvProbe, uvProbe))},
		{id: "hs15", class: c, desc: "a stored function returns GET_LOCK(...)",
			setup: []string{"CREATE FUNCTION sem_fl() RETURNS INT RETURN GET_LOCK('sem_lock_f', 0)"},
			steps: steps("S: SELECT sem_fl()", rep("S", 3, "SELECT IS_FREE_LOCK('sem_lock_f')"), rep("O", 5, obsLockF),
				"S: SELECT RELEASE_LOCK('sem_lock_f')", rep("O", 4, "SELECT IS_FREE_LOCK('sem_lock_f')"))},
		{id: "hs16", class: c, desc: "CALL of a procedure that sets a user variable",
			setup: []string{"CREATE PROCEDURE sem_p() SET @sem_v = 5"},
			steps: steps("S: CALL sem_p()", afterHidden(uvProbe, uvProbe))},
		{id: "hs17", class: c, desc: "CALL of a procedure that takes a named lock",
			setup: []string{"CREATE PROCEDURE sem_pl() DO GET_LOCK('sem_lock', 0)"},
			steps: steps("S: CALL sem_pl()", rep("S", 3, lockProbe), rep("O", 5, obsLock), "S: SELECT RELEASE_LOCK('sem_lock')")},
		{id: "hs18", class: c, desc: "a trigger fired by an INSERT sets a user variable",
			setup: []string{"CREATE TRIGGER sem_tr BEFORE INSERT ON t FOR EACH ROW SET @sem_v = NEW.v"},
			steps: steps("S: INSERT INTO t (v) VALUES (9)", afterHidden(uvProbe, uvProbe))},
		{id: "hs19", class: c, desc: "a trigger fired by an INSERT takes a named lock",
			setup: []string{"CREATE TRIGGER sem_tr BEFORE INSERT ON t FOR EACH ROW SET @sem_w = GET_LOCK('sem_lock', 0)"},
			steps: steps("S: INSERT INTO t (v) VALUES (9)", rep("S", 3, lockProbe), rep("O", 5, obsLock),
				"S: SELECT @sem_w ;; SELECT RELEASE_LOCK('sem_lock')")},
		{id: "hs20", class: c, desc: "an INSERT into a table whose column DEFAULT is NEXTVAL(sem_seq), then LASTVAL",
			setup: []string{seqSetup, "CREATE TABLE ts (id INT DEFAULT NEXTVAL(sem_seq), v INT)"},
			steps: steps("S: INSERT INTO ts (v) VALUES (1)", "S*2: SELECT 1", rep("O", 5, "!connect ;; "+seqProbe), rep("S", 3, seqProbe), "S: SELECT id FROM ts")},
		{id: "hs21", class: c, desc: "SELECT NEXTVAL(sem_seq) then LASTVAL and PREVIOUS VALUE FOR",
			setup: []string{seqSetup},
			steps: steps("S: SELECT NEXTVAL(sem_seq)", "S*2: SELECT 1", rep("O", 5, "!connect ;; "+seqProbe), rep("S", 3, seqProbe), "S: SELECT NEXTVAL(sem_seq)", "S: "+seqProbe)},
		{id: "hs22", class: c, desc: "SETVAL then NEXTVAL and LASTVAL",
			setup: []string{seqSetup},
			steps: steps("S: SELECT SETVAL(sem_seq, 500)", "S: SELECT NEXTVAL(sem_seq)", "S*2: SELECT 1", rep("O", 5, "!connect ;; "+seqProbe), rep("S", 3, seqProbe))},
		{id: "hs23", class: c, desc: "NEXT VALUE FOR in an INSERT",
			setup: []string{seqSetup},
			steps: steps("S: INSERT INTO t (v) VALUES (NEXT VALUE FOR sem_seq)", "S*2: SELECT 1", rep("O", 5, "!connect ;; "+seqProbe), rep("S", 3, seqProbe), "S: SELECT v FROM t WHERE id = 4")},
		{id: "hs24", class: c, desc: "a view that calls a stored function which sets a user variable",
			setup: []string{fnSetVar, "CREATE VIEW sem_vw AS SELECT sem_f() AS f"},
			steps: steps("S: SELECT * FROM sem_vw", afterHidden(uvProbe, uvProbe))},
		hiddenVar("hs25", "DO @sem_v := 7", "DO @sem_v := 7"),
		hiddenVar("hs26", "EXECUTE IMMEDIATE of an assignment (the variable is in a string)", "EXECUTE IMMEDIATE 'SELECT @sem_v := 4'"),
		{id: "hs27", class: c, desc: "a backtick-quoted user variable",
			steps: steps("S: SELECT @`sem_w` := 2", afterHidden("SELECT @sem_w", "SELECT @sem_w"))},
		{id: "hs28", class: c, desc: "a single-quoted user variable",
			steps: steps("S: SELECT @'sem_x' := 3", afterHidden("SELECT @sem_x", "SELECT @sem_x"))},
		hiddenVar("hs29", "INSERT ... SELECT @sem_v := 42", "INSERT INTO t (v) SELECT @sem_v := 42"),
		{id: "hs30", class: c, desc: "GET_LOCK, then the socket drops: the lock is free for the next taker",
			steps: steps("S: SELECT GET_LOCK('sem_lock', 0)", "S: !abort", "S: !gone",
				rep("O", 5, "SELECT IS_FREE_LOCK('sem_lock') ;; SELECT GET_LOCK('sem_lock', 0) ;; SELECT RELEASE_LOCK('sem_lock')"))},
		{id: "hs31", class: c, desc: "a user variable, then the socket drops: new sessions do not have it",
			steps: steps("S: SET @sem_v = 'gone'", "S: !abort", "S: !gone", rep("O", 5, uvProbe), rep("W", 2, uvProbe))},
		hiddenLock("hs32", "GET_LOCK inside a SET", "SET @sem_y = GET_LOCK('sem_lock', 0)"),
		hiddenLock("hs33", "GET_LOCK in a WHERE clause", "SELECT id FROM t WHERE GET_LOCK('sem_lock', 0) = 1 LIMIT 1"),
		{id: "hs34", class: c, desc: "GET_LOCK as a binary-protocol prepared statement",
			steps: steps("S: !prepare p SELECT GET_LOCK(?, 0)", "S: !exec p 'sem_lock'", rep("S", 3, lockProbe), rep("O", 5, obsLock),
				"S: SELECT RELEASE_LOCK('sem_lock')")},
		hiddenLock("hs35", "get_lock with a space before the parenthesis", "select get_lock ('sem_lock', 0)"),
		hiddenLock("hs36", "GET_LOCK with a comment before the parenthesis", "SELECT GET_LOCK/**/('sem_lock', 0)"),
		hiddenLock("hs37", "a whole statement in /*M!100000 ... */ takes a lock", "/*M!100000 SELECT GET_LOCK('sem_lock', 0) */"),
		hiddenVar("hs38", "an assignment written as a comment is no assignment", "SELECT 'x' /* , @sem_v := 1 */"),
		{id: "hs39", class: c, desc: "NEXTVAL as a binary-protocol prepared statement",
			setup: []string{seqSetup},
			steps: steps("S: !prepare p SELECT NEXTVAL(sem_seq)", "S: !exec p", "S*2: SELECT 1", rep("O", 5, "!connect ;; "+seqProbe), rep("S", 3, seqProbe))},
		hiddenVar("hs40", "SELECT ... INTO @sem_v", "SELECT v INTO @sem_v FROM t WHERE id = 2"),
		{id: "hs41", class: c, desc: "an OUT parameter of a procedure lands in a user variable",
			setup: []string{"CREATE PROCEDURE sem_po(OUT x INT) SET x = 42"},
			steps: steps("S: CALL sem_po(@sem_out)", afterHidden("SELECT @sem_out", "SELECT @sem_out"))},
		{id: "hs42", class: c, desc: "the observer's own variable of the same name stays its own",
			steps: steps("S: SET @sem_v = 'subject'", "O: SET @sem_v = 'observer'", rep("S", 5, uvProbe), rep("O", 5, uvProbe), "S: SET @sem_v = NULL",
				rep("O", 4, uvProbe))},
		{id: "hs43", class: c, desc: "RELEASE_ALL_LOCKS releases every lock the subject holds",
			steps: steps("S: SELECT GET_LOCK('sem_lock', 0), GET_LOCK('sem_lock2', 0)", rep("O", 4, "SELECT IS_FREE_LOCK('sem_lock'), IS_FREE_LOCK('sem_lock2')"),
				"S: SELECT RELEASE_ALL_LOCKS()", rep("S", 3, lockProbe), rep("O", 4, "SELECT IS_FREE_LOCK('sem_lock'), IS_FREE_LOCK('sem_lock2')"))},
	}
}
