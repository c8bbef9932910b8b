package deploy

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden and manifests/tpproxy.yaml from the chart")

// custom turns on everything the defaults leave off and moves every port.
func custom() map[string]any {
	return map[string]any{
		"replicaCount":           2,
		"shutdownTimeoutSeconds": 60,
		"preStopSleepSeconds":    3,
		"ports":                  map[string]any{"client": 3306, "admin": 7032, "http": 9090},
		"secrets":                map[string]any{"existingSecret": "db-passwords"},
		"autoscaling":            map[string]any{"enabled": true, "minReplicas": 2, "maxReplicas": 8, "targetAverageValue": "1500"},
		"serviceMonitor":         map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
		"config": map[string]any{
			"max_client_connections": 5000,
			"backend":                map[string]any{"addr": "db.example.svc:3306", "pool_size": 200},
			"thread_pool":            map[string]any{"size": 4, "oversubscribe": 2},
		},
	}
}

// container is the Deployment's tpproxy container.
func (f *fleet) container(t *testing.T) corev1.Container {
	t.Helper()
	cs := f.deployment.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	return cs[0]
}

// config is the rendered tpproxy.yaml, parsed.
func (f *fleet) config(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.UnmarshalStrict([]byte(f.tpproxyYAML), &m); err != nil {
		t.Fatalf("tpproxy.yaml: %v\n%s", err, f.tpproxyYAML)
	}
	return m
}

func lookup(m map[string]any, dotted string) any {
	var v any = m
	for _, k := range strings.Split(dotted, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

func TestDefaultRender(t *testing.T) {
	f := decodeFleet(t, nil)
	want := map[string]int{"Secret": 1, "ConfigMap": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1}
	if !equalCounts(f.kinds, want) {
		t.Errorf("kinds %v, want %v", f.kinds, want)
	}
	if r := f.deployment.Spec.Replicas; r == nil || *r != 3 {
		t.Errorf("replicas %v, want 3", r)
	}
	checkPod(t, f, 30, 5, map[string]int32{"client": 6033, "admin": 6032, "http": 6080})
	if got := lookup(f.config(t), "backend.pool_size"); got != float64(16) {
		t.Errorf("backend.pool_size %v, want 48/3 = 16", got)
	}
	for k, v := range map[string]string{"backend-password": "change-me", "admin-password": "change-me"} {
		if f.secret.StringData[k] != v {
			t.Errorf("secret %s = %q, want %q", k, f.secret.StringData[k], v)
		}
	}
	if f.pdb.Spec.MaxUnavailable == nil || f.pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB maxUnavailable %v, want 1", f.pdb.Spec.MaxUnavailable)
	}
	checkSelects(t, f, f.pdb.Spec.Selector.MatchLabels, "PodDisruptionBudget")
}

func TestCustomRender(t *testing.T) {
	f := decodeFleet(t, custom())
	want := map[string]int{"ConfigMap": 1, "Service": 1, "Deployment": 1, "PodDisruptionBudget": 1, "HorizontalPodAutoscaler": 1, "ServiceMonitor": 1}
	if !equalCounts(f.kinds, want) {
		t.Errorf("kinds %v, want %v (no Secret with existingSecret)", f.kinds, want)
	}
	if r := f.deployment.Spec.Replicas; r != nil {
		t.Errorf("replicas %d with autoscaling on: the HPA owns the count", *r)
	}
	checkPod(t, f, 60, 3, map[string]int32{"client": 3306, "admin": 7032, "http": 9090})
	for _, e := range f.container(t).Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "db-passwords" {
			t.Errorf("env %s does not come from Secret db-passwords: %+v", e.Name, e.ValueFrom)
		}
	}
	cfg := f.config(t)
	if got := lookup(cfg, "backend.pool_size"); got != float64(25) {
		t.Errorf("backend.pool_size %v, want 200/8 = 25 (maxReplicas, not replicaCount)", got)
	}
	if got := lookup(cfg, "thread_pool.size"); got != float64(4) {
		t.Errorf("thread_pool.size %v: values' config not carried over", got)
	}

	h := f.hpa.Spec
	if h.ScaleTargetRef.Kind != "Deployment" || h.ScaleTargetRef.Name != f.deployment.Name || h.MaxReplicas != 8 || h.MinReplicas == nil || *h.MinReplicas != 2 {
		t.Errorf("HPA spec %+v", h)
	}
	if len(h.Metrics) != 1 || h.Metrics[0].Pods == nil {
		t.Fatalf("HPA metrics %+v, want one Pods metric", h.Metrics)
	}
	pm := h.Metrics[0].Pods
	checkMetricExposed(t, pm.Metric.Name, "port")
	if pm.Metric.Selector == nil || pm.Metric.Selector.MatchLabels["port"] != "main" {
		t.Errorf("HPA metric selector %+v, want port=main", pm.Metric.Selector)
	}
	if pm.Target.AverageValue == nil || pm.Target.AverageValue.Value() != 1500 {
		t.Errorf("HPA target %+v, want averageValue 1500", pm.Target)
	}

	m := f.monitor
	if m.Labels["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels %v: serviceMonitor.labels not applied", m.Labels)
	}
	if len(m.Spec.Endpoints) != 1 || m.Spec.Endpoints[0].Port != "http" || m.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, want the Service's http port, /metrics", m.Spec.Endpoints)
	}
	checkSelects(t, f, m.Spec.Selector.MatchLabels, "ServiceMonitor")
}

