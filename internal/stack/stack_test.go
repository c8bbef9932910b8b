package stack_test

import (
	"context"
	"database/sql"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
	"github.com/tpproxy/tpproxy/internal/stack"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

var env *proxytest.Env

func TestMain(m *testing.M) { os.Exit(proxytest.Run(m, &env, sandbox.Options{})) }

// TestStartRefusesBadPool: a pool configuration that does not validate
// fails Start before anything dials.
func TestStartRefusesBadPool(t *testing.T) {
	_, err := stack.Start(t.Context(), stack.Options{Pool: pool.Config{}, Scheduler: scheduler.DefaultConfig()})
	if err == nil || !strings.HasPrefix(err.Error(), "pool: ") {
		t.Fatalf("Start with an empty pool config: %v", err)
	}
}

func options(t *testing.T) stack.Options {
	o := stack.Options{Pool: pool.DefaultConfig(), Scheduler: scheduler.DefaultConfig()}
	o.Pool.Addr = env.Server(t).Addr
	o.Pool.User, o.Pool.Password = proxytest.User, proxytest.Password
	o.Pool.Size = 2
	o.Proxy.Users = []proxy.User{{Name: proxytest.User, Plain: proxytest.Password}}
	return o
}

// TestStartServeClose: a started stack serves a session through its pool,
// and a scheduler configuration it cannot take fails Start after the pool
// connected, which is closed again.
func TestStartServeClose(t *testing.T) {
	o := options(t)
	extra := o.Pool
	extra.Size = 1
	o.Extra = &extra
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	st, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- st.Serve(ctx, ln) }()
	db, err := sql.Open("mysql", proxytest.User+":"+proxytest.Password+"@tcp("+ln.Addr().String()+")/"+proxytest.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("through the stack: %d %v", one, err)
	}
	if n := st.ExtraPool.Stats().Size; n != 1 {
		t.Errorf("extra pool of %d", n)
	}
	db.Close()
	cancel()
	select {
	case <-served:
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
	}
	st.Close()

	bad := options(t)
	bad.Scheduler.Size = -1
	if st, err := stack.Start(t.Context(), bad); err == nil || !strings.HasPrefix(err.Error(), "thread_pool: ") {
		if st != nil {
			st.Close()
		}
		t.Fatalf("Start with thread_pool size -1: %v", err)
	}
}
