package clients

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// pingErr opens a one-off handle on dsn and pings it.
func pingErr(ctx context.Context, dsn string) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}

func TestBadLogin(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	px := env.StartProxy(t)
	cases := []struct {
		name, user, password, db string
		code                     uint16
		state, msg               string
	}{
		{"wrong password", "app", "wrong", proxytest.DB, 1045, "28000", "Access denied for user 'app'@'127.0.0.1' (using password: YES)"},
		{"no password", "app", "", proxytest.DB, 1045, "28000", "Access denied for user 'app'@'127.0.0.1' (using password: NO)"},
		{"unknown user", "nosuchuser", "secret", proxytest.DB, 1045, "28000", "Access denied for user 'nosuchuser'@'127.0.0.1' (using password: YES)"},
		{"unknown schema", "app", "secret", "nosuchdb", 1049, "42000", "Unknown database 'nosuchdb'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := pingErr(ctx, px.DSNFor(c.user, c.password, c.db))
			code, state, msg := mysqlErr(err)
			if code != c.code || state != c.state || msg != c.msg {
				t.Errorf("through the proxy: %v\nwant: Error %d (%s): %s", err, c.code, c.state, c.msg)
			}
			// The server says the same.
			direct := env.Server(t).DSN(c.user, c.password, c.db)
			dcode, dstate, dmsg := mysqlErr(pingErr(ctx, direct))
			if dcode != code || dstate != state || dmsg != msg {
				t.Errorf("server: Error %d (%s): %s; proxy: Error %d (%s): %s", dcode, dstate, dmsg, code, state, msg)
			}
		})
	}
	if st := px.Server.Stats(); st.AuthFailures != 3 {
		t.Errorf("AuthFailures = %d, want 3", st.AuthFailures)
	}
	// Failed logins leave nothing behind.
	waitFor(t, 5*time.Second, "failed logins to end their sessions", func() bool {
		return px.Server.Stats().Sessions == 0
	})
}

func TestUnknownSchemaAfterLogin(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	px := env.StartProxy(t)
	db := px.Open(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "USE nosuchdb")
	if code, state, msg := mysqlErr(err); code != 1049 || state != "42000" || msg != "Unknown database 'nosuchdb'" {
		t.Errorf("USE nosuchdb: %v; want Error 1049 (42000): Unknown database 'nosuchdb'", err)
	}
	var schema string
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&schema); err != nil || schema != proxytest.DB {
		t.Errorf("after a failed USE: DATABASE() = %q, %v; want %s", schema, err, proxytest.DB)
	}

	// COM_INIT_DB (what libmysql's mysql_select_db sends).
	gc, err := client.ConnectWithContext(ctx, px.Addr, proxytest.User, proxytest.Password, proxytest.DB, 10*time.Second, readTimeouts)
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	err = gc.UseDB("nosuchdb")
	var me *gomysql.MyError
	if !errors.As(err, &me) || me.Code != 1049 || me.State != "42000" {
		t.Errorf("COM_INIT_DB nosuchdb: %v; want Error 1049 (42000)", err)
	}
	r, err := gc.Execute("SELECT DATABASE()")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := r.GetString(0, 0); s != proxytest.DB {
		t.Errorf("after a failed COM_INIT_DB: DATABASE() = %q, want %s", s, proxytest.DB)
	}
	if err := gc.UseDB("tpproxy_cli_other_" + "x"); err == nil {
		t.Error("COM_INIT_DB of another missing schema succeeded")
	}
}

// readTimeouts bounds go-mysql client reads and writes.
func readTimeouts(c *client.Conn) error {
	c.ReadTimeout, c.WriteTimeout = 20*time.Second, 20*time.Second
	return nil
}

