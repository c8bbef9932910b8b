package drivers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// outcome is one line a script prints: {"event":"start","scenario":...}
// before a scenario, then {"scenario","ok","result","error"} (or "skip").
type outcome struct {
	Event    string          `json:"event"`
	Scenario string          `json:"scenario"`
	OK       bool            `json:"ok"`
	Skip     string          `json:"skip"`
	Result   json.RawMessage `json:"result"`
	Error    string          `json:"error"`
	// ElapsedMS is the script's own timing, for the log only.
	ElapsedMS int64 `json:"elapsed_ms"`
}

// runMode runs a driver's script against addr for the given scenarios and
// adds each scenario's outcome to results. A scenario that hangs past
// scenarioBound (or a script that dies in it) is recorded as failed and the
// script starts again with the scenarios after it, until runBound. The
// globals are restored after every script run. tb is only logged to (and
// failed by a restore that fails), so runMode may run in any goroutine.
func runMode(tb testing.TB, g globals, drv, mode string, argv []string, addr string, run []string, results map[string]*outcome) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		for _, s := range run {
			results[s] = &outcome{Scenario: s, Error: err.Error()}
		}
		return
	}
	vars := []string{
		"DRV_HOST=" + host, "DRV_PORT=" + port,
		"DRV_USER=" + proxytest.User, "DRV_PASSWORD=" + proxytest.Password, "DRV_DB=" + proxytest.DB,
		"DRV_USER2=" + user2, "DRV_PASSWORD2=" + password2, "DRV_DB2=" + db2,
		"DRV_MODE=" + mode, "DRV_NAME=" + drv, "DRV_PREFIX=" + drv + "_" + mode,
		fmt.Sprintf("DRV_TIMEOUT=%d", int(scriptTimeout.Seconds())),
	}
	deadline := time.Now().Add(runBound)
	start := time.Now()
	remaining := slices.Clone(run)
	for len(remaining) > 0 {
		if time.Now().After(deadline) {
			for _, s := range remaining {
				results[s] = &outcome{Scenario: s, Error: fmt.Sprintf("not run: the %s run passed its %s bound", mode, runBound)}
			}
			break
		}
		progressed := runOnce(tb, mode, argv, vars, remaining, deadline, results)
		g.restore(tb)
		remaining = slices.DeleteFunc(remaining, func(s string) bool { return results[s] != nil })
		if !progressed {
			// The script died before its first scenario: it will again.
			for _, s := range remaining {
				results[s] = &outcome{Scenario: s, Error: "script did not start a scenario (see log)"}
			}
			break
		}
	}
	var slow []string
	for _, s := range run {
		if o := results[s]; o != nil && o.ElapsedMS >= 2000 {
			slow = append(slow, fmt.Sprintf("%s %.1fs", s, float64(o.ElapsedMS)/1000))
		}
	}
	tb.Logf("%s %s: %d scenarios in %s (slow: %s)", drv, mode, len(run), time.Since(start).Round(10*time.Millisecond), strings.Join(slow, ", "))
}

// runOnce starts the script for the remaining scenarios and records what
// it reports; it reports whether any scenario got an outcome.
func runOnce(tb testing.TB, mode string, argv, vars, remaining []string, deadline time.Time, results map[string]*outcome) bool {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), vars...)
	cmd.Env = append(cmd.Env, "DRV_SCENARIOS="+strings.Join(remaining, ","))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr tailBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		for _, s := range remaining {
			results[s] = &outcome{Scenario: s, Error: "start script: " + err.Error()}
		}
		return false
	}
	kill := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	lines := make(chan []byte)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			lines <- slices.Clone(sc.Bytes())
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	progressed := false
	current := ""
	bound := time.NewTimer(scenarioBound)
	defer bound.Stop()
	overall := time.NewTimer(time.Until(deadline))
	defer overall.Stop()
	fail := func(msg string) {
		if current != "" {
			results[current] = &outcome{Scenario: current, Error: msg}
			progressed = true
			current = ""
		}
	}
