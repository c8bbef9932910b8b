package proxy

import (
	"slices"
	"testing"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

func TestPlaceholders(t *testing.T) {
	for q, want := range map[string][]int{
		"?":                                  {0},
		"(SELECT ? + CONNECTION_ID())":       {8},
		"'?' + ? /* ? */ + `?` + \"?\" -- ?": {6},
		"? # ?\n+ ?":                         {0, 8},
		"'it\\'s ?' + ?":                     {12},
	} {
		if got := placeholders([]byte(q)); !slices.Equal(got, want) {
			t.Errorf("placeholders(%q) = %v, want %v", q, got, want)
		}
	}
}

func TestLiteralOf(t *testing.T) {
	cases := []struct {
		typ      byte
		unsigned bool
		v        []byte
		want     string
	}{
		{mysqlwire.TypeTiny, false, []byte{0xff}, "-1"},
		{mysqlwire.TypeTiny, true, []byte{0xff}, "255"},
		{mysqlwire.TypeLong, false, []byte{0x3f, 0x42, 0x0f, 0x00}, "999999"},
		{mysqlwire.TypeLongLong, true, []byte{1, 0, 0, 0, 0, 0, 0, 0}, "1"},
		{mysqlwire.TypeVarString, false, []byte{3, '4', '2', '\''}, "X'343227'"},
	}
	for _, c := range cases {
		got, rest, err := literalOf(c.typ, c.unsigned, c.v)
		if err != nil || string(got) != c.want || len(rest) != 0 {
			t.Errorf("literalOf(%d, %v, %x) = %q, %x, %v; want %q", c.typ, c.unsigned, c.v, got, rest, err, c.want)
		}
	}
	if _, _, err := literalOf(mysqlwire.TypeLong, false, []byte{1, 2}); err == nil {
		t.Error("a truncated INT parameter was accepted")
	}
}
