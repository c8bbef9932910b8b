package semantics

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The only behaviours allowed to differ: a multiplexer cannot keep them
// (README, "Known limits"). A LEAK fails whatever the limit.
const (
	limConnID   = "CONNECTION_ID() compared with server-side thread ids"
	limStatus   = "per-connection status counters"
	limRowCount = "ROW_COUNT()/FOUND_ROWS() in non-exact forms and GET DIAGNOSTICS after the backend changed"
	limCache    = "PREPARE answered from the statement cache after a change made directly on the server"
	limSchema   = "default schema dropped by someone else"
	// The server records the first statement after COM_RESET_CONNECTION
	// of a profiling session although profiling is off; tpproxy turns it
	// off before its own re-initialisation, which must not be recorded.
	limProfileReset = "profile history across COM_RESET_CONNECTION"
	// What a connection's previous statement leaves for the next that no
	// statement without a write can recreate elsewhere: a positive
	// ROW_COUNT(), and the row number a SELECT leaves for warnings.
	limEcho = "the previous statement's echo on another connection"
)

var limits = []string{limConnID, limStatus, limRowCount, limCache, limSchema, limProfileReset, limEcho}

type verdict string

const (
	vPass    verdict = "PASS"
	vDiff    verdict = "DIFF"
	vDiffDoc verdict = "DIFF (documented)"
	vLeak    verdict = "LEAK"
	vError   verdict = "ERROR"
)

// outcome is a scenario's verdict with the evidence.
type outcome struct {
	sc      *scenario
	v       verdict
	reason  string
	details []string
	took    time.Duration
	rounds  int64
	pinned  map[string]int
	// baseline are noise anomalies of the run that show no state of the
	// scenario (see noiseReport.baseline).
	baseline  []string
	nBaseline int
}

func (o *outcome) fails() bool { return o.v == vDiff || o.v == vLeak || o.v == vError }

func TestSemantics(t *testing.T) {
	start := time.Now()
	installFixtures(t)
	prepareNoise(t)
	var filter *regexp.Regexp
	if f := os.Getenv("SEMANTICS_RUN"); f != "" {
		filter = regexp.MustCompile(f)
	}
	calib, calibBase := calibrate(t)
	// A proxy that answers slowly must not push the suite into go test's
	// timeout, which would lose the summary: past the budget, the
	// remaining scenarios are reported as not run.
	budget := 8 * time.Minute
	if b, err := time.ParseDuration(os.Getenv("SEMANTICS_BUDGET")); err == nil {
		budget = b
	}
	var outs []*outcome
	for _, sc := range allScenarios() {
		if filter != nil && !filter.MatchString(sc.id) {
			continue
		}
		o := &outcome{sc: sc}
		outs = append(outs, o)
		if time.Since(start) > budget {
			o.v, o.reason = vError, fmt.Sprintf("not run: the suite's time budget (%s, SEMANTICS_BUDGET) was spent", budget)
			continue
		}
		t.Run(sc.id, func(t *testing.T) {
			began := time.Now()
			direct := runPhase(t, sc, false)
			// SEMANTICS_SELFCHECK compares the direct run with a second
			// direct run: every scenario must be deterministic there.
			proxied := runPhase(t, sc, os.Getenv("SEMANTICS_SELFCHECK") == "")
			judge(o, direct, proxied)
			o.took = time.Since(began)
			if n := proxied.noise; n != nil {
				o.rounds = n.rounds
				o.baseline, o.nBaseline = n.baseline, n.nBaseline
				o.pinned = n.pinned
			}
			if os.Getenv("SEMANTICS_DUMP") != "" {
				dump(t, direct, proxied)
			}
			if o.v != vPass {
				t.Logf("%s [%s] %s: %s", o.v, sc.class, sc.desc, o.reason)
				for _, d := range o.details {
					t.Log(d)
				}
			}
			if o.fails() {
				t.Fail()
			}
		})
	}
	for _, o := range outs {
		if o.v == vError && strings.HasPrefix(o.reason, "not run") {
			t.Errorf("%s", o.reason)
			break
		}
	}
	base := baselineSummary(outs, calibBase)
	if base != "" {
		t.Errorf("%s", base)
	}
	summary := renderSummary(outs, calib+"\n"+pinSummary(outs, calibBase)+base, time.Since(start))
	t.Log("\n" + summary)
	if path := os.Getenv("SEMANTICS_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(summary), 0o644); err != nil {
			t.Errorf("report: %v", err)
		}
	}
}

// dump logs every observation of both runs (SEMANTICS_DUMP=1).
func dump(t *testing.T, direct, proxied phase) {
	for i, d := range direct.obs {
		p := "(none)"
		if i < len(proxied.obs) {
			p = proxied.obs[i].display
		}
		t.Logf("%s\n    direct: %s\n    %s: %s", d.where(), d.display, proxied.name, p)
	}
}