loop:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				break loop
			}
			var o outcome
			if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("{")) || json.Unmarshal(l, &o) != nil || o.Scenario == "" {
				tb.Logf("%s: %s", mode, abbreviate(string(l), 500))
				continue
			}
			if o.Event == "start" {
				current = o.Scenario
				bound.Reset(scenarioBound)
				continue
			}
			results[o.Scenario] = &o
			progressed = true
			current = ""
		case <-bound.C:
			kill()
			fail(fmt.Sprintf("hung: no result %s after it started; the script was killed (stderr: %s)", scenarioBound, stderr.tail()))
			break loop
		case <-overall.C:
			kill()
			fail(fmt.Sprintf("killed at the %s bound of the %s run", runBound, mode))
			break loop
		}
	}
	kill()
	for range lines {
	}
	wg.Wait()
	werr := cmd.Wait()
	fail(fmt.Sprintf("the script exited during the scenario (%v): %s", werr, stderr.tail()))
	if s := strings.TrimSpace(stderr.tail()); s != "" {
		tb.Logf("%s stderr: %s", mode, abbreviate(s, 2000))
	}
	return progressed
}

// tailBuffer keeps the last few KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 8<<10 {
		b.buf = b.buf[len(b.buf)-8<<10:]
	}
	return len(p), nil
}

func (b *tailBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(string(b.buf))
	if len(s) > 1500 {
		s = "..." + s[len(s)-1500:]
	}
	return s
}

// What legitimately differs between a direct and a proxied run, and only
// that, is normalised away:
//   - the per-run table/procedure prefix (<driver>_direct / <driver>_proxy);
//   - connection (thread) ids and statement ids in server messages, and
//     Connector/J's "(conn=N)" prefix and the "(port=N)" of its connect
//     errors;
//   - in server status words, SERVER_QUERY_WAS_SLOW (a timing) and
//     SERVER_SESSION_STATE_CHANGED (session tracking, which tpproxy does not
//     negotiate with clients).
var (
	threadIDRe    = regexp.MustCompile(`(?i)(thread id:? ?)\d+`)
	stmtHandlerRe = regexp.MustCompile(`(?i)(statement handler \(|handler \()\d+\)`)
	connIDRe      = regexp.MustCompile(`\(conn[=:]\d+\)`)
	portRe        = regexp.MustCompile(`\(port=\d+\)`)
	droppedKeys   = map[string]bool{"connection_id": true, "thread_id": true, "threadId": true, "elapsed_ms": true}
	statusKeys    = map[string]bool{"serverStatus": true, "server_status": true}
)

const statusMask = 0x0800 | 0x4000

func normalise(drv string, raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("bad JSON: %w", err)
	}
	rep := strings.NewReplacer(drv+"_direct", drv+"_MODE", drv+"_proxy", drv+"_MODE")
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if droppedKeys[k] {
					delete(x, k)
					continue
				}
				if n, ok := e.(json.Number); ok && statusKeys[k] {
					if i, err := n.Int64(); err == nil {
						x[k] = json.Number(fmt.Sprint(i &^ statusMask))
						continue
					}
				}
				x[k] = walk(e)
			}
			return x
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
			return x
		case string:
			s := rep.Replace(x)
			s = threadIDRe.ReplaceAllString(s, "${1}N")
			s = stmtHandlerRe.ReplaceAllString(s, "${1}N)")
			s = connIDRe.ReplaceAllString(s, "(conn=N)")
			s = portRe.ReplaceAllString(s, "(port=N)")
			return s
		}
		return v
	}
	return walk(v), nil
}

