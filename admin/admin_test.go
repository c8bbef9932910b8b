package admin

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/packet"
)

// sqlPing opens a go-sql-driver handle on dsn, pings (logging in) and
// closes it.
func sqlPing(dsn string) (*sql.DB, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return nil, db.PingContext(ctx)
}

func TestUnsupportedStatements(t *testing.T) {
	ae := startAdmin(t)
	adm := ae.admin(t)
	for _, q := range []string{
		"SHOW DATABASES", "SHOW INDEX FROM t", "DROP TABLE t", "INSERT INTO t VALUES (1)",
		"FLUSH TABLES", "BEGIN", "USE foo", "  update x set a = 1 ;", "(SELECT 1)", "SELECT @x", "PRAGMA table_info(x)",
		"ATTACH DATABASE '/tmp/x' AS x",
	} {
		wantErr(t, adm, q, 1064, unsupportedMsg)
	}
	wantErr(t, adm, ";", 1065, "Query was empty")
	wantErr(t, adm, "SELECT @@version; SELECT @@version", 1064, "syntax error near 'SELECT @@version'")
	wantErr(t, adm, "SELECT 'unterminated", 1064, "syntax error")
	wantErr(t, adm, "SHOW STATUS LIKE 'x' AND y", 1064, "syntax error near 'AND y'")
	// The session goes on after errors.
	if r := mustQuery(t, adm, "SELECT @@version_comment"); r.rows[0][0] != versionComment {
		t.Errorf("after errors: %v", r.rows)
	}

	// The binary protocol is refused at PREPARE.
	ps := openSession(t, ae.dsn(adminUser, adminPass, "interpolateParams=false"))
	if _, err := ps.Query("SELECT @@version LIMIT ?", 1); errCode(err) != 1295 {
		t.Errorf("prepared statement: %v, want error 1295", err)
	}
	if got := mustInt(t, ps, "SELECT @@thread_pool_size"); got != int64(ae.px.Sched.Config().Size) {
		t.Errorf("after a refused PREPARE: %d", got)
	}
}

// TestAuth: wrong passwords and unknown users get ERR 1045 and their
// connections end; the right one logs in.
func TestAuth(t *testing.T) {
	ae := startAdmin(t)
	for _, c := range []struct {
		user, pass, msg string
	}{
		{adminUser, "wrong", "Access denied for user 'admin'@'127.0.0.1"},
		{adminUser, "", "(using password: NO)"},
		{"root", adminPass, "Access denied for user 'root'@'127.0.0.1"},
		{"", "", "Access denied"},
		{strings.ToUpper(adminUser), adminPass, "Access denied"},
	} {
		for range 3 {
			_, err := sqlPing(ae.dsn(c.user, c.pass))
			if errCode(err) != 1045 || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("login %q/%q: %v, want 1045 with %q", c.user, c.pass, err, c.msg)
			}
		}
	}
	eventually(t, "failed logins' connections closed", func() bool { return ae.srv.conns.Load() == 0 })

	if _, err := sqlPing(ae.dsn(adminUser, adminPass)); err != nil {
		t.Fatalf("login with the right password: %v", err)
	}
	eventually(t, "the connection closed after COM_QUIT", func() bool { return ae.srv.conns.Load() == 0 })

	if bin, err := exec.LookPath("mariadb"); err == nil {
		_, stderr, code := runCLI(t, bin, ae.port, adminUser, "wrong", "SELECT @@version;\n")
		if code != 1 || !strings.Contains(stderr, "ERROR 1045 (28000)") {
			t.Errorf("mariadb with a wrong password: exit %d, stderr %q", code, stderr)
		}
		eventually(t, "the CLI's failed connection closed", func() bool { return ae.srv.conns.Load() == 0 })
	}
}

