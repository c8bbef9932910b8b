package mysqlclient_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlclient"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// connectFake connects to a fake server and checks that queries work after
// the login.
func connectFake(t *testing.T, cfg mysqlclient.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := mysqlclient.Connect(ctx, cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close()
	if c.ConnectionID() != 77 || c.ServerVersion() != "8.0.99-fake" {
		t.Errorf("greeting: id %d version %q", c.ConnectionID(), c.ServerVersion())
	}
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.ExecString("SELECT 1"); n != 1 || err != nil {
		t.Fatalf("SELECT 1: %d rows, %v", n, err)
	}
}

func TestCachingSHA2(t *testing.T) {
	const password = "secret"
	key, pemKey := rsaKey(t)

	// checkLogin reads the handshake response and checks the scramble.
	checkLogin := func(f *fakeConn) {
		l := f.readLogin()
		if l.user != "u" || l.plugin != "caching_sha2_password" || l.db != "db" {
			f.t.Errorf("handshake response: %+v", l)
		}
		if !bytes.Equal(l.auth, sha2Scramble(password, fakeSalt)) {
			f.t.Errorf("scramble %x, want %x", l.auth, sha2Scramble(password, fakeSalt))
		}
	}
	t.Run("fast auth", func(t *testing.T) {
		addr := startFake(t, "tcp", func(f *fakeConn) {
			f.greet("caching_sha2_password", fakeCaps)
			checkLogin(f)
			f.send([]byte{1, 3})
			f.send(okPacket)
			f.serveQueries()
		})
		connectFake(t, mysqlclient.Config{Addr: addr, User: "u", Passwd: password, DBName: "db"})
	})
	t.Run("full auth with RSA", func(t *testing.T) {
		addr := startFake(t, "tcp", func(f *fakeConn) {
			f.greet("caching_sha2_password", fakeCaps)
			checkLogin(f)
			f.send([]byte{1, 4})
			if p := f.recv(); !bytes.Equal(p, []byte{2}) {
				f.t.Errorf("expected a public key request, got %x", p)
				return
			}
			f.send(append([]byte{1}, pemKey...))
			if got := decryptPassword(f.t, key, f.recv(), fakeSalt); got != password {
				f.t.Errorf("password %q arrived", got)
			}
			f.send(okPacket)
			f.serveQueries()
		})
		connectFake(t, mysqlclient.Config{Addr: addr, User: "u", Passwd: password, DBName: "db"})
	})
	t.Run("full auth over a unix socket", func(t *testing.T) {
		addr := startFake(t, "unix", func(f *fakeConn) {
			f.greet("caching_sha2_password", fakeCaps)
			checkLogin(f)
			f.send([]byte{1, 4})
			if p := f.recv(); string(p) != password+"\x00" {
				f.t.Errorf("expected the clear password, got %q", p)
			}
			f.send(okPacket)
			f.serveQueries()
		})
		connectFake(t, mysqlclient.Config{Net: "unix", Addr: addr, User: "u", Passwd: password, DBName: "db"})
	})
	t.Run("switch from native, then full auth", func(t *testing.T) {
		newSalt := []byte("ZYXWVUTSRQponmlkjihg")
		addr := startFake(t, "tcp", func(f *fakeConn) {
			f.greet("mysql_native_password", fakeCaps)
			if l := f.readLogin(); l.plugin != "mysql_native_password" || len(l.auth) != 20 {
				f.t.Errorf("handshake response: %+v", l)
			}
			f.send(append(append([]byte("\xfecaching_sha2_password\x00"), newSalt...), 0))
			if p := f.recv(); !bytes.Equal(p, sha2Scramble(password, newSalt)) {
				f.t.Errorf("switch answer %x, want the scramble of the new salt", p)
			}
			f.send([]byte{1, 4})
			if p := f.recv(); !bytes.Equal(p, []byte{2}) {
				f.t.Errorf("expected a public key request, got %x", p)
				return
			}
			f.send(append([]byte{1}, pemKey...))
			if got := decryptPassword(f.t, key, f.recv(), newSalt); got != password {
				f.t.Errorf("password %q arrived", got)
			}
			f.send(okPacket)
			f.serveQueries()
		})
		connectFake(t, mysqlclient.Config{Addr: addr, User: "u", Passwd: password})
	})
	t.Run("empty password", func(t *testing.T) {
		addr := startFake(t, "tcp", func(f *fakeConn) {
			f.greet("caching_sha2_password", fakeCaps)
			if l := f.readLogin(); len(l.auth) != 0 {
				f.t.Errorf("auth response %x for an empty password", l.auth)
			}
			f.send(okPacket)
			f.serveQueries()
		})
		connectFake(t, mysqlclient.Config{Addr: addr, User: "u"})
	})
}

func TestLoginFailures(t *testing.T) {
	t.Run("refused after full auth", func(t *testing.T) {
		addr := startFake(t, "tcp", func(f *fakeConn) {
			f.greet("caching_sha2_password", fakeCaps)
			f.readLogin()
			f.send([]byte{1, 4})
			f.recv()
			f.send([]byte("\xff\x15\x04#28000Access denied"))
		})
		_, err := mysqlclient.Connect(context.Background(), mysqlclient.Config{Net: "tcp", Addr: addr, User: "u", Passwd: "x"})
		if err == nil {
			t.Fatal("login succeeded")
		}
		if serverCode(err) != 1045 {
			t.Errorf("got %v, want server error 1045", err)
		}
	})
	t.Run("too many connections before greeting", func(t *testing.T) {
		addr := startFake(t, "tcp", func(f *fakeConn) {
			f.send([]byte("\xff\x10\x04Too many connections"))
		})
		_, err := mysqlclient.Connect(context.Background(), mysqlclient.Config{Addr: addr, User: "u"})
		if serverCode(err) != 1040 {
			t.Errorf("got %v, want server error 1040", err)
		}
	})
	t.Run("unknown plugin in switch", func(t *testing.T) {
		addr := startFake(t, "tcp", func(f *fakeConn) {
			f.greet("mysql_native_password", fakeCaps)
			f.readLogin()
			f.send([]byte("\xfeauth_gssapi_client\x00abcdefghij0123456789\x00"))
			f.recv()
		})
		_, err := mysqlclient.Connect(context.Background(), mysqlclient.Config{Addr: addr, User: "u", Passwd: "x"})
		if !errors.Is(err, mysqlclient.ErrAuth) {
			t.Errorf("got %v, want ErrAuth", err)
		}
	})
	t.Run("cleartext not allowed", func(t *testing.T) {
		addr := startFake(t, "tcp", func(f *fakeConn) {
			f.greet("mysql_native_password", fakeCaps)
			f.readLogin()
			f.send([]byte("\xfemysql_clear_password\x00"))
			f.recv()
		})
		_, err := mysqlclient.Connect(context.Background(), mysqlclient.Config{Addr: addr, User: "u", Passwd: "x"})
		if !errors.Is(err, mysqlclient.ErrAuth) {
			t.Errorf("got %v, want ErrAuth", err)
		}
	})
	t.Run("cleartext allowed", func(t *testing.T) {
		addr := startFake(t, "tcp", func(f *fakeConn) {
			f.greet("mysql_native_password", fakeCaps)
			f.readLogin()
			f.send([]byte("\xfemysql_clear_password\x00"))
			if p := f.recv(); string(p) != "x\x00" {
				f.t.Errorf("clear password %q", p)
			}
			f.send(okPacket)
			f.serveQueries()
		})
		connectFake(t, mysqlclient.Config{Addr: addr, User: "u", Passwd: "x", AllowCleartextPasswords: true})
	})
	t.Run("TLS required, not offered", func(t *testing.T) {
		addr := startFake(t, "tcp", func(f *fakeConn) {
			f.greet("mysql_native_password", fakeCaps)
			f.recv()
		})
		_, err := mysqlclient.Connect(context.Background(), mysqlclient.Config{Addr: addr, User: "u", TLS: &tls.Config{InsecureSkipVerify: true}})
		if !errors.Is(err, mysqlclient.ErrNoTLS) {
			t.Errorf("got %v, want ErrNoTLS", err)
		}
	})
	t.Run("TLS preferred, not offered", func(t *testing.T) {
		addr := startFake(t, "tcp", func(f *fakeConn) {
			f.greet("mysql_native_password", fakeCaps)
			if l := f.readLogin(); l.caps&mysqlwire.ClientSSL != 0 {
				f.t.Error("client asks for SSL in the clear")
			}
			f.send(okPacket)
			f.serveQueries()
		})
		connectFake(t, mysqlclient.Config{Addr: addr, User: "u", TLS: &tls.Config{InsecureSkipVerify: true}, AllowFallbackToPlaintext: true})
	})
}

// TestBrokenResponses checks that responses a server must not send break
// the connection with ErrProtocol or ErrBroken and never hang.
func TestBrokenResponses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		packets [][]byte // answer to the query
		want    error
	}{
		{"empty packet", [][]byte{{}}, mysqlclient.ErrProtocol},
		{"NULL column count", [][]byte{{0xfb}}, mysqlclient.ErrProtocol},
		{"definitions cut short", [][]byte{{2}, {3, 'd', 'e', 'f'}, {0xfe, 0, 0, 2, 0}}, mysqlclient.ErrProtocol},
		{"no EOF after definitions", [][]byte{{1}, {3, 'd', 'e', 'f'}, {1, '1'}}, mysqlclient.ErrProtocol},
		{"extra packet after OK", [][]byte{okPacket, okPacket}, mysqlclient.ErrProtocol},
		{"connection closed in rows", [][]byte{{1}, {3, 'd', 'e', 'f'}, {0xfe, 0, 0, 2, 0}, {1, '1'}}, mysqlclient.ErrBroken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := startFake(t, "tcp", func(f *fakeConn) {
				f.greet("mysql_native_password", fakeCaps)
				f.readLogin()
				f.send(okPacket)
				f.command()
				// All at once, so that trailing packets are already
				// buffered when the client finishes.
				f.w.SetSeq(f.r.Seq())
				for _, p := range tc.packets {
					if err := f.w.WritePacket(p); err != nil {
						f.t.Error(err)
					}
				}
				_ = f.w.Flush()
			})
			c, err := mysqlclient.Connect(context.Background(), mysqlclient.Config{Addr: addr, User: "u"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.ExecString("SELECT 1")
			if !errors.Is(err, tc.want) || !errors.Is(err, mysqlclient.ErrBroken) || !c.Broken() {
				t.Fatalf("got %v (broken %v), want %v", err, c.Broken(), tc.want)
			}
			var se *mysqlwire.Error
			if errors.As(err, &se) {
				t.Errorf("protocol failure reported as server error %v", se)
			}
		})
	}
}

