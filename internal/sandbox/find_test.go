package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fakeServer writes an executable that prints a --version line.
func fakeServer(t *testing.T, name, versionLine string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+versionLine+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFindFlavor(t *testing.T) {
	mysql := fakeServer(t, "mysqld", "/usr/sbin/mysqld  Ver 8.4.3 for Linux on x86_64 (MySQL Community Server - GPL)")
	maria := fakeServer(t, "mariadbd", "/usr/sbin/mariadbd  Ver 10.11.14-MariaDB-0+deb12u2 for debian-linux-gnu on x86_64 (Debian 12)")
	for _, tc := range []struct {
		path string
		want Flavor
	}{{mysql, MySQL}, {maria, MariaDB}} {
		path, flavor, err := Find(tc.path)
		if err != nil || path != tc.path || flavor != tc.want {
			t.Errorf("Find(%s) = %s, %s, %v; want %s", tc.path, path, flavor, err, tc.want)
		}
	}

	t.Setenv(EnvBinary, mysql)
	if path, flavor, err := Find(""); err != nil || path != mysql || flavor != MySQL {
		t.Errorf("Find with $%s = %s, %s, %v", EnvBinary, path, flavor, err)
	}
	t.Setenv(EnvBinary, filepath.Join(t.TempDir(), "gone"))
	if _, _, err := Find(""); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find with a missing $%s: %v, want ErrNotFound", EnvBinary, err)
	}
	if _, _, err := Find(filepath.Join(t.TempDir(), "gone")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find of a missing path: %v, want ErrNotFound", err)
	}
}

func TestParseVersion(t *testing.T) {
	for s, want := range map[string]version{
		"10.11.14-MariaDB-0+deb12u2":       {10, 11, 14},
		"/usr/sbin/mysqld  Ver 8.0.36 for": {8, 0, 36},
		"8.4.0":                            {8, 4, 0},
		"no version":                       {},
	} {
		if got := parseVersion(s); got != want {
			t.Errorf("parseVersion(%q) = %v, want %v", s, got, want)
		}
	}
	if !(version{8, 4, 0}).atLeast(8, 4) || (version{8, 0, 36}).atLeast(8, 4) || !(version{9, 1, 0}).atLeast(8, 4) {
		t.Error("atLeast")
	}
}

func TestMergeOptions(t *testing.T) {
	defaults := []string{"port=1", "skip-log-bin", "max_connections=4000", "skip-name-resolve"}
	got := mergeOptions(defaults, []string{"max-connections=10", "log-bin=binlog", "  innodb_buffer_pool_size=1G ", "loose-skip-name-resolve=OFF"})
	want := []string{"port=1", "log-bin=binlog", "max-connections=10", "loose-skip-name-resolve=OFF", "innodb_buffer_pool_size=1G"}
	if len(got) != len(want) {
		t.Fatalf("merge = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("merge = %q, want %q", got, want)
			break
		}
	}
}

func TestOptionFileDefaults(t *testing.T) {
	l := layout{dataDir: "/d", port: 4242}
	for _, tc := range []struct {
		bin      binaryInfo
		has, not []string
	}{
		{binaryInfo{flavor: MariaDB, version: version{10, 11, 14}}, []string{"skip-log-bin", "port=4242", "socket=/d/mysqld.sock"}, []string{"mysqlx=OFF", "disable-log-bin"}},
		{binaryInfo{flavor: MySQL, version: version{8, 0, 36}}, []string{"disable-log-bin", "mysqlx=OFF"}, []string{"mysql_native_password=ON", "skip-log-bin"}},
		{binaryInfo{flavor: MySQL, version: version{8, 4, 3}}, []string{"mysql_native_password=ON"}, nil},
		{binaryInfo{flavor: MySQL, version: version{9, 1, 0}}, nil, []string{"mysql_native_password=ON"}},
	} {
		set := map[string]bool{}
		for _, line := range defaultServerOptions(tc.bin, l) {
			set[line] = true
		}
		for _, h := range tc.has {
			if !set[h] {
				t.Errorf("%v: missing %q", tc.bin, h)
			}
		}
		for _, n := range tc.not {
			if set[n] {
				t.Errorf("%v: unexpected %q", tc.bin, n)
			}
		}
	}
}

func TestDSNAndQuoting(t *testing.T) {
	s := &Server{Addr: "127.0.0.1:4000", rootPassword: "pw"}
	if got, want := s.DSN("u", "p@ss", "db", "parseTime=true", "timeout=5s"), "u:p@ss@tcp(127.0.0.1:4000)/db?parseTime=true&timeout=5s"; got != want {
		t.Errorf("DSN = %q, want %q", got, want)
	}
	if got, want := s.RootDSN(""), "root:pw@tcp(127.0.0.1:4000)/"; got != want {
		t.Errorf("RootDSN = %q, want %q", got, want)
	}
	if got, want := quoteString(`a'b\c`), `'a\'b\\c'`; got != want {
		t.Errorf("quoteString = %s, want %s", got, want)
	}
	if got, want := quoteIdent("a`b"), "`a``b`"; got != want {
		t.Errorf("quoteIdent = %s, want %s", got, want)
	}
}
