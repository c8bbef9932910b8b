package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/sandbox"
)

// testServer is the shared sandbox of the integration tests; nil when no
// server binary is installed (outside CI).
var testServer *sandbox.Server

const (
	testUser     = "bench"
	testPassword = "pw"
	testDB       = "sbtest"
)

func TestMain(m *testing.M) {
	MaybeRunDelayer()
	srv, stop, err := sandbox.ForTestMain(sandbox.Options{})
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		fmt.Fprintln(os.Stderr, "integration tests skipped (set CI=true to make this an error):", err)
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := srv.CreateUser(ctx, testUser, testPassword)
		if err == nil {
			err = srv.CreateDatabase(ctx, testDB)
		}
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			stop()
			os.Exit(1)
		}
	}
	testServer = srv
	code := m.Run()
	if stop != nil {
		stop()
	}
	os.Exit(code)
}

// server returns the shared sandbox or skips the test.
func server(t *testing.T) *sandbox.Server {
	t.Helper()
	if testServer == nil {
		t.Skip("no server binary; integration test skipped")
	}
	return testServer
}