// calibrate measures, with noise running, how often a session's
// consecutive statements change backend connection.
func calibrate(t *testing.T) (string, *noiseReport) {
	scope := &scopedTB{TB: t}
	defer scope.done()
	px := startProxy(scope)
	ns := startNoise(px, &scenario{id: "calibration"})
	defer ns.stop()
	if err := ns.waitReady(); err != nil {
		t.Fatalf("calibration: %v", err)
	}
	began := time.Now()
	moved, total, err := measureMoves(px.Addr, "")
	took := time.Since(began)
	ns.stop()
	rep := ns.report()
	if err != nil {
		t.Fatalf("calibration: %v", err)
	}
	// Without a scenario, everything the noise sees is baseline.
	rep.baseline = append(rep.baseline, rep.anomalies...)
	rep.nBaseline += rep.nAnomalies
	s := fmt.Sprintf("calibration: with %d noise sessions a session's next statement ran on another backend connection %d times out of %d (%.0f ms per statement); noise did %d rounds",
		noiseSessions, moved, total, float64(took.Milliseconds())/float64(total+1), rep.rounds)
	if moved*2 < total {
		t.Logf("warning: %s — fewer than half", s)
	}
	return s, rep
}

// pinSummary counts the noise sessions found pinned for nothing they
// did: no failure (a proxy may pin more than needed), but a cost.
func pinSummary(outs []*outcome, calib *noiseReport) string {
	all := maps.Clone(calib.pinned)
	if all == nil {
		all = map[string]int{}
	}
	for _, o := range outs {
		for k, v := range o.pinned {
			all[k] += v
		}
	}
	if len(all) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(all)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, all[k]))
	}
	return "noise sessions found pinned after a round (unpinned again with COM_RESET_CONNECTION), by reason: " + strings.Join(parts, ", ") + "\n"
}

// baselineSummary describes the noise anomalies that show no scenario
// state: a noise session lost its own value (e.g. @@last_insert_id) or saw
// another noise session's. They fail the suite, but no scenario.
func baselineSummary(outs []*outcome, calib *noiseReport) string {
	total, runs := calib.nBaseline, 0
	var first []string
	first = append(first, calib.baseline...)
	if calib.nBaseline > 0 {
		runs++
	}
	var where []string
	for _, o := range outs {
		if o.nBaseline == 0 {
			continue
		}
		total += o.nBaseline
		runs++
		where = append(where, o.sc.id)
		first = append(first, o.baseline...)
	}
	if total == 0 {
		return ""
	}
	kinds := map[string]bool{}
	var examples []string
	for _, a := range first {
		// one example per kind
		k := a
		if i := strings.Index(a, ": "); i >= 0 {
			k = a[i+2:]
		}
		k = anomalyKind(k)
		if !kinds[k] && len(examples) < 10 {
			kinds[k] = true
			examples = append(examples, "  - "+a)
		}
	}
	if len(where) > 12 {
		where = append(where[:12], fmt.Sprintf("and %d more", len(where)-12))
	}
	return fmt.Sprintf("noise baseline anomalies (no scenario state involved: a noise session lost its own value or saw another noise session's): %d in %d proxy runs (calibration, %s), one example per kind:\n%s",
		total, runs, strings.Join(where, " "), strings.Join(examples, "\n"))
}

// judge compares the two runs of a scenario.
func judge(o *outcome, direct, proxied phase) {
	sc := o.sc
	if direct.err != nil {
		o.v, o.reason = vError, "direct run: "+direct.err.Error()
		return
	}
	var leak, diff string
	if n := proxied.noise; n != nil && n.nAnomalies > 0 {
		leak = fmt.Sprintf("%d noise anomalies, first: %s", n.nAnomalies, n.anomalies[0])
		for _, a := range n.anomalies {
			o.details = append(o.details, "  noise saw: "+a)
		}
	}
	if n := proxied.noise; n != nil && n.nTroubles > 0 {
		o.details = append(o.details, fmt.Sprintf("  noise troubles (not leaks): %d, first: %s", n.nTroubles, n.troubles[0]))
	}
	if proxied.err != nil {
		diff = "proxy run: " + proxied.err.Error()
	}
	if len(direct.obs) != len(proxied.obs) && diff == "" {
		diff = fmt.Sprintf("%d observations directly, %d through the proxy", len(direct.obs), len(proxied.obs))
	}
	for i := range min(len(direct.obs), len(proxied.obs)) {
		d, p := direct.obs[i], proxied.obs[i]
		if strings.Contains(p.display, noiseMarker) && !strings.Contains(d.display, noiseMarker) && leak == "" {
			leak = fmt.Sprintf("%s saw a noise session's statement: %s", p.where(), clip(p.display))
		}
		if d.canon == p.canon {
			continue
		}
		dd, pd := clipDiff(d.display, p.display)
		if d.display == p.display { // the difference is in what only canon shows (metadata)
			dd, pd = clipDiff(d.canon, p.canon)
		}
		o.details = append(o.details, fmt.Sprintf("  %s\n    direct: %s\n    proxy:  %s", clip(p.where()), dd, pd))
		dc, pc := clipDiff(d.canon, p.canon)
		what := fmt.Sprintf("%s | direct: %s | proxy: %s", clip(p.where()), dc, pc)
		switch {
		case d.leak && leak == "":
			leak = what
		case !d.leak && diff == "":
			diff = what
		}
	}
	switch {
	case leak != "" && diff != "":
		o.v, o.reason = vLeak, leak+" — and the subject: "+diff
	case leak != "":
		o.v, o.reason = vLeak, leak
	case diff != "" && sc.limit != "" && proxied.err == nil:
		o.v, o.reason = vDiffDoc, sc.limit+": "+diff
	case diff != "":
		o.v, o.reason = vDiff, diff
	default:
		o.v = vPass
	}
}

