package semantics

import (
	"fmt"
	"strconv"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// verdict of a noise check: what is wrong ("" if nothing), and whether
// it shows the scenario's state (a LEAK of the scenario) rather than a
// noise session's own or another noise session's.
type finding struct {
	bad      string
	scenario bool
}

// check runs q and hands its result to judge. Infrastructure errors (no
// backend free in time, queue timeouts) are troubles, not leaks. It
// reports whether the session can go on.
func (n *noiseSession) check(q string, judge func(result) finding) bool {
	if n.ns.stopped() {
		return false // the run is over: stop promptly
	}
	r := n.c.query(q)
	return n.judge(q, r, judge)
}

func (n *noiseSession) judge(q string, r result, judge func(result) finding) bool {
	switch code := r.errCode(); {
	case code == 9001 || code == 9004:
		n.ns.trouble(n.cfg.k, fmt.Sprintf("%s: %s", q, r.display()))
		return false
	case len(r.parts) > 0 && r.parts[0].kind == kindTimeout:
		n.ns.trouble(n.cfg.k, fmt.Sprintf("%s: %s", q, r.display()))
		return false
	}
	if n.ns.stopped() && len(r.parts) > 0 && r.parts[0].kind == kindLost {
		return false
	}
	f := judge(r)
	if f.bad == "" {
		return true
	}
	switch {
	case r.errCode() == 9003:
		// The backend connection broke under this session: in this
		// setting only a scenario's statement (COMMIT RELEASE, KILL, a
		// short wait_timeout) can have done that to a shared connection.
		f.scenario, f.bad = true, f.bad+"; the backend connection broke under it"
	case r.failed() && r.errCode() == 0:
		f.scenario = false // the client connection broke: nothing of the scenario seen
	}
	if q == noiseProbe {
		n.ns.anomaly(n.cfg.k, "settings probe: "+f.bad, f.scenario)
	} else {
		n.ns.anomaly(n.cfg.k, fmt.Sprintf("%s -> %s (%s)", q, r.display(), f.bad), f.scenario)
	}
	return !n.c.dead
}

// wantErr expects an error code; anything else shows scenario state (a
// temporary table, a role's privilege, the multi-statement option).
func wantErr(codes ...uint16) func(result) finding {
	return func(r result) finding {
		for _, c := range codes {
			if r.errCode() == c {
				return finding{}
			}
		}
		return finding{fmt.Sprintf("want ERR %v", codes), true}
	}
}

// wantCells expects one row with these cells; scenario says whether a
// deviation shows the scenario's state.
func wantCells(scenario bool, cells ...string) func(result) finding {
	return func(r result) finding {
		if r.failed() || r.rowCount() != 1 {
			return finding{fmt.Sprintf("want one row %v", cells), scenario && !r.failed()}
		}
		for j, w := range cells {
			if got := r.cell(0, j); got != w {
				return finding{fmt.Sprintf("column %d = %q, want %q", j+1, got, w), scenario}
			}
		}
		return finding{}
	}
}

// wantIDs expects every cell to be the session's own insert id; another
// id is the scenario's unless it is a noise table's.
func wantIDs(own string, n int) func(result) finding {
	return func(r result) finding {
		if r.failed() || r.rowCount() != 1 {
			return finding{"want one row", false}
		}
		for j := range n {
			if got := r.cell(0, j); got != own {
				return finding{fmt.Sprintf("column %d = %q, want its own id %s", j+1, got, own), !isNoiseID(got)}
			}
		}
		return finding{}
	}
}

func wantRows(n int, scenario bool) func(result) finding {
	return func(r result) finding {
		if r.failed() || r.rowCount() != n {
			return finding{fmt.Sprintf("want %d rows", n), scenario && !r.failed()}
		}
		return finding{}
	}
}

func wantOK(r result) finding {
	if r.failed() || r.parts[0].kind != kindOK {
		return finding{"want OK", false}
	}
	return finding{}
}

// wantProbe compares the settings probe column by column: a value that no
// noise session has is the scenario's.
func (n *noiseSession) wantProbe(r result) finding {
	if r.failed() || r.rowCount() != 1 {
		return finding{"want one row", false}
	}
	var bad []string
	scenario := false
	for j, w := range n.cfg.wantProbe {
		if got := r.cell(0, j); got != w {
			how := ""
			if j < len(noiseDefaults) && got == noiseDefaults[j] {
				how = " (the server default: the noise session's own setting was lost)"
			}
			bad = append(bad, fmt.Sprintf("column %d = %q, want %q%s", j+1, got, w, how))
			if j >= len(noiseColumnValues) || !noiseColumnValues[j][got] {
				scenario = true
			}
		}
	}
	if len(bad) == 0 {
		if got := charsetsOf(r.parts[0].fields); got != n.cfg.wantMeta {
			// Column collations follow the connection's: another noise
			// session's SET NAMES ... COLLATE crossed over.
			return finding{"result column collations " + got + ", want " + n.cfg.wantMeta, false}
		}
		return finding{}
	}
	return finding{strings.Join(bad, "; "), scenario}
}

// round is one pass of checks; it reports whether all could run.
func (n *noiseSession) round(r int) bool {
	db := n.ns.sc.db()
	quiet := n.ns.sc.quiet
	if !n.check(noiseProbe, n.wantProbe) {
		return false
	}
	ok := true
	switch r % 4 {
	case 0:
		ok = n.check("SELECT VARIABLE_NAME FROM information_schema.USER_VARIABLES", func(res result) finding {
			if res.failed() || res.rowCount() != 0 {
				return finding{"want no user variables", res.rowCount() > 0 && strings.HasPrefix(res.cell(0, 0), "sem")}
			}
			return finding{}
		}) &&
			n.check("SELECT COUNT(*) FROM "+db+".sem_tmp", wantErr(1146)) &&
			n.check(releaseLocks, wantNoRelease) &&
			n.check("SELECT x FROM "+secretDB+".secret", wantErr(1142)) &&
			n.check("SELECT 1; SELECT 2", wantErr(1064))
	case 1:
		if quiet {
			break
		}
		q := fmt.Sprintf("INSERT INTO n (v) VALUES (%d) /*%s*/", n.cfg.k, noiseMarker)
		ok = n.check(q, func(res result) finding {
			if res.failed() || res.parts[0].kind != kindOK || res.parts[0].insertID == 0 {
				// 1792: a read-only transaction; 1399, 1031: XA state
				// or a connection an XA transaction broke.
				c := res.errCode()
				return finding{"want OK with an insert id", c == 1792 || c == 1399 || c == 1031}
			}
			n.lastID = strconv.FormatUint(res.parts[0].insertID, 10)
			return finding{}
		}) && n.check("SELECT LAST_INSERT_ID()", wantIDs(n.lastID, 1)) &&
			n.check("SELECT LAST_INSERT_ID() + 0, LAST_INSERT_ID() AS x /*"+noiseMarker+"*/", wantIDs(n.lastID, 2))
	case 2:
		ok = n.check("SHOW PROFILES", wantRows(0, true)) &&
			n.check("SELECT COUNT(*) FROM information_schema.OPTIMIZER_TRACE", wantCells(true, "0")) &&
			// Reading an information_schema table clears the diagnostics
			// area (so that SHOW WARNINGS below must be empty) without
			// consuming another session's pending SET TRANSACTION, which
			// a table read would do silently.
			n.check("SELECT VARIABLE_NAME FROM information_schema.USER_VARIABLES /*"+noiseMarker+"*/", func(res result) finding {
				if res.failed() || res.rowCount() != 0 {
					return finding{"want no user variables", res.rowCount() > 0 && strings.HasPrefix(res.cell(0, 0), "sem")}
				}
				return finding{}
			}) &&
			n.check("SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3", wantRows(3, false)) &&
			n.check("SELECT FOUND_ROWS()", wantCells(false, "3")) &&
			n.check("SHOW WARNINGS", wantRows(0, true)) &&
			n.check("SELECT @@warning_count, @@error_count", wantCells(true, "0", "0"))
	case 3:
		if quiet {
			break
		}
		ok = n.check("START TRANSACTION", func(res result) finding {
			if res.failed() || res.parts[0].kind != kindOK || res.parts[0].status&gomysql.SERVER_STATUS_IN_TRANS == 0 {
				return finding{"want OK in a transaction", res.errCode() == 1399 || res.errCode() == 1792}
			}
			return finding{}
		})
		if ok {
			ok = n.check(fmt.Sprintf("INSERT INTO n (v) VALUES (-%d) /*%s*/", n.cfg.k, noiseMarker), func(res result) finding {
				if res.failed() || res.parts[0].kind != kindOK {
					return finding{"want OK (a read-only or XA transaction leaked?)", res.errCode() != 0}
				}
				n.lastID = strconv.FormatUint(res.parts[0].insertID, 10)
				return finding{}
			})
			ok = n.check("ROLLBACK", wantOK) && ok
		}
	}
	switch {
	case ok && r%12 == 11:
		ok = n.stickyProbes(db)
	case ok:
		if why := n.pinned(); why != "" {
			// Something pinned this session (a proxy may pin for
			// statements this one does not expect): clean up as after
			// sticky probes, or forty pinned noise sessions would starve
			// the pool.
			n.ns.notePinned(why)
			ok = n.stickyProbes(db)
		}
	}
	return ok
}

// pinned asks the proxy why this session holds a backend connection
// between statements ("" when it does not).
func (n *noiseSession) pinned() string {
	for _, in := range n.ns.px.Server.Sessions() {
		if in.ID == n.c.id && in.Pinned {
			return in.PinReasons
		}
	}
	return ""
}

func (ns *noiseSet) notePinned(why string) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.rep.pinned == nil {
		ns.rep.pinned = map[string]int{}
	}
	ns.rep.pinned[why]++
}

