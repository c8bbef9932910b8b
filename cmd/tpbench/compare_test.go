package main

import (
	"strings"
	"testing"
)

// TestCompareBadInput: bad targets, steps, thresholds and table settings
// are one clear message and an error; an unreachable server is named.
func TestCompareBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compare"}, "at least one --target"},
		{[]string{"compare", "--target", "root@tcp(127.0.0.1:1)/x"}, "want NAME=DSN"},
		{[]string{"compare", "--target", "a=root@tcp(127.0.0.1:1)/x", "--threads", "8,zero"}, "positive integers"},
		{[]string{"compare", "--target", "a=root@tcp(127.0.0.1:1)/x", "--threads", "8", "--step", "8"}, "--max-threads"},
		{[]string{"compare", "--target", "a=root@tcp(127.0.0.1:1)/x", "--stop-success", "120"}, "--stop-success"},
		{[]string{"compare", "--target", "a=x", "--target", "a=y"}, "unique"},
		{[]string{"compare", "--target", "a=root@tcp(127.0.0.1:1)/x", "--workload", "nope"}, "nope"},
		{[]string{"compare", "--target", "a=root@tcp(127.0.0.1:1)/x", "--ps-mode", "sometimes"}, "--ps-mode"},
		{[]string{"compare", "--target", "a=root@tcp(127.0.0.1:1)/x", "--relay-pid", "4242"}, "want NAME=PID"},
		{[]string{"compare", "--target", "a=root@tcp(127.0.0.1:1)/x", "--relay-pid", "a=-1"}, "not a process id"},
		{[]string{"compare", "--target", "a=root@tcp(127.0.0.1:1)/x", "--relay-pid", "b=4242"}, "--relay-pid b=4242: want the name of a --target"},
		{[]string{"prepare"}, "--dsn is required"},
		{[]string{"prepare", "--dsn", "root@tcp(127.0.0.1:1)/x", "--table-size", "0"}, "--table-size"},
		{[]string{"cleanup", "--dsn", "root@tcp(127.0.0.1:1)/x", "--tables", "0"}, "--tables"},
		{[]string{"idle"}, "--dsn is required"},
		{[]string{"idle", "--dsn", "root@tcp(127.0.0.1:1)/x", "--sessions", "0"}, "want at least 1"},
		{[]string{"idle", "--dsn", "root@tcp(127.0.0.1:1)/x?timeout=1s", "--sessions", "2"}, "connect"},
		{[]string{"prepare", "--dsn", "root@tcp(127.0.0.1:1)/x?timeout=1s", "--tables", "1"}, "connect"},
	} {
		out, err := tpbench(t.Context(), c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want it to mention %q\n%s", c.args, err, c.want, out)
		}
	}
}

func TestParseRelayPIDs(t *testing.T) {
	got, err := parseRelayPIDs([]string{"proxy=42", "haproxy=auto", "other=7", "other=auto"})
	if err != nil || len(got) != 1 || got["proxy"] != 42 {
		t.Errorf("parseRelayPIDs = %v, %v; want proxy=42 only (auto is the port lookup)", got, err)
	}
	if got, err := parseRelayPIDs(nil); err != nil || got != nil {
		t.Errorf("no flags: %v, %v", got, err)
	}
}
