package proxy

import (
	"context"
	"errors"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/scheduler"
)

// Error codes tpproxy sends for conditions of its own. Codes below 9000 are
// the server's, used where the server would report the same condition.
const (
	// CodeAcquireTimeout: no backend connection became free within
	// backend.acquire_timeout. The statement was not executed.
	CodeAcquireTimeout = 9001
	// CodeBackendUnavailable: the backend cannot be reached (no live
	// connection and dialing fails). The statement was not executed.
	CodeBackendUnavailable = 9002
	// CodeBackendLost: the backend connection failed while the statement
	// was running; whether it took effect is unknown.
	CodeBackendLost = 9003
	// CodeQueueTimeout: the statement waited longer than
	// thread_pool.queue_timeout for its thread group. It did not run.
	CodeQueueTimeout = 9004
	// CodeOverloaded: admission by queue delay gave the statement up (its
	// queue stood above thread_pool.codel_target, or the pinned budget's
	// above the same target, and it had waited longer than twice that).
	// It did not run; the client may retry later.
	CodeOverloaded = 9005
)

// Server error codes tpproxy reproduces (defined in mysqlwire).
const (
	erConCount                 = mysqlwire.ErConCount
	erServerShutdown           = mysqlwire.ErServerShutdown
	erAccessDenied             = mysqlwire.ErAccessDenied
	erHostIsBlocked            = mysqlwire.ErHostIsBlocked
	erInsecureTransport        = mysqlwire.ErSecureTransportRequired
	erHandshake                = mysqlwire.ErHandshake
	erUnknownCom               = mysqlwire.ErUnknownCom
	erNetPacketTooLarge        = mysqlwire.ErNetPacketTooLarge
	erPacketsOutOfOrder        = mysqlwire.ErNetPacketsOutOfOrder
	erNoDB                     = mysqlwire.ErNoDB
	erBadDB                    = mysqlwire.ErBadDB
	erNoSuchThread             = mysqlwire.ErNoSuchThread
	erKillDenied               = mysqlwire.ErKillDenied
	erNotAllowedCommand        = mysqlwire.ErNotAllowedCommand
	erNotSupportedYet          = mysqlwire.ErNotSupportedYet
	erUnsupportedPS            = mysqlwire.ErUnsupportedPS
	erQueryInterrupted         = mysqlwire.ErQueryInterrupted
	erConnectionKilled         = mysqlwire.ErConnectionKilled
	erUnknown                  = mysqlwire.ErUnknown
	erClientInteractionTimeout = mysqlwire.ErClientInteractionTimeout
)

var (
	errTooManyConnections = &mysqlwire.Error{Code: erConCount, State: "08004", Message: "Too many connections"}
	// errShuttingDown is ER_SERVER_SHUTDOWN, as a server that is stopping
	// answers.
	errShuttingDown      = &mysqlwire.Error{Code: erServerShutdown, State: "08S01", Message: "Server shutdown in progress (tpproxy is shutting down)"}
	errPacketTooLarge    = &mysqlwire.Error{Code: erNetPacketTooLarge, State: "08S01", Message: "Got a packet bigger than 'max_allowed_packet' bytes"}
	errPacketsOutOfOrder = &mysqlwire.Error{Code: erPacketsOutOfOrder, State: "08S01", Message: "Got packets out of order"}
	errUnknownCommand    = &mysqlwire.Error{Code: erUnknownCom, State: "08S01", Message: "Unknown command"}
	errNoDatabase        = &mysqlwire.Error{Code: erNoDB, State: "3D000", Message: "No database selected"}
	errConnectionKilled  = &mysqlwire.Error{Code: erConnectionKilled, State: "70100", Message: "Connection was killed"}
	errQueryInterrupted  = &mysqlwire.Error{Code: erQueryInterrupted, State: "70100", Message: "Query execution was interrupted"}
	// errOutOfMemory: a packet's buffer could not get memory within
	// max_buffer_memory in time (ER_OUT_OF_RESOURCES).
	errOutOfMemory       = &mysqlwire.Error{Code: 1041, State: "HY000", Message: "Out of memory; tpproxy's packet buffers hold max_buffer_memory: try again, or raise max_buffer_memory"}
	errLoadLocalDisabled = &mysqlwire.Error{Code: erNotAllowedCommand, State: "42000",
		Message: "The used command is not allowed with this MySQL version (tpproxy: load_data_local is disabled)"}
)

// errKilled ends a session that was killed with KILL CONNECTION.
var errKilled = errors.New("proxy: session killed")

// sqlError turns any error met while serving a command into the ERR packet
// the client receives. It is the one place where that mapping happens; a
// server error keeps its code, SQLSTATE and text.
func sqlError(err error) *mysqlwire.Error {
	var me *mysqlwire.Error
	switch {
	case errors.As(err, &me):
		return me
	case errors.Is(err, pool.ErrAcquireTimeout):
		return &mysqlwire.Error{Code: CodeAcquireTimeout, State: "HY000", Message: "tpproxy: " + err.Error()}
	case errors.Is(err, pool.ErrBackendUnavailable), errors.Is(err, pool.ErrClosed):
		return &mysqlwire.Error{Code: CodeBackendUnavailable, State: "HY000", Message: "tpproxy: " + err.Error()}
	case errors.Is(err, scheduler.ErrQueueTimeout):
		return &mysqlwire.Error{Code: CodeQueueTimeout, State: "HY000", Message: "tpproxy: " + err.Error() +
			"; the thread pool is saturated (see thread_pool.size, oversubscribe, max_threads)"}
	case errors.Is(err, scheduler.ErrShed), errors.Is(err, errPinShed):
		return &mysqlwire.Error{Code: CodeOverloaded, State: "HY000", Message: "tpproxy: " + err.Error() +
			"; answered at once rather than late (thread_pool.codel_target)"}
	case errors.Is(err, pool.ErrBroken):
		return &mysqlwire.Error{Code: CodeBackendLost, State: "HY000", Message: "tpproxy: lost the backend connection during the statement: " + err.Error()}
	case errors.Is(err, context.Canceled), errors.Is(err, errKilled):
		return errQueryInterrupted
	}
	return &mysqlwire.Error{Code: erUnknown, State: "HY000", Message: "tpproxy: " + err.Error()}
}
