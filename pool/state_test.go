package pool

import "testing"

func TestSetStatementDiff(t *testing.T) {
	have := State{Vars: CharsetVars("utf8mb4", "utf8mb4_general_ci")}
	have.SetVar("time_zone", "+01:00")
	want := State{Vars: CharsetVars("latin1", "latin1_bin")}
	want.SetVar("sql_mode", "ANSI_QUOTES,NO_BACKSLASH_ESCAPES")
	want.SetVar("sort_buffer_size", "1000000")
	want.SetVar("character_set_results", "")
	got := setStatement(&have, &want)
	const exp = "SET SESSION `character_set_client` = 'latin1', SESSION `character_set_connection` = 'latin1', " +
		"SESSION `character_set_results` = NULL, SESSION `collation_connection` = 'latin1_bin', " +
		"SESSION `sort_buffer_size` = 1000000, SESSION `sql_mode` = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES', " +
		"SESSION `time_zone` = DEFAULT"
	if got != exp {
		t.Fatalf("got  %s\nwant %s", got, exp)
	}
	if s := setStatement(&want, &want); s != "" {
		t.Fatalf("equal states produce %q", s)
	}
}

func TestQuoteValue(t *testing.T) {
	for in, want := range map[string]string{
		"42":         "42",
		"-1.5":       "-1.5",
		"1.":         "'1.'",
		"ON":         "'ON'",
		"":           "''",
		"a'b":        "X'612762'",
		`back\slash`: `X'6261636b5c736c617368'`,
		"+03:00":     "'+03:00'",
	} {
		if got := quoteValue(in); got != want {
			t.Errorf("quoteValue(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestStateSumTracksChanges(t *testing.T) {
	a := State{Schema: "x"}
	b := State{Schema: "x"}
	if !a.Equal(&b) {
		t.Fatal("equal states differ")
	}
	b.SetVar("Time_Zone", "+01:00")
	if a.Equal(&b) {
		t.Fatal("a variable change went unnoticed")
	}
	if v, ok := b.Var("time_zone"); !ok || v != "+01:00" {
		t.Fatalf("names are not folded to lower case: %q %v", v, ok)
	}
	a.SetVar("time_zone", "+01:00")
	if !a.Equal(&b) {
		t.Fatal("the same changes give different states")
	}
	a.SetMultiStatements(false)
	if a.Equal(&b) || a.Sum() == b.Sum() {
		t.Fatal("the multi-statement option is not part of the state")
	}
}
