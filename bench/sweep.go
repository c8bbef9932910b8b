package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
)

// ErrBadSweep marks an invalid sweep.
var ErrBadSweep = errors.New("bench: invalid sweep")

// SweepParam is one --param: a tpproxy variable and the values to try.
type SweepParam struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

var paramName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
var paramValue = regexp.MustCompile(`^[A-Za-z0-9_.+-]+$`)

// ParseParam reads "thread_pool_size=1,2,4".
func ParseParam(s string) (SweepParam, error) {
	name, vals, ok := strings.Cut(s, "=")
	name = strings.ToLower(strings.TrimSpace(name))
	if !ok || !paramName.MatchString(name) || vals == "" {
		return SweepParam{}, fmt.Errorf("%w: --param %q: want NAME=V1,V2,... e.g. thread_pool_size=1,2,4", ErrBadSweep, s)
	}
	p := SweepParam{Name: name}
	for _, v := range strings.Split(vals, ",") {
		v = strings.TrimSpace(v)
		if !paramValue.MatchString(v) {
			return SweepParam{}, fmt.Errorf("%w: --param %s: value %q is not a plain number or word", ErrBadSweep, name, v)
		}
		p.Values = append(p.Values, v)
	}
	return p, nil
}

// combinations returns every assignment of the params' values, the first
// param varying slowest.
func combinations(params []SweepParam) []map[string]string {
	out := []map[string]string{{}}
	for _, p := range params {
		var next []map[string]string
		for _, c := range out {
			for _, v := range p.Values {
				m := maps.Clone(c)
				m[p.Name] = v
				next = append(next, m)
			}
		}
		out = next
	}
	return out
}

// comboLabel names a combination in the params' order.
func comboLabel(params []SweepParam, c map[string]string) string {
	parts := make([]string, len(params))
	for i, p := range params {
		parts[i] = p.Name + "=" + c[p.Name]
	}
	return strings.Join(parts, " ")
}

// SweepConfig runs a ramp on one tpproxy target for every combination of
// Params, set through its admin port.
type SweepConfig struct {
	// Ramp is the ramp each combination runs; its single target is the
	// proxy.
	Ramp RampConfig
	// AdminDSN is the proxy's admin port (SET GLOBAL).
	AdminDSN string
	Params   []SweepParam
	// Baseline, when set, runs the ramp once on this target (the server
	// directly) before the sweep, for comparison.
	Baseline *Target
}

// SweepRun is one combination's outcome.
type SweepRun struct {
	Label    string            `json:"label"`
	Params   map[string]string `json:"params"`
	Capacity Capacity          `json:"capacity"`
	// MaxTPS is the best TPS among its passing steps.
	MaxTPS float64 `json:"max_tps"`
}

// SweepOutcome is a sweep's result and its recommendation.
type SweepOutcome struct {
	Params []SweepParam `json:"params"`
	Runs   []SweepRun   `json:"runs"`
	// Best indexes Runs (-1: none passed a step).
	Best           int    `json:"best"`
	Recommendation string `json:"recommendation"`
}

// Recommend picks the run with the widest plateau: the most passing
// steps, then the highest TPS within the limits; -1 when none passed any
// step. Ties keep the earlier run (smaller settings first).
func Recommend(runs []SweepRun) int {
	best := -1
	for i, r := range runs {
		if r.Capacity.PassedSteps == 0 {
			continue
		}
		if best < 0 || r.Capacity.PassedSteps > runs[best].Capacity.PassedSteps ||
			(r.Capacity.PassedSteps == runs[best].Capacity.PassedSteps && r.MaxTPS > runs[best].MaxTPS) {
			best = i
		}
	}
	return best
}