// TestLifecycle: ping, schema in the handshake, COM_QUIT, Serve ending
// with its context, Close ending connections stuck in the handshake.
func TestLifecycle(t *testing.T) {
	ae := startAdmin(t)
	s := openSession(t, fmt.Sprintf("%s:%s@tcp(%s)/anyschema?interpolateParams=true", adminUser, adminPass, ae.addr))
	if err := s.conn.PingContext(t.Context()); err != nil {
		t.Fatalf("COM_PING: %v", err)
	}
	if got := mustQuery(t, s, "SELECT @@version").rows[0][0]; got != serverVersion {
		t.Errorf("@@version %q", got)
	}
	if n := ae.srv.conns.Load(); n != 1 {
		t.Errorf("%d connections served, want 1", n)
	}
	s.Close()
	eventually(t, "the connection closed after COM_QUIT", func() bool { return ae.srv.conns.Load() == 0 })

	// A second admin server on the same proxy, defaults for the account.
	a, err := New(Config{Logger: slog.New(slog.NewTextHandler(testLog{t}, nil))}, ae.px.Sched, ae.px.Server, ae.px.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if a.cfg.Listen != DefaultListen || a.cfg.User != "admin" || a.cfg.Password != "admin" {
		t.Errorf("defaults: %+v", a.cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	s2 := openSession(t, fmt.Sprintf("admin:admin@tcp(%s)/?interpolateParams=true", ln.Addr()))
	if got := mustInt(t, s2, "SELECT @@backend_pool_size"); got != 4 {
		t.Errorf("backend_pool_size %d", got)
	}
	// A client that connects and never answers the greeting.
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := io.ReadFull(raw, make([]byte, 4)); err != nil {
		t.Fatalf("no greeting: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve returned %v when its context ended", err)
		}
	case <-time.After(opTimeout):
		t.Fatal("Serve did not return when its context ended")
	}
	if n := a.conns.Load(); n != 0 {
		t.Errorf("%d connections left after Serve returned", n)
	}
	if _, err := s2.Query("SELECT @@version"); err == nil {
		t.Errorf("an admin session outlived Serve")
	}
	_ = raw.SetReadDeadline(time.Now().Add(opTimeout))
	if _, err := io.Copy(io.Discard, raw); err != nil {
		t.Errorf("the half-open connection was not closed: %v", err)
	}
	a.Close()
	a.Close()
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Serve(context.Background(), ln2); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve after Close: %v", err)
	}
	if _, err := net.Dial("tcp", ln2.Addr().String()); err == nil {
		t.Errorf("Serve after Close left its listener open")
	}
}

func TestConfig(t *testing.T) {
	ae := startAdmin(t)
	for _, c := range []struct {
		cfg  Config
		nils bool
	}{
		{Config{Listen: "no-port"}, false},
		{Config{}, true},
	} {
		var err error
		if c.nils {
			_, err = New(c.cfg, nil, ae.px.Server, ae.px.Pool)
		} else {
			_, err = New(c.cfg, ae.px.Sched, ae.px.Server, ae.px.Pool)
		}
		if !errors.Is(err, ErrBadConfig) {
			t.Errorf("New(%+v, nil deps %v): %v, want ErrBadConfig", c.cfg, c.nils, err)
		}
	}
}

// cliScript exercises every statement from the mariadb client, with
// errors under --force.
const cliScript = `select @@version_comment limit 1;
use whatever;
SHOW VARIABLES LIKE 'thread_pool_size';
SET GLOBAL thread_pool_size = 3, thread_pool_high_prio_mode = 'statements';
SELECT @@global.thread_pool_size, @@thread_pool_high_prio_mode;
SELECT GROUP_ID, QUEUE_LENGTH, HAS_LISTENER FROM information_schema.THREAD_POOL_GROUPS ORDER BY GROUP_ID DESC LIMIT 2;
SELECT * FROM information_schema.THREAD_POOL_WAITS WHERE REASON LIKE 'queue%';
SELECT * FROM information_schema.THREAD_POOL_QUEUES;
SHOW STATUS LIKE 'Threadpool_threads';
FLUSH THREAD_POOL_STATS;
SHOW FULL PROCESSLIST;
SET GLOBAL nope = 1;
SET GLOBAL thread_pool_size = 'x';
KILL 999999;
SHOW DATABASES;
SELECT IS_STALLED, COUNT(*) AS n FROM information_schema.THREAD_POOL_GROUPS GROUP BY IS_STALLED;
SELECT @@version AS end_marker;
`

func TestMariaDBCLI(t *testing.T) {
	bin := needTool(t, "mariadb")
	ae := startAdmin(t)
	_, _ = clientSession(t, ae.px)
	out, stderr, _ := runCLI(t, bin, ae.port, adminUser, adminPass, cliScript, "--table", "--force")
	t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr)
	for _, want := range []string{
		"| tpproxy admin ", "| thread_pool_size | ", "| @@global.thread_pool_size | @@thread_pool_high_prio_mode |",
		"|                         3 | statements ", "| GROUP_ID | QUEUE_LENGTH | HAS_LISTENER |",
		"|        2 |            0 |            1 |", "| QUEUE         |", "| QUEUE_TIMEOUT |",
		"| Threadpool_threads |", "| Backend_thread | Pin_reason |", "| app  |", "| " + serverVersion + " |",
		"| IS_STALLED | n    |", "|          0 |    3 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, want := range []string{
		"ERROR 1193 (HY000) at line 12: Unknown system variable 'nope'",
		"ERROR 1232 (42000) at line 13: Incorrect argument type to variable 'thread_pool_size'",
		"ERROR 1094 (HY000) at line 14: Unknown thread id: 999999",
		"ERROR 1064 (42000) at line 15: " + unsupportedMsg,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if n := strings.Count(stderr, "ERROR"); n != 4 {
		t.Errorf("%d errors, want 4", n)
	}
	if c := ae.px.Sched.Config(); c.Size != 3 {
		t.Errorf("size %d after the CLI's SET", c.Size)
	}
	eventually(t, "the CLI's connection closed", func() bool { return ae.srv.conns.Load() == 0 })
}

// TestAuthSwitch logs in the way MySQL 8 clients do by default: the
// handshake response is a caching_sha2_password scramble, the server asks
// to switch to mysql_native_password, and the client answers with that.
func TestAuthSwitch(t *testing.T) {
	ae := startAdmin(t)
	for _, c := range []struct {
		pass string
		ok   bool
	}{{adminPass, true}, {"wrong", false}} {
		nc, err := net.DialTimeout("tcp", ae.addr, opTimeout)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(opTimeout))
		pc := packet.NewConn(nc)
		greeting, err := pc.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		salt := greetingSalt(t, greeting)
		if !strings.HasSuffix(string(greeting), mysql.AUTH_NATIVE_PASSWORD+"\x00") {
			t.Errorf("greeting announces %q", greeting)
		}
		resp := make([]byte, 4, 128)
		capa := mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH |
			mysql.CLIENT_LONG_PASSWORD | mysql.CLIENT_TRANSACTIONS
		resp = binary.LittleEndian.AppendUint32(resp, capa)
		resp = binary.LittleEndian.AppendUint32(resp, 1<<24)
		resp = append(resp, charsetUTF8MB4)
		resp = append(resp, make([]byte, 23)...)
		resp = append(append(resp, adminUser...), 0)
		scramble := mysql.CalcCachingSha2Password(salt, []byte(c.pass))
		resp = append(append(resp, byte(len(scramble))), scramble...)
		resp = append(append(resp, mysql.AUTH_CACHING_SHA2_PASSWORD...), 0)
		if err := pc.WritePacket(resp); err != nil {
			t.Fatal(err)
		}
		sw, err := pc.ReadPacket()
		want := "\xfe" + mysql.AUTH_NATIVE_PASSWORD + "\x00"
		if err != nil || !strings.HasPrefix(string(sw), want) || len(sw) != len(want)+21 {
			t.Fatalf("auth switch request: %q, %v", sw, err)
		}
		newSalt := sw[len(want) : len(want)+20]
		if err := pc.WritePacket(append(make([]byte, 4), mysql.CalcNativePassword(newSalt, []byte(c.pass))...)); err != nil {
			t.Fatal(err)
		}
		res, err := pc.ReadPacket()
		switch {
		case err != nil:
			t.Errorf("password %q: no answer: %v", c.pass, err)
		case c.ok && res[0] != mysql.OK_HEADER:
			t.Errorf("right password after the switch: %q", res)
		case !c.ok && (res[0] != mysql.ERR_HEADER || binary.LittleEndian.Uint16(res[1:]) != 1045):
			t.Errorf("wrong password after the switch: %q", res)
		}
		if !c.ok {
			// The server closes the connection after the error.
			if _, err := pc.ReadPacket(); err == nil {
				t.Errorf("connection open after a failed login")
			}
		}
		_ = pc.Close()
	}
	eventually(t, "connections closed", func() bool { return ae.srv.conns.Load() == 0 })
}

