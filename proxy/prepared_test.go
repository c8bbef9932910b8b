package proxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// TestExecuteReprepared checks the recovery when the server no longer
// knows a statement the proxy believes is prepared on a backend connection
// (error 1243; 1615, "needs to be re-prepared", takes the same path): the
// statement is prepared again and executed once more, and the client sees
// only its result. The server is made to forget by closing the statement
// behind the proxy's back, which no client can do.
func TestExecuteReprepared(t *testing.T) {
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })
	setup := dialRaw(t, px.Addr, proxytest.DB)
	setup.query(t, []byte("CREATE TABLE IF NOT EXISTS reprep (id INT PRIMARY KEY)"))
	setup.query(t, []byte("REPLACE INTO reprep VALUES (1)"))
	c := dialRaw(t, px.Addr, proxytest.DB)
	id := c.prepare(t, []byte("SELECT id FROM reprep WHERE id = ?"))
	if n := c.executeInt(t, id, true, 1); n != 1 {
		t.Fatalf("%d rows", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bc, err := px.Pool.Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The first statement the proxy caches has key 1.
	bid, ok := bc.Prepared(1)
	if !ok {
		px.Pool.Release(bc)
		t.Fatal("the statement is not prepared on the only backend connection")
	}
	bc.StartCommand()
	closePkt := []byte{0x19, 0, 0, 0, 0}
	mysqlwire.PutStmtID(closePkt, bid)
	if err := bc.Writer().WritePacket(closePkt); err != nil {
		t.Fatal(err)
	}
	if err := bc.Flush(); err != nil {
		t.Fatal(err)
	}
	px.Pool.Release(bc)

	for i := range 3 {
		if n := c.executeInt(t, id, false, 1); n != 1 {
			t.Fatalf("execute %d: %d rows", i, n)
		}
	}
	if st := px.Server.Stats(); st.Reprepares != 1 {
		t.Fatalf("Reprepares = %d, want 1", st.Reprepares)
	}
}
