package admin

import (
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tpproxy/tpproxy/internal/config"
	"github.com/tpproxy/tpproxy/scheduler"
)

// TestSetGlobalFollowsTable drives SET GLOBAL and SELECT @@ from every row
// of the settings table, on a scheduler alone: settable rows take every
// value within their bounds and refuse the values just outside with
// ER_WRONG_VALUE_FOR_VAR naming the variable; read-only rows refuse SET
// with ER_INCORRECT_GLOBAL_LOCAL_VAR; hidden rows are no variables.
func TestSetGlobalFollowsTable(t *testing.T) {
	sched, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	a := &Server{log: slog.New(slog.DiscardHandler), sched: sched}
	exec := func(q string) (*mysql.Result, error) {
		st, err := parse(q)
		if err != nil {
			return nil, err
		}
		return a.run(t.Context(), &handler{a: a, id: 1, host: "127.0.0.1"}, st)
	}
	wantCode := func(q string, code uint16, msg string) {
		t.Helper()
		before := sched.Config()
		_, err := exec(q)
		if err == nil {
			t.Errorf("%s: accepted", q)
			return
		}
		if me := toMySQL(err); me.Code != code || me.Message != msg {
			t.Errorf("%s: ERR %d %q, want %d %q", q, me.Code, me.Message, code, msg)
		}
		if after := sched.Config(); !reflect.DeepEqual(configWithoutClock(after), configWithoutClock(before)) {
			t.Errorf("%s: refused but changed the config to %+v", q, after)
		}
	}

	for _, s := range config.Settings() {
		switch s.Admin {
		case config.Hidden:
			wantCode("SET GLOBAL "+s.Name+" = 1", mysql.ER_UNKNOWN_SYSTEM_VARIABLE,
				fmt.Sprintf("Unknown system variable '%s'", s.Name))
			continue
		case config.ReadOnly:
			wantCode("SET GLOBAL "+s.Name+" = 1", mysql.ER_INCORRECT_GLOBAL_LOCAL_VAR,
				fmt.Sprintf("Variable '%s' is a read only variable", s.Name))
			continue
		}

		lo, hi := bounds(s)
		literal := func(n int64) string {
			if s.Kind == config.KindEnum && n >= 0 && n < int64(len(s.Words)) {
				return "'" + s.Words[n] + "'"
			}
			return strconv.FormatInt(n, 10)
		}
		for _, n := range []int64{lo, hi} {
			q := fmt.Sprintf("SET GLOBAL %s = %s", s.Name, literal(n))
			if _, err := exec(q); err != nil {
				t.Errorf("%s: %v", q, err)
				continue
			}
			want := n
			if s.Kind == config.KindDuration {
				want *= int64(s.Unit)
			}
			cfg := sched.Config()
			if got := s.Get(&cfg); got != want {
				t.Errorf("%s: the scheduler has %d, want %d", q, got, want)
			}
			if v := selectOne(t, exec, s.Name); v != fmt.Sprint(shown(s, want)) {
				t.Errorf("SELECT @@%s after %s: %q", s.Name, q, v)
			}
		}
		bad := []string{strconv.FormatInt(lo-1, 10), strconv.FormatInt(hi+1, 10)}
		if s.Kind == config.KindEnum {
			bad = append(bad, "'nosuch'")
		}
		for _, v := range bad {
			shownValue := v
			if v[0] == '\'' {
				shownValue = v[1 : len(v)-1]
			}
			wantCode(fmt.Sprintf("SET GLOBAL %s = %s", s.Name, v), mysql.ER_WRONG_VALUE_FOR_VAR,
				fmt.Sprintf("Variable '%s' can't be set to the value of '%s'", s.Name, shownValue))
		}

		// DEFAULT is the file's default, as the scheduler resolves it.
		if _, err := exec("SET GLOBAL " + s.Name + " = DEFAULT"); err != nil {
			t.Errorf("SET GLOBAL %s = DEFAULT: %v", s.Name, err)
		}
		d := scheduler.DefaultConfig()
		if cfg := sched.Config(); s.Get(&cfg) != s.Get(&d) {
			t.Errorf("%s after DEFAULT: %d, want %d", s.Name, s.Get(&cfg), s.Get(&d))
		}
	}
	if !reflect.DeepEqual(configWithoutClock(sched.Config()), configWithoutClock(scheduler.DefaultConfig())) {
		t.Errorf("after DEFAULT everywhere: %+v", sched.Config())
	}
}

// configWithoutClock is c as configOf shows a scheduler's config.
func configWithoutClock(c scheduler.Config) scheduler.Config {
	c.Now = nil
	return c
}

// selectOne runs SELECT @@name and returns the value as the client reads it.
func selectOne(t *testing.T, exec func(string) (*mysql.Result, error), name string) string {
	t.Helper()
	r, err := exec("SELECT @@" + name)
	if err != nil {
		t.Errorf("SELECT @@%s: %v", name, err)
		return ""
	}
	if len(r.RowDatas) != 1 {
		t.Errorf("SELECT @@%s: %d rows", name, len(r.RowDatas))
		return ""
	}
	row, err := r.RowDatas[0].ParseText(r.Fields, nil)
	if err != nil || len(row) != 1 {
		t.Errorf("SELECT @@%s: %v", name, err)
		return ""
	}
	if row[0].Type == mysql.FieldValueTypeString {
		return string(row[0].AsString())
	}
	return row[0].String()
}
