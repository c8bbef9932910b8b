package bench

import (
	"context"
	"errors"
	"strconv"

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

var (
	// ErrBadStep is wrapped by Step.Validate errors.
	ErrBadStep = errors.New("bench: invalid step")
	// ErrConnect means Run could not open the step's connections; nothing
	// was measured.
	ErrConnect = errors.New("bench: cannot open the step's connections")
	// ErrUnknownWorkload is returned by NewWorkload for a name it does not
	// know.
	ErrUnknownWorkload = errors.New("bench: unknown workload")
)

// MySQL error numbers on which sysbench rolls back and retries the
// transaction instead of counting a failure.
const (
	ErLockWaitTimeout = 1205
	ErLockDeadlock    = 1213
)

// Keys of StepResult.Errors that are not MySQL error numbers.
const (
	// ErrKeyConn counts transactions that lost their connection: the
	// driver reconnects and goes on.
	ErrKeyConn = "conn"
	// ErrKeyReconnect counts failed attempts to replace a lost connection.
	ErrKeyReconnect = "reconnect"
	// ErrKeyConnect counts transactions of a --connect-per-tx step whose
	// connection could not be opened.
	ErrKeyConnect = "connect"
	// ErrKeyTimeout counts transactions cut off by the step's hard
	// deadline (the measured hold plus a grace period).
	ErrKeyTimeout = "timeout"
)

// errorNames are short labels for error numbers a benchmark meets; the
// 9xxx ones are tpproxy's own (see proxy.Code*).
var errorNames = map[string]string{
	"1040":          "too many connections",
	"1045":          "access denied",
	"1105":          "unknown error",
	"1158":          "network read error",
	"1205":          "lock wait timeout",
	"1213":          "deadlock",
	"1317":          "query interrupted",
	"1927":          "connection killed",
	"9001":          "proxy: pool acquire timeout",
	"9002":          "proxy: backend unavailable",
	"9003":          "proxy: backend lost",
	ErrKeyConn:      "connection lost",
	ErrKeyReconnect: "reconnect failed",
	ErrKeyConnect:   "connect failed",
	ErrKeyTimeout:   "step deadline",
}

// ErrorName is a short description of an error key of StepResult.Errors,
// or "" when there is none.
func ErrorName(key string) string { return errorNames[key] }

// errClass is what the driver does after a failed transaction.
type errClass int

const (
	// classServer: the server answered with an error; the connection is
	// fine. Roll back and go on.
	classServer errClass = iota
	// classRetry: deadlock or lock wait timeout; roll back and run the
	// transaction again, like sysbench.
	classRetry
	// classConn: the connection is gone or in an unknown state; replace it.
	classConn
	// classCanceled: the caller's context ended; stop.
	classCanceled
)

// classify tells the driver what to do after err and gives the key under
// which StepResult.Errors counts it.
func classify(err error) (errClass, string) {
	var (
		we *mysqlwire.Error
		me *mysql.MySQLError
	)
	switch {
	case errors.As(err, &we):
		return classifyCode(we.Code)
	case errors.As(err, &me):
		return classifyCode(me.Number)
	case errors.Is(err, context.DeadlineExceeded):
		return classCanceled, ErrKeyTimeout
	case errors.Is(err, context.Canceled):
		return classCanceled, ""
	}
	// Anything else (a broken connection, io and net errors, a malformed
	// packet) leaves the connection unusable or in an unknown protocol
	// state.
	return classConn, ErrKeyConn
}

// classifyCode classifies a server error number.
func classifyCode(code uint16) (errClass, string) {
	key := strconv.Itoa(int(code))
	if code == ErLockDeadlock || code == ErLockWaitTimeout {
		return classRetry, key
	}
	return classServer, key
}

// ErrorKey is the StepResult.Errors key under which err is counted: the
// MySQL error number ("1062"), ErrKeyConn, ErrKeyTimeout, or "" for a
// cancellation, which is not counted.
func ErrorKey(err error) string {
	_, key := classify(err)
	return key
}

// Retryable reports whether the driver retries a transaction that failed
// with err (deadlock 1213, lock wait timeout 1205), as sysbench does.
func Retryable(err error) bool {
	c, _ := classify(err)
	return c == classRetry
}
