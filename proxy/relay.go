package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// relayMode says how the response to a forwarded command is laid out.
type relayMode uint8

const (
	// modeResult: OK, ERR, LOCAL INFILE request or result sets, repeated
	// while SERVER_MORE_RESULTS_EXISTS (COM_QUERY and most commands).
	modeResult relayMode = iota
	// modeFieldList: column definitions up to EOF or ERR (COM_FIELD_LIST).
	modeFieldList
	// modeStatistics: one string packet (COM_STATISTICS).
	modeStatistics
	// modeExecute: like modeResult with binary rows (COM_STMT_EXECUTE); a
	// cursor ends the response after the column definitions, and an error
	// asking to prepare the statement again is kept from the client.
	modeExecute
)

// errProtocol marks a response that does not follow the protocol; the
// backend connection is discarded.
var errProtocol = errors.New("proxy: unexpected packet from backend")

// result is what the proxy learns from relaying a response.
type result struct {
	hasStatus bool   // status comes from a final OK or EOF
	status    uint16 // of the last OK or EOF
	warnings  uint16
	err       *mysqlwire.Error // the response ended in ERR
	affected  uint64
	insertID  uint64 // last non-zero insert id
	resultSet bool   // the last result was a result set
	rows      uint64

	// stateChanged: the server flagged a session state change other than
	// of transaction state (okChange: in an OK with the details;
	// eofChange: on an EOF, which has no room for them); tracked: some of
	// it was schema or variables tpproxy records.
	stateChanged bool
	okChange     bool
	eofChange    bool
	tracked      bool
	unreplayable bool // the client set a variable that cannot be replayed
	wantCursor   bool // COM_STMT_EXECUTE asked for a cursor
	// clientState is the session state information of the OK being
	// relayed that the client's own session_track_* settings ask for.
	clientState []byte
	charsetOnly bool // character_set_connection changed without collation_connection
	// collationUnknown: the collation that went with it could not be read.
	collationUnknown bool
	// liidTracked: the server reported LAST_INSERT_ID() for a statement
	// that sets it (setsInsertID: SET LAST_INSERT_ID = n).
	liidTracked  bool
	setsInsertID bool
	// fixedID: an INSERT that gives the table's AUTO_INCREMENT column a
	// literal in every row, which leaves LAST_INSERT_ID() as it was
	// whatever id its OK reports.
	fixedID bool
	// chistics is the latest report of pending transaction
	// characteristics (chisticsUnreported when there was none).
	chistics int8
	// scopedVars are SET STATEMENT's variables and lockScoped marks NOWAIT
	// or WAIT n: what the server reports for them holds for the one
	// statement only and is not recorded.
	scopedVars []string
	lockScoped bool
	// routine: the statement uses a stored routine, trigger, view or
	// column default that may leave session state (routineFlags: the
	// scanner flags of their bodies).
	routine      bool
	routineFlags sqlscan.Flags

	// cursor: the server opened a cursor; rows come with COM_STMT_FETCH.
	cursor bool
	// reprepare: the server could not execute the statement until it is
	// prepared again (1615), or no longer knows it (1243); nothing was
	// relayed.
	reprepare bool

	sent      int   // packets relayed to the client
	clientErr error // writing to the client failed; the response was drained
}

// relayer relays backend responses to a session's client: the client
// connection it writes to, the session state the answers change (st), and
// the running statement, which a client that fails is not left waiting
// for (in, id). A value is made for each command (relayerOf).
type relayer struct {
	*clientConn
	st *mirror
	in *inflight
	id uint32
}

// relayerOf is the relayer of a session.
func relayerOf(s *Session) relayer {
	return relayer{clientConn: &s.clientConn, st: &s.mirror, in: &s.inflight, id: s.id}
}

