package proxy

import (
	"context"
	"log/slog"
	"time"

	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy/internal/catalog"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// mirror is what a session's own server connection would hold, kept on
// the proxy side because the session has no connection of its own: the
// replayable state (pool.State), the values the server reads but does not
// report (LAST_INSERT_ID(), ROW_COUNT(), FOUND_ROWS(), CONNECTION_ID(),
// pending transaction characteristics, XA), the prepared statements, the
// diagnostics area, what follows from them (how statements are lexed,
// which settings pin), and the connection the session is pinned to when
// some of it cannot be carried elsewhere. Its methods learn that state
// from statements and their answers (state.go, execute.go), querying the
// connection a statement ran on where the answer does not tell, and
// decide which connection keeps it. It does not talk to the client: a
// Session embeds it and does.
type mirror struct {
	srv *Server
	// pool is where the session's backend connections come from: the
	// server's, or the extra port's reserved ones.
	pool *pool.Pool

	// pinned is the connection the session is pinned to, for the reasons
	// in pins: it holds state the mirror cannot carry to another one (nil,
	// 0: none).
	pinned *pool.Conn
	pins   pinReason
	// id is the session's connection id.
	id uint32
	// slot is the session's slot of the pinned-connection budget
	// (pinBudget), allocated when it first takes one (a Session stays
	// within its size class).
	slot *pinSlotHeld
	// user is the account the client logged in as.
	user string

	// state is what the session's server connection would hold; whichever
	// backend runs the next statement is brought to it first.
	state     pool.State
	collation collation
	// collationID is the collation the client asked for at login.
	collationID uint16
	// release: the statement just run ended with COMMIT/ROLLBACK RELEASE
	// (or completion_type=RELEASE); the server closed its connection and
	// the session ends.
	release bool
	// waitTimeoutNew: waitTimeout was recomputed since the client
	// connection last took it.
	waitTimeoutNew bool
	// chained: a multi-statement query is being served in parts
	// (multiKill) and more follow the one being answered, so its final OK
	// or EOF says SERVER_MORE_RESULTS_EXISTS.
	chained bool

	// connID is what CONNECTION_ID() returns: the session's id, or the
	// pseudo_thread_id the client set.
	connID uint32
	// mode is how the server lexes the session's statements (sql_mode,
	// character set, server version); modeSum is the state it is for.
	mode sqlscan.Mode
	// lastInsertID is the session's LAST_INSERT_ID() (see readInsertID).
	lastInsertID uint64
	rowCount     int64 // ROW_COUNT() of the last statement
	// found is FOUND_ROWS().
	found foundRowsCount
	// globals is the reading of the server's globals the session's
	// values rest on (see pool.Globals).
	globals *pool.Globals

	modeSum uint64
	// waitTimeout is the session's wait_timeout.
	waitTimeout time.Duration
	// catSchema is the catalog's handle on the session's default schema.
	catSchema *catalog.Schema
	// statePins are the pins the session's settings imply (profiling,
	// optimizer_trace, sql_auto_is_null); completionRelease: its
	// completion_type is RELEASE.
	statePins         pinReason
	completionRelease bool

	// chistics: characteristics set with SET TRANSACTION for the next
	// transaction are pending on the pinned connection, as its server
	// last reported; chisticsUnsure: a statement may have used them up
	// without a report (it ended in a result set or an error).
	chistics       bool
	chisticsUnsure bool
	// xa is the session's XA transaction state.
	xa xaState

	// stmts are the session's prepared statements.
	stmts stmtRegistry

	// diag is the copy of the diagnostics (SHOW WARNINGS) the last
	// statement left, taken when the session released its backend.
	diag diagArea

	// tracked lists the variables the server reported changed by the
	// statement running now.
	tracked []string
	// locked are the statements run under LOCK TABLES, for the catalog to
	// judge after UNLOCK TABLES (nil: none).
	locked *lockedChecks
}

// debug logs at debug level with the session's id (a Session's own debug
// adds its user and client address).
func (s *mirror) debug(msg string, args ...any) {
	if s.srv.log.Enabled(context.Background(), slog.LevelDebug) {
		s.srv.log.Debug(msg, append([]any{"conn_id", s.id}, args...)...)
	}
}