// jsonDiff lists the paths where a and b differ (at most 60 lines; at most
// 4 differing elements of one array, then a count of the rest).
func jsonDiff(path string, a, b any, out *[]string) {
	if len(*out) >= 60 {
		return
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range x {
			keys[k] = true
		}
		for k := range y {
			keys[k] = true
		}
		var ks []string
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			av, aok := x[k]
			bv, bok := y[k]
			p := path + "." + k
			switch {
			case !aok:
				*out = append(*out, fmt.Sprintf("%s: direct has no such key, proxy=%s", p, show(bv)))
			case !bok:
				*out = append(*out, fmt.Sprintf("%s: direct=%s, proxy has no such key", p, show(av)))
			default:
				jsonDiff(p, av, bv, out)
			}
		}
		return
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			break
		}
		shown, more := 0, 0
		for i := range x {
			if show(x[i]) == show(y[i]) {
				continue
			}
			if shown == 4 {
				more++
				continue
			}
			shown++
			jsonDiff(fmt.Sprintf("%s[%d]", path, i), x[i], y[i], out)
		}
		if more > 0 {
			*out = append(*out, fmt.Sprintf("%s: %d more elements differ", path, more))
		}
		return
	default:
		if show(a) == show(b) {
			return
		}
	}
	if path == "" {
		path = "."
	}
	*out = append(*out, fmt.Sprintf("%s: direct=%s proxy=%s", path, show(a), show(b)))
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return abbreviate(string(b), 300)
}

// report logs the per-driver summary and, with DRIVERS_REPORT=path, writes
// it as markdown with the scenario matrix and the known differences.
func report(t *testing.T, ran []string, summary map[string][]verdict) {
	if len(ran) == 0 {
		return
	}
	var md strings.Builder
	md.WriteString("| driver | scenarios | direct pass | proxy pass (== direct) | known proxy differences | skipped |\n|---|---|---|---|---|---|\n")
	for _, drv := range ran {
		var n, dp, pp, kn, sk int
		for _, v := range summary[drv] {
			if v.skip != "" {
				sk++
				continue
			}
			n++
			if v.directOK {
				dp++
			}
			if v.proxyOK {
				pp++
			}
			if v.known && !v.proxyOK {
				kn++
			}
		}
		fmt.Fprintf(&md, "| %s | %d | %d | %d | %d | %d |\n", drv, n, dp, pp, kn, sk)
	}
	table := md.String()
	t.Logf("driver matrix:\n%s", table)

	path := os.Getenv("DRIVERS_REPORT")
	if path == "" {
		return
	}
	md.WriteString("\nPer scenario: PASS (proxy == direct), DIFF (known proxy difference), FAIL, `-` (the driver cannot express it).\n\n")
	md.WriteString("| scenario | " + strings.Join(ran, " | ") + " |\n|---" + strings.Repeat("|---", len(ran)) + "|\n")
	byScenario := map[string]map[string]verdict{}
	var order []string
	for _, drv := range ran {
		for _, v := range summary[drv] {
			if byScenario[v.scenario] == nil {
				byScenario[v.scenario] = map[string]verdict{}
				order = append(order, v.scenario)
			}
			byScenario[v.scenario][drv] = v
		}
	}
	for _, sc := range order {
		md.WriteString("| " + sc)
		for _, drv := range ran {
			v, ok := byScenario[sc][drv]
			cell := " "
			switch {
			case !ok:
			case v.skip != "":
				cell = "-"
			case !v.directOK:
				cell = "FAIL (direct)"
			case v.proxyOK:
				cell = "PASS"
			case v.known:
				cell = "DIFF"
			default:
				cell = "FAIL"
			}
			md.WriteString(" | " + cell)
		}
		md.WriteString(" |\n")
	}
	md.WriteString("\nDifferences through the proxy:\n\n")
	for _, drv := range ran {
		for _, v := range summary[drv] {
			if v.diff == "" {
				continue
			}
			fmt.Fprintf(&md, "- **%s/%s**", drv, v.scenario)
			if r, ok := knownProxy[drv+"/"+v.scenario]; ok {
				fmt.Fprintf(&md, " (known: %s)", r)
			}
			md.WriteString("\n\n```\n" + v.diff + "\n```\n\n")
		}
	}
	if err := os.WriteFile(path, []byte(md.String()), 0o644); err != nil {
		t.Errorf("DRIVERS_REPORT: %v", err)
	}
}
