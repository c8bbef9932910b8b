package capacity

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

var env *proxytest.Env

func TestMain(m *testing.M) { os.Exit(proxytest.Run(m, &env, sandbox.Options{})) }

// idleClients is the number of idle sessions the proxy must hold within
// idleRSSLimit of resident memory.
const (
	idleClients  = 10000
	idleRSSLimit = 80 << 20
)

// TestTenThousandIdleClients runs the tpproxy binary, opens 10,000 client
// sessions (half of them run a statement first) that then sit idle, and
// checks the proxy's resident memory and that every session still answers.
func TestTenThousandIdleClients(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 10,000 connections")
	}
	raiseFileLimit(t, idleClients+1000) // each process holds one end
	bin := buildProxy(t)
	port := freePort(t)
	cfg := filepath.Join(t.TempDir(), "tpproxy.yaml")
	writeFile(t, cfg, fmt.Sprintf(`listen: 127.0.0.1:%d
max_client_connections: %d
users:
  - user: %s
    password: %s
backend:
  addr: %s
  user: %s
  password: %s
  pool_size: 16
log:
  level: warn
`, port, idleClients+100, proxytest.User, proxytest.Password, env.Server(t).Addr, proxytest.User, proxytest.Password))
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitListening(t, addr)
	base := proxytest.RSS(t, cmd.Process.Pid)

	conns := make([]*client.Conn, idleClients)
	var wg sync.WaitGroup
	errs := make(chan error, idleClients)
	work := make(chan int)
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				c, err := client.ConnectWithTimeout(addr, proxytest.User, proxytest.Password, proxytest.DB, 30*time.Second)
				if err != nil {
					errs <- err
					continue
				}
				conns[i] = c
				if i%2 == 0 {
					// Half the sessions run a statement before they idle,
					// as a driver's first queries do.
					if _, err := c.Execute("SELECT @@version_comment, CONNECTION_ID()"); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	for i := range conns {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				_ = c.Close()
			}
		}
	})
	// Let the sessions settle into idleness and the runtime collect the
	// handshake garbage, as it would on a long-running proxy.
	time.Sleep(3 * time.Second)
	idle := proxytest.RSS(t, cmd.Process.Pid)
	t.Logf("proxy RSS: %.1f MB at start, %.1f MB with %d idle sessions (%.1f KB per session)",
		float64(base)/(1<<20), float64(idle)/(1<<20), idleClients, float64(idle-base)/1024/idleClients)
	if idle > idleRSSLimit {
		t.Errorf("proxy RSS %d MB with %d idle clients, limit %d MB", idle>>20, idleClients, idleRSSLimit>>20)
	}
	for i, c := range conns {
		r, err := c.Execute("SELECT CONNECTION_ID()")
		if err != nil {
			t.Fatalf("session %d after idling: %v", i, err)
		}
		if id, _ := r.GetUint(0, 0); id == 0 {
			t.Fatalf("session %d: connection id 0", i)
		}
	}
}

func buildProxy(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tpproxy")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/tpproxy/tpproxy/cmd/tpproxy").CombinedOutput()
	if err != nil {
		t.Fatalf("build tpproxy: %v\n%s", err, out)
	}
	return bin
}

func raiseFileLimit(t *testing.T, want uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= want {
		return
	}
	lim.Cur = min(want, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < want {
		t.Fatalf("need %d open files, the limit is %d (%v)", want, lim.Cur, err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := client.ConnectWithTimeout(addr, proxytest.User, proxytest.Password, "", time.Second)
		if err == nil {
			_ = c.Close()
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("proxy did not come up on %s: %v", addr, err)
		case <-tick.C:
		}
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