// relay copies the backend's response to the client packet by packet,
// never holding more than one packet, and records what it means for the
// session. The backend response is always read to its end, even when the
// client has gone, so the connection stays usable. An error means the
// backend connection is broken.
func (s *relayer) relay(c *pool.Conn, mode relayMode, res *result) error {
	br := c.Reader()
	switch mode {
	case modeStatistics:
		raw, err := s.backendPacket(br)
		if err != nil {
			return err
		}
		s.toClient(c, raw, res)
		return nil
	case modeFieldList:
		return s.relayRows(c, res, true)
	}
	for {
		raw, err := s.backendPacket(br)
		if err != nil {
			return err
		}
		p := raw[mysqlwire.HeaderSize:]
		switch {
		case len(p) == 0:
			return fmt.Errorf("%w: empty packet", errProtocol)
		case p[0] == mysqlwire.OKHeader:
			more, err := s.relayOK(c, p, res)
			if err != nil || !more {
				return err
			}
		case p[0] == mysqlwire.ERRHeader:
			res.err = mysqlwire.ParseERR(p)
			res.hasStatus = false
			if mode == modeExecute && res.sent == 0 && res.clientErr == nil &&
				(res.err.Code == erNeedReprepare || res.err.Code == erUnknownStmtHandler) {
				res.reprepare = true
				return nil
			}
			s.toClient(c, raw, res)
			return nil
		case mysqlwire.IsEOF(p):
			// A bare EOF answers COM_DEBUG and the like.
			s.relayEOF(c, raw, res, true)
			if res.status&mysqlwire.StatusMoreResults == 0 {
				return nil
			}
		case p[0] == mysqlwire.LocalInfileHeader:
			if !s.st.srv.cfg.LoadDataLocal || s.caps&capLocalFiles == 0 || res.clientErr != nil {
				return s.refuseLocalInfile(c, res)
			}
			if err := s.relayLocalInfile(c, raw, res); err != nil {
				return err
			}
		default:
			// A result set: column count, definitions, EOF, rows, EOF.
			n, _, ln := mysqlwire.LenEncInt(p)
			if ln == 0 || ln != len(p) {
				return fmt.Errorf("%w: bad column count", errProtocol)
			}
			s.toClient(c, raw, res)
			for i := uint64(0); i < n; i++ {
				raw, err := s.backendPacket(br)
				if err != nil {
					return err
				}
				if mysqlwire.IsERR(raw[mysqlwire.HeaderSize:]) {
					return fmt.Errorf("%w: error inside column definitions", errProtocol)
				}
				s.toClient(c, raw, res)
			}
			raw, err := s.backendPacket(br)
			if err != nil {
				return err
			}
			if !mysqlwire.IsEOF(raw[mysqlwire.HeaderSize:]) {
				return fmt.Errorf("%w: no EOF after column definitions", errProtocol)
			}
			s.relayEOF(c, raw, res, false)
			// SERVER_STATUS_CURSOR_EXISTS means rows come by COM_STMT_FETCH
			// only when the execute asked for a cursor: a CALL whose
			// procedure opened cursors of its own carries the flag with
			// its rows right behind.
			if mode == modeExecute && res.wantCursor && res.status&mysqlwire.StatusCursorExists != 0 {
				res.cursor = true
				res.resultSet = true
				return nil
			}
			if err := s.relayRows(c, res, false); err != nil {
				return err
			}
			if res.err != nil || res.status&mysqlwire.StatusMoreResults == 0 {
				return nil
			}
		}
	}
}

// relayRows relays rows (or, for COM_FIELD_LIST, column definitions) up to
// the terminating EOF or ERR.
func (s *relayer) relayRows(c *pool.Conn, res *result, fieldList bool) error {
	br := c.Reader()
	res.resultSet = !fieldList
	res.rows = 0
	cont := false // the previous packet was 16 MiB: this one continues it
	for {
		raw, err := s.backendPacket(br)
		if err != nil {
			return err
		}
		p := raw[mysqlwire.HeaderSize:]
		switch {
		case cont:
		case mysqlwire.IsEOF(p):
			s.relayEOF(c, raw, res, !fieldList)
			return nil
		case mysqlwire.IsERR(p):
			res.err = mysqlwire.ParseERR(p)
			res.hasStatus = false
			s.toClient(c, raw, res)
			return nil
		default:
			res.rows++
		}
		cont = len(p) == mysqlwire.MaxPayload
		s.toClient(c, raw, res)
	}
}

// relayEOF relays an EOF packet, hiding SERVER_SESSION_STATE_CHANGED from
// a client that did not ask for session tracking. final says it may end
// the response (it ends rows), so that a part of a multi-statement query
// served in parts says more results follow (mirror.chained).
func (s *relayer) relayEOF(c *pool.Conn, raw []byte, res *result, final bool) {
	p := raw[mysqlwire.HeaderSize:]
	res.warnings, res.status = mysqlwire.EOFStatus(p)
	res.hasStatus = true
	if res.status&mysqlwire.StatusSessionStateChanged != 0 {
		res.stateChanged = true
		res.eofChange = true
		p[4] &^= byte(mysqlwire.StatusSessionStateChanged >> 8)
	}
	if final && s.st.chained && len(p) >= 5 {
		p[3] |= byte(mysqlwire.StatusMoreResults)
	}
	s.toClient(c, raw, res)
}

