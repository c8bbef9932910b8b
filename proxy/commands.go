package proxy

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// Command bytes, by the names the front end uses (mysqlwire defines them).
const (
	comSleep            = mysqlwire.ComSleep
	comQuit             = mysqlwire.ComQuit
	comInitDB           = mysqlwire.ComInitDB
	comQuery            = mysqlwire.ComQuery
	comFieldList        = mysqlwire.ComFieldList
	comCreateDB         = mysqlwire.ComCreateDB
	comDropDB           = mysqlwire.ComDropDB
	comRefresh          = mysqlwire.ComRefresh
	comShutdown         = mysqlwire.ComShutdown
	comStatistics       = mysqlwire.ComStatistics
	comProcessInfo      = mysqlwire.ComProcessInfo
	comConnect          = mysqlwire.ComConnect
	comProcessKill      = mysqlwire.ComProcessKill
	comDebug            = mysqlwire.ComDebug
	comPing             = mysqlwire.ComPing
	comTime             = mysqlwire.ComTime
	comDelayedInsert    = mysqlwire.ComDelayedInsert
	comChangeUser       = mysqlwire.ComChangeUser
	comBinlogDump       = mysqlwire.ComBinlogDump
	comTableDump        = mysqlwire.ComTableDump
	comConnectOut       = mysqlwire.ComConnectOut
	comRegisterSlave    = mysqlwire.ComRegisterSlave
	comStmtPrepare      = mysqlwire.ComStmtPrepare
	comStmtExecute      = mysqlwire.ComStmtExecute
	comStmtSendLongData = mysqlwire.ComStmtSendLongData
	comStmtClose        = mysqlwire.ComStmtClose
	comStmtReset        = mysqlwire.ComStmtReset
	comSetOption        = mysqlwire.ComSetOption
	comStmtFetch        = mysqlwire.ComStmtFetch
	comDaemon           = mysqlwire.ComDaemon
	comBinlogDumpGTID   = mysqlwire.ComBinlogDumpGTID
	comResetConnection  = mysqlwire.ComResetConnection
	comStmtBulkExecute  = mysqlwire.ComStmtBulkExecute
)

// dispatch serves one command. quit ends the session normally; an error
// ends it because the connection can no longer be trusted.
func (s *Session) dispatch(ctx context.Context, p []byte) (quit bool, err error) {
	if len(p) == 0 {
		return false, s.writeErr(errUnknownCommand)
	}
	s.srv.stats.statements.Add(1)
	switch p[0] {
	case comQuery:
		return false, s.query(ctx, p)
	case comPing:
		if s.srv.draining.Load() {
			// Tells a pool's health check to stop handing out this
			// connection while its transaction finishes.
			return false, s.writeErr(errShuttingDown)
		}
		return false, s.writeOK()
	case comQuit:
		return true, nil
	case comInitDB:
		return false, s.initDB(ctx, string(p[1:]))
	case comFieldList, comStatistics, comRefresh, comProcessInfo, comDebug:
		return false, s.execute(ctx, p, modeOf(p[0]), &sqlscan.Info{}, nil)
	case comSetOption:
		return false, s.setOption(p)
	case comResetConnection:
		s.resetSession(ctx)
		return false, s.writeOK()
	case comChangeUser:
		return s.changeUser(ctx, p[1:])
	case comProcessKill:
		if len(p) < 5 {
			return false, s.writeErr(&mysqlwire.Error{Code: erUnknownCom, State: "08S01", Message: "Malformed COM_PROCESS_KILL"})
		}
		return s.kill(ctx, binary.LittleEndian.Uint32(p[1:]), false)
	case comStmtPrepare:
		return false, s.stmtPrepare(ctx, p)
	case comStmtExecute:
		return false, s.stmtExecute(ctx, p)
	case comStmtFetch:
		return false, s.stmtFetch(ctx, p)
	case comStmtBulkExecute:
		if s.extCaps&pool.ExtBulk != 0 {
			return false, s.stmtBulkExecute(ctx, p)
		}
	case comStmtReset:
		return false, s.stmtReset(p)
	case comStmtClose:
		s.stmtClose(p) // no answer
		return false, nil
	case comStmtSendLongData:
		s.stmts.sendLongData(p, s.r.MaxPacket, s.srv.budget) // no answer
		return false, nil
	case comBinlogDump, comBinlogDumpGTID, comRegisterSlave, comTableDump:
		return false, s.writeErr(&mysqlwire.Error{Code: erNotSupportedYet, State: "42000",
			Message: "tpproxy does not relay replication; connect replicas to the server directly"})
	case comShutdown:
		return false, s.writeErr(&mysqlwire.Error{Code: erNotSupportedYet, State: "42000",
			Message: "tpproxy does not relay COM_SHUTDOWN; run SHUTDOWN on the server directly"})
	}
	return false, s.writeErr(&mysqlwire.Error{Code: erUnknownCom, State: "08S01",
		Message: fmt.Sprintf("Unknown command (0x%02x)", p[0])})
}