// clipDiff shortens two renderings that differ to the neighbourhood of
// their first difference.
func clipDiff(a, b string) (string, string) {
	const before, after = 60, 160
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	cut := func(s string) string {
		start := max(0, i-before)
		end := min(len(s), i+after)
		out := s[start:end]
		if start > 0 {
			out = "…" + out
		}
		if end < len(s) {
			out += "…"
		}
		return out
	}
	return cut(a), cut(b)
}

func clip(s string) string {
	const max = 240
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

func renderSummary(outs []*outcome, calib string, took time.Duration) string {
	var b strings.Builder
	counts := map[verdict]int{}
	fmt.Fprintf(&b, "| id | class | verdict | reason |\n|---|---|---|---|\n")
	for _, o := range outs {
		counts[o.v]++
		reason := strings.NewReplacer("|", "\\|", "\n", " ").Replace(o.reason)
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", o.sc.id, o.sc.class, o.v, reason)
	}
	fmt.Fprintf(&b, "\nTotals: %d scenarios: PASS %d, DIFF %d, DIFF (documented) %d, LEAK %d, ERROR %d\n",
		len(outs), counts[vPass], counts[vDiff], counts[vDiffDoc], counts[vLeak], counts[vError])
	fmt.Fprintf(&b, "\n%s\nSuite time: %s\n", calib, took.Round(time.Second))
	return b.String()
}

// TestScenarioDefinitions checks the scenarios themselves: ids, classes,
// limits, step syntax and the naming conventions noise relies on.
func TestScenarioDefinitions(t *testing.T) {
	all := allScenarios()
	if len(all) < 120 {
		t.Errorf("%d scenarios, want at least 120", len(all))
	}
	ids := map[string]bool{}
	perClass := map[string]int{}
	varRE := regexp.MustCompile(`(?:^|[^@\w])(@` + "`?" + `sem_\w+)`)
	lockRE := regexp.MustCompile(`'(sem_lock\w*)'`)
	for _, sc := range all {
		if !regexp.MustCompile(`^[a-z]{2}[0-9]{2}[a-z]?$`).MatchString(sc.id) || ids[sc.id] {
			t.Errorf("bad or duplicate id %q", sc.id)
		}
		ids[sc.id] = true
		if !slices.Contains(classes, sc.class) {
			t.Errorf("%s: unknown class %q", sc.id, sc.class)
		}
		perClass[sc.class]++
		if sc.desc == "" || len(sc.steps) == 0 {
			t.Errorf("%s: no description or no steps", sc.id)
		}
		if sc.limit != "" && !slices.Contains(limits, sc.limit) {
			t.Errorf("%s: limit %q is not a documented limit", sc.id, sc.limit)
		}
		text := strings.Join(append(append([]string{}, sc.steps...), sc.setup...), "\n")
		for _, m := range varRE.FindAllStringSubmatch(text, -1) {
			v := strings.ReplaceAll(m[1], "`", "")
			if !slices.Contains(semVars, v) {
				t.Errorf("%s: user variable %s is not in semVars, noise cannot check it", sc.id, v)
			}
		}
		for _, m := range lockRE.FindAllStringSubmatch(text, -1) {
			if !slices.Contains(semLocks, m[1]) {
				t.Errorf("%s: lock %s is not in semLocks", sc.id, m[1])
			}
		}
		if regexp.MustCompile(`\bsw\b`).MatchString(text) {
			t.Errorf("%s: uses the end sweep's table sw", sc.id)
		}
		if strings.Contains(text, "semn_") || strings.Contains(text, noiseMarker) {
			t.Errorf("%s: uses the noise sessions' names", sc.id)
		}
		for _, line := range sc.steps {
			if _, err := parseStep(line); err != nil {
				t.Errorf("%s: %v", sc.id, err)
			}
		}
	}
	for _, c := range classes {
		if perClass[c] < 3 {
			t.Errorf("class %s has %d scenarios, want several", c, perClass[c])
		}
	}
}
