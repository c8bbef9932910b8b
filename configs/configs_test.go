// Package configs_test checks the files in configs/ for structure and for
// consistency with each other: the compose stack, tpproxy's configurations,
// Prometheus, Grafana provisioning and the dashboard. The stack cannot run
// on machines without Docker, so these tests are what keeps it honest there.
// They do not compare the dashboard's metric names with the proxy's
// /metrics output.
package configs_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/tpproxy/tpproxy/internal/config"
	"github.com/tpproxy/tpproxy/internal/dashboard"
)

// kind says what a file in configs/ is and so which tests check it.
type kind string

const (
	kindTpproxyConfig   kind = "tpproxy config"
	kindCompose         kind = "compose file"
	kindPrometheus      kind = "prometheus config"
	kindGrafanaDatasrc  kind = "grafana datasource provisioning"
	kindGrafanaProvider kind = "grafana dashboard provider"
	kindDashboard       kind = "grafana dashboard"
	kindExporterCnf     kind = "mysqld-exporter my.cnf"
	kindReadme          kind = "readme"
	kindTest            kind = "this test"
)

// files lists every file under configs/, slash-separated and relative to
// it. A file missing here fails TestEveryFileIsKnown: add it with its kind
// (and, for a new kind, a test that checks it).
var files = map[string]kind{
	"README.md":          kindReadme,
	"configs_test.go":    kindTest,
	"tpproxy.yaml":       kindTpproxyConfig,
	"docker-compose.yml": kindCompose,

	"compose/tpproxy.yaml":        kindTpproxyConfig,
	"compose/mysqld-exporter.cnf": kindExporterCnf,

	"prometheus.yml": kindPrometheus,

	"grafana/provisioning/datasources/prometheus.yml": kindGrafanaDatasrc,
	"grafana/provisioning/dashboards/tpproxy.yml":     kindGrafanaProvider,
	"grafana/dashboards/tpproxy.json":                 kindDashboard,
}

// yamlKinds are the kinds whose files are YAML.
var yamlKinds = []kind{kindTpproxyConfig, kindCompose, kindPrometheus, kindGrafanaDatasrc, kindGrafanaProvider}

// The compose stack's services and the local files it is built around.
const (
	composePath = "docker-compose.yml"

	svcMySQL      = "mysql"
	svcTpproxy    = "tpproxy"
	svcExporter   = "mysqld-exporter"
	svcPrometheus = "prometheus"
	svcGrafana    = "grafana"

	composeTpproxyConfig = "compose/tpproxy.yaml"
	exporterCnf          = "compose/mysqld-exporter.cnf"
	prometheusConfig     = "prometheus.yml"
	grafanaDatasources   = "grafana/provisioning/datasources/prometheus.yml"
	grafanaProvider      = "grafana/provisioning/dashboards/tpproxy.yml"
	grafanaProvisioning  = "grafana/provisioning"
	grafanaDashboards    = "grafana/dashboards"
	dashboardPath        = "grafana/dashboards/tpproxy.json"
	dashboardUID         = "tpproxy"

	// Defaults of the images, used when the compose file does not
	// override them.
	mysqlDefaultPort        = 3306
	exporterDefaultPort     = 9104
	prometheusDefaultPort   = 9090
	prometheusDefaultConfig = "/etc/prometheus/prometheus.yml"
	grafanaDefaultProvision = "/etc/grafana/provisioning"
	dockerDefaultGrace      = 10 * time.Second
)

// wantImages maps each image-based service to its image repository; the tag
// must be pinned. tpproxy is built from the repository instead.
var wantImages = map[string]string{
	svcMySQL:      "mysql",
	svcExporter:   "prom/mysqld-exporter",
	svcPrometheus: "prom/prometheus",
	svcGrafana:    "grafana/grafana",
}

