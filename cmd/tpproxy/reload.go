package main

import (
	"crypto/sha256"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/tpproxy/tpproxy/internal/autosize"
	"github.com/tpproxy/tpproxy/internal/config"
	"github.com/tpproxy/tpproxy/internal/gctune"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// configChange is what a reload found different, by key.
type configChange struct {
	dynamic, static []string
}

// diffConfig lists the keys whose values differ between old and new, as
// dynamic (a reload applies them) or static (they need a restart), as the
// settings table says; a key the table does not list is static.
func diffConfig(old, new *config.Config) configChange {
	var ch configChange
	diffValue("", reflect.ValueOf(*old), reflect.ValueOf(*new), func(key string) {
		if s, ok := config.Lookup(key); ok && s.Dynamic {
			ch.dynamic = append(ch.dynamic, key)
		} else {
			ch.static = append(ch.static, key)
		}
	})
	return ch
}

func diffValue(prefix string, a, b reflect.Value, changed func(key string)) {
	for _, f := range fileFields(a.Type()) {
		key := prefix + fileKey(f)
		av, bv := a.FieldByIndex(f.Index), b.FieldByIndex(f.Index)
		if f.Type.Kind() == reflect.Struct {
			diffValue(key+".", av, bv, changed)
			continue
		}
		if !reflect.DeepEqual(av.Interface(), bv.Interface()) {
			changed(key)
		}
	}
}

// reloader re-reads the configuration file on SIGHUP or when it changes and
// applies what can change while running.
type reloader struct {
	path  string
	flags *pflag.FlagSet
	env   []string
	log   *slog.Logger
	level *slog.LevelVar

	front *proxy.Server
	sched *scheduler.Scheduler
	pool  *pool.Pool
	sizer *autosize.Sizer // nil unless backend.pool_size is auto

	// shutdownTimeout is the shutdown_timeout in force (nanoseconds).
	shutdownTimeout atomic.Int64
	// gc sets GOGC from gc_headroom (runServe runs it).
	gc *gctune.Tuner

	// mu serialises reloads and guards cur and hash.
	mu   sync.Mutex
	cur  *config.Config // the file's configuration as last applied
	hash [sha256.Size]byte

	reloads         *prometheus.CounterVec
	restartRequired prometheus.Gauge
	lastSuccess     prometheus.Gauge
}

func newReloader(path string, flags *pflag.FlagSet, env []string, cfg *config.Config, log *slog.Logger, level *slog.LevelVar) *reloader {
	r := &reloader{
		path: path, flags: flags, env: env, log: log, level: level, cur: cfg,
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tpproxy_config_reloads_total",
			Help: "Configuration reloads (SIGHUP or file change), by result (success, failure).",
		}, []string{"result"}),
		restartRequired: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tpproxy_config_restart_required",
			Help: "1 when a reloaded file changed settings that only apply after a restart.",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tpproxy_config_last_reload_success_timestamp_seconds",
			Help: "When the configuration was last loaded successfully (start or reload).",
		}),
	}
	r.reloads.WithLabelValues("success")
	r.reloads.WithLabelValues("failure")
	r.lastSuccess.SetToCurrentTime()
	r.shutdownTimeout.Store(int64(cfg.ShutdownTimeout))
	r.gc = gctune.New(int64(cfg.GCHeadroom))
	if data, err := os.ReadFile(path); err == nil {
		r.hash = sha256.Sum256(data)
	}
	return r
}

// collectors are the reload metrics, for the HTTP endpoint's registry.
func (r *reloader) collectors() []prometheus.Collector {
	return []prometheus.Collector{r.reloads, r.restartRequired, r.lastSuccess, r.gc.Collector()}
}

// attach gives the reloader the components it reconfigures. Until then
// (the proxy is still starting) a reload is refused.
func (r *reloader) attach(front *proxy.Server, sched *scheduler.Scheduler, p *pool.Pool, z *autosize.Sizer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.front, r.sched, r.pool, r.sizer = front, sched, p, z
}

// errAutoSwitch refuses a reload that turns backend.pool_size from auto to
// a number or back: the sizer is started with the process.
var errAutoSwitch = errors.New("backend.pool_size: switching between auto and a fixed size needs a restart")

// errStarting refuses a reload that arrives before the proxy is up.
var errStarting = errors.New("tpproxy is still starting; reload again once it listens")

// reload reads the file again and applies it. why names the trigger, for
// the log. onlyIfChanged skips a file whose content is what was last
// loaded (file watch events also come for unrelated writes).
func (r *reloader) reload(why string, onlyIfChanged bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.front == nil {
		r.log.Warn("config reload ignored", "trigger", why, "err", errStarting)
		return errStarting
	}
	data, err := os.ReadFile(r.path)
	if err == nil && onlyIfChanged && sha256.Sum256(data) == r.hash {
		return nil
	}
	next, err := loadConfig(r.path, r.flags, r.env)
	if err != nil {
		r.reloads.WithLabelValues("failure").Inc()
		problems := config.Errors(err)
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.Error()
		}
		r.log.Error("config reload rejected; the running configuration is kept",
			"trigger", why, "file", r.path, "problems", strings.Join(msgs, "; "))
		return err
	}
	change := diffConfig(r.cur, next)
	if err := r.apply(next, change.dynamic); err != nil {
		r.reloads.WithLabelValues("failure").Inc()
		r.log.Error("config reload rejected; the running configuration is kept",
			"trigger", why, "file", r.path, "err", err)
		return err
	}
	r.hash = sha256.Sum256(data)
	r.reloads.WithLabelValues("success").Inc()
	r.lastSuccess.SetToCurrentTime()
	// Static keys keep their running values, so cur keeps them too: a
	// later reload still reports them until the process restarts.
	for _, key := range change.static {
		copyKey(next, r.cur, key)
	}
	r.cur = next
	r.restartRequired.Set(0)
	if len(change.static) > 0 {
		r.restartRequired.Set(1)
		r.log.Warn("config reloaded; some changes need a restart", "trigger", why,
			"applied", strings.Join(change.dynamic, ","), "restart_required", strings.Join(change.static, ","))
		return nil
	}
	r.log.Info("config reloaded", "trigger", why, "applied", strings.Join(change.dynamic, ","))
	return nil
}

