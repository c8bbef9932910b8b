package bench

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
)

func TestSysbenchStrings(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	c := string(appendDigits(nil, r, cGroups))
	pad := string(appendDigits(nil, r, padGroups))
	if !regexp.MustCompile(`^\d{11}(-\d{11}){9}$`).MatchString(c) || len(c) != 119 {
		t.Errorf("c = %q", c)
	}
	if !regexp.MustCompile(`^\d{11}(-\d{11}){4}$`).MatchString(pad) || len(pad) != 59 {
		t.Errorf("pad = %q", pad)
	}
}

func TestWorkloadNames(t *testing.T) {
	if got := WorkloadNames(); !slices.Equal(got, []string{"ability_attr", "oltp_insert", "oltp_point_select", "oltp_read_only", "oltp_read_write", "oltp_update_index", "oltp_write_only"}) {
		t.Errorf("names %v", got)
	}
	for _, n := range WorkloadNames()[1:] {
		w, err := NewWorkload(n, Schema{Tables: 2, TableSize: 10})
		if err != nil || w.Name() != n {
			t.Errorf("%s: %v %v", n, w, err)
		}
	}
	// Clients pick tables and ids in range.
	c := newSBClient(Schema{Tables: 3, TableSize: 5}, 7)
	seen := map[string]bool{}
	for range 1000 {
		seen[c.table().pointSelect.text] = true
		if id := c.id(); id < 1 || id > 5 {
			t.Fatalf("id %d", id)
		}
	}
	if len(seen) != 3 || !seen["SELECT c FROM sbtest3 WHERE id=?"] {
		t.Errorf("tables %v", seen)
	}
}