// Sweep applies each combination with one SET GLOBAL (all variables at
// once), runs the ramp, and finally restores the values it found. The
// report holds every run's steps, the combination as the target name.
func Sweep(ctx context.Context, cfg SweepConfig) (*Report, error) {
	if len(cfg.Ramp.Targets) != 1 {
		return nil, fmt.Errorf("%w: a sweep takes exactly one --target (the proxy)", ErrBadSweep)
	}
	if len(cfg.Params) == 0 {
		return nil, fmt.Errorf("%w: no --param", ErrBadSweep)
	}
	if cfg.AdminDSN == "" {
		return nil, fmt.Errorf("%w: --proxy-admin DSN is required", ErrBadSweep)
	}
	if err := cfg.Ramp.validate(); err != nil {
		return nil, err
	}
	admin, err := openDB(cfg.AdminDSN, 1, nil)
	if err != nil {
		return nil, fmt.Errorf("bench: --proxy-admin: %w", err)
	}
	defer admin.Close()
	orig, err := readGlobals(ctx, admin, cfg.Params)
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := setGlobals(context.WithoutCancel(ctx), admin, cfg.Params, orig); rerr != nil {
			cfg.Ramp.Logger.Warn("could not restore the proxy's settings", "err", rerr)
		}
	}()

	proxy := cfg.Ramp.Targets[0]
	combos := combinations(cfg.Params)
	rep := newReport(cfg.Ramp)
	rep.Title = cfg.Ramp.Title
	outcome := &SweepOutcome{Params: cfg.Params, Best: -1}
	var runErr error
	if cfg.Baseline != nil {
		rc := cfg.Ramp
		rc.Targets = []Target{*cfg.Baseline}
		rc.Monitor.ProxyAdmin = nil
		fmt.Fprintf(rc.Out, "baseline %s\n", cfg.Baseline.Name)
		r, err := Ramp(ctx, rc)
		if r != nil {
			rep.Steps = append(rep.Steps, r.Steps...)
			rep.Capacity = append(rep.Capacity, r.Capacity...)
			rep.Notes = append(rep.Notes, r.Notes...)
		}
		runErr = err
	}
	for i, c := range combos {
		if runErr != nil {
			break
		}
		label := comboLabel(cfg.Params, c)
		if err := setGlobals(ctx, admin, cfg.Params, c); err != nil {
			runErr = err
			break
		}
		fmt.Fprintf(cfg.Ramp.Out, "[%d/%d] %s\n", i+1, len(combos), label)
		rc := cfg.Ramp
		rc.Targets = []Target{{Name: label, DSN: proxy.DSN}}
		rc.Params = c
		rc.Monitor.ProxyAdmin = map[string]string{label: cfg.AdminDSN}
		r, err := Ramp(ctx, rc)
		if r == nil {
			runErr = err
			break
		}
		rep.Steps = append(rep.Steps, r.Steps...)
		rep.Capacity = append(rep.Capacity, r.Capacity...)
		rep.Notes = append(rep.Notes, r.Notes...)
		run := SweepRun{Label: label, Params: c, Capacity: r.Capacity[0]}
		for _, s := range r.Steps {
			if !s.Confirm && s.Threads <= run.Capacity.Clients && run.Capacity.PassedSteps > 0 {
				run.MaxTPS = max(run.MaxTPS, s.TPS)
			}
		}
		outcome.Runs = append(outcome.Runs, run)
		runErr = err
		if cfg.Baseline != nil {
			rep.Comparisons = append(rep.Comparisons, Pair(rep.Steps, cfg.Baseline.Name, label)...)
		}
	}
	outcome.Best = Recommend(outcome.Runs)
	if outcome.Best >= 0 {
		b := outcome.Runs[outcome.Best]
		outcome.Recommendation = fmt.Sprintf("%s: %d passing steps, up to %d clients, best %.1f TPS within the limits",
			b.Label, b.Capacity.PassedSteps, b.Capacity.Clients, b.MaxTPS)
	} else if len(outcome.Runs) > 0 {
		outcome.Recommendation = "no combination passed a step; loosen the stop conditions or start with fewer clients"
	}
	rep.Sweep = outcome
	for _, s := range rep.Steps {
		if s.Server != nil {
			rep.Environment.ServerVersion = s.Server.Version
			break
		}
	}
	return rep, runErr
}

// readGlobals reads the params' current values from the admin port.
func readGlobals(ctx context.Context, db *sql.DB, params []SweepParam) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range params {
		var v string
		if err := db.QueryRowContext(ctx, "SELECT @@global."+p.Name).Scan(&v); err != nil {
			return nil, fmt.Errorf("bench: --proxy-admin: read %s: %w", p.Name, err)
		}
		out[p.Name] = v
	}
	return out, nil
}

// setGlobals applies a combination in one statement, so that the proxy
// never runs a half-applied one.
func setGlobals(ctx context.Context, db *sql.DB, params []SweepParam, c map[string]string) error {
	parts := make([]string, len(params))
	for i, p := range params {
		parts[i] = "GLOBAL " + p.Name + "=" + c[p.Name]
	}
	if _, err := db.ExecContext(ctx, "SET "+strings.Join(parts, ", ")); err != nil {
		return fmt.Errorf("bench: --proxy-admin: SET %s: %w", comboLabel(params, c), err)
	}
	return nil
}