func filesOfKind(k kind) []string {
	var out []string
	for p, fk := range files {
		if fk == k {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.FromSlash(p))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestEveryFileIsKnown fails on a file under configs/ that the files table
// does not list, and on a listed file that does not exist.
func TestEveryFileIsKnown(t *testing.T) {
	found := make(map[string]bool)
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		p = filepath.ToSlash(p)
		found[p] = true
		if _, ok := files[p]; !ok {
			t.Errorf("%s is not in the files table of configs_test.go: add it with its kind and check it", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range files {
		if !found[p] {
			t.Errorf("%s is in the files table but does not exist", p)
		}
	}
}

// TestFilesParse parses every YAML file, the dashboard JSON and the
// exporter's my.cnf.
func TestFilesParse(t *testing.T) {
	for _, k := range yamlKinds {
		for _, p := range filesOfKind(k) {
			var doc yaml.Node
			if err := yaml.Unmarshal(readFile(t, p), &doc); err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
				t.Errorf("%s: want one YAML document holding a mapping", p)
			}
		}
	}
	for _, p := range filesOfKind(kindDashboard) {
		var v map[string]any
		if err := json.Unmarshal(readFile(t, p), &v); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range filesOfKind(kindExporterCnf) {
		if _, err := parseCnf(readFile(t, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestReadmeDescribesEveryFile wants README.md to name every other file.
func TestReadmeDescribesEveryFile(t *testing.T) {
	for _, readme := range filesOfKind(kindReadme) {
		text := string(readFile(t, readme))
		for p := range files {
			if p != readme && !strings.Contains(text, p) {
				t.Errorf("%s does not mention %s", readme, p)
			}
		}
	}
}

// TestTpproxyConfigsPassCheckConfig builds tpproxy and runs check-config on
// every tpproxy configuration, with the TPPROXY_ variables of the compose
// service that mounts it (so they must name real keys), and no others.
func TestTpproxyConfigsPassCheckConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tpproxy")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found:", err)
	}
	bin := filepath.Join(t.TempDir(), "tpproxy")
	build := exec.Command(gobin, "build", "-o", bin, "./cmd/tpproxy")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tpproxy: %v\n%s", err, out)
	}

	c := loadCompose(t)
	var baseEnv []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TPPROXY_") {
			baseEnv = append(baseEnv, kv)
		}
	}
	for _, p := range filesOfKind(kindTpproxyConfig) {
		env := slices.Clone(baseEnv)
		for name, svc := range c.Services {
			if _, ok := svc.mountOf(p); !ok {
				continue
			}
			for k, v := range svc.Environment {
				if strings.HasPrefix(k, "TPPROXY_") {
					env = append(env, k+"="+v)
				}
			}
			t.Logf("%s: with the environment of compose service %s", p, name)
		}
		cmd := exec.Command(bin, "check-config", "--config", filepath.FromSlash(p))
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("tpproxy check-config --config %s: %v\n%s", p, err, out)
		}
	}
}

// TestComposeServices checks the service list and the images.
func TestComposeServices(t *testing.T) {
	c := loadCompose(t)
	if c.Version != "" {
		t.Errorf("%s: drop the obsolete version key", composePath)
	}
	var got []string
	for name := range c.Services {
		got = append(got, name)
	}
	sort.Strings(got)
	want := []string{svcGrafana, svcMySQL, svcExporter, svcPrometheus, svcTpproxy}
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("services = %v, want %v", got, want)
	}
	for name, repo := range wantImages {
		svc, ok := c.Services[name]
		if !ok {
			continue
		}
		gotRepo, tag, hasTag := strings.Cut(svc.Image, ":")
		if gotRepo != repo {
			t.Errorf("service %s: image %q, want %s:<tag>", name, svc.Image, repo)
		}
		if !hasTag || tag == "" || tag == "latest" {
			t.Errorf("service %s: image %q is not pinned to a tag", name, svc.Image)
		}
		if svc.Build != nil {
			t.Errorf("service %s: has both image and build", name)
		}
	}
	tp := c.service(t, svcTpproxy)
	if tp.Image != "" {
		t.Errorf("service %s: image %q; it must be built from the repository", svcTpproxy, tp.Image)
	}
	if tp.Build == nil {
		t.Fatalf("service %s: no build section", svcTpproxy)
	}
	dockerfile := tp.Build.Dockerfile
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	df := filepath.Join(filepath.FromSlash(tp.Build.Context), filepath.FromSlash(dockerfile))
	if _, err := os.Stat(filepath.Join(filepath.FromSlash(tp.Build.Context), "go.mod")); err != nil {
		t.Errorf("service %s: build context %q is not the module root: %v", svcTpproxy, tp.Build.Context, err)
	}
	if _, err := os.Stat(df); err != nil {
		t.Errorf("service %s: dockerfile: %v", svcTpproxy, err)
	}
}

// TestComposeMounts checks that bind mounts are relative paths to files
// or directories of configs/ and that named volumes are declared.
func TestComposeMounts(t *testing.T) {
	c := loadCompose(t)
	for name, svc := range c.Services {
		for _, m := range svc.mounts(t, name) {
			if !m.bind {
				if _, ok := c.Volumes[m.source]; !ok {
					t.Errorf("service %s: named volume %q is not declared under volumes", name, m.source)
				}
				continue
			}
			if filepath.IsAbs(m.source) || strings.HasPrefix(m.source, "~") {
				t.Errorf("service %s: bind mount %q is not relative to configs/", name, m.source)
				continue
			}
			fi, err := os.Stat(filepath.FromSlash(m.source))
			if err != nil {
				t.Errorf("service %s: bind mount source: %v", name, err)
				continue
			}
			if fi.IsDir() {
				known := false
				for p := range files {
					known = known || strings.HasPrefix(p, m.source+"/")
				}
				if !known {
					t.Errorf("service %s: mounted directory %s holds no known file", name, m.source)
				}
			} else if _, ok := files[m.source]; !ok {
				t.Errorf("service %s: mounted file %s is not in the files table", name, m.source)
			}
			if !path.IsAbs(m.target) {
				t.Errorf("service %s: mount target %q is not absolute", name, m.target)
			}
		}
	}
}

