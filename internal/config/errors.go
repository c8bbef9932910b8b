package config

import "errors"

// FieldError is one problem with one configuration key. Validate and the
// TLS loaders return them joined, so callers can list every problem and find
// the key with errors.As.
type FieldError struct {
	// Key is the dotted file key, e.g. "backend.pool_size" or "users[1].password".
	Key string
	// Err says what is wrong with the value.
	Err error
}

// Error formats the problem as "key: message".
func (e *FieldError) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap returns the underlying problem.
func (e *FieldError) Unwrap() error { return e.Err }

// Errors flattens err, which may hold problems joined with errors.Join at any
// depth, into its individual problems, in order. It returns nil for nil.
func Errors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Errors(e)...)
		}
		return out
	}
	return []error{err}
}

// fieldErr is shorthand for a FieldError.
func fieldErr(key string, err error) error { return &FieldError{Key: key, Err: err} }

// Sentinel problems, wrapped in FieldErrors by Validate.
var (
	// ErrCertKeyPair means only one of a certificate and its key is set.
	ErrCertKeyPair = errors.New("cert and key must be set together")
	// ErrNoUsers means the users list is empty.
	ErrNoUsers = errors.New("at least one user is required")
)