// greetingSalt reads the 20-byte scramble from a HandshakeV10 packet.
func greetingSalt(t *testing.T, g []byte) []byte {
	t.Helper()
	if len(g) < 1 || g[0] != 10 {
		t.Fatalf("greeting %q", g)
	}
	pos := 1 + strings.IndexByte(string(g[1:]), 0) + 1 // server version
	pos += 4                                           // connection id
	salt := append([]byte(nil), g[pos:pos+8]...)
	pos += 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10 // filler, capability, charset, status, capability, auth length, reserved
	return append(salt, g[pos:pos+12]...)
}

// TestRawCommands sends the protocol commands the admin port answers
// besides COM_QUERY, and malformed ones, with go-mysql's client.
func TestRawCommands(t *testing.T) {
	ae := startAdmin(t)
	c, err := client.ConnectWithTimeout(ae.addr, adminUser, adminPass, "someschema", opTimeout)
	if err != nil {
		t.Fatalf("connect with a schema: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(opTimeout))
	if err := c.Ping(); err != nil {
		t.Errorf("COM_PING: %v", err)
	}
	if err := c.UseDB("another"); err != nil {
		t.Errorf("COM_INIT_DB: %v", err)
	}
	if fs, err := c.FieldList("THREAD_POOL_GROUPS", ""); err != nil || len(fs) != 0 {
		t.Errorf("COM_FIELD_LIST: %v, %v", fs, err)
	}
	if _, err := c.Prepare("SELECT @@version"); errCodeOf(err) != 1295 {
		t.Errorf("COM_STMT_PREPARE: %v, want 1295", err)
	}
	// raw sends one command packet and returns the first answer packet.
	raw := func(payload ...byte) []byte {
		t.Helper()
		c.ResetSequence()
		if err := c.WritePacket(append(make([]byte, 4), payload...)); err != nil {
			t.Fatal(err)
		}
		p, err := c.ReadPacket()
		if err != nil {
			t.Fatalf("command %v: %v", payload, err)
		}
		return p
	}
	if p := raw(mysql.COM_SET_OPTION, 0, 0); p[0] != mysql.EOF_HEADER {
		t.Errorf("COM_SET_OPTION: %q, want EOF", p)
	}
	if p := raw(mysql.COM_RESET_CONNECTION); p[0] != mysql.OK_HEADER {
		t.Errorf("COM_RESET_CONNECTION: %q, want OK", p)
	}
	for _, cmd := range [][]byte{{mysql.COM_STATISTICS}, {0x7f}, {}} {
		if p := raw(cmd...); p[0] != mysql.ERR_HEADER || binary.LittleEndian.Uint16(p[1:]) != 1047 {
			t.Errorf("command %v: %q, want ERR 1047", cmd, p)
		}
	}
	// COM_STMT_CLOSE has no answer: the next command's answer comes next.
	c.ResetSequence()
	if err := c.WritePacket([]byte{0, 0, 0, 0, mysql.COM_STMT_CLOSE, 1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	r, err := c.Execute("SELECT @@version_comment")
	if err != nil {
		t.Fatalf("query after the raw commands: %v", err)
	}
	if v, _ := r.GetString(0, 0); v != versionComment {
		t.Errorf("@@version_comment %q", v)
	}
	if err := c.Quit(); err != nil {
		t.Errorf("COM_QUIT: %v", err)
	}
	eventually(t, "the connection closed after COM_QUIT", func() bool { return ae.srv.conns.Load() == 0 })
}

// errCodeOf is the code of a go-mysql client error.
func errCodeOf(err error) uint16 {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return me.Code
	}
	return 0
}

// handshakeResponse builds a HandshakeResponse41 packet (with room for the
// header) for user, with the given capability flags, auth data and tail.
func handshakeResponse(capa uint32, user string, auth []byte, tail ...byte) []byte {
	resp := make([]byte, 4, 128)
	resp = binary.LittleEndian.AppendUint32(resp, capa)
	resp = binary.LittleEndian.AppendUint32(resp, 1<<24)
	resp = append(resp, charsetUTF8MB4)
	resp = append(resp, make([]byte, 23)...)
	resp = append(append(resp, user...), 0)
	resp = append(append(resp, byte(len(auth))), auth...)
	resp = append(append(resp, mysql.AUTH_NATIVE_PASSWORD...), 0)
	return append(resp, tail...)
}

// TestMalformedHandshake: login packets that go-mysql's parser cannot
// take end their connection, not the process.
func TestMalformedHandshake(t *testing.T) {
	ae := startAdmin(t)
	capa := mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH | mysql.CLIENT_CONNECT_ATTRS
	for _, resp := range [][]byte{
		handshakeResponse(capa, "x", nil, 0xfc),       // attribute length cut short
		handshakeResponse(capa, adminUser, nil, 5, 1), // attributes cut short
		{0, 0, 0, 0, 1}, // a packet shorter than its fixed part
		handshakeResponse(capa, adminUser, []byte{1}), // a scramble of the wrong length
	} {
		nc, err := net.DialTimeout("tcp", ae.addr, opTimeout)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(opTimeout))
		pc := packet.NewConn(nc)
		if _, err := pc.ReadPacket(); err != nil {
			t.Fatal(err)
		}
		if err := pc.WritePacket(resp); err != nil {
			t.Fatal(err)
		}
		// An ERR or nothing, then the end of the connection.
		p, err := pc.ReadPacket()
		if err == nil {
			if p[0] != mysql.ERR_HEADER {
				t.Errorf("handshake response %q answered %q", resp[4:], p)
			}
			_, err = pc.ReadPacket()
		}
		if err == nil {
			t.Errorf("connection open after handshake response %q", resp[4:])
		}
		_ = nc.Close()
	}
	eventually(t, "connections closed", func() bool { return ae.srv.conns.Load() == 0 })
	if _, err := sqlPing(ae.dsn(adminUser, adminPass)); err != nil {
		t.Errorf("login after malformed ones: %v", err)
	}
}

// FuzzHandshake feeds arbitrary handshake responses to the login over a
// pipe; none may panic or leave the connection's goroutine running.
func FuzzHandshake(f *testing.F) {
	capa := mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH |
		mysql.CLIENT_CONNECT_ATTRS | mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | mysql.CLIENT_CONNECT_WITH_DB
	f.Add(handshakeResponse(capa, adminUser, make([]byte, 20), 0)[4:])
	f.Add(handshakeResponse(capa, "x", nil, 0xfc)[4:])
	f.Add(handshakeResponse(capa, "x", nil, 0xfe, 1, 2)[4:])
	f.Add([]byte{0x85, 0xa6, 0xff, 0x01})
	// The fuzz target may not log to f.
	ae := startAdminLog(f, slog.New(slog.DiscardHandler))
	f.Fuzz(func(t *testing.T, resp []byte) {
		cli, srv := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			ae.srv.serveConn(t.Context(), srv)
		}()
		_ = cli.SetDeadline(time.Now().Add(opTimeout))
		pc := packet.NewConn(cli)
		if _, err := pc.ReadPacket(); err != nil {
			t.Fatal(err)
		}
		// The pipe is synchronous: once the write returns the server has
		// read the response. Closing now ends whatever it does next at
		// once, so every input costs microseconds, not a read timeout.
		_ = pc.WritePacket(append(make([]byte, 4), resp...))
		_ = cli.Close()
		<-done
	})
}
