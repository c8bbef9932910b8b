package operate

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// TestClaimedPacketsCostNothing: memory follows the bytes a client sent,
// not what its packet headers claim. 200 connections each announce a
// 16 MiB packet and trickle 4 KiB every 0.25 s (the attack of issue #36:
// it took tpproxy from 20 to 3,376 MiB): before logging in (a handshake
// response over 64 KiB is refused at once) and after (a COM_QUERY whose
// buffer grows with what arrives). The binary's RSS may rise by at most
// 64 MiB, and is back near where it started within 30 s of them leaving.
// Honest clients run queries meanwhile.
func TestClaimedPacketsCostNothing(t *testing.T) {
	s := defaults(t)
	s.Extra = "max_client_connections: 1000\n"
	d := start(t, s)
	pid := d.cmd.Process.Pid
	db := d.open(t)
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", s.Port)
	for _, phase := range []string{"before login", "after login"} {
		time.Sleep(500 * time.Millisecond)
		before := proxytest.RSS(t, pid)
		const conns, chunk, rounds = 200, 4 << 10, 24
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var mu sync.Mutex
		sent, refused := 0, 0
		for i := 0; i < conns; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var nc net.Conn
				var header []byte
				if phase == "before login" {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						return
					}
					greeting := make([]byte, 4096)
					_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
					if _, err := c.Read(greeting); err != nil {
						_ = c.Close()
						return
					}
					nc, header = c, []byte{0xff, 0xff, 0xff, 1} // the handshake response, 16 MiB - 1
				} else {
					c, err := client.Connect(addr, proxytest.User, proxytest.Password, proxytest.DB)
					if err != nil {
						t.Errorf("login: %v", err)
						return
					}
					nc, header = c.Conn.Conn, []byte{0xff, 0xff, 0xff, 0, 3} // COM_QUERY, 16 MiB - 1
				}
				defer nc.Close()
				if _, err := nc.Write(header); err != nil {
					return
				}
				buf := make([]byte, chunk)
				for r := 0; r < rounds; r++ {
					select {
					case <-stop:
						return
					case <-time.After(250 * time.Millisecond):
					}
					if _, err := nc.Write(buf); err != nil {
						mu.Lock()
						refused++
						mu.Unlock()
						return
					}
					mu.Lock()
					sent += chunk
					mu.Unlock()
				}
			}()
		}
		peak := before
		deadline := time.Now().Add(time.Duration(rounds) * 250 * time.Millisecond)
		for time.Now().Before(deadline) {
			var n int
			if err := db.QueryRow("SELECT 1").Scan(&n); err != nil || n != 1 {
				t.Errorf("%s: honest query during the attack: %d, %v", phase, n, err)
			}
			if r := proxytest.RSS(t, pid); r > peak {
				peak = r
			}
			time.Sleep(100 * time.Millisecond)
		}
		close(stop)
		wg.Wait()
		rise := peak - before
		t.Logf("%s: RSS %d MiB before, peak %d MiB (+%.1f MiB) while %d connections claimed 16 MiB each and sent %d KiB in all (%d refused)",
			phase, before>>20, peak>>20, float64(rise)/(1<<20), conns, sent>>10, refused)
		if rise > 64<<20 {
			t.Errorf("%s: RSS rose by %d MiB, want at most 64 MiB", phase, rise>>20)
		}
		var after int64
		for i := 0; i < 30; i++ {
			time.Sleep(time.Second)
			if after = proxytest.RSS(t, pid); after <= before+16<<20 {
				break
			}
		}
		t.Logf("%s: RSS %d MiB after they left", phase, after>>20)
		if after > before+16<<20 {
			t.Errorf("%s: RSS %d MiB 30 s after the attack, %d MiB before", phase, after>>20, before>>20)
		}
	}
}
