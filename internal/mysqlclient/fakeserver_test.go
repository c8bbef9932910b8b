package mysqlclient_test

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// A fake server plays what MariaDB cannot be made to do: caching_sha2_password
// in all its paths, a missing TLS capability, broken packets. It speaks
// through mysqlwire's reader and writer, and reports mistakes of the client
// with t.Errorf.

const (
	fakeCaps = mysqlwire.ClientLongPassword | mysqlwire.ClientConnectWithDB | mysqlwire.ClientProtocol41 |
		mysqlwire.ClientTransactions | mysqlwire.ClientSecureConnection | mysqlwire.ClientMultiResults |
		mysqlwire.ClientPSMultiResults | mysqlwire.ClientPluginAuth | mysqlwire.ClientPluginAuthLenenc
)

// fakeSalt is the 20-byte scramble of the fake greeting.
var fakeSalt = []byte("abcdefghij0123456789")

// fakeConn is the server side of one connection.
type fakeConn struct {
	t  testing.TB
	nc net.Conn
	r  *mysqlwire.Reader
	w  *mysqlwire.Writer
}

// startFake listens on network ("tcp" or "unix") and runs serve for the
// first connection. The test waits for serve to return.
func startFake(t *testing.T, network string, serve func(f *fakeConn)) string {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "fake.sock")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		serve(&fakeConn{t: t, nc: nc, r: mysqlwire.NewReader(nc, make([]byte, 4096), nil), w: mysqlwire.NewWriterSize(nc, 4096)})
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// silentListener accepts connections and never says anything.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// send writes one packet continuing the sequence.
func (f *fakeConn) send(p []byte) {
	f.w.SetSeq(f.r.Seq())
	if err := f.w.WritePacket(p); err != nil {
		f.t.Errorf("fake server: write: %v", err)
	}
	if err := f.w.Flush(); err != nil {
		f.t.Errorf("fake server: flush: %v", err)
	}
	f.r.SetSeq(f.w.Seq())
}

// recv reads one packet (a copy) continuing the sequence; nil at EOF.
func (f *fakeConn) recv() []byte {
	p, err := f.r.ReadPacket()
	if err != nil {
		return nil
	}
	return append([]byte(nil), p...)
}

// command starts reading a new command (sequence 0).
func (f *fakeConn) command() []byte {
	f.r.SetSeq(0)
	return f.recv()
}

var okPacket = []byte{0, 0, 0, 2, 0, 0, 0}

// greet sends a greeting with the given plugin and capabilities.
func (f *fakeConn) greet(plugin string, caps uint32) { f.greetExt(plugin, caps, 0) }

// greetExt is greet with MariaDB extended capabilities, which the greeting
// carries only with CLIENT_MYSQL (long password) clear.
func (f *fakeConn) greetExt(plugin string, caps, ext uint32) {
	b := []byte{10}
	b = append(b, "8.0.99-fake"...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 77)
	b = append(b, fakeSalt[:8]...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps))
	b = append(b, 45)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps>>16))
	b = append(b, 21)
	b = append(b, make([]byte, 6)...)
	b = binary.LittleEndian.AppendUint32(b, ext)
	b = append(b, fakeSalt[8:]...)
	b = append(b, 0)
	b = append(b, plugin...)
	b = append(b, 0)
	f.send(b)
}

// login is a decoded HandshakeResponse41.
type login struct {
	caps      uint32
	ext       uint32 // MariaDB's extended capabilities (the last filler bytes)
	collation byte
	user      string
	auth      []byte
	db        string
	plugin    string
	attrs     []byte // connection attributes, as sent
}

// readLogin reads and decodes the client's handshake response.
func (f *fakeConn) readLogin() login {
	p := f.recv()
	var l login
	if len(p) < 32 {
		f.t.Errorf("fake server: handshake response of %d bytes", len(p))
		return l
	}
	l.caps = binary.LittleEndian.Uint32(p)
	l.collation = p[8]
	l.ext = binary.LittleEndian.Uint32(p[28:])
	p = p[32:]
	user, p, err := mysqlwire.NullTerminated(p)
	if err != nil {
		f.t.Errorf("fake server: no user in handshake response")
		return l
	}
	l.user = string(user)
	auth, n, err := mysqlwire.LenEncString(p)
	if err != nil {
		f.t.Errorf("fake server: bad auth response")
		return l
	}
	l.auth, p = auth, p[n:]
	if l.caps&mysqlwire.ClientConnectWithDB != 0 {
		db, rest, _ := mysqlwire.NullTerminated(p)
		l.db, p = string(db), rest
	}
	if i := bytes.IndexByte(p, 0); i >= 0 {
		l.plugin, p = string(p[:i]), p[i+1:]
	}
	if l.caps&mysqlwire.ClientConnectAttrs != 0 {
		l.attrs = p
	}
	return l
}

// serveQueries answers COM_PING and COM_QUERY "SELECT 1" until the client quits.
func (f *fakeConn) serveQueries() {
	for {
		p := f.command()
		if len(p) == 0 || p[0] == mysqlwire.ComQuit {
			return
		}
		switch p[0] {
		case mysqlwire.ComPing:
			f.send(okPacket)
		case mysqlwire.ComQuery:
			f.send([]byte{1})
			f.send([]byte{3, 'd', 'e', 'f', 0, 0, 0, 1, '1', 0, 0x0c, 63, 0, 1, 0, 0, 0, 8, 0x81, 0, 0, 0, 0})
			f.send([]byte{0xfe, 0, 0, 2, 0})
			f.send([]byte{1, '1'})
			f.send([]byte{0xfe, 0, 0, 2, 0})
		default:
			f.send([]byte{0xff, 0x17, 0x04, '#', '0', '8', 'S', '0', '1', 'b', 'a', 'd'})
		}
	}
}

// sha2Scramble is caching_sha2_password's expected answer, computed here
// independently of the client.
func sha2Scramble(password string, salt []byte) []byte {
	h1 := sha256.Sum256([]byte(password))
	h2 := sha256.Sum256(h1[:])
	h3 := sha256.Sum256(append(h2[:], salt...))
	out := make([]byte, 32)
	for i := range out {
		out[i] = h1[i] ^ h3[i]
	}
	return out
}

// testRSAKey is generated once: key generation takes a while.
var testRSAKey = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })

// rsaKey returns the test key and its public half in PEM.
func rsaKey(t *testing.T) (*rsa.PrivateKey, []byte) {
	t.Helper()
	k, err := testRSAKey()
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return k, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// decryptPassword undoes caching_sha2_password's RSA exchange.
func decryptPassword(t testing.TB, k *rsa.PrivateKey, enc, salt []byte) string {
	plain, err := rsa.DecryptOAEP(sha1.New(), nil, k, enc, nil)
	if err != nil {
		t.Errorf("fake server: decrypt password: %v", err)
		return ""
	}
	for i := range plain {
		plain[i] ^= salt[i%len(salt)]
	}
	if len(plain) == 0 || plain[len(plain)-1] != 0 {
		t.Errorf("fake server: decrypted password %q not NUL-terminated", plain)
		return ""
	}
	return string(plain[:len(plain)-1])
}
