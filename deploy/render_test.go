// Package deploy tests the Helm chart in deploy/helm/tpproxy: rendered
// in-process with Helm's own libraries, every manifest decoded strictly
// into the Kubernetes API types, the rendered tpproxy.yaml checked by the
// real `tpproxy check-config`. A module of its own, so Helm's and the
// Kubernetes libraries' dependencies stay out of tpproxy's.
package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "helm/tpproxy"

// releaseName is the release every test renders; the plain manifests use it too.
const releaseName = "tpproxy"

// serviceMonitor is the part of the Prometheus Operator's
// monitoring.coreos.com/v1 ServiceMonitor the chart uses, field names as in
// the operator's API, so that a misspelt or misplaced field fails to decode.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// fleet is one rendering of the chart, decoded.
type fleet struct {
	docs        []string // every non-empty manifest, in install order
	configMap   *corev1.ConfigMap
	secret      *corev1.Secret
	service     *corev1.Service
	deployment  *appsv1.Deployment
	pdb         *policyv1.PodDisruptionBudget
	hpa         *autoscalingv2.HorizontalPodAutoscaler
	monitor     *serviceMonitor
	kinds       map[string]int
	tpproxyYAML string
}

func loadChart(t *testing.T) *chartv2.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// render renders the chart with vals over values.yaml, as `helm template
// tpproxy deploy/helm/tpproxy` would, and returns the manifests by
// template path.
func render(t *testing.T, vals map[string]any) (map[string]string, error) {
	t.Helper()
	c := loadChart(t)
	rv, err := util.ToRenderValues(c, vals, common.ReleaseOptions{Name: releaseName, Namespace: "default", IsInstall: true, Revision: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Render(c, rv)
}

// installOrder is the order of kinds in the plain manifests (Helm's own
// install order for these kinds).
var installOrder = []string{"Secret", "ConfigMap", "Service", "Deployment", "HorizontalPodAutoscaler", "PodDisruptionBudget", "ServiceMonitor"}

// decodeFleet renders vals and decodes every manifest strictly.
func decodeFleet(t *testing.T, vals map[string]any) *fleet {
	t.Helper()
	out, err := render(t, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	f := &fleet{kinds: make(map[string]int)}
	type doc struct{ kind, text string }
	var docs []doc
	for name, text := range out {
		if path.Ext(name) != ".yaml" {
			continue
		}
		for _, part := range strings.Split(text, "\n---") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			kind := f.decode(t, name, part)
			docs = append(docs, doc{kind, strings.TrimSpace(part)})
		}
	}
	rank := func(k string) int {
		for i, o := range installOrder {
			if o == k {
				return i
			}
		}
		t.Fatalf("kind %s has no place in installOrder", k)
		return 0
	}
	sort.Slice(docs, func(i, j int) bool { return rank(docs[i].kind) < rank(docs[j].kind) })
	for _, d := range docs {
		f.docs = append(f.docs, d.text)
	}
	if f.configMap == nil || f.service == nil || f.deployment == nil {
		t.Fatalf("rendered kinds %v: want at least a ConfigMap, a Service and a Deployment", f.kinds)
	}
	f.tpproxyYAML = f.configMap.Data["tpproxy.yaml"]
	return f
}

// decode decodes one manifest into its typed struct, refusing unknown
// fields and duplicate keys, and returns its kind.
func (f *fleet) decode(t *testing.T, name, text string) string {
	t.Helper()
	js, err := yaml.YAMLToJSONStrict([]byte(text))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var dst any
	switch gvk := tm.APIVersion + " " + tm.Kind; gvk {
	case "v1 ConfigMap":
		f.configMap = new(corev1.ConfigMap)
		dst = f.configMap
	case "v1 Secret":
		f.secret = new(corev1.Secret)
		dst = f.secret
	case "v1 Service":
		f.service = new(corev1.Service)
		dst = f.service
	case "apps/v1 Deployment":
		f.deployment = new(appsv1.Deployment)
		dst = f.deployment
	case "policy/v1 PodDisruptionBudget":
		f.pdb = new(policyv1.PodDisruptionBudget)
		dst = f.pdb
	case "autoscaling/v2 HorizontalPodAutoscaler":
		f.hpa = new(autoscalingv2.HorizontalPodAutoscaler)
		dst = f.hpa
	case "monitoring.coreos.com/v1 ServiceMonitor":
		f.monitor = new(serviceMonitor)
		dst = f.monitor
	default:
		t.Fatalf("%s: unexpected %s", name, gvk)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		t.Fatalf("%s (%s): %v\n%s", name, tm.Kind, err, text)
	}
	f.kinds[tm.Kind]++
	return tm.Kind
}

// manifests is the fleet as one multi-document YAML file.
func (f *fleet) manifests() string {
	var b strings.Builder
	b.WriteString("# Rendered from deploy/helm/tpproxy with its default values (release \"tpproxy\").\n")
	b.WriteString("# Do not edit: regenerate with  cd deploy && go test -run TestManifests -update\n")
	for _, d := range f.docs {
		fmt.Fprintf(&b, "---\n%s\n", d)
	}
	return b.String()
}
