package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Flavor is the server family of a binary or a running server.
type Flavor string

const (
	// MariaDB is a mariadbd (or a mysqld that reports MariaDB in --version).
	MariaDB Flavor = "mariadb"
	// MySQL is Oracle MySQL (or a compatible fork) 8.0 or later.
	MySQL Flavor = "mysql"
)

// EnvBinary names the environment variable that selects the server binary
// when Options.Binary is empty.
const EnvBinary = "TPPROXY_MYSQLD"

// ErrNotFound means no MySQL/MariaDB server binary was found: neither the
// given path, nor $TPPROXY_MYSQLD, nor mariadbd/mysqld on PATH or in
// /usr/sbin, /usr/libexec, /usr/local/mysql/bin.
var ErrNotFound = errors.New("sandbox: no mysqld/mariadbd server binary found")

// searchDirs are looked at after PATH; distributions put the server in sbin
// or libexec, which are often not on a user's PATH.
func searchDirs() []string {
	return []string{"/usr/sbin", "/usr/libexec", "/usr/local/mysql/bin"}
}

// versionProbeTimeout bounds `<binary> --version` when the caller gives no
// context (Find).
const versionProbeTimeout = 10 * time.Second

// binaryInfo is what Start needs to know about a server binary before
// running it.
type binaryInfo struct {
	path    string
	flavor  Flavor
	version version
}

// version is the numeric part of a server version.
type version struct{ major, minor, patch int }

// atLeast reports whether v >= major.minor.
func (v version) atLeast(major, minor int) bool {
	return v.major > major || (v.major == major && v.minor >= minor)
}

var versionRE = regexp.MustCompile(`(\d+)\.(\d+)\.(\d+)`)

// parseVersion takes the first x.y.z in s ("8.0.36", "10.11.14-MariaDB-0+deb12u2",
// "/usr/sbin/mysqld  Ver 8.4.0 for Linux ...").
func parseVersion(s string) version {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return version{}
	}
	var v version
	v.major, _ = strconv.Atoi(m[1])
	v.minor, _ = strconv.Atoi(m[2])
	v.patch, _ = strconv.Atoi(m[3])
	return v
}

// flavorOf classifies `--version` output or a VERSION() string.
func flavorOf(s string) Flavor {
	if strings.Contains(strings.ToLower(s), "mariadb") {
		return MariaDB
	}
	return MySQL
}

// Find locates a server binary and tells its flavor from `--version`.
// binary, when not empty, is used as given; else $TPPROXY_MYSQLD; else
// mariadbd and then mysqld are searched on PATH and in /usr/sbin,
// /usr/libexec and /usr/local/mysql/bin. The error wraps ErrNotFound when
// there is no such binary. Running `--version` is bounded by 10 s.
func Find(binary string) (path string, flavor Flavor, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), versionProbeTimeout)
	defer cancel()
	info, err := findBinary(ctx, binary)
	if err != nil {
		return "", "", err
	}
	return info.path, info.flavor, nil
}

func findBinary(ctx context.Context, binary string) (binaryInfo, error) {
	path, err := locate(binary)
	if err != nil {
		return binaryInfo{}, err
	}
	return probe(ctx, path)
}

// locate resolves the binary path without running it.
func locate(binary string) (string, error) {
	source := "binary"
	if binary == "" {
		binary = os.Getenv(EnvBinary)
		source = "$" + EnvBinary
	}
	if binary != "" {
		p, err := exec.LookPath(binary)
		if err != nil {
			return "", fmt.Errorf("%w: %s %q: %w", ErrNotFound, source, binary, err)
		}
		return filepath.Abs(p)
	}
	for _, name := range []string{"mariadbd", "mysqld"} {
		if p, err := exec.LookPath(name); err == nil {
			return filepath.Abs(p)
		}
		for _, dir := range searchDirs() {
			p := filepath.Join(dir, name)
			if isExecutable(p) {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%w (searched PATH and %s; set $%s)", ErrNotFound, strings.Join(searchDirs(), ", "), EnvBinary)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// probe runs `<path> --version`.
func probe(ctx context.Context, path string) (binaryInfo, error) {
	out, err := exec.CommandContext(ctx, path, "--no-defaults", "--version").CombinedOutput()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return binaryInfo{}, fmt.Errorf("%w: %s: %w", ErrNotFound, path, err)
		}
		return binaryInfo{}, fmt.Errorf("sandbox: %s --version: %w: %s", path, err, bytes.TrimSpace(out))
	}
	text := string(bytes.TrimSpace(out))
	v := parseVersion(text)
	if v.major == 0 {
		return binaryInfo{}, fmt.Errorf("sandbox: %s --version: no version in %q", path, text)
	}
	return binaryInfo{path: path, flavor: flavorOf(text), version: v}, nil
}

// installScript finds mariadb-install-db for a MariaDB server binary. It
// prefers a script from the same installation tree (returned with that
// tree as basedir) and falls back to PATH (no basedir).
func installScript(serverPath string) (script, basedir string, err error) {
	names := []string{"mariadb-install-db", "mysql_install_db"}
	root := filepath.Dir(filepath.Dir(serverPath))
	for _, dir := range []string{filepath.Join(root, "scripts"), filepath.Join(root, "bin"), filepath.Dir(serverPath)} {
		for _, n := range names {
			if p := filepath.Join(dir, n); isExecutable(p) {
				return p, root, nil
			}
		}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, "", nil
		}
	}
	return "", "", fmt.Errorf("%w: mariadb-install-db for %s", ErrNotFound, serverPath)
}
