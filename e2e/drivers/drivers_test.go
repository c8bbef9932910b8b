package drivers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
	"github.com/tpproxy/tpproxy/proxy"
)

// scenarios is the canonical order; every script knows every name and
// answers "skip" for what its driver cannot express.
var scenarios = []string{
	"types", "charset", "prepared", "compression", "batch", "large_packet",
	"globals", "change_user", "autocommit0", "cursor_call", "found_rows",
	"kill_expr", "metadata", "greeting_charset", "multi",
}

// The second account, for change_user: created on the server and known to
// the proxy.
const (
	user2     = "drv_other"
	password2 = "other-pw"
	db2       = "tpproxy_drv2"
)

// Bounds. A script's own statements time out after scriptTimeout (where the
// driver has a read timeout); the Go side kills a script whose scenario has
// printed nothing for scenarioBound and goes on with the next scenario in a
// new process, and stops a mode's run altogether after runBound.
const (
	scriptTimeout = 10 * time.Second
	scenarioBound = 45 * time.Second
	runBound      = 90 * time.Second
)

// Proxy settings: autocommit0 opens 12 pinned sessions on a pool of 8, and
// the 4 that find no backend fail after the acquire timeout; a short one
// keeps that scenario (and the package) quick.
const (
	poolSize       = 8
	acquireTimeout = time.Second
)

// driver is one client library and how to run its script.
type driver struct {
	name string
	// command returns the script's argv, or why the driver cannot run.
	command func(t *testing.T) ([]string, error)
}

// systemPython is the distribution's interpreter with python3-pymysql and
// python3-mysqldb (a pyenv python3 may come first on PATH).
const systemPython = "/usr/bin/python3"

// connectorJ is Debian's libmariadb-java.
const connectorJ = "/usr/share/java/mariadb-java-client.jar"

var drivers = []driver{
	{"node", nodeCommand},
	{"mysqli", phpCommand("mysqli")},
	{"pdo", phpCommand("pdo")},
	{"pymysql", pythonCommand("pymysql")},
	{"mysqldb", pythonCommand("MySQLdb")},
	{"java", javaCommand},
}

func nodeCommand(t *testing.T) ([]string, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node not installed: %w", err)
	}
	if _, err := os.Stat(filepath.Join("node", "node_modules", "mysql2", "package.json")); err != nil {
		return nil, fmt.Errorf("mysql2 not installed in e2e/drivers/node (bash scripts/setup.sh tests runs npm ci): %w", err)
	}
	return []string{node, filepath.Join("node", "matrix.js")}, nil
}

func phpCommand(ext string) func(t *testing.T) ([]string, error) {
	return func(t *testing.T) ([]string, error) {
		php, err := exec.LookPath("php")
		if err != nil {
			return nil, fmt.Errorf("php not installed (php-cli): %w", err)
		}
		mod := map[string]string{"mysqli": "mysqli", "pdo": "pdo_mysql"}[ext]
		if err := probe(php, "-r", fmt.Sprintf(`exit(extension_loaded(%q) ? 0 : 1);`, mod)); err != nil {
			return nil, fmt.Errorf("PHP extension %s not loaded (php-mysql): %w", mod, err)
		}
		return []string{php, "-d", "memory_limit=1G", "-d", "display_errors=stderr",
			"-d", "default_socket_timeout=" + strconv.Itoa(int(scriptTimeout.Seconds())),
			"-d", "mysqlnd.net_read_timeout=" + strconv.Itoa(int(scriptTimeout.Seconds())),
			filepath.Join("php", "matrix.php"), ext}, nil
	}
}

func pythonCommand(module string) func(t *testing.T) ([]string, error) {
	return func(t *testing.T) ([]string, error) {
		if _, err := os.Stat(systemPython); err != nil {
			return nil, fmt.Errorf("%s missing: %w", systemPython, err)
		}
		if err := probe(systemPython, "-c", "import "+module); err != nil {
			pkg := map[string]string{"pymysql": "python3-pymysql", "MySQLdb": "python3-mysqldb"}[module]
			return nil, fmt.Errorf("%s not importable by %s (%s): %w", module, systemPython, pkg, err)
		}
		return []string{systemPython, filepath.Join("python", "matrix.py"), module}, nil
	}
}

var javaBuild struct {
	once sync.Once
	dir  string
	err  error
}

