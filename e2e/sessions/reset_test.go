package sessions

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

const resetSchema = "tpp_rst"

// resetProbe reads what COM_RESET_CONNECTION and a reconnect are
// documented to reset or keep. {s} is replaced by a per-target suffix so
// that proxy and direct runs use their own tables and locks.
var resetProbe = []string{
	"SELECT @tpp_x IS NULL, @@sql_mode, @@time_zone, DATABASE(), @@character_set_client, @@collation_connection, @@autocommit, @@in_transaction",
	"SELECT IS_USED_LOCK('tpp_rst_lock_{s}') IS NULL",
	"SELECT LAST_INSERT_ID()",
	"SELECT LAST_INSERT_ID() AS id",
	"SELECT COUNT(*) FROM tpp_rst.rst_tx_{s}",
	"SELECT COUNT(*) FROM rst_tmp",
	"EXECUTE tpp_rst_stmt",
}

// dirtySession leaves every kind of session state behind: schema,
// variables, a temporary table, an insert id, a prepared statement, a
// named lock and an open transaction.
var dirtySession = []string{
	"USE " + resetSchema,
	"SET @tpp_x = 1",
	"CREATE TEMPORARY TABLE rst_tmp (a INT)",
	"SET SESSION sql_mode = 'ANSI_QUOTES'",
	"SET time_zone = '+03:00'",
	"SET NAMES latin1",
	"INSERT INTO rst_ai_{s} () VALUES ()",
	"PREPARE tpp_rst_stmt FROM 'SELECT 1'",
	"SELECT GET_LOCK('tpp_rst_lock_{s}', 0)",
	"SET autocommit = 0",
	"INSERT INTO rst_tx_{s} VALUES (1)",
}

// probeAll runs resetProbe and renders each answer (or error code).
func probeAll(t *testing.T, c querier, suffix string) []string {
	t.Helper()
	out := make([]string, len(resetProbe))
	for i, q := range resetProbe {
		rows, err := c.Rows(strings.ReplaceAll(q, "{s}", suffix))
		if err != nil {
			out[i] = fmt.Sprintf("error %d", errCode(err))
			if errCode(err) == 0 {
				t.Fatalf("%s: %v", q, err)
			}
			continue
		}
		out[i] = fmt.Sprint(rows)
	}
	return out
}

func dirty(t *testing.T, c querier, suffix string) {
	t.Helper()
	for _, q := range dirtySession {
		mustExec(t, c, strings.ReplaceAll(q, "{s}", suffix))
	}
}

// TestResetConnection compares COM_RESET_CONNECTION and reconnecting
// through the proxy with the same on a server connection: user variables,
// temporary tables, prepared statements, locks and the transaction are
// gone, variables are back to their defaults, the schema is kept.
func TestResetConnection(t *testing.T) {
	root := env.Root(t)
	rootExec(t, root, "DROP DATABASE IF EXISTS "+resetSchema, "CREATE DATABASE "+resetSchema)
	t.Cleanup(func() { _, _ = root.Exec("DROP DATABASE IF EXISTS " + resetSchema) })
	for _, s := range []string{"proxy", "direct"} {
		rootExec(t, root,
			"CREATE TABLE "+resetSchema+".rst_ai_"+s+" (id INT AUTO_INCREMENT PRIMARY KEY) AUTO_INCREMENT = 100",
			"CREATE TABLE "+resetSchema+".rst_tx_"+s+" (a INT)")
	}
	px := env.StartProxy(t, func(o *proxytest.Options) { o.Pool.Size = 1 })

	t.Run("reset", func(t *testing.T) {
		d := openRaw(t, env.Server(t).Addr, proxytest.User, proxytest.Password, proxytest.DB)
		p := openRaw(t, px.Addr, proxytest.User, proxytest.Password, proxytest.DB)
		fresh := probeAll(t, d, "direct")
		dirty(t, d, "direct")
		dirty(t, p, "proxy")
		in := waitPinned(t, px, p.ID, "transaction")
		for _, r := range []string{"user_variable", "temporary_table", "sql_prepare", "get_lock"} {
			if !hasReason(in.PinReasons, r) {
				t.Errorf("pin reasons %q lack %s", in.PinReasons, r)
			}
		}
		resets := px.Pool.Stats().Resets
		for _, c := range []*rawSession{d, p} {
			if err := c.Reset(); err != nil {
				t.Fatalf("COM_RESET_CONNECTION: %v", err)
			}
		}
		wantUnpinned(t, px, p.ID)
		if got := px.Pool.Stats().Resets; got <= resets {
			t.Errorf("pool resets %d -> %d: the session's backend was not reset", resets, got)
		}
		want := probeAll(t, d, "direct")
		got := probeAll(t, p, "proxy")
		t.Logf("server after reset: %q", want)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("after COM_RESET_CONNECTION %s\n\tproxy:  %s\n\tserver: %s", resetProbe[i], got[i], want[i])
			}
		}
		// What the server does, spelt out, so that the comparison above
		// is known to cover it: variables back to a fresh session's, the
		// schema kept.
		if strings.Replace(want[0], `"`+resetSchema+`"`, `"`+proxytest.DB+`"`, 1) != fresh[0] {
			t.Errorf("server after reset: %s; fresh session: %s", want[0], fresh[0])
		}
		if want[5] != fmt.Sprintf("error %d", erNoSuchTable) || want[6] != fmt.Sprintf("error %d", erUnknownStmtHandler) {
			t.Errorf("server after reset kept a temporary table or prepared statement: %v", want)
		}
	})

	t.Run("reconnect", func(t *testing.T) {
		d := openRaw(t, env.Server(t).Addr, proxytest.User, proxytest.Password, proxytest.DB)
		p := openRaw(t, px.Addr, proxytest.User, proxytest.Password, proxytest.DB)
		dirty(t, d, "direct")
		dirty(t, p, "proxy")
		waitPinned(t, px, p.ID, "transaction")
		_ = d.c.Close()
		_ = p.c.Close()
		waitGone(t, px, p.ID)
		d = openRaw(t, env.Server(t).Addr, proxytest.User, proxytest.Password, proxytest.DB)
		p = openRaw(t, px.Addr, proxytest.User, proxytest.Password, proxytest.DB)
		wantUnpinned(t, px, p.ID)
		want := probeAll(t, d, "direct")
		got := probeAll(t, p, "proxy")
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("after reconnecting %s\n\tproxy:  %s\n\tserver: %s", resetProbe[i], got[i], want[i])
			}
		}
		if !strings.Contains(got[0], `"`+proxytest.DB+`"`) {
			t.Errorf("a new session's schema: %s, want %s", got[0], proxytest.DB)
		}
	})
}