// TestComposeTpproxyService checks the tpproxy service against the
// configuration it mounts: command, published ports, listen addresses,
// stop grace period.
func TestComposeTpproxyService(t *testing.T) {
	c := loadCompose(t)
	svc := c.service(t, svcTpproxy)
	target, ok := svc.mountOf(composeTpproxyConfig)
	if !ok {
		t.Fatalf("service %s does not mount %s", svcTpproxy, composeTpproxyConfig)
	}
	if want := []string{"serve", "--config", target}; !slices.Equal(svc.Command, want) {
		t.Errorf("service %s: command %q, want %q", svcTpproxy, svc.Command, want)
	}

	cfg := loadTpproxyConfig(t, composeTpproxyConfig, svc.Environment)
	type listener struct{ key, addr string }
	listeners := []listener{{"listen", cfg.Listen}}
	if cfg.Admin.Listen != "" {
		listeners = append(listeners, listener{"admin.listen", cfg.Admin.Listen})
	}
	if cfg.Admin.HTTPListen != "" {
		listeners = append(listeners, listener{"admin.http_listen", cfg.Admin.HTTPListen})
	} else {
		t.Errorf("%s: admin.http_listen is off; Prometheus scrapes it", composeTpproxyConfig)
	}
	want := make(map[int]string)
	for _, l := range listeners {
		host, port := splitHostPort(t, composeTpproxyConfig+" "+l.key, l.addr)
		if !wildcardHost(host) {
			t.Errorf("%s: %s %q listens on %q only; other containers and published ports need 0.0.0.0",
				composeTpproxyConfig, l.key, l.addr, host)
		}
		want[port] = l.key
	}
	if cfg.ThreadPool.ExtraPort > 0 {
		want[cfg.ThreadPool.ExtraPort] = "thread_pool.extra_port"
	}
	published := svc.containerPorts(t, svcTpproxy)
	for port, key := range want {
		if !published[port] {
			t.Errorf("service %s does not publish port %d (%s in %s)", svcTpproxy, port, key, composeTpproxyConfig)
		}
	}
	for port := range published {
		if _, ok := want[port]; !ok {
			t.Errorf("service %s publishes port %d, which %s does not listen on", svcTpproxy, port, composeTpproxyConfig)
		}
	}

	shutdown, err := time.ParseDuration(cfg.ShutdownTimeout)
	if err != nil {
		t.Fatalf("%s: shutdown_timeout: %v", composeTpproxyConfig, err)
	}
	grace := dockerDefaultGrace
	if svc.StopGracePeriod != "" {
		if grace, err = time.ParseDuration(svc.StopGracePeriod); err != nil {
			t.Fatalf("service %s: stop_grace_period: %v", svcTpproxy, err)
		}
	}
	if grace <= shutdown {
		t.Errorf("service %s: stop_grace_period %v must exceed shutdown_timeout %v, or Docker kills tpproxy while it drains",
			svcTpproxy, grace, shutdown)
	}
}

// TestComposeBackendMatchesMySQL checks that tpproxy's backend is the mysql
// service, with an account that service creates, over TLS (MySQL 8.4's
// caching_sha2_password needs it), after MySQL is healthy.
func TestComposeBackendMatchesMySQL(t *testing.T) {
	c := loadCompose(t)
	svc := c.service(t, svcTpproxy)
	mysql := c.service(t, svcMySQL)
	cfg := loadTpproxyConfig(t, composeTpproxyConfig, svc.Environment)

	host, port := splitHostPort(t, composeTpproxyConfig+" backend.addr", cfg.Backend.Addr)
	if host != svcMySQL || port != mysql.mysqlPort(t) {
		t.Errorf("%s: backend.addr %q, want %s:%d", composeTpproxyConfig, cfg.Backend.Addr, svcMySQL, mysql.mysqlPort(t))
	}
	if want := mysql.mysqlPassword(t, cfg.Backend.User); cfg.Backend.Password != want {
		t.Errorf("%s: backend password for %q (after the compose environment) is %q, want %q as the mysql service sets it",
			composeTpproxyConfig, cfg.Backend.User, cfg.Backend.Password, want)
	}
	if cfg.Backend.TLS.Mode == string(config.TLSDisabled) {
		t.Errorf("%s: backend.tls.mode is disabled; caching_sha2_password full authentication needs TLS", composeTpproxyConfig)
	}
	if cfg.Backend.TLS.Mode != string(config.TLSDisabled) && cfg.Backend.TLS.CA == "" && !cfg.Backend.TLS.InsecureSkipVerify {
		t.Errorf("%s: backend TLS verifies against system roots, but MySQL's certificate is self-signed: set insecure_skip_verify or ca",
			composeTpproxyConfig)
	}
	if len(cfg.Users) == 0 {
		t.Errorf("%s: no users", composeTpproxyConfig)
	}
	if cond := svc.DependsOn[svcMySQL]; cond != "service_healthy" {
		t.Errorf("service %s: depends_on %s condition %q, want service_healthy", svcTpproxy, svcMySQL, cond)
	}
	if mysql.Healthcheck == nil || len(mysql.Healthcheck.Test) == 0 {
		t.Errorf("service %s has no healthcheck for service_healthy to wait on", svcMySQL)
	}
}

// TestExporter checks mysqld-exporter's my.cnf against the mysql service and
// the path the compose file passes to --config.my-cnf.
func TestExporter(t *testing.T) {
	c := loadCompose(t)
	svc := c.service(t, svcExporter)
	mysql := c.service(t, svcMySQL)

	target, ok := svc.mountOf(exporterCnf)
	if !ok {
		t.Fatalf("service %s does not mount %s", svcExporter, exporterCnf)
	}
	if got, _ := flagValue(svc.Command, "--config.my-cnf"); got != target {
		t.Errorf("service %s: --config.my-cnf=%q, want the mount target %q", svcExporter, got, target)
	}

	cnf, err := parseCnf(readFile(t, exporterCnf))
	if err != nil {
		t.Fatalf("%s: %v", exporterCnf, err)
	}
	client := cnf["client"]
	if client == nil {
		t.Fatalf("%s: no [client] section", exporterCnf)
	}
	if client["host"] != svcMySQL {
		t.Errorf("%s: host %q, want %s", exporterCnf, client["host"], svcMySQL)
	}
	port := mysqlDefaultPort
	if client["port"] != "" {
		if port, err = strconv.Atoi(client["port"]); err != nil {
			t.Errorf("%s: port: %v", exporterCnf, err)
		}
	}
	if port != mysql.mysqlPort(t) {
		t.Errorf("%s: port %d, want %d", exporterCnf, port, mysql.mysqlPort(t))
	}
	if want := mysql.mysqlPassword(t, client["user"]); client["password"] != want {
		t.Errorf("%s: password for %q is %q, want %q as the mysql service sets it", exporterCnf, client["user"], client["password"], want)
	}
	if cond := svc.DependsOn[svcMySQL]; cond != "service_healthy" {
		t.Errorf("service %s: depends_on %s condition %q, want service_healthy", svcExporter, svcMySQL, cond)
	}
	if !svc.containerPorts(t, svcExporter)[svc.listenPort(t, exporterDefaultPort)] {
		t.Errorf("service %s does not publish its port %d", svcExporter, svc.listenPort(t, exporterDefaultPort))
	}
}

