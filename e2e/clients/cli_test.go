package clients

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// cliScript exercises the mariadb command-line client: DDL, DML, results
// with NULL, tabs and 4-byte UTF-8, a multi-statement query (one COM_QUERY,
// thanks to the changed delimiter), USE of another schema, warnings shown
// by the client itself and by SHOW WARNINGS, an error under --force, and
// the status command (COM_STATISTICS at its end).
const cliScript = `DROP TABLE IF EXISTS cli_t;
CREATE TABLE cli_t (id INT PRIMARY KEY, name VARCHAR(20), note TEXT) DEFAULT CHARSET=utf8mb4;
INSERT INTO cli_t VALUES (1,'alpha',NULL),(2,'beta','x\ty'),(3,'gamma','ünïcödé 😀');
SELECT * FROM cli_t ORDER BY id;
SELECT COUNT(*) AS n FROM cli_t; SELECT MAX(id) AS m FROM cli_t;
DELIMITER //
SELECT 'multi-1' AS a; SELECT 'multi-2' AS b; UPDATE cli_t SET name='BETA' WHERE id=2//
DELIMITER ;
SELECT name FROM cli_t WHERE id=2;
USE tpproxy_cli_other;
SELECT DATABASE() AS db;
SELECT COUNT(*) AS other_rows FROM other_t;
USE tpproxy_test;
SELECT DATABASE() AS db;
SELECT CAST('12abc' AS SIGNED) AS truncated;
SHOW WARNINGS;
SELECT 1/0 AS div0;
SHOW COUNT(*) WARNINGS;
INSERT INTO cli_t VALUES (1,'dup',NULL);
SHOW WARNINGS;
SELECT id, name FROM cli_t ORDER BY id DESC LIMIT 2;
\s
DROP TABLE cli_t;
SELECT 'done' AS end_marker;
`

func TestMariaDBCLI(t *testing.T) {
	bin := needTool(t, "mariadb")
	serverExec(t,
		"CREATE DATABASE IF NOT EXISTS tpproxy_cli_other",
		"CREATE TABLE IF NOT EXISTS tpproxy_cli_other.other_t (v INT)",
		"DELETE FROM tpproxy_cli_other.other_t",
		"INSERT INTO tpproxy_cli_other.other_t VALUES (1),(2),(3)",
	)
	px := env.StartProxy(t)

	// The same script runs directly and through the proxy, one after the
	// other: it creates and drops the same table.
	directOut, directErr := runCLI(t, bin, env.Server(t).Port, cliScript)
	proxyOut, proxyErr := runCLI(t, bin, px.Port, cliScript)

	if !strings.Contains(proxyOut, "end_marker") || !strings.Contains(proxyOut, "done") {
		t.Fatalf("script did not run to its end through the proxy:\nstdout:\n%s\nstderr:\n%s", proxyOut, proxyErr)
	}
	for _, want := range []string{"multi-1", "multi-2", "BETA", "tpproxy_cli_other", "ünïcödé 😀",
		"Truncated incorrect INTEGER value: '12abc'", "Division by 0", "Server version:"} {
		if !strings.Contains(proxyOut, want) {
			t.Errorf("proxy output lacks %q", want)
		}
	}
	if !strings.Contains(proxyErr, "ERROR 1062 (23000)") {
		t.Errorf("proxy stderr lacks the duplicate-key error:\n%s", proxyErr)
	}
	if got, want := normaliseCLI(proxyOut, px.Port), normaliseCLI(directOut, env.Server(t).Port); got != want {
		t.Errorf("output through the proxy differs from the server's:\n%s", lineDiff(want, got))
	}
	if proxyErr != directErr {
		t.Errorf("stderr through the proxy differs:\ndirect:\n%s\nproxy:\n%s", directErr, proxyErr)
	}
	if st := px.Server.Stats(); st.Accepted == 0 {
		t.Errorf("the CLI did not connect through the proxy: %+v", st)
	}
}

// runCLI runs the script with the mariadb client against 127.0.0.1:port.
func runCLI(t *testing.T, bin string, port int, script string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--no-defaults", "--protocol=tcp", "-h", "127.0.0.1",
		"-P", strconv.Itoa(port), "-u", proxytest.User, "-p"+proxytest.Password,
		"--skip-ssl", "--default-character-set=utf8mb4", "--table", "--show-warnings",
		"--force", proxytest.DB)
	cmd.Stdin = strings.NewReader(script)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mariadb client on port %d hung:\n%s\n%s", port, out.String(), errb.String())
	}
	// --force makes the exit status 1 after the expected error; anything
	// else (a crash, a refused connection) shows in the output checks.
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("mariadb client on port %d: %v\n%s", port, err, errb.String())
	}
	return out.String(), errb.String()
}

// Lines of the status command that differ between any two connections.
var cliVolatile = regexp.MustCompile(`(?m)^(Connection id|Uptime|TCP port|Threads|Current pager|Using outfile):.*$`)

// normaliseCLI removes what legitimately differs between two runs: the
// connection id, uptime and counters of the status command, and the port.
func normaliseCLI(out string, port int) string {
	out = cliVolatile.ReplaceAllString(out, "$1: <volatile>")
	return strings.ReplaceAll(out, strconv.Itoa(port), "<port>")
}

// lineDiff shows the lines where a and b differ.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + x + "\n  got:  " + y + "\n")
		}
	}
	return out.String()
}

// TestMariaDBAdmin runs mariadb-admin's status (COM_STATISTICS), ping
// (COM_PING) and variables through the proxy.
func TestMariaDBAdmin(t *testing.T) {
	t.Parallel()
	bin := needTool(t, "mariadb-admin")
	px := env.StartProxy(t)
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		base := []string{"--no-defaults", "--protocol=tcp", "-h127.0.0.1", "-P" + strconv.Itoa(px.Port),
			"-u" + proxytest.User, "-p" + proxytest.Password, "--skip-ssl"}
		out, err := exec.CommandContext(ctx, bin, append(base, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("mariadb-admin %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("status"); !strings.HasPrefix(out, "Uptime:") || !strings.Contains(out, "Threads:") {
		t.Errorf("mariadb-admin status = %q, want the server's statistics line starting with Uptime:", out)
	}
	if out := run("ping"); !strings.Contains(out, "is alive") {
		t.Errorf("mariadb-admin ping = %q", out)
	}
	if out := run("variables"); !strings.Contains(out, "max_allowed_packet") {
		t.Errorf("mariadb-admin variables lacks max_allowed_packet:\n%.500s", out)
	}
}