// javaCommand compiles Matrix.java once per test binary.
func javaCommand(t *testing.T) ([]string, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java not installed: %w", err)
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return nil, fmt.Errorf("javac not installed (default-jdk-headless): %w", err)
	}
	if _, err := os.Stat(connectorJ); err != nil {
		return nil, fmt.Errorf("MariaDB Connector/J missing (libmariadb-java): %w", err)
	}
	javaBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "drivers-java-")
		if err != nil {
			javaBuild.err = err
			return
		}
		javaBuild.dir = dir
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, javac, "-nowarn", "-encoding", "UTF-8", "-d", dir,
			"-cp", connectorJ, filepath.Join("java", "Matrix.java")).CombinedOutput()
		if err != nil {
			javaBuild.err = fmt.Errorf("javac Matrix.java: %w\n%s", err, out)
		}
	})
	if javaBuild.err != nil {
		// A compile error is the script's fault, never a skip.
		t.Fatal(javaBuild.err)
	}
	return []string{java, "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", javaBuild.dir + string(os.PathListSeparator) + connectorJ, "Matrix"}, nil
}

// probe runs a short availability check.
func probe(name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func inCI() bool { return os.Getenv("CI") == "true" }

// listEnv reads a comma-separated filter; nil means everything.
func listEnv(name string) []string {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return nil
	}
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// verdict is one driver/scenario's outcome.
type verdict struct {
	scenario string
	skip     string // the driver cannot express it
	directOK bool
	proxyOK  bool // ok and equal to direct
	known    bool // listed in knownProxy
	diff     string
}

// globalScenarios change server-wide settings (SET GLOBAL): they run one
// driver at a time, while no other script runs; the others run for all
// drivers at once.
var globalScenarios = []string{"prepared", "large_packet", "globals"}

// driverRun is one driver's two runs.
type driverRun struct {
	d       driver
	argv    []string
	missing error
	px      *proxytest.Proxy
	direct  map[string]*outcome
	through map[string]*outcome
}

// TestDrivers runs every driver directly and through a proxy of its own and
// compares per scenario (subtests driver/scenario).
func TestDrivers(t *testing.T) {
	if env == nil {
		t.Skip("no server")
	}
	want := listEnv("DRIVERS")
	for _, w := range want {
		if !slices.ContainsFunc(drivers, func(d driver) bool { return d.name == w }) {
			t.Fatalf("DRIVERS: unknown driver %q", w)
		}
	}
	only := listEnv("DRIVERS_SCENARIOS")
	for _, s := range only {
		if !slices.Contains(scenarios, s) {
			t.Fatalf("DRIVERS_SCENARIOS: unknown scenario %q (have %s)", s, strings.Join(scenarios, ","))
		}
	}
	run := scenarios
	if only != nil {
		run = slices.DeleteFunc(slices.Clone(scenarios), func(s string) bool { return !slices.Contains(only, s) })
	}
	shared := slices.DeleteFunc(slices.Clone(run), func(s string) bool { return slices.Contains(globalScenarios, s) })
	exclusive := slices.DeleteFunc(slices.Clone(run), func(s string) bool { return !slices.Contains(globalScenarios, s) })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.Server(t).CreateUser(ctx, user2, password2); err != nil {
		t.Fatal(err)
	}
	if err := env.Server(t).CreateDatabase(ctx, db2); err != nil {
		t.Fatal(err)
	}
	g := snapshotGlobals(t)

	var runs []*driverRun
	for _, d := range drivers {
		if want != nil && !slices.Contains(want, d.name) {
			continue
		}
		dr := &driverRun{d: d, direct: map[string]*outcome{}, through: map[string]*outcome{}}
		dr.argv, dr.missing = d.command(t)
		if dr.missing == nil {
			dr.px = env.StartProxy(t, func(o *proxytest.Options) {
				o.Pool.Size = poolSize
				o.Pool.AcquireTimeout = acquireTimeout
				o.Proxy.Users = append(o.Proxy.Users, proxy.User{Name: user2, Plain: password2})
			})
		}
		runs = append(runs, dr)
	}

	// All drivers at once for the shared scenarios (each direct, then
	// through its own proxy); then the global ones, one run at a time.
	var phase sync.RWMutex
	var wg sync.WaitGroup
	for _, dr := range runs {
		if dr.missing != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			phase.RLock()
			runMode(t, g, dr.d.name, "direct", dr.argv, env.Server(t).Addr, shared, dr.direct)
			runMode(t, g, dr.d.name, "proxy", dr.argv, dr.px.Addr, shared, dr.through)
			phase.RUnlock()
			if len(exclusive) == 0 {
				return
			}
			phase.Lock()
			defer phase.Unlock()
			runMode(t, g, dr.d.name, "direct", dr.argv, env.Server(t).Addr, exclusive, dr.direct)
			runMode(t, g, dr.d.name, "proxy", dr.argv, dr.px.Addr, exclusive, dr.through)
		}()
	}
	wg.Wait()

	summary := map[string][]verdict{}
	var ran []string
	for _, dr := range runs {
		t.Run(dr.d.name, func(t *testing.T) {
			if dr.missing != nil {
				if inCI() {
					t.Fatalf("CI=true but the %s driver cannot run: %v", dr.d.name, dr.missing)
				}
				t.Skipf("%s driver not available: %v", dr.d.name, dr.missing)
			}
			summary[dr.d.name] = compareAll(t, dr.d.name, run, dr.direct, dr.through)
			ran = append(ran, dr.d.name)
		})
	}
	report(t, ran, summary)
}

