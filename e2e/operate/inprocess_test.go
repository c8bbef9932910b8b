package operate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/admin"
)

// TestShutdownInProcess drives proxy.Server.Shutdown inside the test
// binary, so that the race detector sees the draining paths racing with
// live sessions, the metrics collector and the readiness check.
func TestShutdownInProcess(t *testing.T) {
	px := env.StartProxy(t)
	h, err := admin.NewHTTP(admin.HTTPConfig{}, px.Server, px.Sched, px.Pool)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, time.Minute)
	db := px.Open(t)
	db.SetMaxOpenConns(20)
	stop := load(t, db, 8)
	scrapes := make(chan int, 1)
	go func() {
		n := 0
		for ctx.Err() == nil && !px.Server.Draining() {
			if _, err := h.Registry.Gather(); err != nil {
				t.Error(err)
				break
			}
			n++
		}
		scrapes <- n
	}()
	eventually(t, 10*time.Second, "load running", func() bool { return px.Server.Stats().Statements > 200 })
	inTx, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer inTx.Close()
	if _, err := inTx.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := inTx.ExecContext(ctx, "UPDATE reload_t SET n = n + 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if n, errs := stop(); len(errs) > 0 || n == 0 {
		t.Fatalf("load before shutdown: %d ok, errors %v", n, errs)
	}

	done := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- px.Server.Shutdown(sctx)
	}()
	eventually(t, 5*time.Second, "draining", px.Server.Draining)
	var me *mysql.MySQLError
	if err := inTx.PingContext(ctx); !errors.As(err, &me) || me.Number != 1053 {
		t.Errorf("ping while draining: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) while a transaction was open", err)
	default:
	}
	if _, err := inTx.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return after the transaction ended")
	}
	if n := <-scrapes; n == 0 {
		t.Error("no scrape ran alongside the load")
	}
	if st := px.Server.Stats(); st.Sessions != 0 {
		t.Errorf("%d sessions left after Shutdown", st.Sessions)
	}
}