// modeOf says how the response to a forwarded command is laid out.
func modeOf(cmd byte) relayMode {
	switch cmd {
	case comFieldList:
		return modeFieldList
	case comStatistics:
		return modeStatistics
	}
	return modeResult
}

// initDB changes the default schema. It runs on a backend so that an
// unknown schema gets the server's own error; the session adopts the
// schema only when the server accepted it.
func (s *Session) initDB(ctx context.Context, db string) error {
	if db == "" {
		return s.writeErr(errNoDatabase)
	}
	prev, prevRaw := s.state.Schema, s.state.SchemaRaw
	s.state.SetSchemaIn(db, s.clientCharset())
	c, err := s.backendFor(ctx, &s.task, false, false)
	if err != nil {
		s.state.SetSchemaAs(prev, prevRaw)
		return s.writeErr(err)
	}
	s.releaseIfUnpinned(c)
	return s.writeOK()
}

// setOption handles COM_SET_OPTION: the multi-statement switch is part of
// the session state, applied to backends like any other.
func (s *Session) setOption(p []byte) error {
	if len(p) < 3 {
		return s.writeErr(&mysqlwire.Error{Code: erUnknownCom, State: "08S01", Message: "Malformed COM_SET_OPTION"})
	}
	switch binary.LittleEndian.Uint16(p[1:]) {
	case 0:
		s.state.SetMultiStatements(true)
		s.caps |= capMultiStatements
	case 1:
		s.state.SetMultiStatements(false)
		s.caps &^= capMultiStatements
	default:
		return s.writeErr(&mysqlwire.Error{Code: erUnknownCom, State: "08S01", Message: "Unknown command"})
	}
	return s.w.WriteEOF(0, s.status())
}

// resetSession is COM_RESET_CONNECTION: the session is as after login,
// keeping its user, schema and character set.
func (s *Session) resetSession(ctx context.Context) {
	role := s.state.Role
	if c := s.pinned; c != nil && s.pins&pinProfiling != 0 && s.xa == xaNone {
		// The server keeps the profile history across the reset: so does
		// the session, on its connection.
		s.pinned = nil
		s.unpinForReset()
		s.initState(s.state.Schema, s.caps, s.extCaps)
		// Off first, so that the re-initialisation after the reset is
		// not recorded (SET profiling = 0 itself is not).
		_, err := c.Exec(ctx, "SET SESSION profiling = 0")
		if err == nil {
			err = c.Reset(ctx)
		}
		if err != nil {
			s.pool.Release(c)
		} else {
			c.MarkDirty()
			s.pinned, s.pins = c, pinProfiling
		}
		s.settleSlot()
		s.keepRole(role)
		return
	}
	s.unpinForReset()
	s.initState(s.state.Schema, s.caps, s.extCaps)
	// MariaDB keeps the active role across COM_RESET_CONNECTION (10.11).
	s.keepRole(role)
}

// keepRole carries the active role over a reset of the session, as the
// backend does: MariaDB keeps it, MySQL restores the account's default.
func (s *mirror) keepRole(role string) {
	if s.mode.MariaDB {
		s.state.SetRole(role)
	}
}
