package bench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/go-sql-driver/mysql"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err   error
		class errClass
		key   string
	}{
		{&mysql.MySQLError{Number: 1213, Message: "Deadlock found"}, classRetry, "1213"},
		{fmt.Errorf("tx: %w", &mysql.MySQLError{Number: 1205}), classRetry, "1205"},
		{&mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, classServer, "1062"},
		{&mysql.MySQLError{Number: 9001}, classServer, "9001"},
		{driver.ErrBadConn, classConn, ErrKeyConn},
		{mysql.ErrInvalidConn, classConn, ErrKeyConn},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), classConn, ErrKeyConn},
		{sql.ErrConnDone, classConn, ErrKeyConn},
		{context.Canceled, classCanceled, ""},
		{fmt.Errorf("q: %w", context.DeadlineExceeded), classCanceled, ErrKeyTimeout},
	} {
		class, key := classify(tc.err)
		if class != tc.class || key != tc.key {
			t.Errorf("classify(%v) = %d %q, want %d %q", tc.err, class, key, tc.class, tc.key)
		}
		if got := ErrorKey(tc.err); got != tc.key {
			t.Errorf("ErrorKey(%v) = %q", tc.err, got)
		}
		if got := Retryable(tc.err); got != (tc.class == classRetry) {
			t.Errorf("Retryable(%v) = %v", tc.err, got)
		}
	}
	if ErrorName("1213") != "deadlock" || ErrorName(ErrKeyConn) == "" || ErrorName("4242") != "" {
		t.Error("ErrorName")
	}
	if _, err := NewWorkload("oltp_nope", Schema{Tables: 1, TableSize: 1}); !errors.Is(err, ErrUnknownWorkload) {
		t.Errorf("unknown workload: %v", err)
	}
	if _, err := NewWorkload("oltp_read_write", Schema{}); !errors.Is(err, ErrBadStep) {
		t.Errorf("empty schema: %v", err)
	}
}

func TestStepValidate(t *testing.T) {
	ok := Step{Target: Target{Name: "x", DSN: "u:p@tcp(127.0.0.1:1)/db"}, Workload: pointSelect(Schema{Tables: 1, TableSize: 1}), Threads: 1, Duration: 1}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*Step){
		"no DSN":          func(s *Step) { s.Target.DSN = "" },
		"no workload":     func(s *Step) { s.Workload = nil },
		"no threads":      func(s *Step) { s.Threads = 0 },
		"no duration":     func(s *Step) { s.Duration = 0 },
		"negative warmup": func(s *Step) { s.Warmup = -1 },
	} {
		s := ok
		mod(&s)
		if err := s.Validate(); !errors.Is(err, ErrBadStep) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDriverConfigForcesInterpolation(t *testing.T) {
	cfg, err := driverConfig("app:secret@tcp(127.0.0.1:3306)/sbtest?parseTime=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.InterpolateParams || !cfg.ParseTime || cfg.Timeout != dialTimeout {
		t.Errorf("config %+v", cfg)
	}
	cfg, err = driverConfig("app:secret@tcp(127.0.0.1:3306)/sbtest?interpolateParams=false&timeout=3s", nil)
	if err != nil || !cfg.InterpolateParams || cfg.Timeout.Seconds() != 3 {
		t.Errorf("config %+v, %v", cfg, err)
	}
	if _, err := driverConfig("not a dsn", nil); err == nil {
		t.Error("bad DSN accepted")
	}
}

// pointSelect is oltp_point_select on s, for tests that need a workload
// without a server.
func pointSelect(s Schema) Workload {
	return sysbenchWorkload{name: "oltp_point_select", schema: s, tx: sysbenchTx["oltp_point_select"]}
}