// TestPreparedKill: KILL takes a client's (proxy) connection id, which the
// server would read as one of its own threads, so a prepared KILL never
// reaches a backend as KILL: tpproxy evaluates its target with the
// parameters' values and kills its own session. Unknown ids get 1094 as
// directly, the session's own id 1317 (KILL QUERY), another user's
// session 1095, and the connection stays usable for other statements.
func TestPreparedKill(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	px := env.StartProxy(t)
	db, err := sql.Open("mysql", px.DSN("interpolateParams=false"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var own int64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&own); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		for _, q := range []string{"KILL ?", "KILL QUERY ?", "kill connection ?", "KILL QUERY (SELECT ? + 0)"} {
			st, err := conn.PrepareContext(ctx, q)
			if err != nil {
				t.Fatalf("round %d: prepare %q: %v", round, q, err)
			}
			_, err = st.ExecContext(ctx, 999999)
			if code, _, _ := mysqlErr(err); code != 1094 {
				t.Errorf("round %d: %q with an unknown id: %v; want error 1094", round, q, err)
			}
			_ = st.Close()
		}
		var one int
		if err := conn.QueryRowContext(ctx, "SELECT ?", 1).Scan(&one); err != nil || one != 1 {
			t.Fatalf("round %d: prepared SELECT after the KILLs: %d, %v", round, one, err)
		}
	}
	st, err := conn.PrepareContext(ctx, "KILL QUERY ?")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ExecContext(ctx, own); err == nil {
		t.Error("KILL QUERY of the session itself succeeded; the server answers 1317")
	} else if code, _, _ := mysqlErr(err); code != 1317 {
		t.Errorf("KILL QUERY of the session itself: %v; want error 1317", err)
	}
	_ = st.Close()
	// Another session of the same user is killed by its proxy id.
	victim, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	var vid int64
	if err := victim.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&vid); err != nil {
		t.Fatal(err)
	}
	st, err = conn.PrepareContext(ctx, "KILL ?")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ExecContext(ctx, vid); err != nil {
		t.Fatalf("prepared KILL of session %d: %v", vid, err)
	}
	_ = st.Close()
	if err := victim.PingContext(ctx); err == nil {
		t.Error("the killed session still answers")
	}
	if err := conn.PingContext(ctx); err != nil {
		t.Errorf("ping after the prepared KILLs: %v", err)
	}
}

func TestMaxClientConnections(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Proxy.MaxClientConnections = 5 })
	db := px.Open(t)
	var conns []*sql.Conn
	for i := range 5 {
		c, err := db.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
		}
		if err != nil {
			t.Fatalf("connection %d of 5: %v", i+1, err)
		}
		conns = append(conns, c)
	}
	err := pingErr(ctx, px.DSN())
	if code, state, msg := mysqlErr(err); code != 1040 || state != "08004" || msg != "Too many connections" {
		t.Errorf("6th connection: %v; want Error 1040 (08004): Too many connections", err)
	}
	// The same refusal at the protocol level: ERR instead of a greeting.
	rc, first, err := rawDial(ctx, px.Addr)
	if err != nil {
		t.Fatalf("raw 7th connection: %v", err)
	}
	if len(first) == 0 || first[0] != 0xff {
		t.Errorf("7th connection got %x instead of an ERR packet", first)
	} else if e := parseERR(first); e.Code != 1040 {
		t.Errorf("7th connection: %v", e)
	}
	rc.expectClosed(t, "refused connection")
	rc.close()

	for i, c := range conns {
		var n int
		if err := c.QueryRowContext(ctx, "SELECT ?", i).Scan(&n); err != nil || n != i {
			t.Errorf("connection %d after the refusals: %d, %v", i+1, n, err)
		}
	}
	if st := px.Server.Stats(); st.Rejected != 2 {
		t.Errorf("Rejected = %d, want 2", st.Rejected)
	}
	// A slot freed is a slot available.
	db.SetMaxIdleConns(0)
	_ = conns[0].Close()
	waitFor(t, 5*time.Second, "the closed session to go", func() bool { return px.Server.Stats().Sessions < 5 })
	if err := pingErr(ctx, px.DSN()); err != nil {
		t.Errorf("connection after one was closed: %v", err)
	}
	for _, c := range conns[1:] {
		_ = c.Close()
	}
}

