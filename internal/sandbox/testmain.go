package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// ForTestMain starts one shared server for a test binary.
// When no server binary exists: if os.Getenv("CI") == "true" it returns an
// error that does not match ErrNotFound (the caller fails loudly); otherwise
// it returns (nil, nil, err) with err wrapping ErrNotFound so the caller can
// skip integration tests with a clear message. stop stops the server and
// reports a failure on stderr. Use it like this:
//
//	func TestMain(m *testing.M) {
//		srv, stop, err := sandbox.ForTestMain(sandbox.Options{})
//		switch {
//		case errors.Is(err, sandbox.ErrNotFound):
//			fmt.Fprintln(os.Stderr, "integration tests skipped:", err)
//		case err != nil:
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		testServer = srv // tests t.Skip when nil
//		code := m.Run()
//		if stop != nil {
//			stop()
//		}
//		os.Exit(code)
//	}
func ForTestMain(opts Options) (srv *Server, stop func(), err error) {
	srv, err = Start(context.Background(), opts)
	if errors.Is(err, ErrNotFound) {
		if os.Getenv("CI") == "true" {
			// %v, not %w: in CI a missing server must not look skippable.
			return nil, nil, fmt.Errorf("sandbox: CI=true but no server binary to run integration tests (install MariaDB/MySQL or set $%s): %v", EnvBinary, err)
		}
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, err
	}
	bound := opts.withDefaults().StopTimeout
	stop = func() {
		// A little beyond StopTimeout so that SIGKILL gets its chance.
		ctx, cancel := context.WithTimeout(context.Background(), bound+bound/2)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "sandbox: stop test server:", err)
		}
	}
	return srv, stop, nil
}
