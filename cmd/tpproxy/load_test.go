package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/tpproxy/tpproxy/internal/config"
	"github.com/tpproxy/tpproxy/scheduler"
)

// testFlags returns the serve/check-config flag set after parsing args.
func testFlags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addConfigFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

// problems returns the messages of every problem in err.
func problems(err error) []string {
	var out []string
	for _, e := range config.Errors(err) {
		out = append(out, e.Error())
	}
	return out
}

func TestLoadPrecedence(t *testing.T) {
	const file = "testdata/good.yaml" // pool_size 8, addr db.internal:3306, log.level warn
	tests := []struct {
		name  string
		env   []string
		flags []string
		get   func(*config.Config) any
		want  any
	}{
		{"default when nothing sets it", nil, nil,
			func(c *config.Config) any { return c.Backend.ConnectTimeout }, 5 * time.Second},
		{"file over default", nil, nil,
			func(c *config.Config) any { return c.Backend.Size }, 8},
		{"env over file", []string{"TPPROXY_BACKEND_POOL_SIZE=32"}, nil,
			func(c *config.Config) any { return c.Backend.Size }, 32},
		{"flag over env", []string{"TPPROXY_BACKEND_POOL_SIZE=32"}, []string{"--pool-size=4"},
			func(c *config.Config) any { return c.Backend.Size }, 4},
		{"auto from the environment", []string{"TPPROXY_BACKEND_POOL_SIZE=auto"}, nil,
			func(c *config.Config) any { return c.Backend.Size }, 0},
		{"auto from a flag", nil, []string{"--pool-size=AUTO"},
			func(c *config.Config) any { return c.Backend.Size }, 0},
		{"auto's bounds from the environment", []string{"TPPROXY_BACKEND_POOL_SIZE=auto", "TPPROXY_BACKEND_POOL_SIZE_MAX=12"}, nil,
			func(c *config.Config) any { return c.Backend.PoolSizeMax }, 12},
		{"flag over file", nil, []string{"--backend-addr", "other:3307"},
			func(c *config.Config) any { return c.Backend.Addr }, "other:3307"},
		{"env over file, string", []string{"TPPROXY_BACKEND_ADDR=env:3306"}, nil,
			func(c *config.Config) any { return c.Backend.Addr }, "env:3306"},
		{"flag over env, string", []string{"TPPROXY_LOG_LEVEL=debug"}, []string{"--log-level", "error"},
			func(c *config.Config) any { return c.Log.Level }, "error"},
		{"unset flag does not override", []string{"TPPROXY_LOG_LEVEL=debug"}, []string{"--pool-size=3"},
			func(c *config.Config) any { return c.Log.Level }, "debug"},
		{"other variables ignored", []string{"PATH=/bin", "TPPROXYX=1", "HOME"}, nil,
			func(c *config.Config) any { return c.Listen }, "127.0.0.1:7033"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfig(file, testFlags(t, tt.flags...), tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.get(cfg); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLoadEnvSetsEveryKind(t *testing.T) {
	env := []string{
		"TPPROXY_LISTEN=0.0.0.0:7000",
		"TPPROXY_MAX_ALLOWED_PACKET=16MiB",
		"TPPROXY_LOAD_DATA_LOCAL=true",
		"TPPROXY_AUTH_PLUGIN=caching_sha2_password",
		"TPPROXY_BACKEND_ACQUIRE_TIMEOUT=250ms",
		"TPPROXY_BACKEND_MAX_LIFETIME=0",
		"TPPROXY_BACKEND_TLS_MODE=preferred",
		"TPPROXY_BACKEND_TLS_INSECURE_SKIP_VERIFY=true",
		"TPPROXY_BACKEND_TLS_SERVER_NAME=db.example",
		"TPPROXY_SERVER_VERSION=",
		"TPPROXY_THREAD_POOL_ALGORITHM=enterprise",
		"TPPROXY_THREAD_POOL_SIZE=3",
	}
	cfg, err := loadConfig("testdata/good.yaml", nil, env)
	if err != nil {
		t.Fatal(err)
	}
	want := config.Default()
	want.Listen = "0.0.0.0:7000"
	want.MaxAllowedPacket = 16 * config.MiB
	want.LoadDataLocal = true
	want.AuthPlugin = config.AuthCachingSHA2Password
	want.Users = []config.User{{User: "app", Password: "secret"}, {User: "report", Password: "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7"}}
	want.Backend.Addr = "db.internal:3306"
	want.Backend.User = "svc"
	want.Backend.Password = "svcpass"
	want.Backend.Size = 8
	want.Backend.AcquireTimeout = 250 * time.Millisecond
	want.Backend.MaxLifetime = 0
	want.Backend.TLS = config.BackendTLS{Mode: config.TLSPreferred, InsecureSkipVerify: true, ServerName: "db.example"}
	want.ThreadPool.Algorithm = scheduler.Enterprise
	want.ThreadPool.Size = 3
	want.Log.Level = "warn"
	if !reflect.DeepEqual(*cfg, want) {
		t.Errorf("got  %+v\nwant %+v", *cfg, want)
	}
}

func TestLoadEnvIntoNullSection(t *testing.T) {
	path := writeFile(t, "users: [{user: a, password: b}]\nbackend:\nlog: ~\n")
	cfg, err := loadConfig(path, nil, []string{"TPPROXY_BACKEND_ADDR=x:1", "TPPROXY_LOG_FORMAT=json"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Backend.Addr != "x:1" || cfg.Backend.Size != 16 || cfg.Log.Format != "json" || cfg.Log.Level != "info" {
		t.Errorf("got backend %+v log %+v", cfg.Backend, cfg.Log)
	}
}

func TestLoadProblems(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		env   []string
		flags []string
		want  []string // every problem, in order
	}{
		{"unknown keys name the key", "testdata/unknown_key.yaml", nil, nil, []string{
			"backend.pool_sise: unknown key (did you mean backend.pool_size?)",
			"lsiten: unknown key (did you mean listen?)",
			"users[0].pasword: unknown key (did you mean users[0].password?)",
		}},
		{"bad values name the key", "testdata/bad_value.yaml", nil, nil, []string{
			`max_allowed_packet: "12XB" is not a byte size (want e.g. 1024, 16MiB, 64M, 1GiB)`,
			`load_data_local: cannot parse "maybe" (want true or false)`,
			`backend.pool_size: cannot parse "abc" (want an integer)`,
			`backend.acquire_timeout: 10 has no unit (write e.g. 10s)`,
			`backend.connect_timeout: cannot parse "soon" as a duration (e.g. 500ms, 10s, 1h)`,
		}},
		{"validation problems all at once", "testdata/bad.yaml", nil, nil, []string{
			`listen: "foo" is not host:port`,
			`users[1].user: duplicate user "app" (also users[0])`,
			`users[1].password: "*ABC" is not a mysql_native_password hash ('*' followed by 40 hex digits)`,
			`backend.pool_size: must be between 1 and 10000, or auto, got -1`,
			`backend.health_interval: must be greater than 0, got 0s`,
			`backend.tls.mode: must be disabled, preferred or required, got "x"`,
			`log.level: must be debug, info, warn or error, got "loud"`,
		}},
		{"users only from the file", "testdata/no_users.yaml", []string{"TPPROXY_USERS=app:secret"}, nil, []string{
			"environment TPPROXY_USERS: users can only be set in the configuration file",
			"users: at least one user is required",
		}},
		{"bad env value names key and variable", "testdata/good.yaml",
			[]string{"TPPROXY_BACKEND_POOL_SIZE=abc", "TPPROXY_BACKEND_POOL_SISE=1", "TPPROXY_BACKEND_TLS_MODE=x"}, nil, []string{
				"environment TPPROXY_BACKEND_POOL_SISE: matches no configuration key",
				`backend.pool_size: cannot parse "abc" (want an integer) (set by TPPROXY_BACKEND_POOL_SIZE)`,
				`backend.tls.mode: must be disabled, preferred or required, got "x" (set by TPPROXY_BACKEND_TLS_MODE)`,
			}},
		{"bad flag value names key and flag", "testdata/good.yaml", nil, []string{"--pool-size=-1", "--log-format=xml"}, []string{
			`backend.pool_size: must be between 1 and 10000, or auto, got -1 (set by --pool-size)`,
			`log.format: must be text or json, got "xml" (set by --log-format)`,
		}},
		{"auto is the only word", writeFile(t, "users: [{user: app, password: secret}]\nbackend: {pool_size: automatic}\n"),
			nil, nil, []string{`backend.pool_size: cannot parse "automatic" (want an integer)`}},
		{"weak typing does not mangle values", writeFile(t, "server_version: 8.0\nload_data_local: 1\n"+
			"max_client_connections: 10.5\nusers: [{user: app, password: 1234}]\nbackend: {pool_size: true, max_allowed_packet: 1}\n"),
			nil, nil, []string{
				"backend.max_allowed_packet: unknown key",
				"max_client_connections: cannot use 10.5 (want an integer)",
				"server_version: cannot use 8 (want a string: put it in quotes)",
				"load_data_local: cannot use 1 (want true or false)",
				"users[0].password: cannot use 1234 (want a string: put it in quotes)",
				"backend.pool_size: cannot use true (want an integer)",
			}},
		{"enum words are the table's", writeFile(t, "users: [{user: app, password: secret}]\n"+
			"thread_pool: {algorithm: fast, high_prio_mode: all}\n"), nil, nil, []string{
			`thread_pool.algorithm: must be generic or enterprise, got "fast"`,
			`thread_pool.high_prio_mode: must be transactions, statements or none, got "all"`,
		}},
		{"enum as a number", writeFile(t, "users: [{user: app, password: secret}]\nthread_pool: {algorithm: 1}\n"), nil, nil, []string{
			`thread_pool.algorithm: must be generic or enterprise, got 1`,
		}},
		{"enum from the environment", "testdata/good.yaml", []string{"TPPROXY_THREAD_POOL_HIGH_PRIO_MODE=some"}, nil, []string{
			`thread_pool.high_prio_mode: must be transactions, statements or none, got "some" (set by TPPROXY_THREAD_POOL_HIGH_PRIO_MODE)`,
		}},
		{"wrong shapes", writeFile(t, "users: {user: app}\nbackend: 5\nmax_allowed_packet: -1\n"), nil, nil, []string{
			`max_allowed_packet: -1 is not a byte size (want e.g. 1024, 16MiB, 64M, 1GiB)`,
			`users: cannot use map[user:app] (want a list)`,
			`backend: expected a map or struct, got "int"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfig(tt.file, testFlags(t, tt.flags...), tt.env)
			if cfg != nil {
				t.Errorf("got a config along with problems")
			}
			if got := problems(err); !slices.Equal(got, tt.want) {
				t.Errorf("problems\n got: %q\nwant: %q", got, tt.want)
			}
			for _, e := range config.Errors(err) {
				var fe *config.FieldError
				if !errors.As(e, &fe) && !strings.HasPrefix(e.Error(), "environment ") {
					t.Errorf("problem %q names no key", e)
				}
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	_, err := loadConfig("testdata/syntax.yaml", nil, nil)
	if err == nil || err.Error() != "testdata/syntax.yaml: yaml: line 6: mapping values are not allowed in this context" {
		t.Errorf("syntax error: got %v, want the file and line", err)
	}
	_, err = loadConfig("testdata/missing.yaml", nil, nil)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "testdata/missing.yaml") {
		t.Errorf("missing file: got %v", err)
	}
}

// TestEnvNames checks that every key has its own variable and that the users
// list is the only key the environment cannot set.
func TestEnvNames(t *testing.T) {
	keys := leafKeys("", reflect.TypeFor[config.Config]())
	seen := make(map[string]string)
	for _, k := range keys {
		name := envName(k)
		if other, dup := seen[name]; dup {
			t.Errorf("%s and %s share %s", k, other, name)
		}
		seen[name] = k
	}
	for _, want := range []string{"TPPROXY_BACKEND_ADDR", "TPPROXY_BACKEND_POOL_SIZE", "TPPROXY_LOG_LEVEL", "TPPROXY_BACKEND_TLS_MODE", "TPPROXY_TLS_CERT"} {
		if _, ok := seen[want]; !ok {
			t.Errorf("no key for %s", want)
		}
	}
}

// TestExampleConfigs loads every example in configs/, which must validate
// and, for tpproxy.yaml, show every key.
func TestExampleConfigs(t *testing.T) {
	var files []string
	err := filepath.WalkDir("../../configs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "tpproxy") && strings.HasSuffix(d.Name(), ".yaml") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no example configs found")
	}
	for _, f := range files {
		if _, err := loadConfig(f, nil, nil); err != nil {
			t.Errorf("%s:\n%v", f, err)
		}
		// And through the command, as an operator runs it.
		if code, stdout, stderr := runCLI(t, nil, "check-config", "--config", f); code != exitOK || !strings.Contains(stdout, "config OK") {
			t.Errorf("check-config --config %s: exit %d\n%s%s", f, code, stdout, stderr)
		}
	}

	v := viper.New()
	v.SetConfigFile("../../configs/tpproxy.yaml")
	if err := v.ReadInConfig(); err != nil {
		t.Fatal(err)
	}
	shown := v.AllKeys()
	for _, k := range leafKeys("", reflect.TypeFor[config.Config]()) {
		if !slices.Contains(shown, k) {
			t.Errorf("configs/tpproxy.yaml does not show %s", k)
		}
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tpproxy.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