// checkPod checks probes, ports, lifecycle and the config the pod runs.
func checkPod(t *testing.T, f *fleet, shutdown, preStop int64, ports map[string]int32) {
	t.Helper()
	c := f.container(t)
	pod := f.deployment.Spec.Template.Spec
	cfg := f.config(t)

	if got := lookup(cfg, "shutdown_timeout"); got != itoa(shutdown)+"s" {
		t.Errorf("shutdown_timeout %v, want %ds", got, shutdown)
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g != preStop+shutdown+5 {
		t.Errorf("terminationGracePeriodSeconds %s, want preStop %d + shutdown_timeout %d + 5", ptrString(g), preStop, shutdown)
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds != preStop {
		t.Errorf("preStop %+v, want sleep %d s", c.Lifecycle, preStop)
	}

	// Every port the config listens on is a container port and a Service
	// port of the same name, on 0.0.0.0.
	listens := map[string]string{"client": "listen", "admin": "admin.listen", "http": "admin.http_listen"}
	for name, port := range ports {
		if got, want := lookup(cfg, listens[name]), "0.0.0.0:"+itoa(int64(port)); got != want {
			t.Errorf("%s = %v, want %s", listens[name], got, want)
		}
		var cp, sp bool
		for _, p := range c.Ports {
			cp = cp || (p.Name == name && p.ContainerPort == port)
		}
		for _, p := range f.service.Spec.Ports {
			sp = sp || (p.Name == name && p.Port == port && p.TargetPort.String() == name)
		}
		if !cp || !sp {
			t.Errorf("port %s %d: container port %v, Service port %v", name, port, cp, sp)
		}
	}
	for probe, want := range map[*corev1.Probe]string{c.ReadinessProbe: "/readyz", c.LivenessProbe: "/healthz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want || probe.HTTPGet.Port.String() != "http" {
			t.Errorf("probe %+v, want GET %s on port http", probe, want)
		}
	}
	// The ConfigMap is mounted as a directory: a subPath mount never sees
	// an update, and tpproxy's reload on change depends on seeing one.
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/etc/tpproxy" && m.SubPath == "" {
			mounted = true
		}
	}
	if !mounted || !strings.Contains(strings.Join(c.Args, " "), "--config /etc/tpproxy/tpproxy.yaml") {
		t.Errorf("mounts %+v, args %v: want the ConfigMap's directory at /etc/tpproxy read by --config", c.VolumeMounts, c.Args)
	}
	if got := lookup(cfg, "watch_config"); got != true {
		t.Errorf("watch_config %v, want true", got)
	}
	if c.Resources.Requests.Memory().IsZero() {
		t.Error("no memory request")
	}
	checkSelects(t, f, f.service.Spec.Selector, "Service")
	// A surge pod would be one pool more than the budget was split over.
	if ru := f.deployment.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxSurge == nil || ru.MaxSurge.IntValue() != 0 {
		t.Errorf("rolling update %+v: want maxSurge 0", ru)
	}
}

// checkSelects checks that selector picks the Deployment's pods.
func checkSelects(t *testing.T, f *fleet, selector map[string]string, what string) {
	t.Helper()
	if len(selector) == 0 {
		t.Errorf("%s selects nothing", what)
	}
	pod := f.deployment.Spec.Template.Labels
	for k, v := range selector {
		if pod[k] != v {
			t.Errorf("%s selects %s=%s; pods carry %s=%q", what, k, v, k, pod[k])
		}
	}
}

