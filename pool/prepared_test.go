package pool_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
)

// serverPrepared is the server's Prepared_stmt_count. The tests of this
// package do not run in parallel, so changes are theirs.
func serverPrepared(t *testing.T) int {
	t.Helper()
	var name string
	var n int
	if err := env.Root(t).QueryRow("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPreparedLRUClosesOnServer checks the per-connection cap: preparing
// past it closes the least recently used statement on the server.
func TestPreparedLRUClosesOnServer(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1; c.MaxPreparedPerConn = 2 })
	ctx := ctxT(t)
	before := serverPrepared(t)
	c, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(c)
	for key, sql := range map[uint64]string{1: "SELECT ?", 2: "SELECT ?+1"} {
		ok, _, err := c.Prepare(ctx, key, []byte(sql), false)
		if err != nil || ok.Params != 1 || ok.Columns != 1 {
			t.Fatalf("prepare %q: %+v %v", sql, ok, err)
		}
	}
	if _, ok := c.Prepared(1); !ok { // 1 becomes the most recently used
		t.Fatal("statement 1 not found")
	}
	ok, defs, err := c.Prepare(ctx, 3, []byte("SELECT ?, ?"), true)
	if err != nil || len(defs) != 4 {
		t.Fatalf("prepare: %+v %d defs, %v", ok, len(defs), err)
	}
	if _, ok := c.Prepared(2); ok {
		t.Fatal("least recently used statement 2 still listed")
	}
	for _, k := range []uint64{1, 3} {
		if _, ok := c.Prepared(k); !ok {
			t.Fatalf("statement %d evicted", k)
		}
	}
	if got := value(t, c, "SELECT 1"); got != "1" { // the close rides along with this
		t.Fatal(got)
	}
	if n := serverPrepared(t) - before; n != 2 {
		t.Fatalf("server holds %d statements of this connection, want 2", n)
	}
	if st := p.Stats(); st.PreparedOpen != 2 || st.PreparedEvictions != 1 || st.Prepares != 3 || st.PreparedLimit != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestResetDropsPrepared checks that a reset connection forgets its
// statements, which the server dropped.
func TestResetDropsPrepared(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1 })
	ctx := ctxT(t)
	c, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Prepare(ctx, 7, []byte("SELECT 1"), false); err != nil {
		t.Fatal(err)
	}
	c.MarkDirty()
	p.Release(c)
	c, err = p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(c)
	if _, ok := c.Prepared(7); ok {
		t.Fatal("statement survived COM_RESET_CONNECTION in the pool's records")
	}
	if st := p.Stats(); st.PreparedOpen != 0 {
		t.Fatalf("PreparedOpen = %d after reset", st.PreparedOpen)
	}
}

// TestPrepareErrorKeepsConnectionUsable checks that a statement the server
// refuses comes back as its error on a connection that still works.
func TestPrepareErrorKeepsConnectionUsable(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1 })
	ctx := ctxT(t)
	c, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(c)
	_, _, err = c.Prepare(ctx, 1, []byte("SELEC nonsense"), false)
	var me *mysqlwire.Error
	if !errors.As(err, &me) || me.Code != 1064 {
		t.Fatalf("err = %v, want ERROR 1064", err)
	}
	if got := value(t, c, "SELECT 2"); got != "2" {
		t.Fatal(got)
	}
}

// TestAutomaticPreparedLimit checks the default cap: half the server's
// max_prepared_stmt_count over the pool's connections, at most 1024.
func TestAutomaticPreparedLimit(t *testing.T) {
	var max int
	if err := env.Root(t).QueryRow("SELECT @@max_prepared_stmt_count").Scan(&max); err != nil {
		t.Fatal(err)
	}
	p := newPool(t, func(c *pool.Config) { c.Size = 40 })
	if got, want := p.Stats().PreparedLimit, min(max/2/40, 1024); got != want {
		t.Fatalf("limit %d, want %d (server max %d)", got, want, max)
	}
}

// TestAcquireReplacesConnectionKilledWhileIdle checks what a caller learns
// of a connection the server closed while it sat idle (KILL, wait_timeout):
// used moments ago, it is handed out unchecked, and Verify or its first
// exchange (DeadOnArrival) says it is dead; idle for longer than
// idleCheckAfter, it is never handed out.
func TestAcquireReplacesConnectionKilledWhileIdle(t *testing.T) {
	p := newPool(t, func(c *pool.Config) { c.Size = 1 })
	ctx := ctxT(t)
	root := env.Root(t)
	kill := func(use func(c *pool.Conn)) uint32 {
		t.Helper()
		c, err := p.Acquire(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		old := c.ThreadID()
		if use != nil {
			use(c)
		}
		p.Release(c)
		if _, err := root.Exec("KILL CONNECTION ?", old); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool {
			var n int
			_ = root.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", old).Scan(&n)
			return n == 0
		})
		return old
	}
	fresh := func(old uint32) {
		t.Helper()
		c, err := p.Acquire(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release(c)
		if c.ThreadID() == old {
			t.Fatal("Acquire handed out the killed connection again")
		}
		if got := value(t, c, "SELECT 3"); got != "3" {
			t.Fatal(got)
		}
	}

	// Used moments ago: Verify finds it dead.
	old := kill(nil)
	c, err := p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.ThreadID() == old {
		if !c.Unchecked() || c.Verify() {
			t.Fatalf("the killed connection came unchecked=%v and passed Verify", c.Unchecked())
		}
		p.Release(c)
		fresh(old)
	} else {
		p.Release(c) // the pool found out on its own (health check)
	}

	// Used moments ago: its first exchange finds it dead.
	old = kill(nil)
	c, err = p.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.ThreadID() == old {
		_, err := c.Exec(ctx, "SELECT 4")
		if err == nil || !c.DeadOnArrival(err) {
			t.Fatalf("Exec on the killed connection: %v (dead on arrival %v)", err, err != nil && c.DeadOnArrival(err))
		}
		p.Release(c)
		fresh(old)
	} else {
		p.Release(c)
	}

	// Idle for longer than idleCheckAfter: never handed out.
	old = kill(nil)
	time.Sleep(1100 * time.Millisecond)
	fresh(old)
}
