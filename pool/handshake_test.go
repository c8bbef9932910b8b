package pool_test

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"testing"

	"github.com/tpproxy/tpproxy/internal/fakemysql"
	"github.com/tpproxy/tpproxy/internal/mysqlclient"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
)

// recorder keeps what the pool writes on a backend connection.
type recorder struct {
	net.Conn
	mu  sync.Mutex
	out []byte
}

func (r *recorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	r.out = append(r.out, b...)
	r.mu.Unlock()
	return r.Conn.Write(b)
}

// response is the pool's handshake response, the first packet it writes.
type response struct {
	caps, ext uint32
	collation byte
	plugin    string
	attrs     map[string]string
}

func (r *recorder) response(t *testing.T) response {
	t.Helper()
	r.mu.Lock()
	b := r.out
	r.mu.Unlock()
	if len(b) < 4 || len(b) < 4+int(b[0])|int(b[1])<<8 {
		t.Fatalf("no handshake response in %x", b)
	}
	p := b[4 : 4+int(b[0])|int(b[1])<<8]
	if len(p) < 32 {
		t.Fatalf("handshake response %x", p)
	}
	res := response{caps: binary.LittleEndian.Uint32(p), collation: p[8], ext: binary.LittleEndian.Uint32(p[28:])}
	_, p, err := mysqlwire.NullTerminated(p[32:]) // user
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if res.caps&mysqlwire.ClientPluginAuthLenenc != 0 {
		_, n, err = mysqlwire.LenEncString(p)
	} else {
		n = 1 + int(p[0])
	}
	if err != nil || n > len(p) {
		t.Fatalf("auth response in %x", p)
	}
	plugin, p, err := mysqlwire.NullTerminated(p[n:])
	if err != nil {
		t.Fatal(err)
	}
	res.plugin = string(plugin)
	if res.caps&mysqlwire.ClientConnectAttrs != 0 {
		l, _, ln := mysqlwire.LenEncInt(p)
		p = p[ln:]
		if int(l) != len(p) {
			t.Fatalf("attributes of %d bytes in %d", l, len(p))
		}
		res.attrs = map[string]string{}
		for len(p) > 0 {
			k, n, err := mysqlwire.LenEncString(p)
			if err != nil {
				t.Fatal(err)
			}
			v, m, err := mysqlwire.LenEncString(p[n:])
			if err != nil {
				t.Fatal(err)
			}
			res.attrs[string(k)] = string(v)
			p = p[n+m:]
		}
	}
	return res
}

// recordDials wraps dial so that every connection it opens is recorded.
func recordDials(dial func(ctx context.Context, network, addr string) (net.Conn, error)) (func(ctx context.Context, network, addr string) (net.Conn, error), func() []*recorder) {
	var mu sync.Mutex
	var recs []*recorder
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			r := &recorder{Conn: nc}
			mu.Lock()
			recs = append(recs, r)
			mu.Unlock()
			return r, nil
		}, func() []*recorder {
			mu.Lock()
			defer mu.Unlock()
			return append([]*recorder(nil), recs...)
		}
}

// The capability flags the pool asks for: results are relayed verbatim, so
// never CLIENT_DEPRECATE_EOF, CLIENT_QUERY_ATTRIBUTES or CLIENT_COMPRESS;
// never CLIENT_MYSQL (long password) from a MariaDB server, whose extended
// capabilities it reads only without.
const wantCaps = mysqlwire.ClientProtocol41 | mysqlwire.ClientSecureConnection | mysqlwire.ClientTransactions |
	mysqlwire.ClientPluginAuth | mysqlwire.ClientLongFlag |
	mysqlwire.ClientMultiStatements | mysqlwire.ClientMultiResults | mysqlwire.ClientPSMultiResults |
	mysqlwire.ClientSessionTrack | mysqlwire.ClientConnectAttrs