// relayOK records an OK packet's effects and relays it in the layout the
// client negotiated. more reports SERVER_MORE_RESULTS_EXISTS.
func (s *relayer) relayOK(c *pool.Conn, p []byte, res *result) (more bool, err error) {
	ok, err := mysqlwire.ParseOK(p, c.SessionTrack())
	if err != nil {
		return false, fmt.Errorf("%w: %w", errProtocol, err)
	}
	res.hasStatus = true
	res.status, res.warnings = ok.Status, ok.Warnings
	res.affected = ok.AffectedRows
	res.resultSet = false
	if ok.InsertID != 0 {
		res.insertID = ok.InsertID
	}
	res.clientState = res.clientState[:0]
	if ok.Status&mysqlwire.StatusSessionStateChanged != 0 {
		if err := s.st.track(c, ok.SessionState, res, s.caps&capSessionTrack != 0); err != nil {
			return false, err
		}
	}
	status := ok.Status
	if s.st.chained {
		status |= mysqlwire.StatusMoreResults
	}
	if res.clientErr == nil {
		if err := s.writeOKPacket(ok.AffectedRows, ok.InsertID, status,
			ok.Warnings, ok.Info, res.clientState); err != nil {
			s.clientFailed(c, res, err)
		} else {
			res.sent++
		}
	}
	return ok.Status&mysqlwire.StatusMoreResults != 0, nil
}

// track applies session state changes reported by the server to the
// session and to the connection it ran on, and keeps in res.clientState
// those the client's session_track_* settings ask for when it tracks
// session state at all (clientTracks).
func (s *mirror) track(c *pool.Conn, info []byte, res *result, clientTracks bool) error {
	sawConn, sawColl := false, false
	for len(info) > 0 {
		e, rest, err := mysqlwire.NextStateEntry(info)
		if err != nil {
			return fmt.Errorf("%w: session state: %w", errProtocol, err)
		}
		info = rest
		switch e.Type {
		case mysqlwire.TrackSystemVariables:
			res.stateChanged, res.okChange = true, true
			name, value, err := mysqlwire.SystemVariable(e.Data)
			if err != nil {
				return fmt.Errorf("%w: session state: %w", errProtocol, err)
			}
			n := strings.ToLower(string(name))
			if slices.Contains(res.scopedVars, n) || res.lockScoped && (n == "lock_wait_timeout" || n == "innodb_lock_wait_timeout") {
				continue
			}
			if clientTracks && s.clientTracksVar(n) {
				res.clientState = mysqlwire.AppendStateEntry(res.clientState, e.Type, e.Data)
			}
			switch n {
			case "last_insert_id", "identity":
				if v, err := strconv.ParseUint(string(value), 10, 64); err == nil && res.setsInsertID {
					s.lastInsertID, res.liidTracked = v, true
					c.SetLastInsertID(v, true)
				}
				continue
			case "pseudo_thread_id":
				if v, err := strconv.ParseUint(string(value), 10, 32); err == nil {
					s.connID = uint32(v)
				}
			}
			switch varClass(name) {
			case varIgnored:
				continue
			case varUnreplayable:
				res.unreplayable = true
				continue
			}
			v := string(value)
			s.state.SetVar(n, v)
			c.State().SetVar(n, v)
			s.tracked = append(s.tracked, n)
			res.tracked = true
			switch n {
			case "character_set_connection":
				sawConn = true
			case "collation_connection":
				sawColl = true
			}
		case mysqlwire.TrackSchema:
			res.stateChanged, res.okChange = true, true
			if clientTracks && s.clientTracks("session_track_schema") {
				res.clientState = mysqlwire.AppendStateEntry(res.clientState, e.Type, e.Data)
			}
			name, err := mysqlwire.TrackedSchema(e.Data)
			if err != nil {
				return fmt.Errorf("%w: session state: %w", errProtocol, err)
			}
			s.state.SetSchema(string(name))
			c.State().SetSchema(string(name))
			res.tracked = true
		case mysqlwire.TrackStateChange:
			res.stateChanged, res.okChange = true, true
			if clientTracks && s.clientTracks("session_track_state_change") {
				res.clientState = mysqlwire.AppendStateEntry(res.clientState, e.Type, e.Data)
			}
		case mysqlwire.TrackTransactionChar:
			res.chistics = chisticsOf(e.Data)
		}
	}
	if sawConn && !sawColl {
		res.charsetOnly = true
	}
	return nil
}

