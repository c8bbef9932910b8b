package dashboard

import (
	"os"
	"strings"
	"testing"
)

// The project's dashboard is checked against configs/ and /metrics by
// the tests there; these check the reader.

func TestLoadProjectDashboard(t *testing.T) {
	data, err := os.ReadFile("../../configs/grafana/dashboards/tpproxy.json")
	if err != nil {
		t.Fatal(err)
	}
	d, qs, err := Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Panels) < 10 || len(qs) < 40 {
		t.Fatalf("%d panels, %d queries", len(d.Panels), len(qs))
	}
	for _, q := range qs {
		if len(q.Metrics()) == 0 {
			t.Errorf("%s: %s reads no metric", q.Panel, q.Expr)
		}
	}
}

// minimal is a dashboard with one row and one panel; its mutations
// below must each fail to load.
const minimal = `{
  "title": "t", "uid": "u", "schemaVersion": 39, "editable": true, "graphTooltip": 0, "time": {"from": "now-1h", "to": "now"},
  "templating": {"list": []}, "annotations": {"list": []}, "links": [], "tags": [], "refresh": "10s", "timezone": "",
  "panels": [
    {"type": "row", "title": "Row", "id": 1, "collapsed": false, "gridPos": {"h": 1, "w": 24, "x": 0, "y": 0}, "panels": []},
    {"type": "timeseries", "title": "QPS", "id": 2, "gridPos": {"h": 8, "w": 12, "x": 0, "y": 1},
     "datasource": {"type": "prometheus", "uid": "prometheus"},
     "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": true, "calcs": []},
                 "tooltip": {"mode": "multi", "sort": "none"}},
     "targets": [{"refId": "A", "expr": "sum(rate(tpproxy_statements_total{instance=~\"$instance\"}[$__rate_interval]))",
                  "datasource": {"type": "prometheus", "uid": "prometheus"}}]}
  ]
}`

func TestLoadMinimal(t *testing.T) {
	_, qs, err := Load([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].Panel != "QPS" || qs[0].Datasource != "prometheus" {
		t.Fatalf("queries %+v", qs)
	}
	if m := qs[0].Metrics(); len(m) != 1 || m[0] != "tpproxy_statements_total" {
		t.Errorf("metrics %v", m)
	}
	if sel := qs[0].Selectors(); len(sel) != 1 || !Filtered(sel[0]) {
		t.Errorf("selectors %v: want one filtered by $instance", sel)
	}
}

func TestLoadRejects(t *testing.T) {
	for _, c := range []struct{ name, from, to string }{
		{"unknown dashboard field", `"title": "t",`, `"title": "t", "titel": "x",`},
		{"unknown panel field", `"title": "QPS",`, `"title": "QPS", "colour": "red",`},
		{"unknown target field", `"refId": "A",`, `"refId": "A", "expression": "up",`},
		{"option of the wrong type", `"showLegend": true`, `"showLegend": "yes"`},
		{"required option missing", `, "calcs": []`, ``},
		{"PromQL that does not parse", `[$__rate_interval]))`, `[$__rate_interval])`},
		{"unknown PromQL function", `sum(rate(`, `sum(rat(`},
		{"panel not on Prometheus", `"datasource": {"type": "prometheus", "uid": "prometheus"},
     "options"`, `"datasource": {"type": "loki", "uid": "loki"},
     "options"`},
		{"gridPos of the wrong type", `"h": 8,`, `"h": "8",`},
	} {
		bad := strings.Replace(minimal, c.from, c.to, 1)
		if bad == minimal {
			t.Fatalf("%s: the mutation does not apply", c.name)
		}
		if _, _, err := Load([]byte(bad)); err == nil {
			t.Errorf("%s: loaded", c.name)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
}

func TestSubstitute(t *testing.T) {
	for in, want := range map[string]string{
		`rate(x{instance=~"$instance"}[$__rate_interval])`: `rate(x{instance=~"` + InstanceValue + `"}[5m])`,
		`x{instance=~"${instance:regex}"} offset $__range`: `x{instance=~"` + InstanceValue + `"} offset 5m`,
		`x > $threshold`: `x > threshold`,
	} {
		if got := Substitute(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
