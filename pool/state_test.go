package pool

import (
	"slices"
	"testing"
)

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

func TestStateRoleAndDeleteVar(t *testing.T) {
	a := State{Schema: "x"}
	b := State{Schema: "x"}
	b.SetRole("`r1`")
	if a.Equal(&b) || a.Sum() == b.Sum() {
		t.Fatal("the active role is not part of the state")
	}
	a.SetRole("`r1`")
	if !a.Equal(&b) {
		t.Fatal("the same role gives different states")
	}
	b.SetVar("timestamp", "1000000.000000")
	b.DeleteVar("TIMESTAMP")
	if _, ok := b.Var("timestamp"); ok || !a.Equal(&b) {
		t.Fatal("DeleteVar left the variable")
	}
	b.DeleteVar("never_set") // no effect
	if !a.Equal(&b) {
		t.Fatal("deleting an absent variable changed the state")
	}
}

func TestRoleArg(t *testing.T) {
	for _, tc := range []struct {
		current []byte
		mariadb bool
		want    string
	}{
		{nil, true, "NONE"},
		{[]byte("r1"), true, "`r1`"},
		{[]byte("odd`name"), true, "`odd``name`"},
		{[]byte("NONE"), false, "NONE"},
		{[]byte("`r1`@`%`,`r2`@`%`"), false, "`r1`@`%`,`r2`@`%`"},
	} {
		if got := RoleArg(tc.current, tc.mariadb); got != tc.want {
			t.Errorf("RoleArg(%q, %v) = %s, want %s", tc.current, tc.mariadb, got, tc.want)
		}
	}
}

func TestSetStatementResultsCollation(t *testing.T) {
	have := State{Vars: CharsetVars("utf8mb4", "utf8mb4_general_ci"), ResultsCollation: "utf8mb4_general_ci"}
	want := State{Vars: CharsetVars("utf8mb4", "utf8mb4_bin"), ResultsCollation: "utf8mb4_bin"}
	want.SetVar("time_zone", "+01:00")
	// Only SET NAMES ... COLLATE gives character_set_results a collation;
	// the names it sets need no second assignment.
	const exp = "SET NAMES 'utf8mb4' COLLATE 'utf8mb4_bin', SESSION `time_zone` = '+01:00'"
	if got := setStatement(&have, &want); got != exp {
		t.Fatalf("got  %s\nwant %s", got, exp)
	}
	// Back to a character set's default: the variable is assigned again.
	back := State{Vars: CharsetVars("utf8mb4", "utf8mb4_bin")}
	const exp2 = "SET SESSION `character_set_results` = 'utf8mb4'"
	if got := setStatement(&want, &back); got != exp2+", SESSION `time_zone` = DEFAULT" {
		t.Fatalf("got  %s\nwant %s, SESSION `time_zone` = DEFAULT", got, exp2)
	}
	if a, b := have, want; a.Equal(&b) {
		t.Fatal("the results collation is not part of the state")
	}
}

// TestSharedCharsetVars: states set by SetCharsetVars share one slice,
// and a change to one of them (set, add, delete) leaves the others as
// they were.
func TestSharedCharsetVars(t *testing.T) {
	var a, b, c State
	a.SetCharsetVars("utf8mb4", "utf8mb4_general_ci")
	b.SetCharsetVars("utf8mb4", "utf8mb4_general_ci")
	c.SetCharsetVars("utf8mb4", "utf8mb4_general_ci")
	if &a.Vars[0] != &b.Vars[0] {
		t.Fatal("states of one collation do not share their variables")
	}
	want := CharsetVars("utf8mb4", "utf8mb4_general_ci")
	a.SetVar("character_set_results", "latin1")
	a.SetVar("sql_mode", "ANSI")
	b.DeleteVar("collation_connection")
	for _, s := range []*State{&a, &b} {
		if &s.Vars[0] == &c.Vars[0] {
			t.Fatal("a changed state still shares its variables")
		}
	}
	if !slices.Equal(c.Vars, want) {
		t.Fatalf("unchanged state's variables became %v, want %v", c.Vars, want)
	}
	if v, _ := a.Var("character_set_results"); v != "latin1" {
		t.Fatalf("character_set_results = %q", v)
	}
	if _, ok := b.Var("collation_connection"); ok || len(b.Vars) != len(want)-1 {
		t.Fatalf("delete: %v", b.Vars)
	}
	var d State
	d.SetCharsetVars("latin1", "latin1_swedish_ci")
	if v, _ := d.Var("collation_connection"); v != "latin1_swedish_ci" {
		t.Fatalf("another collation: %v", d.Vars)
	}
}