// Variable classes for session tracking.
const (
	varReplayable   = iota
	varIgnored      // follows from other state (the schema's character set)
	varUnreplayable // one-shot or tpproxy's own: pin instead
)

func varClass(name []byte) int {
	switch string(name) {
	case "character_set_database", "collation_database":
		return varIgnored
	case "insert_id", "rand_seed1", "rand_seed2",
		"pseudo_thread_id", "gtid_next", "gtid_seq_no", "gtid_domain_id", "server_id":
		return varUnreplayable
	}
	if bytes.HasPrefix(name, []byte("session_track_")) {
		return varUnreplayable
	}
	return varReplayable
}

// relayLocalInfile serves LOAD DATA LOCAL INFILE: the server asks for a
// file, the client sends it in packets ending with an empty one, and the
// server answers with OK or ERR (read by the caller's loop).
func (s *relayer) relayLocalInfile(c *pool.Conn, raw []byte, res *result) error {
	bw := c.Writer()
	bw.SetSeq(c.Reader().Seq())
	s.in.stopWatching(s.nc)
	defer s.in.allowWatching()
	s.toClient(c, raw, res)
	if err := s.w.Flush(); err != nil {
		s.clientFailed(c, res, err)
	}
	s.r.SetSeq(s.w.Seq())
	for {
		var p []byte
		if res.clientErr == nil {
			var err error
			if p, err = s.r.ReadRaw(); err != nil {
				s.clientFailed(c, res, err)
			}
		}
		if res.clientErr != nil {
			// The client is gone: end the file so the server answers.
			p = []byte{0, 0, 0, 0}
		}
		if err := bw.WriteRaw(p); err != nil {
			c.MarkBroken()
			return fmt.Errorf("%w: %w", pool.ErrBroken, err)
		}
		if len(p) == mysqlwire.HeaderSize {
			break
		}
	}
	s.w.SetSeq(s.r.Seq())
	return c.Flush()
}

// refuseLocalInfile answers a LOCAL INFILE request the session may not
// serve: the server gets an empty file, the client an error instead of the
// server's answer.
func (s *relayer) refuseLocalInfile(c *pool.Conn, res *result) error {
	bw := c.Writer()
	bw.SetSeq(c.Reader().Seq())
	bw.Begin()
	if err := bw.End(); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	raw, err := s.backendPacket(c.Reader())
	if err != nil {
		return err
	}
	if p := raw[mysqlwire.HeaderSize:]; !mysqlwire.IsOK(p) && !mysqlwire.IsERR(p) {
		return fmt.Errorf("%w: answer to a refused LOCAL INFILE", errProtocol)
	}
	res.err = errLoadLocalDisabled
	res.hasStatus = false
	if res.clientErr == nil {
		if err := s.w.WriteERR(res.err); err != nil {
			s.clientFailed(c, res, err)
		}
	}
	return nil
}

// backendPacket reads the next packet of a response, first flushing what
// the client is owed when the read would block.
func (s *relayer) backendPacket(br *mysqlwire.Reader) ([]byte, error) {
	if !br.HasPacket() && s.w.Buffered() > 0 {
		_ = s.w.Flush() // a failure resurfaces at the next write
	}
	raw, err := br.ReadRaw()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", pool.ErrBroken, err)
	}
	return raw, nil
}

// toClient relays one packet unless the client already failed.
func (s *relayer) toClient(c *pool.Conn, raw []byte, res *result) {
	if res.clientErr != nil {
		return
	}
	if err := s.w.WriteRaw(raw); err != nil {
		s.clientFailed(c, res, err)
		return
	}
	res.sent++
}

// drainLimit bounds how long tpproxy reads the rest of a response whose
// client is gone after it killed the statement: the connection is closed
// past it (a server blocked writing into a connection nobody read, a kill
// that does not take), which ends the statement on the server as well.
const drainLimit = 2 * time.Second

// clientFailed records a failed write to the client and stops the
// statement, whose output nobody will read; the rest of the response must
// come within drainLimit.
func (s *relayer) clientFailed(c *pool.Conn, res *result, err error) {
	if res.clientErr != nil {
		return
	}
	res.clientErr = err
	s.in.killCurrent(c, s.st.pool, s.st.srv.log, s.id)
	c.BoundDrain(drainLimit)
}
