package main

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/fsnotify/fsnotify"

	"github.com/tpproxy/tpproxy/internal/config"
	"github.com/tpproxy/tpproxy/proxy"
)

func TestDiffConfig(t *testing.T) {
	old := config.Default()
	old.Users = []config.User{{User: "app", Password: "secret"}}
	next := old
	next.Users = []config.User{{User: "app", Password: "other"}}
	next.ThreadPool.Size = 8
	next.Backend.Size = 32
	next.Backend.Addr = "db:3306"
	next.Listen = "0.0.0.0:6033"
	next.Log.Level = "debug"
	next.Log.Format = "json"
	next.ThreadPool.ExtraPort = 7000
	ch := diffConfig(&old, &next)
	wantDynamic := []string{"users", "backend.pool_size", "thread_pool.size", "log.level"}
	wantStatic := []string{"listen", "backend.addr", "thread_pool.extra_port", "log.format"}
	slices.Sort(ch.dynamic)
	slices.Sort(ch.static)
	slices.Sort(wantDynamic)
	slices.Sort(wantStatic)
	if !slices.Equal(ch.dynamic, wantDynamic) || !slices.Equal(ch.static, wantStatic) {
		t.Fatalf("diff = dynamic %v static %v, want %v %v", ch.dynamic, ch.static, wantDynamic, wantStatic)
	}
	if ch := diffConfig(&old, &old); len(ch.dynamic)+len(ch.static) != 0 {
		t.Fatalf("no change reported as %+v", ch)
	}
}

// TestDynamicKeysExist keeps the settings table in step with the schema: a
// renamed key must not silently become static.
func TestDynamicKeysExist(t *testing.T) {
	keys := leafKeys("", reflectConfigType())
	for _, s := range config.Settings() {
		if !slices.Contains(keys, s.Key) {
			kind := "static"
			if s.Dynamic {
				kind = "dynamic"
			}
			t.Errorf("%s key %s is not a configuration key", kind, s.Key)
		}
	}
}

// TestDiffConfigFollowsTable changes each setting of the table alone: a
// reload reports its key, as dynamic exactly when the table says so.
func TestDiffConfigFollowsTable(t *testing.T) {
	old := config.Default()
	old.Users = []config.User{{User: "app", Password: "secret"}}
	for _, s := range config.Settings() {
		next := old
		if s.Kind == config.KindList {
			next.Users = []config.User{{User: "other", Password: "x"}}
		} else {
			v := s.Default() + 1
			if s.Kind == config.KindEnum {
				v %= int64(len(s.Words))
			}
			s.Set(s.Of(&next), v)
		}
		ch := diffConfig(&old, &next)
		want := configChange{static: []string{s.Key}}
		if s.Dynamic {
			want = configChange{dynamic: []string{s.Key}}
		}
		if !reflect.DeepEqual(ch, want) {
			t.Errorf("%s changed: diff %+v, want %+v", s.Key, ch, want)
		}
	}
}

func TestCopyKey(t *testing.T) {
	a, b := config.Default(), config.Default()
	b.Backend.Addr = "other:3306"
	b.Listen = "0.0.0.0:1"
	copyKey(&a, &b, "backend.addr")
	if a.Backend.Addr != "other:3306" || a.Listen == b.Listen {
		t.Fatalf("copyKey copied the wrong fields: %+v", a)
	}
}

func TestRelevantEvents(t *testing.T) {
	path := "/etc/tpproxy/tpproxy.yaml"
	cases := []struct {
		ev   fsnotify.Event
		want bool
	}{
		{fsnotify.Event{Name: path, Op: fsnotify.Write}, true},
		{fsnotify.Event{Name: path, Op: fsnotify.Create}, true},
		{fsnotify.Event{Name: path, Op: fsnotify.Chmod}, false},
		{fsnotify.Event{Name: "/etc/tpproxy/other.yaml", Op: fsnotify.Write}, false},
		{fsnotify.Event{Name: "/etc/tpproxy/..data", Op: fsnotify.Create}, true}, // config map symlink swap
	}
	for _, c := range cases {
		if got := relevant(c.ev, path); got != c.want {
			t.Errorf("relevant(%v) = %v, want %v", c.ev, got, c.want)
		}
	}
}

// TestReloadRejectsBrokenFileWhole needs no running proxy: a file that
// does not load leaves the reloader's configuration untouched and counts
// a failure.
func TestReloadRejectsBrokenFileWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tpproxy.yaml")
	good := "users:\n  - user: app\n    password: secret\nbackend:\n  password: x\n"
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rl := newReloader(path, nil, nil, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), new(slog.LevelVar))
	// A SIGHUP while the proxy is still starting is refused, not a crash.
	if err := rl.reload("test", false); !errors.Is(err, errStarting) {
		t.Fatalf("reload before attach: %v", err)
	}
	rl.attach(&proxy.Server{}, nil, nil, nil) // never reached: the file is rejected first
	if err := os.WriteFile(path, []byte(good+"thread_pool:\n  size: -1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rl.reload("test", false); err == nil {
		t.Fatal("a file with thread_pool.size -1 was accepted")
	}
	if rl.cur != cfg || rl.cur.ThreadPool.Size != 0 {
		t.Fatal("the rejected file replaced the running configuration")
	}
	// Unchanged content is skipped when only changes count.
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rl.reload("test", true); err != nil {
		t.Fatalf("unchanged file: %v", err)
	}
}

func reflectConfigType() reflect.Type { return reflect.TypeFor[config.Config]() }
