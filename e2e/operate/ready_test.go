package operate

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

// TestReadinessFollowsBackend: /readyz is 200 while the backend is up,
// turns 503 (with the reason) once the backend is stopped, and 200 again
// once it is back on the same port; /healthz stays 200 throughout and
// statements work again after the recovery.
func TestReadinessFollowsBackend(t *testing.T) {
	// A server of the test's own, which it can stop and start again.
	base, err := os.MkdirTemp("", "rdy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	port := freePort(t)
	opts := sandbox.Options{BaseDir: base, Port: port, KeepDataDir: true}
	startServer := func() *sandbox.Server {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		srv, err := sandbox.Start(ctx, opts)
		proxytest.CheckStart(t, err)
		t.Cleanup(func() { _ = srv.Stop(context.Background()) })
		return srv
	}
	srv := startServer()
	ctx := ctxT(t, 3*time.Minute)
	if err := srv.CreateUser(ctx, proxytest.User, proxytest.Password); err != nil {
		t.Fatal(err)
	}
	if err := srv.CreateDatabase(ctx, proxytest.DB); err != nil {
		t.Fatal(err)
	}

	s := defaults(t)
	s.Backend = srv.Addr
	d := start(t, s)
	ready := func() (int, string) { return d.get(t, "/readyz") }
	if code, body := ready(); code != http.StatusOK {
		t.Fatalf("/readyz with the backend up: %d %q", code, body)
	}
	db := d.open(t)
	mustExec(t, db, "SELECT 1")

	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var body string
	eventually(t, 15*time.Second, "/readyz reports the stopped backend", func() bool {
		var code int
		code, body = ready()
		return code == http.StatusServiceUnavailable
	})
	if !strings.Contains(body, "backend unavailable") {
		t.Errorf("/readyz body %q does not say why", body)
	}
	if v, _ := value(d.metrics(t), "tpproxy_backend_up", nil); v != 0 {
		t.Errorf("tpproxy_backend_up = %v with the backend stopped", v)
	}
	if code, _ := d.get(t, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d with the backend stopped: the process is alive", code)
	}

	startServer()
	eventually(t, 30*time.Second, "/readyz after the backend returned", func() bool {
		code, _ := ready()
		return code == http.StatusOK
	})
	if v, _ := value(d.metrics(t), "tpproxy_backend_up", nil); v != 1 {
		t.Errorf("tpproxy_backend_up = %v after recovery", v)
	}
	eventually(t, 15*time.Second, "statements work again", func() bool {
		_, err := db.ExecContext(ctx, "SELECT 1")
		return err == nil
	})
}
