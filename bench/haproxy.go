package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Modes of the haproxy target (DemoConfig.HAProxy, PeersConfig.HAProxy).
const (
	// HAProxyAuto adds the target when haproxy is on PATH.
	HAProxyAuto = "auto"
	// HAProxyOn requires it.
	HAProxyOn = "on"
	// HAProxyOff leaves it out.
	HAProxyOff = "off"
)

// ErrNoHAProxy means the haproxy target was asked for and haproxy is not
// installed.
var ErrNoHAProxy = errors.New("bench: --haproxy on, but no haproxy on PATH (Debian/Ubuntu: sudo apt-get install -y haproxy)")

// haproxyMaxConn is haproxy's connection limit: above the 1,000 clients
// of the largest step, well within the file descriptors it may open.
const haproxyMaxConn = 4000

// findHAProxy resolves mode to haproxy's path, "" when the target is
// left out.
func findHAProxy(mode string) (string, error) {
	switch mode {
	case HAProxyOff:
		return "", nil
	case "", HAProxyAuto, HAProxyOn:
	default:
		return "", fmt.Errorf("bench: --haproxy %q: want auto, on or off", mode)
	}
	path, err := exec.LookPath("haproxy")
	switch {
	case err == nil:
		return path, nil
	case mode == HAProxyOn:
		return "", fmt.Errorf("%w (%w)", ErrNoHAProxy, err)
	}
	return "", nil
}

// haproxyProcess is haproxy relaying TCP 1:1 to a server: every client
// connection gets a server connection of its own. It is the baseline for
// what any relay costs, without pooling.
type haproxyProcess struct {
	*child
	// Addr is the address clients connect to.
	Addr string
}

// haproxyConfig is the relay's configuration: TCP mode, timeouts longer
// than any run, one frontend and one server.
func haproxyConfig(listen, backend string) string {
	return fmt.Sprintf(`# Written by tpbench for the haproxy target; rewritten on every run.
global
    maxconn %[1]d

defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h

frontend mysql
    bind %[2]s
    maxconn %[1]d
    default_backend server

backend server
    server direct %[3]s maxconn %[1]d
`, haproxyMaxConn, listen, backend)
}

// startHAProxy runs `haproxy -f haproxy.cfg -db` (foreground) in front of
// backend, with its configuration and log (haproxy.log) in dir, and
// waits until it accepts connections.
func startHAProxy(ctx context.Context, bin, dir, backend string, at placement, log *slog.Logger) (*haproxyProcess, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(at.host(), strconv.Itoa(port))
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(haproxyConfig(addr, backend)), 0o644); err != nil {
		return nil, fmt.Errorf("bench: haproxy config: %w", err)
	}
	cbin, args := at.command(bin, "-f", cfg, "-db")
	c, err := startChild("haproxy", filepath.Join(dir, "haproxy.log"), nil, cbin, args...)
	if err != nil {
		return nil, err
	}
	h := &haproxyProcess{child: c, Addr: addr}
	if err := waitListening(ctx, c, addr); err != nil {
		return nil, errors.Join(err, ignoreExited(c.stop(time.Second)))
	}
	log.Info("haproxy started", "pid", c.pid(), "listen", addr, "config", cfg)
	return h, nil
}

// stop ends haproxy (SIGTERM: a hard stop, which is all it needs here).
func (h *haproxyProcess) stop() error { return h.child.stop(5 * time.Second) }

// waitListening waits until addr accepts a TCP connection, c exits, or
// readyTimeout passes.
func waitListening(ctx context.Context, c *child, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	var d net.Dialer
	var last error
	for {
		select {
		case <-c.exited:
			return c.exitError()
		case <-ctx.Done():
			return fmt.Errorf("bench: %s (pid %d) not listening on %s: %w (last: %v)", c.name, c.pid(), addr, context.Cause(ctx), last)
		case <-tick.C:
		}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			conn.Close()
			return nil
		}
		last = err
	}
}
