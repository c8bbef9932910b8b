package mysqlclient

import "errors"

// Sentinel errors. A server's own refusal (ERR packet) is never one of these:
// it comes back as *mysqlwire.Error with the server's code and SQLSTATE.
var (
	// ErrBadDSN is wrapped by FromDSN when go-sql-driver cannot parse the DSN.
	ErrBadDSN = errors.New("mysqlclient: bad DSN")
	// ErrBadConfig is wrapped by Config.Validate (and so by Connect) for a
	// configuration no connection can be made with.
	ErrBadConfig = errors.New("mysqlclient: bad config")
	// ErrAuth means the client cannot take part in the authentication the
	// server asks for (an unsupported plugin, an unusable RSA key). A wrong
	// password is the server's ERR 1045 instead.
	ErrAuth = errors.New("mysqlclient: authentication not possible")
	// ErrNoTLS means TLS was required but the server does not offer it.
	ErrNoTLS = errors.New("mysqlclient: server does not support TLS")
	// ErrProtocol means the server sent something the protocol does not
	// allow at that point; the connection is broken.
	ErrProtocol = errors.New("mysqlclient: protocol violation")
	// ErrBroken is wrapped by every error after which the connection cannot
	// be used again (network failure, protocol violation, Interrupt, Close):
	// the caller must discard the connection. Later calls fail at once with
	// an error wrapping it, without touching the network.
	ErrBroken = errors.New("mysqlclient: connection broken")
	// ErrInterrupted is wrapped, together with ErrBroken, by the error of an
	// operation cut short by Interrupt, so a cancelled benchmark step can be
	// told from a failing server.
	ErrInterrupted = errors.New("mysqlclient: interrupted")
	// ErrClosed is wrapped, together with ErrBroken, by calls made after Close.
	ErrClosed = errors.New("mysqlclient: connection closed")
	// ErrBadArgs means Execute got a different number of arguments than the
	// statement has parameters, or an Arg of unknown kind. Nothing was
	// sent; the connection is usable.
	ErrBadArgs = errors.New("mysqlclient: arguments do not fit the statement")
)
