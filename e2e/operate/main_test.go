// Package operate holds end-to-end tests of running tpproxy as an operator
// does: the real binary with a configuration file, in front of a private
// server, watched through its HTTP endpoint (/metrics, /healthz, /readyz),
// reconfigured by editing the file or SIGHUP, and stopped with SIGTERM.
package operate

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/internal/sandbox"
)

var env *proxytest.Env

func TestMain(m *testing.M) { os.Exit(proxytest.Run(m, &env, sandbox.Options{})) }

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds cmd/tpproxy once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tpproxy-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "tpproxy")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/tpproxy/tpproxy/cmd/tpproxy").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// freePort returns a loopback port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// settings are the values the test config template takes.
type settings struct {
	Port, AdminPort, HTTPPort int
	Backend                   string
	PoolSize                  int
	GroupSize                 int
	Oversubscribe             int
	ShutdownTimeout           string
	SlowQueue                 string
	Watch                     bool
	Extra                     string // appended verbatim (more keys)
	MoreUsers                 string // YAML list items appended to users
	AdminExtra                string // lines appended to the admin section
}

func (s settings) yaml() string {
	return fmt.Sprintf(`listen: 127.0.0.1:%d
shutdown_timeout: %s
watch_config: %v
users:
  - user: %s
    password: %s
%sbackend:
  addr: %s
  user: %s
  password: %s
  pool_size: %d
  acquire_timeout: 5s
  health_interval: 1s
thread_pool:
  size: %d
  oversubscribe: %d
  stall_limit: 50ms
admin:
  listen: 127.0.0.1:%d
  http_listen: 127.0.0.1:%d
%slog:
  level: info
  format: json
  slow_queue: %s
%s`, s.Port, s.ShutdownTimeout, s.Watch, proxytest.User, proxytest.Password, s.MoreUsers, s.Backend,
		proxytest.User, proxytest.Password, s.PoolSize, s.GroupSize, s.Oversubscribe,
		s.AdminPort, s.HTTPPort, s.AdminExtra, s.SlowQueue, s.Extra)
}

func defaults(t *testing.T) settings {
	return settings{
		Port: freePort(t), AdminPort: freePort(t), HTTPPort: freePort(t),
		Backend: env.Server(t).Addr, PoolSize: 4, GroupSize: 2, Oversubscribe: 3,
		ShutdownTimeout: "20s", SlowQueue: "1s", Watch: true,
	}
}

// daemon is a running tpproxy process.
type daemon struct {
	t    *testing.T
	cmd  *exec.Cmd
	cfg  string // config file path
	set  settings
	done chan struct{} // closed when the process has exited
	err  error         // its Wait result, after done

	mu    sync.Mutex
	logs  []map[string]any
	added chan struct{} // signalled on every new log record
}

// start runs tpproxy serve with s written to a config file, and waits until
// it listens.
func start(t *testing.T, s settings) *daemon {
	t.Helper()
	d := &daemon{t: t, cfg: filepath.Join(t.TempDir(), "tpproxy.yaml"), set: s}
	d.write(s)
	return d.run(t)
}

// startTakeover starts a second tpproxy with prev's configuration file and
// --takeover: it takes prev's listeners over upgrade_socket.
func startTakeover(t *testing.T, prev *daemon) *daemon {
	t.Helper()
	d := &daemon{t: t, cfg: prev.cfg, set: prev.set}
	return d.run(t, "--takeover")
}

// run starts the binary on d.cfg and waits until it listens.
func (d *daemon) run(t *testing.T, args ...string) *daemon {
	t.Helper()
	d.done, d.added = make(chan struct{}), make(chan struct{}, 1)
	d.cmd = exec.Command(binary(t), append([]string{"serve", "--config", d.cfg}, args...)...)
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait closes the pipe once the process has exited, so it comes after
	// the last line is read (called first, it could drop the final lines).
	go func() {
		d.readLogs(stderr)
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = d.cmd.Process.Kill()
			<-d.done
		}
		if t.Failed() {
			d.mu.Lock()
			for _, l := range d.logs {
				b, _ := json.Marshal(l)
				t.Logf("tpproxy: %s", b)
			}
			d.mu.Unlock()
		}
	})
	d.waitLog(t, 30*time.Second, func(l map[string]any) bool { return l["msg"] == "tpproxy listening" })
	return d
}

// write replaces the config file atomically (as editors and config
// management tools do).
func (d *daemon) write(s settings) { d.writeRaw(s.yaml()) }

func (d *daemon) writeRaw(content string) {
	d.t.Helper()
	tmp := d.cfg + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Rename(tmp, d.cfg); err != nil {
		d.t.Fatal(err)
	}
}

func (d *daemon) readLogs(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			rec = map[string]any{"msg": "(not json) " + sc.Text()}
		}
		d.mu.Lock()
		d.logs = append(d.logs, rec)
		d.mu.Unlock()
		select {
		case d.added <- struct{}{}:
		default:
		}
	}
}

// waitLog waits for a log record that match accepts, searching from the
// start of the log, and returns it.
func (d *daemon) waitLog(t *testing.T, timeout time.Duration, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	seen := 0
	for {
		d.mu.Lock()
		for ; seen < len(d.logs); seen++ {
			if match(d.logs[seen]) {
				l := d.logs[seen]
				d.mu.Unlock()
				return l
			}
		}
		d.mu.Unlock()
		select {
		case <-d.added:
		case <-d.done:
			d.mu.Lock()
			n := len(d.logs)
			d.mu.Unlock()
			if seen == n {
				t.Fatalf("tpproxy exited (%v) before the expected log line", d.err)
			}
		case <-deadline.C:
			t.Fatalf("no matching log line within %s", timeout)
		}
	}
}

// countLogs counts the records match accepts.
func (d *daemon) countLogs(match func(map[string]any) bool) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, l := range d.logs {
		if match(l) {
			n++
		}
	}
	return n
}

func msgIs(msg string) func(map[string]any) bool {
	return func(l map[string]any) bool { return l["msg"] == msg }
}

func (d *daemon) signal(sig syscall.Signal) {
	d.t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		d.t.Fatal(err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (d *daemon) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(timeout):
		t.Fatalf("tpproxy still running %s after the signal", timeout)
	}
	return d.cmd.ProcessState.ExitCode()
}

// dsn is a go-sql-driver DSN through the proxy.
func (d *daemon) dsn(params ...string) string {
	q := append([]string{"timeout=5s"}, params...)
	return fmt.Sprintf("%s:%s@tcp(127.0.0.1:%d)/%s?%s", proxytest.User, proxytest.Password, d.set.Port, proxytest.DB, strings.Join(q, "&"))
}

func (d *daemon) open(t *testing.T, params ...string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", d.dsn(params...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// get fetches a path of the HTTP endpoint.
func (d *daemon) get(t *testing.T, path string) (int, string) {
	t.Helper()
	return d.getPort(t, d.set.HTTPPort, path)
}

// getPort is get on another of the daemon's HTTP ports.
func (d *daemon) getPort(t *testing.T, port int, path string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// metrics scrapes /metrics and parses the text format.
func (d *daemon) metrics(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := d.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value returns the value of the sample of family name whose labels
// include want (gauge, counter, or a histogram's count).
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		ok := true
		for k, v := range want {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			ok = ok && found
		}
		if !ok {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// eventually polls cond every 50 ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !proxytest.Poll(timeout, 50*time.Millisecond, cond) {
		t.Fatalf("%s: not within %s", what, timeout)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
