package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/tpproxy/tpproxy/internal/config"
)

// runCLI runs the command line in-process and returns the exit code and
// output.
func runCLI(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut, env, buildInfo{version: "dev", commit: "unknown"})
	return code, out.String(), errOut.String()
}

func TestCommands(t *testing.T) {
	tests := []struct {
		name       string
		env        []string
		args       []string
		wantCode   int
		wantStdout []string // lines, exactly
		wantStderr []string // lines, exactly
	}{
		{
			name:     "check-config OK",
			args:     []string{"check-config", "--config", "testdata/good.yaml"},
			wantCode: 0,
			wantStdout: []string{
				"config OK: testdata/good.yaml",
				"  listen:  127.0.0.1:7033",
				"  backend: db.internal:3306 (pool_size 8)",
				"  users:   2 (identity passthrough)",
			},
		},
		{
			name:       "check-config sees env and flags",
			env:        []string{"TPPROXY_BACKEND_ADDR=env:3306", "TPPROXY_BACKEND_POOL_SIZE=32"},
			args:       []string{"check-config", "--config=testdata/good.yaml", "--pool-size", "64", "--listen", ":0"},
			wantCode:   0,
			wantStdout: []string{"config OK: testdata/good.yaml", "  listen:  :0", "  backend: env:3306 (pool_size 64)", "  users:   2 (identity passthrough)"},
		},
		{
			name:     "check-config lists every problem",
			args:     []string{"check-config", "--config", "testdata/bad.yaml"},
			wantCode: 1,
			wantStderr: []string{
				`listen: "foo" is not host:port`,
				`users[1].user: duplicate user "app" (also users[0])`,
				`users[1].password: "*ABC" is not a mysql_native_password hash ('*' followed by 40 hex digits)`,
				`backend.pool_size: must be between 1 and 10000, or auto, got -1`,
				`backend.health_interval: must be greater than 0, got 0s`,
				`backend.tls.mode: must be disabled, preferred or required, got "x"`,
				`log.level: must be debug, info, warn or error, got "loud"`,
				`testdata/bad.yaml: invalid configuration (7 problems)`,
			},
		},
		{
			name:     "check-config unknown key",
			args:     []string{"check-config", "--config", "testdata/unknown_key.yaml"},
			wantCode: 1,
			wantStderr: []string{
				"backend.pool_sise: unknown key (did you mean backend.pool_size?)",
				"lsiten: unknown key (did you mean listen?)",
				"users[0].pasword: unknown key (did you mean users[0].password?)",
				"testdata/unknown_key.yaml: invalid configuration (3 problems)",
			},
		},
		{
			name:     "check-config syntax error",
			args:     []string{"check-config", "--config", "testdata/syntax.yaml"},
			wantCode: 1,
			wantStderr: []string{
				"testdata/syntax.yaml: yaml: line 6: mapping values are not allowed in this context",
				"testdata/syntax.yaml: invalid configuration (1 problem)",
			},
		},
		{
			name:     "serve refuses an invalid config",
			args:     []string{"serve", "--config", "testdata/no_users.yaml"},
			wantCode: 1,
			wantStderr: []string{
				"users: at least one user is required",
				"testdata/no_users.yaml: invalid configuration (1 problem)",
			},
		},
		{
			name:       "missing --config is a usage error",
			args:       []string{"check-config"},
			wantCode:   2,
			wantStderr: []string{`tpproxy: required flag(s) "config" not set`, "Run 'tpproxy --help' for usage."},
		},
		{
			name:       "unknown command is a usage error",
			args:       []string{"frobnicate"},
			wantCode:   2,
			wantStderr: []string{`tpproxy: unknown command "frobnicate" for "tpproxy"`, "Run 'tpproxy --help' for usage."},
		},
		{
			// Override flags are strings parsed as the file's values are
			// (--pool-size=auto), so a bad one is a configuration problem
			// that names the flag.
			name:     "bad flag value is a configuration problem",
			args:     []string{"serve", "--config", "testdata/good.yaml", "--pool-size", "many"},
			wantCode: 1,
			wantStderr: []string{
				`backend.pool_size: cannot parse "many" (want an integer) (set by --pool-size)`,
				"testdata/good.yaml: invalid configuration (1 problem)",
			},
		},
		{
			name:       "stray argument is a usage error",
			args:       []string{"check-config", "--config", "testdata/good.yaml", "extra"},
			wantCode:   2,
			wantStderr: []string{`tpproxy: unknown command "extra" for "tpproxy check-config"`, "Run 'tpproxy --help' for usage."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.env, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, stdout, stderr)
			}
			if got := lines(stdout); !slices.Equal(got, tt.wantStdout) {
				t.Errorf("stdout\n got: %q\nwant: %q", got, tt.wantStdout)
			}
			if got := lines(stderr); !slices.Equal(got, tt.wantStderr) {
				t.Errorf("stderr\n got: %q\nwant: %q", got, tt.wantStderr)
			}
		})
	}
}

func TestHelpDocumentsEnvironment(t *testing.T) {
	code, stdout, _ := runCLI(t, nil, "serve", "--help")
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	for _, want := range []string{"TPPROXY_BACKEND_POOL_SIZE", "except the users list", "--backend-addr", "--pool-size"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("serve --help does not mention %q:\n%s", want, stdout)
		}
	}
}

func TestVersion(t *testing.T) {
	format := regexp.MustCompile(`^tpproxy \S+ \(commit \S+, go\S+\)\n$`)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, stdout, stderr := runCLI(t, nil, args...)
		if code != 0 || stderr != "" || !format.MatchString(stdout) {
			t.Errorf("%v: code %d stdout %q stderr %q", args, code, stdout, stderr)
		}
	}

	noInfo := func() (*debug.BuildInfo, bool) { return nil, false }
	vcs := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{
			Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "0123abcd"},
				{Key: "vcs.modified", Value: "true"},
			},
		}, true
	}
	installed := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}}, true
	}
	gov := runtime.Version()
	tests := []struct {
		name string
		b    buildInfo
		want string
	}{
		{"ldflags", buildInfo{"v1.2.3", "abc123", vcs}, "tpproxy v1.2.3 (commit abc123, " + gov + ")"},
		{"defaults", buildInfo{"dev", "unknown", noInfo}, "tpproxy dev (commit unknown, " + gov + ")"},
		{"vcs fallback", buildInfo{"dev", "unknown", vcs}, "tpproxy dev (commit 0123abcd-dirty, " + gov + ")"},
		{"go install version", buildInfo{"dev", "unknown", installed}, "tpproxy v0.3.0 (commit unknown, " + gov + ")"},
	}
	for _, tt := range tests {
		if got := versionLine(tt.b); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestNewLogger(t *testing.T) {
	var buf bytes.Buffer
	log := newLeveledLogger(config.Log{Level: "warn", Format: "json"}, new(slog.LevelVar), &buf)
	log.Info("hidden")
	log.Warn("shown", "k", 1)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON record: %q: %v", buf.String(), err)
	}
	if rec["msg"] != "shown" || rec["level"] != "WARN" {
		t.Errorf("record %v", rec)
	}

	buf.Reset()
	log = newLeveledLogger(config.Log{Level: "debug", Format: "text"}, new(slog.LevelVar), &buf)
	log.Debug("dbg")
	if !strings.Contains(buf.String(), "level=DEBUG msg=dbg") {
		t.Errorf("text debug record: %q", buf.String())
	}
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