// checkMetricExposed checks in admin/metrics.go that tpproxy exposes
// metric with label: the HPA must scale on a series that exists.
func checkMetricExposed(t *testing.T, metric, label string) {
	t.Helper()
	src, err := os.ReadFile("../admin/metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	name, ok := strings.CutPrefix(metric, "tpproxy_")
	if !ok {
		t.Fatalf("HPA metric %s is not one of tpproxy's", metric)
	}
	for _, line := range strings.Split(string(src), "\n") {
		if strings.Contains(line, `desc("`+name+`",`) {
			if !strings.HasSuffix(strings.TrimSpace(line), `"`+label+`")`) {
				t.Errorf("admin/metrics.go declares %s without label %q: %s", metric, label, line)
			}
			return
		}
	}
	t.Errorf("HPA metric %s: admin/metrics.go declares no such family", metric)
}

func TestPoolBudgetSplit(t *testing.T) {
	for _, tc := range []struct {
		replicas int
		want     float64
	}{{1, 100}, {3, 33}, {7, 14}} {
		for _, hpa := range []bool{false, true} {
			vals := map[string]any{"config": map[string]any{"backend": map[string]any{"pool_size": 100}}}
			if hpa {
				vals["autoscaling"] = map[string]any{"enabled": true, "minReplicas": 1, "maxReplicas": tc.replicas}
			} else {
				vals["replicaCount"] = tc.replicas
			}
			f := decodeFleet(t, vals)
			got := lookup(f.config(t), "backend.pool_size")
			if got != tc.want {
				t.Errorf("budget 100, %d replicas (autoscaling %v): pool_size %v, want %v", tc.replicas, hpa, got, tc.want)
			}
			if n, _ := got.(float64); n*float64(tc.replicas) > 100 {
				t.Errorf("%d replicas x %v > budget 100", tc.replicas, n)
			}
		}
	}
}

func TestPoolBudgetTooSmall(t *testing.T) {
	for _, vals := range []map[string]any{
		{"replicaCount": 3, "config": map[string]any{"backend": map[string]any{"pool_size": 2}}},
		{"autoscaling": map[string]any{"enabled": true, "maxReplicas": 5}, "config": map[string]any{"backend": map[string]any{"pool_size": 4}}},
	} {
		_, err := render(t, vals)
		if err == nil || !strings.Contains(err.Error(), "less than 1 connection") {
			t.Errorf("values %v: render error %v, want the budget refusal", vals, err)
		}
	}
}

// TestRefusedValues checks that keys the chart owns cannot be set behind
// its back in config.
func TestRefusedValues(t *testing.T) {
	for key, cfg := range map[string]map[string]any{
		"shutdown_timeout": {"shutdown_timeout": "10s"},
		"listen":           {"listen": "0.0.0.0:1"},
		"admin.listen":     {"admin": map[string]any{"listen": "127.0.0.1:6032"}},
		"backend.password": {"backend": map[string]any{"password": "x"}},
	} {
		if _, err := render(t, map[string]any{"config": cfg}); err == nil {
			t.Errorf("config.%s accepted", key)
		}
	}
}

// TestConfigGolden compares the rendered tpproxy.yaml with the golden
// files: a change to what the fleet runs shows in review.
func TestConfigGolden(t *testing.T) {
	for name, vals := range map[string]map[string]any{"default": nil, "custom": custom()} {
		got := decodeFleet(t, vals).tpproxyYAML
		golden(t, filepath.Join("testdata", name+".tpproxy.yaml.golden"), got)
	}
}

// TestManifests keeps deploy/manifests/tpproxy.yaml, the chart rendered
// with its defaults for `kubectl apply`, current.
func TestManifests(t *testing.T) {
	golden(t, filepath.Join("manifests", "tpproxy.yaml"), decodeFleet(t, nil).manifests())
}

func golden(t *testing.T, file, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update in deploy/)", err)
	}
	if string(want) != got {
		t.Errorf("%s is out of date: run `cd deploy && go test -run %s -update`\ngot:\n%s", file, t.Name(), got)
	}
}

// TestCheckConfig runs the real `tpproxy check-config` on the rendered
// tpproxy.yaml with the environment the Deployment gives the pod.
func TestCheckConfig(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tpproxy")
	build := exec.Command("go", "build", "-o", bin, "./cmd/tpproxy")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tpproxy: %v\n%s", err, out)
	}
	for name, vals := range map[string]map[string]any{"default": nil, "custom": custom()} {
		f := decodeFleet(t, vals)
		dir := t.TempDir()
		file := filepath.Join(dir, "tpproxy.yaml")
		if err := os.WriteFile(file, []byte(f.tpproxyYAML), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "check-config", "--config", file)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		for _, e := range f.container(t).Env {
			// The values a Secret would hold; with existingSecret, some.
			cmd.Env = append(cmd.Env, e.Name+"=from-the-secret")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: tpproxy check-config: %v\n%s\n%s", name, err, out, f.tpproxyYAML)
			continue
		}
		t.Logf("%s: %s", name, out)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func ptrString(p *int64) string {
	if p == nil {
		return "unset"
	}
	return itoa(*p)
}

// TestLint runs Helm's own linter (`helm lint`) over the chart for a
// Kubernetes version the chart's kubeVersion admits; anything above an
// informational note fails.
func TestLint(t *testing.T) {
	kv, err := common.ParseKubeVersion("v1.30.0")
	if err != nil {
		t.Fatal(err)
	}
	for name, vals := range map[string]map[string]any{"default": nil, "custom": custom()} {
		res := lint.RunAll(chartDir, vals, "default", lint.WithKubeVersion(kv))
		for _, m := range res.Messages {
			if m.Severity > support.InfoSev {
				t.Errorf("%s: helm lint: %s", name, m)
			} else {
				t.Logf("%s: helm lint: %s", name, m)
			}
		}
	}
}
