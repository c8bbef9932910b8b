package pool

import "testing"

// FuzzParseGreeting feeds arbitrary bytes, as a backend could send them, to
// the parsers of the server's initial handshake.
func FuzzParseGreeting(f *testing.F) {
	greeting := []byte("\x5b\x00\x00\x00\x0a5.5.5-10.11.14-MariaDB\x00\x08\x00\x00\x00" +
		"abcdefgh\x00\xfe\xf7\x2d\x02\x00\xff\x81\x15\x00\x00\x00\x00\x00\x00\x1d\x00\x00\x00" +
		"ijklmnopqrst\x00mysql_native_password\x00")
	f.Add(greeting)
	f.Add(greeting[:30])
	f.Add([]byte{0, 0, 0, 0, 10, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		g, ok := parseGreeting(p)
		if ok && len(g.salt) < 20 {
			t.Fatalf("accepted a salt of %d bytes", len(g.salt))
		}
		s := sniffConn{head: p}
		_ = s.serverLacksTLS()
	})
}

func TestParseGreeting(t *testing.T) {
	p := []byte("\x5b\x00\x00\x00\x0a5.5.5-10.11.14-MariaDB\x00\x08\x00\x00\x00" +
		"abcdefgh\x00\xfe\xf7\x2d\x02\x00\xff\x81\x15\x00\x00\x00\x00\x00\x00\x1d\x00\x00\x00" +
		"ijklmnopqrst\x00mysql_native_password\x00")
	g, ok := parseGreeting(p)
	if !ok || string(g.salt) != "abcdefghijklmnopqrst" || g.plugin != "mysql_native_password" {
		t.Fatalf("parseGreeting = %q %q %v", g.salt, g.plugin, ok)
	}
	if !(&sniffConn{head: p}).serverLacksTLS() {
		t.Fatal("capabilities 0xf7fe taken to include CLIENT_SSL")
	}
	withTLS := []byte(string(p))
	withTLS[len("\x5b\x00\x00\x00\x0a5.5.5-10.11.14-MariaDB\x00")+4+8+2] = 0xff
	if (&sniffConn{head: withTLS}).serverLacksTLS() {
		t.Fatal("capabilities 0xfffe taken to lack CLIENT_SSL")
	}
}