func TestSHA256Password(t *testing.T) {
	const password = "secret"
	key, pemKey := rsaKey(t)
	t.Run("RSA key asked for", func(t *testing.T) {
		addr := startFake(t, "tcp", func(f *fakeConn) {
			f.greet("sha256_password", fakeCaps)
			if l := f.readLogin(); l.plugin != "sha256_password" || !bytes.Equal(l.auth, []byte{1}) {
				f.t.Errorf("handshake response: %+v", l)
				return
			}
			f.send(append([]byte{1}, pemKey...))
			if got := decryptPassword(f.t, key, f.recv(), fakeSalt); got != password {
				f.t.Errorf("password %q arrived", got)
			}
			f.send(okPacket)
			f.serveQueries()
		})
		connectFake(t, mysqlclient.Config{Addr: addr, User: "u", Passwd: password})
	})
	t.Run("switch, then the RSA key", func(t *testing.T) {
		newSalt := []byte("ZYXWVUTSRQponmlkjihg")
		addr := startFake(t, "tcp", func(f *fakeConn) {
			f.greet("mysql_native_password", fakeCaps)
			f.readLogin()
			f.send(append(append([]byte("\xfesha256_password\x00"), newSalt...), 0))
			if p := f.recv(); !bytes.Equal(p, []byte{1}) {
				f.t.Errorf("switch answer %x, want a key request", p)
				return
			}
			f.send(append([]byte{1}, pemKey...))
			if got := decryptPassword(f.t, key, f.recv(), newSalt); got != password {
				f.t.Errorf("password %q arrived", got)
			}
			f.send(okPacket)
			f.serveQueries()
		})
		connectFake(t, mysqlclient.Config{Addr: addr, User: "u", Passwd: password})
	})
	t.Run("over a unix socket", func(t *testing.T) {
		addr := startFake(t, "unix", func(f *fakeConn) {
			f.greet("sha256_password", fakeCaps)
			if l := f.readLogin(); string(l.auth) != password+"\x00" {
				f.t.Errorf("expected the clear password, got %q", l.auth)
			}
			f.send(okPacket)
			f.serveQueries()
		})
		connectFake(t, mysqlclient.Config{Net: "unix", Addr: addr, User: "u", Passwd: password})
	})
	t.Run("empty password", func(t *testing.T) {
		addr := startFake(t, "tcp", func(f *fakeConn) {
			f.greet("sha256_password", fakeCaps)
			if l := f.readLogin(); !bytes.Equal(l.auth, []byte{0}) {
				f.t.Errorf("auth response %x for an empty password", l.auth)
			}
			f.send(okPacket)
			f.serveQueries()
		})
		connectFake(t, mysqlclient.Config{Addr: addr, User: "u"})
	})
}