// compareAll judges every scenario of one driver in its own subtest.
func compareAll(t *testing.T, drv string, run []string, direct, through map[string]*outcome) []verdict {
	var vs []verdict
	for _, sc := range run {
		v := verdict{scenario: sc}
		key := drv + "/" + sc
		reason, known := knownProxy[key]
		v.known = known
		t.Run(sc, func(t *testing.T) {
			d, p := direct[sc], through[sc]
			if d == nil {
				d = &outcome{Scenario: sc, Error: "no result"}
			}
			if p == nil {
				p = &outcome{Scenario: sc, Error: "no result"}
			}
			if d.Skip != "" {
				v.skip = d.Skip
				if known {
					t.Errorf("%s is skipped by the driver but listed in knownProxy: remove it", key)
				}
				t.Skipf("driver cannot express it: %s", d.Skip)
			}
			if !d.OK {
				// Never excused: the script (or the server) is wrong.
				t.Errorf("direct run failed: %s\nresult: %s", d.Error, abbreviate(string(d.Result), 2000))
				return
			}
			v.directOK = true
			diff := compareOutcomes(drv, d, p)
			if diff == "" {
				v.proxyOK = true
				if known {
					t.Errorf("now passes: remove from knownProxy (%q: %q)", key, reason)
				}
				return
			}
			v.diff = diff
			if known {
				t.Logf("known proxy difference (%s):\n%s", reason, diff)
				return
			}
			t.Errorf("through the proxy:\n%s", diff)
		})
		vs = append(vs, v)
	}
	return vs
}

// compareOutcomes returns "" when the proxy run passed and saw what the
// direct run saw, else a description of the difference.
func compareOutcomes(drv string, d, p *outcome) string {
	var b strings.Builder
	if p.Skip != "" {
		return "proxy run skipped it: " + p.Skip
	}
	if !p.OK {
		fmt.Fprintf(&b, "proxy run failed: %s\n", p.Error)
	}
	dv, err := normalise(drv, d.Result)
	if err != nil {
		return "direct result: " + err.Error()
	}
	pv, err := normalise(drv, p.Result)
	if err != nil {
		return b.String() + "proxy result: " + err.Error()
	}
	var diffs []string
	jsonDiff("", dv, pv, &diffs)
	if len(diffs) > 0 {
		b.WriteString("result differs (direct vs proxy):\n")
		for _, l := range diffs {
			b.WriteString("  " + l + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// globals are the server's global defaults that scenarios change.
type globals map[string]string

var globalNames = []string{"sql_mode", "max_allowed_packet", "max_prepared_stmt_count", "net_buffer_length"}

func snapshotGlobals(t *testing.T) globals {
	t.Helper()
	db := env.Root(t)
	g := globals{}
	for _, n := range globalNames {
		var v string
		if err := db.QueryRow("SELECT @@GLOBAL." + n).Scan(&v); err != nil {
			t.Fatal(err)
		}
		g[n] = v
	}
	return g
}

// restore puts the globals back, whatever a killed script left behind.
func (g globals) restore(tb testing.TB) {
	var stmts []string
	for _, n := range globalNames {
		v := g[n]
		if _, err := strconv.Atoi(v); err != nil {
			v = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		}
		stmts = append(stmts, "SET GLOBAL "+n+" = "+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := env.Server(tb).Exec(ctx, stmts...); err != nil {
		tb.Errorf("restore globals: %v", err)
	}
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
