package proxy

import (
	"testing"

	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// TestMirrorReleases: COMMIT/ROLLBACK close the session with RELEASE, or
// with completion_type=RELEASE unless NO RELEASE or ROLLBACK TO.
func TestMirrorReleases(t *testing.T) {
	for _, tc := range []struct {
		q       string
		release bool // completion_type = RELEASE
		want    bool
	}{
		{"COMMIT", false, false},
		{"COMMIT RELEASE", false, true},
		{"ROLLBACK WORK RELEASE", false, true},
		{"COMMIT", true, true},
		{"ROLLBACK", true, true},
		{"COMMIT NO RELEASE", true, false},
		{"ROLLBACK TO SAVEPOINT a", true, false},
		{"ROLLBACK WORK TO a", true, false},
		{"SELECT 1", true, false},
		{"COMMIT; SELECT 1", true, false},
	} {
		var m mirror
		m.completionRelease = tc.release
		info := sqlscan.ScanMode([]byte(tc.q), m.mode)
		if got := m.releases(&info, []byte(tc.q)); got != tc.want {
			t.Errorf("%q (completion_type RELEASE %v): releases %v, want %v", tc.q, tc.release, got, tc.want)
		}
	}
}

// TestMirrorInsertID: which statements leave LAST_INSERT_ID() to be read
// from the connection, and which read the session's value.
func TestMirrorInsertID(t *testing.T) {
	for _, tc := range []struct {
		q               string
		res             result
		unknown, primes bool
		autoIsNull      bool
	}{
		{q: "SELECT 1"},
		{q: "INSERT INTO t VALUES (1)"}, // no id reported: none generated
		{q: "INSERT INTO t VALUES (1)", res: result{insertID: 7}, unknown: true}, // generated, or an explicit value?
		{q: "INSERT INTO t VALUES (1)", res: result{insertID: 7, fixedID: true}}, // the catalog says: a literal
		{q: "INSERT INTO t VALUES (1)", res: result{err: errUnknownCommand}, unknown: true},
		{q: "CALL p()", unknown: true, primes: true},
		{q: "SELECT LAST_INSERT_ID(5)", unknown: true, primes: true},
		{q: "SET LAST_INSERT_ID = 5", res: result{liidTracked: true}, primes: true},
		{q: "SELECT LAST_INSERT_ID()", primes: true},
		{q: "SELECT * FROM t WHERE id IS NULL", autoIsNull: true, primes: true},
		{q: "SELECT 1; SELECT 2", unknown: true, primes: true},
	} {
		var m mirror
		if tc.autoIsNull {
			m.statePins = pinAutoIsNull
		}
		info := sqlscan.ScanMode([]byte(tc.q), m.mode)
		if got := m.insertIDUnknown(&tc.res, &info); got != tc.unknown {
			t.Errorf("%q: insertIDUnknown %v, want %v", tc.q, got, tc.unknown)
		}
		if got := m.readsInsertID(&info); got != tc.primes {
			t.Errorf("%q: readsInsertID %v, want %v", tc.q, got, tc.primes)
		}
	}
}

// TestMirrorClientTracks: the client's own session_track_* settings decide
// what of the server's reports it gets, the server's defaults until the
// globals are known.
func TestMirrorClientTracks(t *testing.T) {
	var m mirror
	for _, v := range []string{"autocommit", "time_zone", "character_set_client"} {
		if !m.clientTracksVar(v) {
			t.Errorf("default list leaves out %s", v)
		}
	}
	if m.clientTracksVar("sql_mode") || m.clientTracks("session_track_schema") {
		t.Error("tracked without being asked")
	}
	m.state.SetVar("session_track_system_variables", "sql_mode, Time_Zone")
	m.state.SetVar("session_track_schema", "ON")
	if !m.clientTracksVar("sql_mode") || !m.clientTracksVar("time_zone") || m.clientTracksVar("autocommit") {
		t.Error("the session's own list is not what decides")
	}
	if !m.clientTracks("session_track_schema") {
		t.Error("session_track_schema=ON not seen")
	}
	m.state.SetVar("session_track_system_variables", "*")
	if !m.clientTracksVar("anything") {
		t.Error("* does not cover every variable")
	}
}

// TestMirrorStatus: the status flags of packets tpproxy writes itself.
func TestMirrorStatus(t *testing.T) {
	var m mirror
	if st := m.status(); st != 0x0002 {
		t.Errorf("fresh session status %#x, want AUTOCOMMIT", st)
	}
	m.pins = pinTransaction
	m.state.SetVar("autocommit", "0")
	if st := m.status(); st != 0x0001 {
		t.Errorf("in a transaction with autocommit=0: %#x, want IN_TRANS", st)
	}
	if m.holdsWork() || m.pinsHeld() != 0 {
		t.Error("pins count without a pinned connection")
	}
}