// TestPrometheusTargets checks the scrape targets against the compose
// services and tpproxy's admin.http_listen.
func TestPrometheusTargets(t *testing.T) {
	c := loadCompose(t)
	prom := c.service(t, svcPrometheus)
	wantConfig := prometheusDefaultConfig
	if v, ok := flagValue(prom.Command, "--config.file"); ok {
		wantConfig = v
	}
	if target, ok := prom.mountOf(prometheusConfig); !ok || target != wantConfig {
		t.Errorf("service %s mounts %s at %q, want %q", svcPrometheus, prometheusConfig, target, wantConfig)
	}
	if !prom.containerPorts(t, svcPrometheus)[prom.listenPort(t, prometheusDefaultPort)] {
		t.Errorf("service %s does not publish its port", svcPrometheus)
	}

	var pc struct {
		Global struct {
			ScrapeInterval string `yaml:"scrape_interval"`
		} `yaml:"global"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(readFile(t, prometheusConfig), &pc); err != nil {
		t.Fatalf("%s: %v", prometheusConfig, err)
	}
	if _, err := time.ParseDuration(pc.Global.ScrapeInterval); err != nil {
		t.Errorf("%s: global.scrape_interval: %v", prometheusConfig, err)
	}

	cfg := loadTpproxyConfig(t, composeTpproxyConfig, c.service(t, svcTpproxy).Environment)
	_, httpPort := splitHostPort(t, composeTpproxyConfig+" admin.http_listen", cfg.Admin.HTTPListen)
	exporter := c.service(t, svcExporter)
	want := map[string]string{
		"tpproxy": net.JoinHostPort(svcTpproxy, strconv.Itoa(httpPort)),
		"mysqld":  net.JoinHostPort(svcExporter, strconv.Itoa(exporter.listenPort(t, exporterDefaultPort))),
	}
	seen := make(map[string]bool)
	for _, sc := range pc.ScrapeConfigs {
		wantTarget, ok := want[sc.JobName]
		if !ok {
			continue
		}
		seen[sc.JobName] = true
		var targets []string
		for _, s := range sc.StaticConfigs {
			targets = append(targets, s.Targets...)
		}
		if !slices.Equal(targets, []string{wantTarget}) {
			t.Errorf("%s: job %s targets %q, want [%s]", prometheusConfig, sc.JobName, targets, wantTarget)
		}
		if sc.MetricsPath != "" && sc.MetricsPath != "/metrics" {
			t.Errorf("%s: job %s metrics_path %q, want /metrics", prometheusConfig, sc.JobName, sc.MetricsPath)
		}
	}
	for job := range want {
		if !seen[job] {
			t.Errorf("%s: no job %s", prometheusConfig, job)
		}
	}
}

// grafanaDatasource is the one provisioned datasource.
type grafanaDatasource struct {
	Name      string `yaml:"name"`
	Type      string `yaml:"type"`
	UID       string `yaml:"uid"`
	URL       string `yaml:"url"`
	IsDefault bool   `yaml:"isDefault"`
	JSONData  struct {
		TimeInterval string `yaml:"timeInterval"`
	} `yaml:"jsonData"`
}

func loadDatasource(t *testing.T) grafanaDatasource {
	t.Helper()
	var f struct {
		APIVersion  int                 `yaml:"apiVersion"`
		Datasources []grafanaDatasource `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(readFile(t, grafanaDatasources), &f); err != nil {
		t.Fatalf("%s: %v", grafanaDatasources, err)
	}
	if f.APIVersion != 1 || len(f.Datasources) != 1 {
		t.Fatalf("%s: want apiVersion 1 and one datasource, got %d and %d", grafanaDatasources, f.APIVersion, len(f.Datasources))
	}
	return f.Datasources[0]
}

// TestGrafanaDatasource checks the datasource against the prometheus service,
// and that Grafana finds the provisioning directory.
func TestGrafanaDatasource(t *testing.T) {
	c := loadCompose(t)
	ds := loadDatasource(t)
	if ds.Type != "prometheus" || ds.UID == "" || !ds.IsDefault {
		t.Errorf("%s: type %q uid %q isDefault %v, want prometheus, a uid, true", grafanaDatasources, ds.Type, ds.UID, ds.IsDefault)
	}
	prom := c.service(t, svcPrometheus)
	wantURL := "http://" + net.JoinHostPort(svcPrometheus, strconv.Itoa(prom.listenPort(t, prometheusDefaultPort)))
	if strings.TrimSuffix(ds.URL, "/") != wantURL {
		t.Errorf("%s: url %q, want %s", grafanaDatasources, ds.URL, wantURL)
	}
	if ds.JSONData.TimeInterval != "" {
		var pc struct {
			Global struct {
				ScrapeInterval string `yaml:"scrape_interval"`
			} `yaml:"global"`
		}
		if err := yaml.Unmarshal(readFile(t, prometheusConfig), &pc); err != nil {
			t.Fatal(err)
		}
		if ds.JSONData.TimeInterval != pc.Global.ScrapeInterval {
			t.Errorf("%s: timeInterval %s differs from %s's scrape_interval %s",
				grafanaDatasources, ds.JSONData.TimeInterval, prometheusConfig, pc.Global.ScrapeInterval)
		}
	}

	graf := c.service(t, svcGrafana)
	wantProv := grafanaDefaultProvision
	if v := graf.Environment["GF_PATHS_PROVISIONING"]; v != "" {
		wantProv = v
	}
	if target, ok := graf.mountOf(grafanaProvisioning); !ok || target != wantProv {
		t.Errorf("service %s mounts %s at %q, want %q", svcGrafana, grafanaProvisioning, target, wantProv)
	}
}

// TestGrafanaDashboardProvider checks that the provider reads the directory
// the compose file mounts the dashboards at.
func TestGrafanaDashboardProvider(t *testing.T) {
	c := loadCompose(t)
	graf := c.service(t, svcGrafana)
	mounted, ok := graf.mountOf(grafanaDashboards)
	if !ok {
		t.Fatalf("service %s does not mount %s", svcGrafana, grafanaDashboards)
	}
	var f struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name    string `yaml:"name"`
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal(readFile(t, grafanaProvider), &f); err != nil {
		t.Fatalf("%s: %v", grafanaProvider, err)
	}
	if f.APIVersion != 1 || len(f.Providers) == 0 {
		t.Fatalf("%s: want apiVersion 1 and providers", grafanaProvider)
	}
	for _, p := range f.Providers {
		if p.Type != "file" || path.Clean(p.Options.Path) != mounted {
			t.Errorf("%s: provider %q type %q path %q, want file provider on %q", grafanaProvider, p.Name, p.Type, p.Options.Path, mounted)
		}
	}
	if home := graf.Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]; home != "" {
		rel, ok := strings.CutPrefix(home, mounted+"/")
		if !ok {
			t.Errorf("service %s: home dashboard %q is not under %s", svcGrafana, home, mounted)
		} else if files[grafanaDashboards+"/"+rel] != kindDashboard {
			t.Errorf("service %s: home dashboard %q is not a dashboard in %s", svcGrafana, home, grafanaDashboards)
		}
	}
}

