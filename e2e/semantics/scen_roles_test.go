package semantics

// Class 2: roles. SET ROLE gives the session the role's privileges (here
// the only way to read tpsecret.secret) until SET ROLE NONE or the end of
// the session; nobody else may ever have them. MariaDB 10.11 keeps the
// role across COM_RESET_CONNECTION and COM_CHANGE_USER: a proxy that
// cleans a backend connection with a reset must end the role itself.

const (
	roleProbe  = "SELECT CURRENT_ROLE() ;; SELECT x FROM tpsecret.secret"
	rolesProbe = "SELECT CURRENT_ROLE() ;; SELECT x FROM tpsecret.secret ;; SELECT ROLE_NAME FROM information_schema.ENABLED_ROLES"
)

func roleScenarios() []*scenario {
	c := "roles"
	return []*scenario{
		{id: "ro01", class: c, desc: "SET ROLE gives the role's privilege to the subject on every statement, to nobody else",
			steps: steps(rep("O", 4, roleProbe), "S: SET ROLE sem_role", rep("S", 5, roleProbe), rep("O", 5, roleProbe), rep("S", 3, roleProbe))},
		{id: "ro02", class: c, desc: "SET ROLE NONE takes the privilege away again",
			steps: steps("S: SET ROLE sem_role", "S: SELECT x FROM tpsecret.secret", "S: SET ROLE NONE", rep("S", 5, roleProbe), rep("O", 5, roleProbe))},
		{id: "ro03", class: c, desc: "the subject drops its socket with a role set: nobody inherits it",
			steps: steps("S: SET ROLE sem_role", "S: SELECT x FROM tpsecret.secret", "S: !abort", "S: !gone", rep("O", 5, rolesProbe), rep("W", 2, roleProbe))},
		{id: "ro04", class: c, desc: "the subject quits with a role set: nobody inherits it",
			steps: steps("S: SET ROLE sem_role", "S: SELECT CURRENT_ROLE()", "S: !quit", "S: !gone", rep("O", 5, rolesProbe))},
		{id: "ro05", class: c, desc: "COM_RESET_CONNECTION and the role (MariaDB 10.11 keeps it)",
			steps: steps("S: SET ROLE sem_role", "S: SELECT x FROM tpsecret.secret", "S: !reset", rep("S", 5, roleProbe), rep("O", 5, roleProbe))},
		{id: "ro06", class: c, desc: "COM_CHANGE_USER and the role (MariaDB 10.11 keeps it)",
			steps: steps("S: SET ROLE sem_role", "S: SELECT x FROM tpsecret.secret", "S: !changeuser", rep("S", 5, roleProbe), rep("O", 5, roleProbe))},
		{id: "ro07", class: c, desc: "SHOW GRANTS and ENABLED_ROLES reflect the role for the subject only",
			steps: steps("S: SET ROLE sem_role", rep("S", 3, "SHOW GRANTS ;; SELECT ROLE_NAME FROM information_schema.ENABLED_ROLES"),
				rep("O", 5, "SHOW GRANTS ;; SELECT ROLE_NAME FROM information_schema.ENABLED_ROLES"))},
		{id: "ro08", class: c, desc: "SET ROLE through SQL PREPARE/EXECUTE",
			steps: steps("S: PREPARE sem_stmt FROM 'SET ROLE sem_role'", "S: EXECUTE sem_stmt", rep("S", 5, roleProbe), rep("O", 5, roleProbe))},
		{id: "ro09", class: c, desc: "SET ROLE as a binary-protocol prepared statement",
			steps: steps("S: !prepare p SET ROLE sem_role", "S: !exec p", rep("S", 5, roleProbe), rep("O", 5, roleProbe))},
		{id: "ro10", class: c, desc: "SET ROLE inside an executable comment",
			steps: steps("S: /*!100000 SET ROLE sem_role */", rep("S", 5, roleProbe), rep("O", 5, roleProbe))},
		{id: "ro11", class: c, desc: "SET ROLE in a multi-statement query", multi: true,
			steps: steps("S: SET ROLE sem_role; SELECT CURRENT_ROLE()", rep("S", 5, roleProbe), rep("O", 5, roleProbe))},
		{id: "ro12", class: c, desc: "a failing SET ROLE keeps the role that was set",
			steps: steps("S: SET ROLE sem_role", "S: SET ROLE sem_nosuch_role", rep("S", 5, roleProbe), rep("O", 5, roleProbe))},
		{id: "ro13", class: c, desc: "a role set before a transaction; observers probe while it is open",
			steps: steps("S: SET ROLE sem_role", "S: BEGIN ;; SELECT x FROM tpsecret.secret", rep("O", 5, roleProbe), "S: COMMIT",
				rep("S", 3, roleProbe), rep("O", 4, roleProbe))},
		{id: "ro14", class: c, desc: "SET ROLE inside a stored procedure",
			setup: []string{"CREATE PROCEDURE sem_prole() SET ROLE sem_role"},
			steps: steps("S: CALL sem_prole()", rep("S", 5, roleProbe), rep("O", 5, roleProbe))},
		{id: "ro15", class: c, desc: "a role and a user variable, then the socket drops",
			steps: steps("S: SET ROLE sem_role", "S: SET @sem_r = CURRENT_ROLE()", "S: SELECT @sem_r", "S: !abort", "S: !gone",
				rep("O", 5, "SELECT @sem_r ;; "+roleProbe))},
		{id: "ro16", class: c, desc: "lower-case, quoted SET ROLE behind a comment",
			steps: steps("S: /* role */ set role 'sem_role'", rep("S", 5, roleProbe), rep("O", 5, roleProbe))},
		{id: "ro17", class: c, desc: "SET ROLE then SET ROLE NONE then the socket drops; an observer's own SET ROLE works",
			steps: steps("S: SET ROLE sem_role", "S: SET ROLE NONE", "S: !abort", "S: !gone", "O: SET ROLE sem_role",
				rep("O", 4, roleProbe), "O: SET ROLE NONE", rep("O", 4, roleProbe))},
	}
}