func TestMaxAllowedPacket(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 60*time.Second)
	const limit = 1 << 20
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Proxy.MaxAllowedPacket = limit })

	// Just under the limit is fine.
	c := mustRaw(t, ctx, px.Addr, rawOptions{User: "app", Password: "secret", DB: proxytest.DB})
	fill := strings.Repeat("x", limit-100)
	if got := c.scalar(t, "SELECT LENGTH('"+fill+"')"); got != fmt.Sprint(len(fill)) {
		t.Errorf("LENGTH of a %d-byte literal = %s", len(fill), got)
	}

	// Over it: ERR 1153, then the proxy closes the connection, as the
	// server does. The client keeps writing while the answer arrives, as
	// a real client would.
	big := "SELECT LENGTH('" + strings.Repeat("y", 2*limit) + "')"
	writeErr := make(chan error, 1)
	go func() { writeErr <- c.command(append([]byte{comQuery}, big...)) }()
	r, err := c.readResult()
	switch {
	case err != nil:
		t.Errorf("oversized query: no ERR packet: %v (write: %v)", err, <-writeErr)
	case r.Err == nil:
		t.Errorf("oversized query answered with %+v", r)
	case r.Err.Code != 1153 || r.Err.State != "08S01" || !strings.Contains(r.Err.Message, "max_allowed_packet"):
		t.Errorf("oversized query: %v; want Error 1153 (08S01) about max_allowed_packet", r.Err)
	default:
		c.expectClosed(t, "after ERR 1153")
		<-writeErr
	}

	// go-sql-driver (with its own 64 MiB default) sends the query and sees
	// the same error and a dead connection.
	db := px.Open(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "DO LENGTH(?)", strings.Repeat("z", 3*limit))
	// The server itself answers ERR 1153, or its close resets the
	// connection while the client is still writing (about half the time
	// against MariaDB 10.11); either way the statement fails.
	if code, _, _ := mysqlErr(err); code != 1153 && (err == nil || !strings.Contains(err.Error(), "connection reset")) {
		t.Errorf("go-sql-driver oversized query: %v; want error 1153 or a reset connection", err)
	}
	if err := conn.PingContext(ctx); err == nil {
		t.Error("connection still usable after ERR 1153")
	}
	// The proxy itself is fine.
	if err := db.PingContext(ctx); err != nil {
		t.Errorf("new connection after an oversized packet: %v", err)
	}
	// An explicit max_allowed_packet below the server's is not what clients
	// read from @@max_allowed_packet (README says so); the default follows
	// the server, see TestMaxAllowedPacketFollowsServer.
}

// TestMaxAllowedPacketBoundary: the server refuses a packet of exactly
// max_allowed_packet bytes (ERR 1153, then it closes the connection), and
// so does tpproxy; a packet tpproxy relays that the server refuses (its
// own limit is higher) ends the client's connection after the server's
// ERR 1153, as a direct one would end, instead of leaving it open on a
// backend connection the server closed.
//
// Not parallel: it lowers the server's global value (to 1 MiB, and two
// multi-packet sizes at 17 MiB) for the connections it opens.
func TestMaxAllowedPacketBoundary(t *testing.T) {
	ctx := testCtx(t, 120*time.Second)
	var orig int
	if err := env.Root(t).QueryRowContext(ctx, "SELECT @@GLOBAL.max_allowed_packet").Scan(&orig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serverExec(t, fmt.Sprintf("SET GLOBAL max_allowed_packet = %d", orig)) })
	for _, server := range []int{1 << 20, 17 << 20} {
		serverExec(t, fmt.Sprintf("SET GLOBAL max_allowed_packet = %d", server))
		maxPacketBoundary(t, ctx, server)
	}
}

func maxPacketBoundary(t *testing.T, ctx context.Context, server int) {
	// payload is COM_QUERY's byte and the text: SELECT LENGTH('...').
	query := func(payload int) []byte {
		const head = "SELECT LENGTH('"
		return append([]byte{comQuery}, head+strings.Repeat("b", payload-1-len(head)-2)+"')"...)
	}
	outcome := func(addr, user, pass string, payload int) string {
		c := mustRaw(t, ctx, addr, rawOptions{User: user, Password: pass, DB: proxytest.DB})
		writeErr := make(chan error, 1)
		go func() { writeErr <- c.command(query(payload)) }()
		r, err := c.readResult()
		var got string
		switch {
		case err != nil:
			got = "no answer"
		case r.Err != nil:
			got = fmt.Sprintf("ERR %d", r.Err.Code)
		default:
			got = "rows"
		}
		if rs, err := c.query("SELECT 1"); err != nil || len(rs) == 0 {
			got += ", then closed"
		} else if rs[0].Err != nil {
			got += fmt.Sprintf(", then ERR %d", rs[0].Err.Code)
		} else {
			got += ", then usable"
		}
		<-writeErr
		return got
	}
	srv := env.Server(t)
	direct := srv.Addr
	px := env.StartProxy(t)
	for _, payload := range []int{server - 1, server} {
		want := outcome(direct, proxytest.User, proxytest.Password, payload)
		if got := outcome(px.Addr, proxytest.User, proxytest.Password, payload); got != want {
			t.Errorf("payload of %d bytes (max_allowed_packet %d): through tpproxy %q, directly %q", payload, server, got, want)
		} else {
			t.Logf("payload of %d bytes (max_allowed_packet %d): %s", payload, server, got)
		}
	}
	// tpproxy's own limit above the server's: the server's refusal ends the
	// session too.
	loose := env.StartProxy(t, func(o *proxytest.Options) { o.Proxy.MaxAllowedPacket = 2 * server })
	if got := outcome(loose.Addr, proxytest.User, proxytest.Password, server+1000); got != "ERR 1153, then closed" {
		t.Errorf("a packet over the server's limit relayed: %q, want the server's ERR 1153, then the connection closed", got)
	}
	if st := loose.Pool.Stats(); st.Open > st.Size {
		t.Errorf("pool: %+v", st)
	}
}