// TestFakeHandshakeResponse checks the handshake response of the pool's
// dials: capabilities, MariaDB extended capabilities, collation and
// connection attributes.
func TestFakeHandshakeResponse(t *testing.T) {
	const offer = mysqlwire.MariaDBClientStmtBulkOperations | mysqlwire.MariaDBClientExtendedMetadata |
		mysqlwire.MariaDBClientCacheMetadata
	srv := newFake(t, fakemysql.Config{ExtCaps: offer})
	dial, recs := recordDials(srv.Dial)
	p := newFakePool(t, srv, func(c *pool.Config) {
		c.Size = 1
		c.Dial = dial
		c.LocalInfile = true
	})
	check := func(what string, r response, caps, ext uint32) {
		t.Helper()
		t.Logf("%s: caps %#08x ext %#x collation %d plugin %q attrs %v", what, r.caps, r.ext, r.collation, r.plugin, r.attrs)
		if r.caps != caps || r.ext != ext || r.collation != 45 || r.plugin != mysqlwire.AuthNativePassword ||
			r.attrs["_client_name"] != "tpproxy" || r.attrs["program_name"] != "tpproxy" || r.attrs["_os"] != runtime.GOOS {
			t.Errorf("%s: got caps %#08x ext %#x, want %#08x %#x", what, r.caps, r.ext, caps, ext)
		}
	}
	check("default dial", recs()[0].response(t), wantCaps|mysqlwire.ClientLocalFiles, mysqlwire.MariaDBClientStmtBulkOperations)
	c, err := p.Acquire(ctxT(t), &pool.State{FoundRows: true, ExtMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(c)
	rs := recs()
	check("found rows, extended metadata", rs[len(rs)-1].response(t), wantCaps|mysqlwire.ClientLocalFiles|mysqlwire.ClientFoundRows,
		mysqlwire.MariaDBClientStmtBulkOperations|mysqlwire.MariaDBClientExtendedMetadata)
	if ext := p.ExtCaps(); ext != mysqlwire.MariaDBClientStmtBulkOperations|mysqlwire.MariaDBClientExtendedMetadata {
		t.Errorf("ExtCaps %#x", ext)
	}
	if g, ok := p.Greeting(); !ok || g.Collation != 45 || g.Caps != fakemysql.Caps || g.ExtCaps != offer {
		t.Errorf("Greeting %+v %v", g, ok)
	}
}

// TestHandshakeResponse is TestFakeHandshakeResponse against the server.
func TestHandshakeResponse(t *testing.T) {
	addr := env.Server(t).Addr
	dial, recs := recordDials((&net.Dialer{}).DialContext)
	p := newPool(t, func(c *pool.Config) {
		c.Size = 1
		c.Dial = dial
	})
	r := recs()[0].response(t)
	t.Logf("server %s %s: caps %#08x ext %#x collation %d plugin %q attrs %v", addr, p.ServerVersion(), r.caps, r.ext, r.collation, r.plugin, r.attrs)
	g, _ := p.Greeting()
	wantExt := g.ExtCaps & mysqlwire.MariaDBClientStmtBulkOperations
	caps := wantCaps
	if g.Caps&mysqlwire.ClientLongPassword != 0 {
		caps |= mysqlwire.ClientLongPassword // MySQL
	}
	if r.caps != caps || r.ext != wantExt || r.collation != 45 {
		t.Errorf("got caps %#08x ext %#x collation %d, want %#08x %#x 45", r.caps, r.ext, r.collation, caps, wantExt)
	}
}

// TestFakePreferredTLSWithoutServerTLS: a "preferred" pool logs in to a
// server without TLS in the clear on its first dial, without a second.
func TestFakePreferredTLSWithoutServerTLS(t *testing.T) {
	srv := newFake(t, fakemysql.Config{})
	p := newFakePool(t, srv, func(c *pool.Config) {
		c.Size = 1
		c.TLSMode = pool.TLSPreferred
		c.TLS = &tls.Config{InsecureSkipVerify: true}
	})
	c, err := p.Acquire(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Release(c)
	if d, l := srv.Dials(), srv.Logins(); d != l {
		t.Errorf("%d dials for %d logins", d, l)
	}
	if _, ok := c.NetConn().(*tls.Conn); ok {
		t.Error("a TLS connection to a server without TLS")
	}
}

// TestFakeRequiredTLSWithoutServerTLS: a "required" pool does not log in
// to a server without TLS.
func TestFakeRequiredTLSWithoutServerTLS(t *testing.T) {
	srv := newFake(t, fakemysql.Config{})
	cfg := pool.DefaultConfig()
	cfg.Addr, cfg.Dial = "fake:3306", srv.Dial
	cfg.User, cfg.Password = fakeUser, fakePassword
	cfg.TLSMode, cfg.TLS = pool.TLSRequired, &tls.Config{InsecureSkipVerify: true}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := pool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	_, err = p.Acquire(ctxT(t), nil)
	if !errors.Is(err, pool.ErrBackendUnavailable) || !errors.Is(err, mysqlclient.ErrNoTLS) {
		t.Fatalf("got %v, want the backend unavailable for want of TLS", err)
	}
	if srv.Logins() != 0 {
		t.Errorf("%d logins", srv.Logins())
	}
}

// TestFakeHandshakeCollation: an id above 255 goes as its low byte (the
// session's SET NAMES sets it), as go-mysql sent it; an unknown name is
// not dialed.
func TestFakeHandshakeCollation(t *testing.T) {
	srv := newFake(t, fakemysql.Config{})
	dial, recs := recordDials(srv.Dial)
	newFakePool(t, srv, func(c *pool.Config) {
		c.Size = 1
		c.Dial = dial
		c.Collation = "utf8mb4_0900_bin" // 309
	})
	if r := recs()[0].response(t); r.collation != 309&0xff {
		t.Errorf("collation byte %d, want %d", r.collation, 309&0xff)
	}
	if n := srv.CountQueries("SET NAMES 'utf8mb4' COLLATE 'utf8mb4_0900_bin'"); n == 0 {
		t.Errorf("no SET NAMES of the collation in %q", srv.Queries())
	}

	bad := newFake(t, fakemysql.Config{})
	p := newFakePool(t, bad, func(c *pool.Config) { c.Collation = "no_such_ci" })
	if _, err := p.Acquire(ctxT(t), nil); !errors.Is(err, pool.ErrBackendUnavailable) {
		t.Fatalf("got %v, want ErrBackendUnavailable", err)
	}
	if bad.Dials() != 0 {
		t.Errorf("%d dials with an unknown collation", bad.Dials())
	}
}
