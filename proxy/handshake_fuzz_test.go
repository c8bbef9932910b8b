package proxy

import (
	"testing"
)

// FuzzParseHandshakeResponse feeds arbitrary bytes to the parser of the
// first packet a client sends.
func FuzzParseHandshakeResponse(f *testing.F) {
	base := []byte{0x8d, 0xa6, 0x3f, 0x20, 0, 0, 0, 1, 45}
	base = append(base, make([]byte, 23)...)
	withUser := append(append([]byte{}, base...), "app\x00\x14aaaaaaaaaaaaaaaaaaaa"...)
	withUser = append(withUser, "db\x00mysql_native_password\x00"...)
	f.Add(base)
	f.Add(withUser)
	f.Add(append(append([]byte{}, withUser...), 5, 1, 'k', 3, 'v', 'a', 'l'))
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := parseHandshakeResponse(p)
		if err != nil {
			return
		}
		if len(r.auth) > len(p) || len(r.user) > len(p) {
			t.Fatalf("fields larger than the packet")
		}
	})
}

// FuzzParseChangeUser does the same for COM_CHANGE_USER.
func FuzzParseChangeUser(f *testing.F) {
	f.Add([]byte("app\x00\x14aaaaaaaaaaaaaaaaaaaadb\x00\x2d\x00mysql_native_password\x00"), uint32(0x000fa68d))
	f.Add([]byte("u\x00\x00\x00"), uint32(0))
	f.Fuzz(func(t *testing.T, p []byte, caps uint32) {
		r, err := parseChangeUser(p, caps)
		if err != nil {
			return
		}
		if len(r.auth) > len(p) {
			t.Fatalf("auth larger than the packet")
		}
	})
}