// TestMaxAllowedPacketFollowsServer: with the default configuration the
// proxy enforces the server's max_allowed_packet, which is what clients
// read from @@max_allowed_packet and size their packets by (go-sql-driver
// with maxAllowedPacket=0, Connector/J, ...). Not parallel: it lowers the
// server's global value while it starts its proxy.
func TestMaxAllowedPacketFollowsServer(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	const limit = 1 << 20
	var orig int
	if err := env.Root(t).QueryRowContext(ctx, "SELECT @@GLOBAL.max_allowed_packet").Scan(&orig); err != nil {
		t.Fatal(err)
	}
	serverExec(t, fmt.Sprintf("SET GLOBAL max_allowed_packet = %d", limit))
	px := env.StartProxy(t)
	serverExec(t, fmt.Sprintf("SET GLOBAL max_allowed_packet = %d", orig))

	db := px.Open(t)
	var reported int
	if err := db.QueryRowContext(ctx, "SELECT @@max_allowed_packet").Scan(&reported); err != nil {
		t.Fatal(err)
	}
	if reported != limit {
		t.Fatalf("SELECT @@max_allowed_packet through the proxy = %d, want the server's %d", reported, limit)
	}
	adaptive := px.Open(t, "maxAllowedPacket=0")
	_, err := adaptive.ExecContext(ctx, "DO LENGTH('"+strings.Repeat("z", 3*limit)+"')")
	if !errors.Is(err, mysql.ErrPktTooLarge) {
		t.Errorf("go-sql-driver with maxAllowedPacket=0, oversized query: %v; want %v (refused by the client)", err, mysql.ErrPktTooLarge)
	}
	// The proxy enforces the same limit on a client that ignores it.
	c := mustRaw(t, ctx, px.Addr, rawOptions{User: "app", Password: "secret", DB: proxytest.DB})
	writeErr := make(chan error, 1)
	go func() {
		writeErr <- c.command(append([]byte{comQuery}, "SELECT LENGTH('"+strings.Repeat("y", 2*limit)+"')"...))
	}()
	r, err := c.readResult()
	if err != nil || r.Err == nil || r.Err.Code != 1153 {
		t.Errorf("oversized query through the proxy: %+v, %v; want ERR 1153", r, err)
	}
	<-writeErr
}

// outcome is how a peer reacted to some bytes.
type outcome struct {
	kind  string // "ERR", "OK", "EOF", "resultset", "closed", "hang", "other"
	code  uint16
	state string
	msg   string
	alive bool // a COM_PING afterwards got OK
}

func (o outcome) String() string {
	s := o.kind
	if o.kind == "ERR" {
		s = fmt.Sprintf("ERR %d (%s) %q", o.code, o.state, o.msg)
	}
	if o.alive {
		return s + ", connection usable"
	}
	return s + ", connection gone"
}

// probe logs in, sends one crafted packet and classifies the answer.
func probe(t *testing.T, ctx context.Context, addr string, send func(c *rawConn) error) outcome {
	t.Helper()
	c := mustRaw(t, ctx, addr, rawOptions{User: "app", Password: "secret", DB: proxytest.DB})
	c.timeout = 5 * time.Second
	if err := send(c); err != nil {
		t.Fatalf("send: %v", err)
	}
	var o outcome
	r, err := c.readResult()
	switch {
	case isTimeout(err):
		return outcome{kind: "hang"}
	case errors.Is(err, io.EOF), err != nil && strings.Contains(err.Error(), "connection reset"):
		return outcome{kind: "closed"}
	case err != nil:
		o.kind = "other: " + err.Error()
	case r.Err != nil:
		o = outcome{kind: "ERR", code: r.Err.Code, state: r.Err.State, msg: r.Err.Message}
	case r.IsEOF:
		o.kind = "EOF"
	case r.Columns != nil:
		o.kind = "resultset"
	default:
		o.kind = "OK"
	}
	c.anySeq = false
	o.alive = c.ping() == nil
	return o
}

