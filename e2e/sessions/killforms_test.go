package sessions

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/proxy"
)

// transcript runs q (several statements with multiStatements=true) and
// says what the client saw of each result: "OK", the rows, or the error
// code that ended it, joined by " | ".
func transcript(t *testing.T, s *session, q string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rs, err := s.conn.QueryContext(ctx, q)
	if err != nil {
		return fmt.Sprintf("ERR %d", errCode(err))
	}
	defer rs.Close()
	var parts []string
	for {
		cols, err := rs.Columns()
		if err != nil {
			parts = append(parts, fmt.Sprintf("ERR %d", errCode(err)))
			break
		}
		if len(cols) == 0 {
			parts = append(parts, "OK")
		} else {
			var vals []string
			for rs.Next() {
				r, err := scanRow(rs, len(cols))
				if err != nil {
					t.Fatal(err)
				}
				vals = append(vals, r.String())
			}
			parts = append(parts, strings.Join(vals, ","))
		}
		if !rs.NextResultSet() {
			if err := rs.Err(); err != nil {
				parts = append(parts, fmt.Sprintf("ERR %d", errCode(err)))
			}
			break
		}
	}
	return strings.Join(parts, " | ")
}

// TestKillForms: the forms of KILL the server accepts beyond a lone KILL
// [CONNECTION|QUERY] id — among the statements of a multi-statement query,
// inside a stored program being defined, SET STATEMENT ... FOR KILL, KILL
// USER, KILL QUERY ID — and the server's privilege rules for killing
// another account's sessions (CONNECTION ADMIN, SUPER, through a role).
// Every outcome is compared with the same statements run directly.
func TestKillForms(t *testing.T) {
	root := env.Root(t)
	for _, q := range []string{
		"DROP USER IF EXISTS 'tpp_other'@'%', 'tpp_cadmin'@'%', 'tpp_roled'@'%'",
		"DROP ROLE IF EXISTS tpp_kill_role",
		"CREATE USER 'tpp_other'@'%' IDENTIFIED BY 'other-secret'",
		"GRANT ALL ON " + proxytest.DB + ".* TO 'tpp_other'@'%'",
		"CREATE USER 'tpp_cadmin'@'%' IDENTIFIED BY 'cadmin-secret'",
		"GRANT ALL ON " + proxytest.DB + ".* TO 'tpp_cadmin'@'%'",
		"GRANT CONNECTION ADMIN ON *.* TO 'tpp_cadmin'@'%'",
		"CREATE USER 'tpp_roled'@'%' IDENTIFIED BY 'roled-secret'",
		"GRANT ALL ON " + proxytest.DB + ".* TO 'tpp_roled'@'%'",
		"CREATE ROLE tpp_kill_role",
		"GRANT SUPER ON *.* TO tpp_kill_role",
		"GRANT tpp_kill_role TO 'tpp_roled'@'%'",
		"DROP PROCEDURE IF EXISTS " + proxytest.DB + ".tpp_killer",
		"DROP PROCEDURE IF EXISTS " + proxytest.DB + ".tpp_killer2",
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	px := env.StartProxy(t, func(o *proxytest.Options) {
		o.Pool.Size = 4
		o.Proxy.Users = append(o.Proxy.Users,
			proxy.User{Name: "tpp_other", Plain: "other-secret"},
			proxy.User{Name: "tpp_cadmin", Plain: "cadmin-secret"},
			proxy.User{Name: "tpp_roled", Plain: "roled-secret"})
	})
	t.Cleanup(func() { stopSleeps(t, root) })
	srv := env.Server(t)
	type target struct {
		dsn func(user, pass string) string
		via string
	}
	targets := []target{
		{via: "direct", dsn: func(user, pass string) string {
			return srv.DSN(user, pass, proxytest.DB, "multiStatements=true")
		}},
		{via: "proxy", dsn: func(user, pass string) string {
			return px.DSNFor(user, pass, proxytest.DB, "multiStatements=true")
		}},
	}
	pass := map[string]string{proxytest.User: proxytest.Password, "tpp_other": "other-secret",
		"tpp_cadmin": "cadmin-secret", "tpp_roled": "roled-secret"}

	// sleeper starts SLEEP(30) as user and returns its session, its
	// outcome, and the id a KILL names it by.
	sleeper := func(t *testing.T, tg target, user string) (*session, <-chan outcome) {
		s := openSession(t, tg.dsn(user, pass[user]))
		ch := runAsync(t, s, sleepQuery)
		eventually(t, waitTimeout, "SLEEP running", func() bool { return len(sleeping(t, root)) >= 1 })
		return s, ch
	}
	// interrupted reports whether the sleeper's statement was killed (1317
	// for KILL QUERY, the connection lost for KILL), and ends it otherwise.
	interrupted := func(t *testing.T, s *session, ch <-chan outcome) string {
		select {
		case o := <-ch:
			return fmt.Sprintf("killed(%d)", o.code)
		case <-time.After(waitTimeout / 4):
		}
		stopSleeps(t, root)
		<-ch
		return "running"
	}

	cases := []struct {
		name   string
		killer string // the killer's account
		sleep  string // the sleeper's account ("": none)
		pre    string // run by the killer first
		q      func(id uint32) string
	}{
		{name: "multi_kill_first", killer: proxytest.User, sleep: proxytest.User,
			q: func(id uint32) string { return fmt.Sprintf("KILL QUERY %d; SELECT 7", id) }},
		{name: "multi_kill_middle", killer: proxytest.User, sleep: proxytest.User,
			q: func(id uint32) string { return fmt.Sprintf("SELECT 7; KILL QUERY %d; SELECT 8", id) }},
		{name: "multi_kill_unknown_stops", killer: proxytest.User,
			q: func(uint32) string { return "SELECT 6; KILL 999999; SELECT 7" }},
		{name: "multi_kill_last", killer: proxytest.User, sleep: proxytest.User,
			q: func(id uint32) string { return fmt.Sprintf("DO 1; SELECT 2; KILL QUERY %d", id) }},
		{name: "procedure_body", killer: proxytest.User,
			q: func(uint32) string {
				return "CREATE PROCEDURE tpp_killer(i INT) BEGIN IF i > 0 THEN KILL QUERY i; END IF; END; " +
					"CREATE PROCEDURE tpp_killer2() BEGIN SELECT 1; KILL 5; END; SELECT 9; " +
					"DROP PROCEDURE tpp_killer; DROP PROCEDURE tpp_killer2"
			}},
		{name: "string_and_comment", killer: proxytest.User,
			q: func(uint32) string { return "SELECT 'KILL 5; KILL 6' /* KILL 7; */; SELECT 3 -- ; KILL 8" }},
		{name: "set_statement_for_kill", killer: proxytest.User, sleep: proxytest.User,
			q: func(id uint32) string {
				return fmt.Sprintf("SET STATEMENT max_statement_time = 5 FOR KILL QUERY %d", id)
			}},
		{name: "other_account_denied", killer: "tpp_other", sleep: proxytest.User,
			q: func(id uint32) string { return fmt.Sprintf("KILL QUERY %d", id) }},
		{name: "all_privileges", killer: proxytest.User, sleep: "tpp_other",
			q: func(id uint32) string { return fmt.Sprintf("KILL QUERY %d", id) }},
		{name: "connection_admin", killer: "tpp_cadmin", sleep: "tpp_other",
			q: func(id uint32) string { return fmt.Sprintf("KILL QUERY %d", id) }},
		{name: "role_not_active", killer: "tpp_roled", sleep: "tpp_other",
			q: func(id uint32) string { return fmt.Sprintf("KILL QUERY %d", id) }},
		{name: "role_active", killer: "tpp_roled", sleep: "tpp_other", pre: "SET ROLE tpp_kill_role",
			q: func(id uint32) string { return fmt.Sprintf("KILL QUERY %d", id) }},
		{name: "kill_query_user_other_denied", killer: "tpp_other", sleep: proxytest.User,
			q: func(uint32) string { return "KILL QUERY USER " + proxytest.User }},
		{name: "kill_query_user_privileged", killer: "tpp_cadmin", sleep: "tpp_other",
			q: func(uint32) string { return "KILL QUERY USER 'tpp_other'@'%'" }},
		{name: "kill_user_own", killer: "tpp_other", sleep: "tpp_other",
			q: func(uint32) string { return "KILL USER tpp_other; SELECT 1" }},
		{name: "kill_query_id_unknown", killer: proxytest.User,
			q: func(uint32) string { return "KILL QUERY ID 999999999" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var seen [2]string
			for i, tg := range targets {
				var s *session
				var ch <-chan outcome
				var id uint32
				if c.sleep != "" {
					s, ch = sleeper(t, tg, c.sleep)
					id = s.ID
				}
				killer := openSession(t, tg.dsn(c.killer, pass[c.killer]))
				if c.pre != "" {
					mustExec(t, killer, c.pre)
				}
				got := transcript(t, killer, c.q(id))
				if ch != nil {
					got += " ; sleeper " + interrupted(t, s, ch)
				}
				got += " ; killer after: " + transcript(t, killer, "SELECT 1")
				seen[i] = got
				t.Logf("%s: %s", tg.via, got)
				stopSleeps(t, root)
			}
			if seen[0] != seen[1] {
				t.Errorf("through tpproxy %q, directly %q", seen[1], seen[0])
			}
		})
	}
}

// sleeping lists the server threads of any account running SLEEP(30).
func sleeping(t *testing.T, root *sql.DB) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rows, err := root.QueryContext(ctx, `SELECT ID FROM information_schema.PROCESSLIST
		WHERE ID <> CONNECTION_ID() AND INFO LIKE '%SLEEP(30)%' AND COMMAND <> 'Killed'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// stopSleeps interrupts every SLEEP(30) on the server and waits for them
// to end.
func stopSleeps(t *testing.T, root *sql.DB) {
	t.Helper()
	for _, id := range sleeping(t, root) {
		_, _ = root.Exec(fmt.Sprintf("KILL QUERY %d", id))
	}
	eventually(t, waitTimeout, "no SLEEP left", func() bool { return len(sleeping(t, root)) == 0 })
}