// dashPanel is the part of a Grafana panel the tests read.
type dashPanel struct {
	ID         int          `json:"id"`
	Type       string       `json:"type"`
	Title      string       `json:"title"`
	Datasource *dashDS      `json:"datasource"`
	Targets    []dashTarget `json:"targets"`
	Panels     []dashPanel  `json:"panels"`
	GridPos    *struct {
		H, W, X, Y int
	} `json:"gridPos"`
}

type dashDS struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashTarget struct {
	Expr       string  `json:"expr"`
	Datasource *dashDS `json:"datasource"`
}

// instanceFilt is the matcher every selector of the dashboard has.
const instanceFilt = `instance=~"$instance"`

// TestDashboard checks the dashboard's structure: uid, the $instance
// variable, every panel querying the provisioned datasource with a
// non-empty expression filtered by $instance.
func TestDashboard(t *testing.T) {
	ds := loadDatasource(t)
	for _, p := range filesOfKind(kindDashboard) {
		var d struct {
			UID           string      `json:"uid"`
			Title         string      `json:"title"`
			SchemaVersion int         `json:"schemaVersion"`
			Panels        []dashPanel `json:"panels"`
			Templating    struct {
				List []struct {
					Name       string          `json:"name"`
					Type       string          `json:"type"`
					Datasource *dashDS         `json:"datasource"`
					Query      json.RawMessage `json:"query"`
				} `json:"list"`
			} `json:"templating"`
		}
		dec := json.NewDecoder(bytes.NewReader(readFile(t, p)))
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if p == dashboardPath && d.UID != dashboardUID {
			t.Errorf("%s: uid %q, want %q", p, d.UID, dashboardUID)
		}
		if d.Title == "" || d.SchemaVersion == 0 {
			t.Errorf("%s: title %q schemaVersion %d", p, d.Title, d.SchemaVersion)
		}

		hasInstance := false
		for _, v := range d.Templating.List {
			if v.Name != "instance" {
				continue
			}
			hasInstance = true
			if v.Type != "query" || v.Datasource == nil || v.Datasource.UID != ds.UID {
				t.Errorf("%s: variable instance must be a query on datasource %q", p, ds.UID)
			}
			if !strings.Contains(string(v.Query), "tpproxy_build_info") {
				t.Errorf("%s: variable instance query %s does not read tpproxy_build_info", p, v.Query)
			}
		}
		if !hasInstance {
			t.Errorf("%s: no $instance template variable", p)
		}

		ids := make(map[int]string)
		var walk func(panels []dashPanel, in string)
		count := 0
		walk = func(panels []dashPanel, in string) {
			for _, pn := range panels {
				name := fmt.Sprintf("%s panel %d %q", p, pn.ID, pn.Title)
				if prev, dup := ids[pn.ID]; dup {
					t.Errorf("%s: id %d also used by %q", name, pn.ID, prev)
				}
				ids[pn.ID] = pn.Title
				if pn.GridPos == nil || pn.GridPos.W == 0 || pn.GridPos.H == 0 {
					t.Errorf("%s: no gridPos", name)
				}
				if pn.Type == "row" {
					if in != "" {
						t.Errorf("%s: row inside row %q", name, in)
					}
					walk(pn.Panels, pn.Title)
					continue
				}
				count++
				if pn.Title == "" {
					t.Errorf("%s: no title", name)
				}
				if pn.Datasource == nil || pn.Datasource.UID != ds.UID || pn.Datasource.Type != ds.Type {
					t.Errorf("%s: datasource %+v, want {type %s uid %s}", name, pn.Datasource, ds.Type, ds.UID)
				}
				if len(pn.Targets) == 0 {
					t.Errorf("%s: no targets", name)
				}
				for i, tg := range pn.Targets {
					if strings.TrimSpace(tg.Expr) == "" {
						t.Errorf("%s: target %d has no expr", name, i)
						continue
					}
					if tg.Datasource != nil && tg.Datasource.UID != ds.UID {
						t.Errorf("%s: target %d datasource uid %q, want %q", name, i, tg.Datasource.UID, ds.UID)
					}

				}
			}
		}
		walk(d.Panels, "")
		if count == 0 {
			t.Errorf("%s: no panels", p)
		}

		// Grafana's schema and Prometheus' parser: the dashboard decodes
		// strictly and every query parses, reads a metric and filters
		// every selector by $instance.
		_, queries, err := dashboard.Load(readFile(t, p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(queries) == 0 {
			t.Errorf("%s: no queries", p)
		}
		for _, q := range queries {
			if q.Datasource != ds.UID {
				t.Errorf("%s: panel %q queries datasource %q, want %q", p, q.Panel, q.Datasource, ds.UID)
			}
			if len(q.Metrics()) == 0 {
				t.Errorf("%s: panel %q: %s reads no metric", p, q.Panel, q.Expr)
			}
			for _, sel := range unfiltered(q) {
				t.Errorf("%s: panel %q: %s is not filtered by %s", p, q.Panel, sel, instanceFilt)
			}
		}
	}
}

// unfiltered lists the selectors of q that lack the $instance matcher.
func unfiltered(q dashboard.Query) []string {
	var bad []string
	for _, sel := range q.Selectors() {
		if !dashboard.Filtered(sel) {
			bad = append(bad, sel.String())
		}
	}
	return bad
}

func TestUnfiltered(t *testing.T) {
	for expr, want := range map[string]int{
		`sum(rate(tpproxy_statements_total{instance=~"$instance"}[1m]))`:                                0,
		`sum(rate(tpproxy_statements_total[1m]))`:                                                       1,
		`count by (version, go_version) (tpproxy_build_info{instance=~"$instance"})`:                    0,
		`tpproxy_a{instance=~"$instance"} / tpproxy_b{job="x"}`:                                         1,
		`label_replace(go_goroutines{instance=~"$instance"}, "x", "go_thing", "instance", "(.*)")`:      0,
		`sum(tpproxy_a{instance=~"$instance", outcome="error"}) / clamp_min(sum(process_foo_bytes), 1)`: 1,
		`tpproxy_a{instance="$instance"}`:                                                               1, // = is not =~
	} {
		parsed, err := parser.NewParser(parser.Options{}).ParseExpr(dashboard.Substitute(expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if got := unfiltered(dashboard.Query{Expr: expr, Parsed: parsed}); len(got) != want {
			t.Errorf("unfiltered(%s) = %q, want %d", expr, got, want)
		}
	}
}

// --- compose ---------------------------------------------------------------

type composeFile struct {
	Version  string                    `yaml:"version"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command         stringList `yaml:"command"`
	Environment     envMap     `yaml:"environment"`
	Volumes         []string   `yaml:"volumes"`
	Ports           []string   `yaml:"ports"`
	DependsOn       dependsOn  `yaml:"depends_on"`
	StopGracePeriod string     `yaml:"stop_grace_period"`
	Healthcheck     *struct {
		Test stringList `yaml:"test"`
	} `yaml:"healthcheck"`
}

// stringList is a command: a list, or a string split on spaces.
type stringList []string

func (l *stringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = strings.Fields(n.Value)
		return nil
	}
	var s []string
	err := n.Decode(&s)
	*l = s
	return err
}

// envMap is an environment: a mapping, or a list of NAME=value.
type envMap map[string]string

func (e *envMap) UnmarshalYAML(n *yaml.Node) error {
	m := make(map[string]string)
	if n.Kind == yaml.SequenceNode {
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		for _, kv := range l {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
	} else if err := n.Decode(&m); err != nil {
		return err
	}
	*e = m
	return nil
}

// dependsOn maps each dependency to its condition.
type dependsOn map[string]string

func (d *dependsOn) UnmarshalYAML(n *yaml.Node) error {
	m := make(map[string]string)
	if n.Kind == yaml.SequenceNode {
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		for _, s := range l {
			m[s] = "service_started"
		}
	} else {
		var long map[string]struct {
			Condition string `yaml:"condition"`
		}
		if err := n.Decode(&long); err != nil {
			return err
		}
		for s, c := range long {
			if c.Condition == "" {
				c.Condition = "service_started"
			}
			m[s] = c.Condition
		}
	}
	*d = m
	return nil
}

// loadCompose parses the compose file after interpolating ${VAR:-default}
// with an empty environment, as `docker compose` would with none of the
// variables set.
func loadCompose(t *testing.T) composeFile {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(readFile(t, composePath), &doc); err != nil {
		t.Fatalf("%s: %v", composePath, err)
	}
	if err := interpolateNode(&doc); err != nil {
		t.Fatalf("%s: %v", composePath, err)
	}
	var c composeFile
	if err := doc.Decode(&c); err != nil {
		t.Fatalf("%s: %v", composePath, err)
	}
	return c
}

func (c composeFile) service(t *testing.T, name string) composeService {
	t.Helper()
	s, ok := c.Services[name]
	if !ok {
		t.Fatalf("%s: no service %s", composePath, name)
	}
	return s
}

type mount struct {
	source, target string
	bind           bool
}

// mounts parses the short volume syntax SOURCE:TARGET[:MODE]. A bind
// source is returned cleaned and slash-separated, relative to configs/.
func (s composeService) mounts(t *testing.T, name string) []mount {
	t.Helper()
	var out []mount
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || len(parts) > 3 {
			t.Errorf("service %s: volume %q: want SOURCE:TARGET[:MODE]", name, v)
			continue
		}
		m := mount{source: parts[0], target: path.Clean(parts[1])}
		if strings.HasPrefix(m.source, ".") || strings.HasPrefix(m.source, "/") || strings.HasPrefix(m.source, "~") {
			m.bind = true
			if !strings.HasPrefix(m.source, "/") {
				m.source = path.Clean(m.source)
			}
		}
		out = append(out, m)
	}
	return out
}

// mountOf returns where the service mounts the configs/ file or directory
// p.
func (s composeService) mountOf(p string) (string, bool) {
	for _, v := range s.Volumes {
		src, rest, ok := strings.Cut(v, ":")
		if !ok || !strings.HasPrefix(src, ".") || path.Clean(src) != p {
			continue
		}
		target, _, _ := strings.Cut(rest, ":")
		return path.Clean(target), true
	}
	return "", false
}

// containerPorts parses ports as [[IP:]HOST:]CONTAINER[/PROTO] and returns
// the container ports.
func (s composeService) containerPorts(t *testing.T, name string) map[int]bool {
	t.Helper()
	out := make(map[int]bool)
	for _, p := range s.Ports {
		spec, proto, _ := strings.Cut(p, "/")
		if proto != "" && proto != "tcp" {
			t.Errorf("service %s: port %q is not TCP", name, p)
		}
		parts := strings.Split(spec, ":")
		if len(parts) > 3 {
			t.Errorf("service %s: port %q: want [[IP:]HOST:]CONTAINER", name, p)
			continue
		}
		n, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil {
			t.Errorf("service %s: port %q: %v", name, p, err)
			continue
		}
		out[n] = true
	}
	return out
}

// listenPort is the port an exporter or Prometheus listens on: the port of
// --web.listen-address, or def.
func (s composeService) listenPort(t *testing.T, def int) int {
	t.Helper()
	v, ok := flagValue(s.Command, "--web.listen-address")
	if !ok {
		return def
	}
	_, port := splitHostPort(t, "--web.listen-address", v)
	return port
}

// mysqlPort is the port the mysql service listens on.
func (s composeService) mysqlPort(t *testing.T) int {
	t.Helper()
	v, ok := flagValue(s.Command, "--port")
	if !ok {
		return mysqlDefaultPort
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("service %s: --port: %v", svcMySQL, err)
	}
	return n
}

// mysqlPassword is the password the mysql service's environment gives
// user, which must be root or MYSQL_USER.
func (s composeService) mysqlPassword(t *testing.T, user string) string {
	t.Helper()
	switch user {
	case "root":
		return s.Environment["MYSQL_ROOT_PASSWORD"]
	case s.Environment["MYSQL_USER"]:
		return s.Environment["MYSQL_PASSWORD"]
	}
	t.Errorf("user %q is neither root nor the mysql service's MYSQL_USER %q", user, s.Environment["MYSQL_USER"])
	return ""
}

// flagValue finds --name=value or --name value in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// interpolateNode replaces variables in every scalar of n.
func interpolateNode(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		v, err := interpolate(n.Value)
		n.Value = v
		return err
	}
	for _, c := range n.Content {
		if err := interpolateNode(c); err != nil {
			return err
		}
	}
	return nil
}

// composeGiven are the variables README's compose command sets.
var composeGiven = map[string]string{"TPPROXY_ADMIN_PASSWORD": "pick-one"}

// interpolate expands compose variables with only composeGiven set: $$ is $,
// ${V:-d} and ${V-d} are d, ${V:?e} and ${V?e} are errors, ${V:+a},
// ${V+a}, ${V} and $V are empty.
func interpolate(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("unterminated variable in %q", s)
			}
			body := s[i+2 : i+end]
			i += end
			nameEnd := strings.IndexAny(body, ":-?+")
			if nameEnd < 0 {
				continue
			}
			op := body[nameEnd:]
			op = strings.TrimPrefix(op, ":")
			if v, ok := composeGiven[body[:nameEnd]]; ok {
				if op[0] == '+' {
					v = op[1:]
				}
				b.WriteString(v)
				continue
			}
			switch op[0] {
			case '-':
				b.WriteString(op[1:])
			case '?':
				return "", fmt.Errorf("variable %s is required: %s", body[:nameEnd], op[1:])
			}
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		i = j - 1
	}
	return b.String(), nil
}

func TestInterpolate(t *testing.T) {
	for in, want := range map[string]string{
		"${A:-rootpw}":                      "rootpw",
		"x${A-d}y":                          "xdy",
		"${A}":                              "",
		"$A/b":                              "/b",
		"-p$$PW":                            "-p$PW",
		"${A:+alt}":                         "",
		"plain":                             "plain",
		"${TPPROXY_ADMIN_PASSWORD:?set it}": "pick-one",
	} {
		if got, err := interpolate(in); err != nil || got != want {
			t.Errorf("interpolate(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := interpolate("${A:?set A}"); err == nil {
		t.Error("interpolate of a required variable did not fail")
	}
}

// --- tpproxy configuration -------------------------------------------------

// tpproxyConfig holds the keys of a tpproxy configuration the compose
// stack depends on.
type tpproxyConfig struct {
	Listen          string `yaml:"listen"`
	ShutdownTimeout string `yaml:"shutdown_timeout"`
	Users           []struct {
		User     string `yaml:"user"`
		Password string `yaml:"password"`
	} `yaml:"users"`
	Backend struct {
		Addr     string `yaml:"addr"`
		User     string `yaml:"user"`
		Password string `yaml:"password"`
		TLS      struct {
			Mode               string `yaml:"mode"`
			CA                 string `yaml:"ca"`
			InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
		} `yaml:"tls"`
	} `yaml:"backend"`
	ThreadPool struct {
		ExtraPort int `yaml:"extra_port"`
	} `yaml:"thread_pool"`
	Admin struct {
		Listen     string `yaml:"listen"`
		HTTPListen string `yaml:"http_listen"`
	} `yaml:"admin"`
}

// loadTpproxyConfig reads the tpproxy configuration p over tpproxy's
// defaults, then applies the TPPROXY_ variables of env that set the keys
// above, as tpproxy does.
func loadTpproxyConfig(t *testing.T, p string, env map[string]string) tpproxyConfig {
	t.Helper()
	def := config.Default()
	var c tpproxyConfig
	c.Listen = def.Listen
	c.ShutdownTimeout = def.ShutdownTimeout.String()
	c.Backend.Addr = def.Backend.Addr
	c.Backend.User = def.Backend.User
	c.Backend.Password = def.Backend.Password
	c.Backend.TLS.Mode = string(def.Backend.TLS.Mode)
	c.Backend.TLS.CA = def.Backend.TLS.CA
	c.Backend.TLS.InsecureSkipVerify = def.Backend.TLS.InsecureSkipVerify
	c.ThreadPool.ExtraPort = def.ThreadPool.ExtraPort
	c.Admin.Listen = def.Admin.Listen
	c.Admin.HTTPListen = def.Admin.HTTPListen
	if err := yaml.Unmarshal(readFile(t, p), &c); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	str := map[string]*string{
		"TPPROXY_LISTEN":            &c.Listen,
		"TPPROXY_SHUTDOWN_TIMEOUT":  &c.ShutdownTimeout,
		"TPPROXY_BACKEND_ADDR":      &c.Backend.Addr,
		"TPPROXY_BACKEND_USER":      &c.Backend.User,
		"TPPROXY_BACKEND_PASSWORD":  &c.Backend.Password,
		"TPPROXY_BACKEND_TLS_MODE":  &c.Backend.TLS.Mode,
		"TPPROXY_BACKEND_TLS_CA":    &c.Backend.TLS.CA,
		"TPPROXY_ADMIN_LISTEN":      &c.Admin.Listen,
		"TPPROXY_ADMIN_HTTP_LISTEN": &c.Admin.HTTPListen,
	}
	for k, v := range env {
		if dst, ok := str[k]; ok {
			*dst = v
		}
		var err error
		switch k {
		case "TPPROXY_THREAD_POOL_EXTRA_PORT":
			c.ThreadPool.ExtraPort, err = strconv.Atoi(v)
		case "TPPROXY_BACKEND_TLS_INSECURE_SKIP_VERIFY":
			c.Backend.TLS.InsecureSkipVerify, err = strconv.ParseBool(v)
		}
		if err != nil {
			t.Fatalf("%s=%q: %v", k, v, err)
		}
	}
	return c
}

func splitHostPort(t *testing.T, what, addr string) (string, int) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("%s: port: %v", what, err)
	}
	return host, n
}

func wildcardHost(h string) bool {
	return h == "" || h == "0.0.0.0" || h == "::"
}

// --- my.cnf ----------------------------------------------------------------

// parseCnf reads an option file: [section] headers, key=value lines,
// comments starting with # or ;.
func parseCnf(data []byte) (map[string]map[string]string, error) {
	out := make(map[string]map[string]string)
	var section map[string]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			name, ok := strings.CutSuffix(line[1:], "]")
			if !ok {
				return nil, fmt.Errorf("line %d: bad section header %q", n, line)
			}
			section = make(map[string]string)
			out[strings.TrimSpace(name)] = section
		default:
			if section == nil {
				return nil, fmt.Errorf("line %d: option outside a section", n)
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				return nil, fmt.Errorf("line %d: want key=value", n)
			}
			v = strings.TrimSpace(v)
			if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
				v = v[1 : len(v)-1]
			}
			section[strings.TrimSpace(k)] = v
		}
	}
	return out, sc.Err()
}
