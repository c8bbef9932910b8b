package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestBenchManifests decodes deploy/bench's manifests (tpbench shards as
// an Indexed Job, and the merge Job) strictly into the Kubernetes types
// and checks what makes the shards meet: an Indexed Job whose index feeds
// --shard, and a headless Service that names index 0 for the barrier.
func TestBenchManifests(t *testing.T) {
	kinds := make(map[string]int)
	var jobs []*batchv1.Job
	var svc *corev1.Service
	for _, file := range []string{"bench/tpbench-shards.yaml", "bench/tpbench-merge.yaml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range strings.Split(string(data), "\n---") {
			if strings.TrimSpace(strings.TrimPrefix(part, "---")) == "" || !strings.Contains(part, "kind:") {
				continue
			}
			js, err := yaml.YAMLToJSONStrict([]byte(part))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			var tm metav1.TypeMeta
			if err := json.Unmarshal(js, &tm); err != nil {
				t.Fatal(err)
			}
			var dst any
			switch tm.APIVersion + " " + tm.Kind {
			case "v1 Secret":
				dst = new(corev1.Secret)
			case "v1 PersistentVolumeClaim":
				dst = new(corev1.PersistentVolumeClaim)
			case "v1 Service":
				svc = new(corev1.Service)
				dst = svc
			case "batch/v1 Job":
				j := new(batchv1.Job)
				jobs = append(jobs, j)
				dst = j
			default:
				t.Fatalf("%s: unexpected %s %s", file, tm.APIVersion, tm.Kind)
			}
			dec := json.NewDecoder(bytes.NewReader(js))
			dec.DisallowUnknownFields()
			if err := dec.Decode(dst); err != nil {
				t.Fatalf("%s (%s): %v", file, tm.Kind, err)
			}
			kinds[tm.Kind]++
		}
	}
	if kinds["Job"] != 2 || kinds["Service"] != 1 || kinds["Secret"] != 1 || kinds["PersistentVolumeClaim"] != 1 {
		t.Fatalf("kinds %v", kinds)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("barrier service: clusterIP %q, want None (headless)", svc.Spec.ClusterIP)
	}
	shards := jobs[0]
	if shards.Spec.CompletionMode == nil || *shards.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("shards job: completionMode %v, want Indexed", shards.Spec.CompletionMode)
	}
	if shards.Spec.Completions == nil || shards.Spec.Parallelism == nil || *shards.Spec.Completions != *shards.Spec.Parallelism {
		t.Errorf("shards job: completions %v, parallelism %v: all shards must run at once", shards.Spec.Completions, shards.Spec.Parallelism)
	}
	pod := shards.Spec.Template.Spec
	if pod.Subdomain != svc.Name {
		t.Errorf("shards pods: subdomain %q, want the headless service %q", pod.Subdomain, svc.Name)
	}
	args := strings.Join(append(pod.Containers[0].Command, pod.Containers[0].Args...), " ")
	for _, want := range []string{"--shard", "JOB_COMPLETION_INDEX", "--barrier", shards.Name + "-0." + svc.Name} {
		if !strings.Contains(args, want) {
			t.Errorf("shards container %q lacks %q", args, want)
		}
	}
}
