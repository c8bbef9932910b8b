package pool

import "errors"

var (
	// ErrClosed is returned by Acquire after Close.
	ErrClosed = errors.New("pool: closed")
	// ErrAcquireTimeout is returned by Acquire when no backend connection
	// became free within Config.AcquireTimeout.
	ErrAcquireTimeout = errors.New("pool: no backend connection available within acquire_timeout")
	// ErrBackendUnavailable is returned by Acquire when the pool holds no
	// connection at all and the last attempt to dial the backend failed.
	ErrBackendUnavailable = errors.New("pool: backend unavailable")
	// ErrBroken marks a connection whose protocol state is unknown (I/O
	// error, unexpected packet); it is closed instead of reused.
	ErrBroken = errors.New("pool: backend connection broken")
	// ErrBadConfig is wrapped by Config.Validate errors.
	ErrBadConfig = errors.New("pool: invalid config")
)