func TestEd25519Switch(t *testing.T) {
	// 32 random bytes, ending in a NUL that is part of them.
	scramble := []byte("abcdefghij0123456789abcdefghij0\x00")
	const password = "0123456789abcdef0123456789abcdef" // a 32-byte password is the seed
	priv := ed25519.NewKeyFromSeed([]byte(password))
	addr := startFake(t, "tcp", func(f *fakeConn) {
		f.greet("mysql_native_password", fakeCaps)
		f.readLogin()
		f.send(append([]byte("\xfeclient_ed25519\x00"), scramble...))
		if p := f.recv(); !ed25519.Verify(priv.Public().(ed25519.PublicKey), scramble, p) {
			f.t.Errorf("signature %x does not verify", p)
		}
		f.send(okPacket)
		f.serveQueries()
	})
	connectFake(t, mysqlclient.Config{Addr: addr, User: "u", Passwd: password})
}

// TestLogin checks what Login asks for and that the connection it hands
// over carries on with the caller's first command.
func TestLogin(t *testing.T) {
	const ext = mysqlwire.MariaDBClientStmtBulkOperations | mysqlwire.MariaDBClientCacheMetadata
	offer := fakeCaps&^mysqlwire.ClientLongPassword | mysqlwire.ClientSessionTrack | mysqlwire.ClientConnectAttrs |
		mysqlwire.ClientMultiStatements | mysqlwire.ClientFoundRows
	wantCaps := offer &^ (mysqlwire.ClientConnectWithDB | mysqlwire.ClientTransactions | mysqlwire.ClientPluginAuthLenenc)
	var dialed int
	addr := startFake(t, "tcp", func(f *fakeConn) {
		f.greetExt("mysql_native_password", offer, ext)
		l := f.readLogin()
		if l.caps != wantCaps || l.ext != mysqlwire.MariaDBClientStmtBulkOperations || l.collation != 0x34 {
			f.t.Errorf("handshake response: caps %#x ext %#x collation %d, want %#x %#x 52", l.caps, l.ext, l.collation, wantCaps, mysqlwire.MariaDBClientStmtBulkOperations)
		}
		if want := "\x1e\x0c_client_name\x01a\x0cprogram_name\x01b"; string(l.attrs) != want {
			f.t.Errorf("attributes %q, want %q", l.attrs, want)
		}
		f.send(okPacket)
		if p := f.command(); len(p) != 1 || p[0] != mysqlwire.ComPing {
			f.t.Errorf("first command %x", p)
		}
		f.send(okPacket)
	})
	cfg := mysqlclient.Config{
		Addr: addr, User: "u", Passwd: "p", CollationID: 0x134, // low byte 0x34
		MultiStatements: true, ClientFoundRows: true,
		ConnectAttrs: map[string]string{"program_name": "b", "_client_name": "a"},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dialed++
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	s, err := mysqlclient.Login(context.Background(), cfg, mysqlclient.Protocol{
		Caps:    mysqlwire.ClientSessionTrack | mysqlwire.ClientMultiResults | mysqlwire.ClientPSMultiResults,
		ExtCaps: mysqlwire.MariaDBClientStmtBulkOperations | mysqlwire.MariaDBClientExtendedMetadata,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Conn.Close()
	if dialed != 1 {
		t.Errorf("Config.Dial used %d times", dialed)
	}
	g := s.Greeting
	if g.ConnID != 77 || g.Version != "8.0.99-fake" || g.Caps != offer || g.ExtCaps != ext || g.Collation != 45 ||
		string(g.Salt) != string(fakeSalt) || g.Plugin != "mysql_native_password" {
		t.Errorf("greeting %+v", g)
	}
	if s.Sent.Caps != wantCaps || s.Sent.ExtCaps != mysqlwire.MariaDBClientStmtBulkOperations {
		t.Errorf("sent %#x/%#x, want %#x/%#x", s.Sent.Caps, s.Sent.ExtCaps, wantCaps, mysqlwire.MariaDBClientStmtBulkOperations)
	}
	r := mysqlwire.NewReader(s.Conn, make([]byte, 64), nil)
	w := mysqlwire.NewWriterSize(s.Conn, 64)
	if err := w.WritePacket([]byte{mysqlwire.ComPing}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r.SetSeq(1)
	if p, err := r.ReadPacket(); err != nil || !mysqlwire.IsOK(p) {
		t.Fatalf("ping over the handed-over connection: %x %v", p, err)
	}
}

func TestLoginRefusedIsServerError(t *testing.T) {
	addr := startFake(t, "tcp", func(f *fakeConn) {
		f.greet("mysql_native_password", fakeCaps)
		f.readLogin()
		f.send([]byte("\xff\x15\x04#28000Access denied"))
	})
	_, err := mysqlclient.Login(context.Background(), mysqlclient.Config{Addr: addr, User: "u"}, mysqlclient.Protocol{})
	if serverCode(err) != 1045 {
		t.Errorf("got %v, want server error 1045", err)
	}
}
