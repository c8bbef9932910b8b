// Package dashboard reads a Grafana dashboard the way Grafana and
// Prometheus will: the JSON decoded strictly into Grafana's own schema
// (the Grafana Foundation SDK's generated types, which reject unknown
// fields), and every panel query parsed by Prometheus' PromQL parser. The
// tests of configs/ and of the binary's /metrics use it; no binary does.
package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Query is one panel target.
type Query struct {
	// Panel is the panel's title; a collapsed row's panel is "Row / Panel".
	Panel string
	// Datasource is the target's (or else the panel's) datasource uid.
	Datasource string
	// Expr is the PromQL as written, and Parsed the parsed expression
	// after Grafana's variables were replaced (see Substitute).
	Expr   string
	Parsed parser.Expr
}

// Selectors are the vector selectors of q's expression.
func (q Query) Selectors() []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(q.Parsed, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// Metrics are the metric names q's expression reads, sorted, each once.
func (q Query) Metrics() []string {
	var out []string
	for _, vs := range q.Selectors() {
		if vs.Name != "" && !slices.Contains(out, vs.Name) {
			out = append(out, vs.Name)
		}
	}
	slices.Sort(out)
	return out
}

// InstanceValue is what $instance stands for in parsed expressions.
const InstanceValue = "__grafana_instance__"

// Filtered reports whether a selector has the matcher instance=~"$instance".
func Filtered(vs *parser.VectorSelector) bool {
	for _, m := range vs.LabelMatchers {
		if m.Name == "instance" && m.Type == labels.MatchRegexp && m.Value == InstanceValue {
			return true
		}
	}
	return false
}

// variableRE finds Grafana's variables: $name, ${name} and ${name:format}.
var variableRE = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[A-Za-z]+)?\}|\$([A-Za-z0-9_]+)`)

// Substitute replaces Grafana's variables in a query as Grafana does
// before it sends it: $__rate_interval, $__interval and $__range by a
// duration, $instance by InstanceValue, any other by its name.
func Substitute(expr string) string {
	return variableRE.ReplaceAllStringFunc(expr, func(v string) string {
		m := variableRE.FindStringSubmatch(v)
		name := m[1] + m[2]
		switch name {
		case "__rate_interval", "__interval", "__range":
			return "5m"
		case "__interval_ms", "__range_ms":
			return "300000"
		case "__range_s":
			return "300"
		case "instance":
			return InstanceValue
		}
		return name
	})
}

var registerOnce sync.Once

// strict is err of one of the SDK's strict decoders, nil for its empty
// error list.
func strict(err error) error {
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		return nil
	}
	return err
}

// Load decodes a dashboard strictly and parses every panel's queries. A
// field Grafana's schema does not have, a panel or target it cannot
// decode, a non-Prometheus target or a query that does not parse is an
// error; all are reported together.
func Load(data []byte) (*dashboard.Dashboard, []Query, error) {
	registerOnce.Do(plugins.RegisterDefaultPlugins)
	var d dashboard.Dashboard
	if err := strict(d.UnmarshalJSONStrict(data)); err != nil {
		return nil, nil, fmt.Errorf("dashboard: %w", err)
	}
	// The SDK checks the panels above but keeps none of them: a panel's
	// decoder returns its (empty) error list as a non-nil error, which
	// the dashboard's takes for a failure. So the panels are decoded here
	// one by one, rows' panels too.
	var raw struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, nil, err
	}
	type panel struct {
		dashboard.Panel
		targets []*prometheus.Dataquery
	}
	type row struct {
		title  string
		panels []panel
	}
	var rows []row
	for i, rp := range raw.Panels {
		var head struct {
			Type   string            `json:"type"`
			Title  string            `json:"title"`
			Panels []json.RawMessage `json:"panels"`
		}
		if err := json.Unmarshal(rp, &head); err != nil {
			return nil, nil, fmt.Errorf("dashboard: panels[%d]: %w", i, err)
		}
		list := []json.RawMessage{rp}
		r := row{}
		if head.Type == "row" {
			var rowPanel dashboard.RowPanel
			if err := strict(rowPanel.UnmarshalJSONStrict(rp)); err != nil {
				return nil, nil, fmt.Errorf("dashboard: panels[%d]: %w", i, err)
			}
			list, r.title = head.Panels, head.Title
		}
		for k, pp := range list {
			var p panel
			if err := strict(p.UnmarshalJSONStrict(pp)); err != nil {
				return nil, nil, fmt.Errorf("dashboard: panels[%d] (%d): %w", i, k, err)
			}
			// The same holds for targets: each is decoded strictly as a
			// Prometheus query here.
			var targets struct {
				Targets []json.RawMessage `json:"targets"`
			}
			if err := json.Unmarshal(pp, &targets); err != nil {
				return nil, nil, err
			}
			for n, tr := range targets.Targets {
				q := &prometheus.Dataquery{}
				if err := strict(q.UnmarshalJSONStrict(tr)); err != nil {
					return nil, nil, fmt.Errorf("dashboard: panels[%d] (%d) target %d: %w", i, k, n, err)
				}
				p.targets = append(p.targets, q)
			}
			r.panels = append(r.panels, p)
		}
		rows = append(rows, r)
	}
	var queries []Query
	var errs []error
	add := func(row string, p panel) {
		title := ""
		if p.Title != nil {
			title = *p.Title
		}
		if row != "" {
			title = row + " / " + title
		}
		panelDS := ""
		if p.Datasource != nil && p.Datasource.Uid != nil {
			panelDS = *p.Datasource.Uid
		}
		if p.Datasource == nil || p.Datasource.Type == nil || *p.Datasource.Type != "prometheus" {
			errs = append(errs, fmt.Errorf("panel %q: datasource %+v, not Prometheus", title, p.Datasource))
		}
		for i, pq := range p.targets {
			q := Query{Panel: title, Datasource: panelDS, Expr: pq.Expr}
			if pq.Datasource != nil && pq.Datasource.Uid != nil {
				q.Datasource = *pq.Datasource.Uid
			}
			parsed, err := parser.NewParser(parser.Options{}).ParseExpr(Substitute(pq.Expr))
			if err != nil {
				errs = append(errs, fmt.Errorf("panel %q target %d: %q: %w", title, i, pq.Expr, err))
				continue
			}
			q.Parsed = parsed
			queries = append(queries, q)
		}
	}
	for _, r := range rows {
		for _, p := range r.panels {
			add(r.title, p)
		}
	}
	return &d, queries, errors.Join(errs...)
}

// MetricFamily is the family a sample name belongs to: a histogram's
// _bucket, _sum and _count are its family's, when histograms says the
// family is one.
func MetricFamily(name string, histogram func(family string) bool) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && histogram(base) {
			return base
		}
	}
	return name
}
