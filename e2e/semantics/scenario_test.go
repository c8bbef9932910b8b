package semantics

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// scenario is one differential test: the same script runs over direct
// server connections and through the proxy, in a fresh database each time.
//
// Steps are strings "<role>[*n][!][: ]<command>[ ;; <command>...]":
//
//   - role S is the subject, O an observer whose every deviation is a LEAK
//     (it must never see the subject's state; A, B and C are three more
//     observers, so that together they can hold all three backend
//     connections of the proxy at once), W a witness (another
//     client whose observations are about the subject's semantics, e.g.
//     a lock it must or must not wait for, or a new session after the
//     subject left), R root on a direct connection (setup mid-scenario,
//     DDL behind the proxy's back).
//   - *n repeats the step (all its commands, in order) n times: which
//     backend connection a statement lands on is not deterministic.
//   - ! makes a deviation of the step a LEAK whatever the role.
//   - a command is SQL sent as one COM_QUERY, or one of
//     !prepare NAME SQL, !exec NAME [ARG...] (integers, 'strings', NULL),
//     !close NAME (the binary protocol); !reset (COM_RESET_CONNECTION);
//     !changeuser [DB] (COM_CHANGE_USER to the same account); !quit
//     (COM_QUIT); !abort (drop the socket without COM_QUIT); !connect (a
//     new connection for the role); !gone (wait until the role's last
//     connection has disappeared from the server, or from the proxy);
//     !sleep DURATION.
//
// Placeholders: {{id}} is the connection id of the session running the
// step as it learnt it with SELECT CONNECTION_ID() after connecting;
// {{sid}}, {{oid}}, {{wid}} are the subject's, observer's and witness's;
// {{db}} the scenario's database (S, O and W start in it). Results that
// show one of these ids are compared with the placeholder in its place.
type scenario struct {
	id, class, desc string
	// limit, when set, names a documented limit (README "Known limits")
	// that allows the subject's observations to differ.
	limit string
	// setup runs as root in {{db}} after the base tables t (id, v) with
	// three rows and t2 (id, v) AUTO_INCREMENT=1000 exist.
	setup    []string
	teardown []string
	steps    []string
	// meta compares full column definitions, not only names.
	meta bool
	// multi connects the subject with CLIENT_MULTI_STATEMENTS.
	multi bool
	// quiet stops noise writes during the scenario (a global read lock
	// would block them all).
	quiet bool
}

// Classes, in report order.
var classes = []string{
	"next-transaction", "roles", "lasting-set", "hidden-state", "last-insert-id",
	"stmt-cache", "facilities", "xa", "differs", "session", "set-forms", "locks", "internal", "call", "server-suite",
}

// step is one parsed step line.
type step struct {
	line string
	role byte
	reps int
	leak bool
	cmds []string
}

var stepRE = regexp.MustCompile(`^([SOWRABC])(?:\*(\d+))?(!)?: (.+)$`)

func parseStep(line string) (step, error) {
	m := stepRE.FindStringSubmatch(line)
	if m == nil {
		return step{}, fmt.Errorf("bad step %q", line)
	}
	st := step{line: line, role: m[1][0], reps: 1, leak: m[3] == "!" || strings.Contains("OABC", m[1])}
	if m[2] != "" {
		n, err := strconv.Atoi(m[2])
		if err != nil || n < 1 || n > 20 {
			return step{}, fmt.Errorf("bad repeat in %q", line)
		}
		st.reps = n
	}
	for _, c := range strings.Split(m[4], " ;; ") {
		c = strings.TrimSpace(c)
		if c == "" {
			return step{}, fmt.Errorf("empty command in %q", line)
		}
		if strings.HasPrefix(c, "!") {
			if err := checkCommand(c); err != nil {
				return step{}, fmt.Errorf("%q: %w", line, err)
			}
			if st.role == 'R' && c != "!sleep" && !strings.HasPrefix(c, "!sleep ") {
				return step{}, fmt.Errorf("%q: root runs SQL only", line)
			}
		}
		st.cmds = append(st.cmds, c)
	}
	return st, nil
}

func checkCommand(c string) error {
	f := strings.Fields(c)
	switch f[0] {
	case "!reset", "!quit", "!abort", "!connect", "!gone":
		if len(f) != 1 {
			return fmt.Errorf("%s takes no argument", f[0])
		}
	case "!changeuser":
		if len(f) > 2 {
			return fmt.Errorf("!changeuser [DB]")
		}
	case "!prepare":
		if len(f) < 3 {
			return fmt.Errorf("!prepare NAME SQL")
		}
	case "!exec":
		if len(f) < 2 {
			return fmt.Errorf("!exec NAME [ARG...]")
		}
		if _, err := parseArgs(strings.Join(f[2:], " ")); err != nil {
			return err
		}
	case "!close":
		if len(f) != 2 {
			return fmt.Errorf("!close NAME")
		}
	case "!sleep":
		if len(f) != 2 {
			return fmt.Errorf("!sleep DURATION")
		}
		if _, err := time.ParseDuration(f[1]); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown command %s", f[0])
	}
	return nil
}

// parseArgs reads !exec arguments: integers, 'quoted strings', NULL.
func parseArgs(s string) ([]any, error) {
	var out []any
	s = strings.TrimSpace(s)
	for s != "" {
		switch {
		case s[0] == '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated string in %q", s)
			}
			out = append(out, s[1:1+end])
			s = s[2+end:]
		default:
			tok := s
			if i := strings.IndexByte(s, ' '); i >= 0 {
				tok = s[:i]
			}
			s = s[len(tok):]
			if strings.EqualFold(tok, "NULL") {
				out = append(out, nil)
				break
			}
			n, err := strconv.ParseInt(tok, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad argument %q", tok)
			}
			out = append(out, n)
		}
		s = strings.TrimSpace(s)
	}
	return out, nil
}

// baseSetup is what every scenario database starts with.
var baseSetup = []string{
	"CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB",
	"INSERT INTO t (v) VALUES (1), (2), (3)",
	"CREATE TABLE t2 (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB AUTO_INCREMENT=1000",
	// sw belongs to the end sweep; scenarios do not touch it.
	"CREATE TABLE sw (a INT) ENGINE=InnoDB",
}

func (sc *scenario) db() string { return "sem_" + sc.id }

// allScenarios lists every scenario, by class.
func allScenarios() []*scenario {
	var all []*scenario
	for _, f := range []func() []*scenario{
		nextTransactionScenarios, roleScenarios, lastingSetScenarios, hiddenStateScenarios,
		lastInsertIDScenarios, stmtCacheScenarios, facilityScenarios, xaScenarios,
		differsScenarios, sessionScenarios, sessionScenarios2, setFormScenarios, lockScenarios, internalScenarios, callScenarios, serverSuiteScenarios,
	} {
		all = append(all, f()...)
	}
	return all
}

// Helpers that keep scenario definitions short.

// rep is a step repeated n times.
func rep(role string, n int, cmds ...string) string {
	return fmt.Sprintf("%s*%d: %s", role, n, strings.Join(cmds, " ;; "))
}

// repeat repeats a sequence of steps n times: a proxy that keeps state
// on the wrong backend connection shows it only when the session moves,
// which is likely but not certain each time.
func repeat(n int, ss ...any) []string {
	one := steps(ss...)
	var out []string
	for range n {
		out = append(out, one...)
	}
	return out
}

// trxProbe is an observer's short write transaction, which must never be
// read-only, in XA state or otherwise affected by the subject.
const trxProbe = "START TRANSACTION ;; INSERT INTO t2 (v) VALUES (5) ;; SELECT @@in_transaction ;; ROLLBACK"
