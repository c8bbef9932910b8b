package config_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/config"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/scheduler"
)

// roundTrips reports whether v survives being stored in the setting's
// field (a uint32 cannot hold -1).
func roundTrips(s config.Setting, v int64) bool {
	c := valid()
	s.Set(s.Of(&c), v)
	return s.Get(s.Of(&c)) == v
}

// inBounds is a value s allows other than its default.
func inBounds(t *testing.T, s config.Setting) int64 {
	t.Helper()
	d := s.Default()
	candidates := []int64{s.Min, s.Max, s.Min + 1, s.Min + int64(time.Second)}
	if s.Kind == config.KindEnum {
		candidates = []int64{0, 1}
	}
	for _, v := range candidates {
		if v != d && s.Allows(v) && roundTrips(s, v) {
			return v
		}
	}
	t.Fatalf("%s: no value in bounds other than the default %d", s.Key, d)
	return 0
}

// outOfBounds are values just outside the bounds of s that its field can
// hold.
func outOfBounds(s config.Setting) []int64 {
	var vs []int64
	switch s.Kind {
	case config.KindEnum:
		vs = []int64{-1, int64(len(s.Words))}
	default:
		below := s.Min - 1
		if below == 0 && s.Zero != "" {
			below = -1
		}
		vs = append(vs, below)
		if s.Max != 0 {
			vs = append(vs, s.Max+1)
		}
	}
	var out []int64
	for _, v := range vs {
		if !s.Allows(v) && roundTrips(s, v) {
			out = append(out, v)
		}
	}
	return out
}

// fieldOf finds the field of a dotted file key in c by its mapstructure
// tags, as the loader does, following ",squash" embeds.
func fieldOf(c *config.Config, key string) (reflect.Value, bool) {
	v := reflect.ValueOf(c).Elem()
	for _, part := range strings.Split(key, ".") {
		found := false
		for _, f := range reflect.VisibleFields(v.Type()) {
			name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
			if !f.Anonymous && name == part {
				v, found = v.FieldByIndex(f.Index), true
				break
			}
		}
		if !found {
			return reflect.Value{}, false
		}
	}
	return v, true
}

func TestSettingsTable(t *testing.T) {
	keys, names := map[string]bool{}, map[string]bool{}
	for _, s := range config.Settings() {
		t.Run(s.Key, func(t *testing.T) {
			if keys[s.Key] || names[s.Name] {
				t.Fatalf("key %s or name %s twice in the table", s.Key, s.Name)
			}
			keys[s.Key], names[s.Name] = true, true
			if s.Name != strings.ToLower(s.Name) || strings.Contains(s.Name, ".") {
				t.Errorf("name %q: want a lower-case variable name", s.Name)
			}
			if got, ok := config.Lookup(s.Key); !ok || got.Name != s.Name {
				t.Errorf("Lookup(%s) = %v, %v", s.Key, got.Name, ok)
			}
			d := config.Default()
			field, ok := fieldOf(&d, s.Key)
			if !ok {
				t.Fatalf("%s is not a key of config.Config", s.Key)
			}
			if s.Kind == config.KindList {
				if s.Of(&d) != nil || field.Kind() != reflect.Slice {
					t.Errorf("a list setting has an accessor, or its field is a %s", field.Kind())
				}
				return
			}
			if field.Type() != s.FieldType() {
				t.Errorf("field type %s, table says %s", field.Type(), s.FieldType())
			}

			// The default is within bounds, and is Default()'s value.
			if !s.Allows(s.Default()) {
				t.Errorf("default %s is out of bounds (%s)", s.Format(s.Default()), s.Want())
			}

			// The accessor reaches the field the key names.
			c := valid()
			field, _ = fieldOf(&c, s.Key)
			before := fmt.Sprint(field.Interface())
			v := inBounds(t, s)
			s.Set(s.Of(&c), v)
			if fmt.Sprint(field.Interface()) == before || s.Get(s.Of(&c)) != v {
				t.Errorf("Set(%d) did not reach the field of %s (still %s)", v, s.Key, before)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("in-bounds value %s refused: %v", s.Format(v), err)
			}

			// Out of bounds: one problem, naming the key and saying what is allowed.
			bad := outOfBounds(s)
			if len(bad) == 0 && s.Kind != config.KindInt {
				t.Errorf("no out-of-bounds value to test")
			}
			for _, v := range bad {
				c := valid()
				s.Set(s.Of(&c), v)
				errs := config.Errors(c.Validate())
				if len(errs) != 1 {
					t.Errorf("value %d: %d problems %q, want one", v, len(errs), errs)
					continue
				}
				var fe *config.FieldError
				var be *config.BoundsError
				if !errors.As(errs[0], &fe) || fe.Key != s.Key || !errors.As(errs[0], &be) {
					t.Errorf("value %d: %v is not a FieldError for %s around a BoundsError", v, errs[0], s.Key)
					continue
				}
				prefix := s.Key + ": must be " + s.Want() + ", got "
				if msg := errs[0].Error(); !strings.HasPrefix(msg, prefix) || len(msg) == len(prefix) {
					t.Errorf("value %d: message %q, want %q and the value", v, msg, prefix)
				}
			}
		})
	}
}