// TestMalformedCommands sends unknown and malformed commands after a real
// login, to the proxy and to the server, and expects the proxy to answer
// as the server does: an ERR packet (never a hang), and the connection
// usable afterwards exactly when the server keeps it.
func TestMalformedCommands(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 90*time.Second)
	px := env.StartProxy(t)
	pkt := func(seq byte, payload ...byte) func(c *rawConn) error {
		return func(c *rawConn) error {
			n := len(payload)
			c.seq = seq + 1
			return c.writeRawBytes(append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...))
		}
	}
	cases := []struct {
		name string
		send func(c *rawConn) error
		// sameCode: the proxy must give the server's error code; otherwise
		// any ERR will do (the proxy answers these itself).
		sameCode bool
	}{
		{"unknown command 0x20", pkt(0, 0x20), true},
		{"unknown command 0x7f with payload", pkt(0, 0x7f, 1, 2, 3), true},
		{"unknown command 0xff", pkt(0, 0xff), true},
		{"COM_SLEEP", pkt(0, 0x00), true},
		{"COM_CONNECT", pkt(0, 0x0b), true},
		{"COM_TIME", pkt(0, 0x0f), true},
		{"COM_DELAYED_INSERT", pkt(0, 0x10), true},
		{"empty packet", pkt(0), true},
		{"empty COM_QUERY", pkt(0, comQuery), true},
		{"COM_QUERY of garbage bytes", pkt(0, comQuery, 0xff, 0xfe, 0x00, 0x80), true},
		{"COM_INIT_DB without a name", pkt(0, comInitDB), true},
		{"COM_PROCESS_KILL too short", pkt(0, comProcessKill, 1), false},
		{"COM_SET_OPTION too short", pkt(0, comSetOption), false},
		{"COM_SET_OPTION unknown option", pkt(0, comSetOption, 7, 0), true},
		{"COM_FIELD_LIST without terminator", pkt(0, comFieldList, 'n', 'o', 's', 'u', 'c', 'h'), true},
		{"COM_STMT_EXECUTE of nothing", pkt(0, 0x17, 1, 0, 0, 0), false},
		{"COM_STMT_FETCH truncated", pkt(0, 0x1c, 1), false},
		{"COM_CHANGE_USER truncated", pkt(0, comChangeUser, 'a', 'p', 'p'), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			server := probe(t, ctx, env.Server(t).Addr, c.send)
			proxy := probe(t, ctx, px.Addr, c.send)
			t.Logf("server: %v; proxy: %v", server, proxy)
			if proxy.kind == "hang" {
				t.Fatalf("the proxy neither answered nor closed the connection")
			}
			if server.kind == "ERR" && proxy.kind != "ERR" {
				t.Errorf("server answers %v, proxy %v", server, proxy)
			}
			if server.kind != "ERR" && proxy.kind != server.kind && proxy.kind != "ERR" {
				t.Errorf("server answers %v, proxy %v", server, proxy)
			}
			if c.sameCode && server.kind == "ERR" && proxy.kind == "ERR" && (proxy.code != server.code || proxy.state != server.state) {
				t.Errorf("server answers %v, proxy %v", server, proxy)
			}
			if proxy.alive != server.alive {
				t.Errorf("after the bad packet the server's connection is usable=%v, the proxy's %v", server.alive, proxy.alive)
			}
		})
	}
}

// TestOutOfOrderPacket sends a command with a wrong sequence id. The
// server answers ERR 1156 "Got packets out of order" and closes; a client
// must at least get an answer or a close, never silence.
func TestOutOfOrderPacket(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 30*time.Second)
	px := env.StartProxy(t)
	send := func(c *rawConn) error {
		c.anySeq = true
		c.seq = 6
		return c.writeRawBytes([]byte{9, 0, 0, 5, comQuery, 'S', 'E', 'L', 'E', 'C', 'T', ' ', '1'})
	}
	server := probe(t, ctx, env.Server(t).Addr, send)
	proxy := probe(t, ctx, px.Addr, send)
	t.Logf("server: %v; proxy: %v", server, proxy)
	if proxy.kind == "hang" {
		t.Fatal("the proxy neither answered nor closed the connection")
	}
	if server.kind == "ERR" && (proxy.kind != "ERR" || proxy.code != server.code) {
		t.Errorf("server answers %v, proxy %v", server, proxy)
	}
	if proxy.alive != server.alive {
		t.Errorf("connection usable afterwards: server %v, proxy %v", server.alive, proxy.alive)
	}
}