// copyKey sets key in dst to its value in src.
func copyKey(dst, src *config.Config, key string) {
	dv, sv := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for _, part := range strings.Split(key, ".") {
		f, ok := fieldByKey(dv.Type(), part)
		if !ok {
			return
		}
		dv, sv = dv.FieldByIndex(f.Index), sv.FieldByIndex(f.Index)
	}
	dv.Set(sv)
}

// apply makes the dynamic changes, by the component the settings table
// says each key applies to. The parts that can refuse (scheduler and pool
// validation) go first, so a refusal leaves everything as it was.
func (r *reloader) apply(next *config.Config, keys []string) error {
	var sched []config.Setting
	poolChanged, usersChanged := false, false
	for _, k := range keys {
		s, _ := config.Lookup(k) // diffConfig: every dynamic key is in the table
		switch {
		case s.Kind == config.KindList:
			usersChanged = true
		case s.Applies == config.Scheduler:
			sched = append(sched, s)
		case s.Applies == config.Pool:
			poolChanged = true
		}
	}
	if poolChanged && (next.Backend.Size == 0) != (r.sizer != nil) {
		return errAutoSwitch
	}
	if len(sched) > 0 {
		want, err := schedulerConfig(&next.ThreadPool)
		if err != nil {
			return err
		}
		// Only the keys the file changed: a SET GLOBAL made on the admin
		// port since keeps its value unless the file says otherwise.
		err = r.sched.Update(func(c *scheduler.Config) error {
			for _, s := range sched {
				s.Set(c, s.Get(&want))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if poolChanged {
		d := next.Backend.Config.Dynamic()
		if r.sizer != nil {
			// The sizer owns the size: the new bounds clamp it.
			d.Size = min(max(r.pool.Size(), next.Backend.PoolSizeMin), next.Backend.PoolSizeMax)
		}
		if err := r.pool.Reconfigure(d); err != nil {
			return err
		}
		if r.sizer != nil {
			r.sizer.SetBounds(next.Backend.PoolSizeMin, next.Backend.PoolSizeMax, time.Now())
		}
	}
	if usersChanged {
		users, err := proxyUsers(next)
		if err != nil {
			return err
		}
		r.front.SetUsers(users)
	}
	r.level.Set(slogLevel(next.Log.Level))
	r.front.SetSlowQueue(next.Log.SlowQueue)
	r.front.SetMaxClientConnections(next.MaxClientConnections)
	r.front.SetMaxConnectErrors(next.MaxConnectErrors)
	r.front.SetMaxBufferMemory(int64(next.MaxBufferMemory))
	r.front.SetPinLimits(next.MaxPinnedConnections, next.MaxPinnedPerAccount, next.MaxStickyPinned)
	r.shutdownTimeout.Store(int64(next.ShutdownTimeout))
	r.gc.SetHeadroom(int64(next.GCHeadroom))
	return nil
}

// watch reloads on every signal from hup and, when watchFile is set, when
// the file changes on disk, until done is closed.
//
// The directory is watched rather than the file: editors and Kubernetes
// config maps replace the file (rename, symlink swap), which ends a watch
// on the file itself. Events come in bursts, so a reload waits until the
// directory has been quiet for settle; it is skipped when the content is
// unchanged.
func (r *reloader) watch(hup <-chan os.Signal, watchFile bool, done <-chan struct{}) {
	var events <-chan fsnotify.Event
	var errs <-chan error
	if watchFile {
		w, err := fsnotify.NewWatcher()
		if err == nil {
			err = w.Add(filepath.Dir(r.path))
		}
		if err != nil {
			r.log.Warn("cannot watch the config file; reload with SIGHUP", "file", r.path, "err", err)
		} else {
			defer w.Close()
			events, errs = w.Events, w.Errors
		}
	}
	const settle = 200 * time.Millisecond
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-done:
			timer.Stop()
			return
		case <-hup:
			_ = r.reload("SIGHUP", false)
		case ev := <-events:
			if relevant(ev, r.path) {
				timer.Reset(settle)
			}
		case err := <-errs:
			r.log.Warn("config file watch error", "err", err)
		case <-timer.C:
			_ = r.reload("file change", true)
		}
	}
}

// relevant reports whether a directory event may have changed the file:
// one on the file itself, or a Kubernetes-style symlink swap next to it.
func relevant(ev fsnotify.Event, path string) bool {
	if ev.Has(fsnotify.Chmod) && !ev.Has(fsnotify.Write) {
		return false
	}
	name := filepath.Base(ev.Name)
	return filepath.Clean(ev.Name) == filepath.Clean(path) || strings.HasPrefix(name, "..")
}