// charsetsOf lists the collation ids of result columns.
func charsetsOf(fs []*gomysql.Field) string {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = strconv.Itoa(int(f.Charset))
	}
	return strings.Join(ids, ",")
}

// releaseLocks must never release anything: noise takes no locks.
var releaseLocks = func() string {
	var rel []string
	for _, l := range semLocks {
		rel = append(rel, "RELEASE_LOCK('"+l+"')")
	}
	return "SELECT " + strings.Join(rel, ", ")
}()

func wantNoRelease(res result) finding {
	if res.failed() || res.rowCount() != 1 {
		return finding{"want one row", false}
	}
	for j := range semLocks {
		if res.cell(0, j) == "1" {
			return finding{"released a lock it never took: " + semLocks[j], true}
		}
	}
	return finding{}
}

// stickyProbes read state whose mere mention pins a session in tpproxy
// (user variables, @@last_insert_id, named locks, prepared statements,
// handlers, sequences), then COM_RESET_CONNECTION ends the pin and the
// settings are applied again.
func (n *noiseSession) stickyProbes(db string) bool {
	nulls := make([]string, len(semVars))
	for i := range nulls {
		nulls[i] = "NULL"
	}
	// This session is pinned now, and the reset below will clean its
	// backend connection: check everything on it first, so that the
	// reset never wipes out another session's state unseen.
	ok := n.check("SELECT "+strings.Join(semVars, ", "), wantCells(true, nulls...)) &&
		n.check(noiseProbe, n.wantProbe) &&
		n.check("SHOW PROFILES", wantRows(0, true)) &&
		n.check("SELECT COUNT(*) FROM information_schema.OPTIMIZER_TRACE", wantCells(true, "0")) &&
		n.check("SELECT @@last_insert_id, @@identity", func(res result) finding {
			// Always baseline: which backend connection's value this
			// shows is luck, so it cannot tell a scenario's leak from
			// the session's own lost value reliably (the last-insert-id
			// scenarios check these forms for subject and observer).
			f := wantIDs(n.lastID, 2)(res)
			f.scenario = false
			return f
		}) &&
		n.check("SELECT @@insert_id", wantCells(true, "0")) &&
		n.check(releaseLocks, wantNoRelease) &&
		n.check("EXECUTE sem_stmt", wantErr(1243)) &&
		n.check("HANDLER sem_h READ FIRST", wantErr(1109)) &&
		n.check("SELECT LASTVAL("+db+".sem_seq)", func(res result) finding {
			switch c := res.errCode(); {
			case c == 1146 || c == 4091 || c == 1347:
				return finding{}
			case !res.failed() && res.cell(0, 0) == "NULL":
				return finding{}
			}
			return finding{"want NULL or no such sequence", !res.failed()}
		})
	if !ok {
		return false
	}
	r := n.c.reset()
	if !n.judge("COM_RESET_CONNECTION", r, wantOK) {
		return false
	}
	if !resetKeepsLastInsertID {
		n.lastID = "0"
	}
	if err := n.applySettings(); err != nil {
		n.ns.anomaly(n.cfg.k, "settings after reset: "+err.Error(), false)
		return false
	}
	return true
}

// measureMoves counts how often consecutive statements of one session
// ran on different backend connections while the noise runs: the suite
// means something only if that happens most of the time.
func measureMoves(addr, db string) (moved, total int, err error) {
	c, err := dial(dialOpts{addr: addr, user: semUser, pass: semPass, db: db})
	if err != nil {
		return 0, 0, err
	}
	defer c.quit()
	prev := ""
	for i := range 40 {
		// The statement finds itself in the process list: its ID is the
		// server thread running it, whatever the proxy does with ids.
		r := c.query(fmt.Sprintf("SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE '%%semcal_%d_x%%'", i))
		if r.failed() {
			return moved, total, fmt.Errorf("%s", r.display())
		}
		th := r.cell(0, 0)
		if i > 0 {
			total++
			if th != prev {
				moved++
			}
		}
		prev = th
	}
	return moved, total, nil
}