// TestSettingsAccess checks the columns against each other: what the
// admin port may set is a dynamic setting of the scheduler, held in
// scheduler.Config; what it shows lives in its component's own struct.
func TestSettingsAccess(t *testing.T) {
	for _, s := range config.Settings() {
		d := config.Default()
		owner := s.Of(&d)
		switch s.Applies {
		case config.Scheduler:
			if _, ok := owner.(*scheduler.Config); !ok {
				t.Errorf("%s applies to the scheduler but lives in %T", s.Key, owner)
			}
			if s.Dynamic != (s.Admin == config.Settable) {
				t.Errorf("%s: dynamic %v but admin access %d: SET GLOBAL changes exactly the dynamic scheduler settings",
					s.Key, s.Dynamic, s.Admin)
			}
		case config.Pool:
			if _, ok := owner.(*pool.Config); !ok && s.Admin != config.Hidden {
				t.Errorf("%s is an admin variable of the pool but lives in %T", s.Key, owner)
			}
		}
		if s.Admin == config.Settable && (s.Applies != config.Scheduler || !s.Dynamic) {
			t.Errorf("%s is settable but applies to %s, dynamic %v", s.Key, s.Applies, s.Dynamic)
		}
		if s.Admin != config.Hidden && !strings.HasPrefix(s.Name, "thread_pool_") && !strings.HasPrefix(s.Name, "backend_") {
			t.Errorf("admin variable %s: want a thread_pool_ or backend_ name", s.Name)
		}
		if s.Kind == config.KindDuration && s.Admin != config.Hidden && s.Unit != time.Millisecond && s.Unit != time.Second {
			t.Errorf("%s: an admin duration needs Unit ms or s, has %s", s.Key, s.Unit)
		}
	}
}

// TestSchedulerValidateAgrees keeps scheduler.Config.Validate, the
// scheduler's guard for callers that build a Config in code, in step with
// the table's bounds. (The scheduler fills in a zero with its default, so
// a zero below the bounds is tested as -1.)
func TestSchedulerValidateAgrees(t *testing.T) {
	for _, s := range config.Settings() {
		if s.Applies != config.Scheduler {
			continue
		}
		check := func(v int64) error {
			c := scheduler.DefaultConfig()
			s.Set(&c, v)
			return c.Validate()
		}
		lo, hi := s.Min, s.Max
		if s.Kind == config.KindEnum {
			lo, hi = 0, int64(len(s.Words)-1)
		}
		for _, v := range []int64{lo, hi} {
			if v == 0 && hi == 0 {
				continue // no upper bound
			}
			if err := check(v); err != nil {
				t.Errorf("%s = %s is within the table's bounds, scheduler says %v", s.Key, s.Format(v), err)
			}
		}
		for _, v := range outOfBounds(s) {
			if v == 0 {
				v = -1
			}
			if err := check(v); !errors.Is(err, scheduler.ErrBadConfig) {
				t.Errorf("%s = %s is out of the table's bounds, scheduler says %v", s.Key, s.Format(v), err)
			}
		}
	}
}

// TestPoolDynamicAgrees keeps pool.Dynamic, what Reconfigure changes on a
// reload, in step with the table's dynamic pool settings.
func TestPoolDynamicAgrees(t *testing.T) {
	for _, s := range config.Settings() {
		d := config.Default()
		pc, ok := s.Of(&d).(*pool.Config)
		if !ok {
			continue
		}
		before := pc.Dynamic()
		s.Set(pc, inBounds(t, s))
		if changed := pc.Dynamic() != before; changed != s.Dynamic {
			t.Errorf("%s: dynamic %v in the table, but pool.Dynamic changes: %v", s.Key, s.Dynamic, changed)
		}
	}
}

func TestSettingsWant(t *testing.T) {
	for key, want := range map[string]string{
		"thread_pool.size":              "0 (number of CPUs) to 100000",
		"thread_pool.stall_limit":       "at least 1ms",
		"thread_pool.oversubscribe":     "0 to 1000",
		"thread_pool.queue_timeout":     "greater than 0",
		"thread_pool.prio_kickup_timer": "0 or greater",
		"thread_pool.high_prio_mode":    "transactions, statements or none",
		"backend.max_lifetime":          "0 (unlimited) or greater",
		"max_client_connections":        "at least 1",
	} {
		s, ok := config.Lookup(key)
		if !ok || s.Want() != want {
			t.Errorf("%s: Want() = %q, want %q", key, s.Want(), want)
		}
	}
	s, _ := config.Lookup("thread_pool.algorithm")
	if n, err := s.ParseWord("enterprise"); err != nil || n != int64(scheduler.Enterprise) {
		t.Errorf("ParseWord(enterprise) = %d, %v", n, err)
	}
	if _, err := s.ParseWord("fast"); err == nil || err.Error() != `must be generic or enterprise, got "fast"` {
		t.Errorf("ParseWord(fast): %v", err)
	}
	if _, ok := config.Lookup("listen"); ok {
		t.Error("listen is in the table: addresses are checked by Validate itself")
	}
}
