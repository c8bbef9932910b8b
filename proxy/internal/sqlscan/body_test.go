package sqlscan_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

func TestSetAssignments(t *testing.T) {
	cases := []struct{ q, want string }{
		{"SET @@sql_mode = ''", "sql_mode:@@"},
		{"SET @@session.sql_mode = '', @@local.time_zone := 'x'", "sql_mode:@@session,time_zone:@@session"},
		{"SET LOCAL a = 1, b = 2, GLOBAL c = 3, d = 4, SESSION e = DEFAULT", "a:session,b:session,e:session:default"},
		{"SET a := 1", "a"},
		{"SET @x = 1, @@y = 2", "y:@@"},
		{"SET @@global.x = 1, x = 2", "x"},
		{"SELECT 1; SET @@a = 1; SET b = 2", "a:@@,b"},
		{"SET NAMES latin1, @@a = 1", "NAMES:special,a:@@"},
		{"SET CHARACTER SET latin1; SET CHARSET utf8", "CHARACTER:special,CHARSET:special"},
		{"SET TRANSACTION READ ONLY; SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "TRANSACTION:special,TRANSACTION:special:session"},
		{"SET GLOBAL TRANSACTION READ ONLY", ""},
		{"SET ROLE r; SET DEFAULT ROLE r FOR u; SET PASSWORD = 'x'", "ROLE:special,DEFAULT:special,PASSWORD:special"},
		{"SET STATEMENT a = 1, b = 2 FOR SET @@c = 3", "c:@@"},
		{"SET STATEMENT a = 1 FOR SELECT 1", ""},
		{"SET a = (SELECT 1, 2), b = 3", "a,b"},
		{"UPDATE t SET a = 1; SET b = 1", "b"},
		{"SET timestamp = 0", "timestamp:default"},
		{"SET @@a = 'x; SET b = 1'", "a:@@"},
	}
	for _, c := range cases {
		var got []string
		sqlscan.SetAssignments([]byte(c.q), sqlscan.Mode{}, func(a sqlscan.SetAssign) {
			s := string(a.Name)
			switch {
			case a.Special:
				s += ":special"
				if a.Session {
					s += ":session"
				}
			case a.SysVar && a.Session:
				s += ":@@session"
			case a.SysVar:
				s += ":@@"
			case a.Session:
				s += ":session"
			}
			if a.Default {
				s += ":default"
			}
			got = append(got, s)
		})
		if g := strings.Join(got, ","); g != c.want {
			t.Errorf("SetAssignments(%q) = %q, want %q", c.q, g, c.want)
		}
	}
}

func TestBodySetsSession(t *testing.T) {
	cases := []struct {
		body   string
		params []string
		want   bool
	}{
		{"SET @@time_zone = '+01:00'", nil, true},
		{"BEGIN SET @@session.sql_mode = ''; END", nil, true},
		{"BEGIN DECLARE a INT; SET a = 1; END", nil, false},
		{"BEGIN DECLARE a, wait_timeout INT; SET wait_timeout = 1; END", nil, false},
		{"BEGIN DECLARE a INT; SET wait_timeout = 1; END", nil, true},
		{"BEGIN SET p = 1; END", []string{"p"}, false},
		{"BEGIN SET P = 1; END", []string{"p"}, false},
		{"BEGIN SET q = 1; END", []string{"p"}, true},
		{"BEGIN DECLARE x INT; SET SESSION x = 1; END", nil, true},
		{"BEGIN SET @u = 1; END", nil, false},
		{"SET NEW.a = 1", nil, false},
		{"BEGIN SET NEW.a = NEW.a + 1, OLD.b = 2; END", nil, false},
		{"BEGIN UPDATE t SET wait_timeout = 1 WHERE id = 1; END", nil, false},
		{"BEGIN INSERT INTO t SET a = 1; END", nil, false},
		{"BEGIN DECLARE v VARCHAR(5) CHARACTER SET latin1; SET v = 'a'; END", nil, false},
		{"BEGIN IF 1 THEN SET @@x = 1; END IF; END", nil, true},
		{"BEGIN IF 0 THEN SELECT 1; ELSE SET @@x = 1; END IF; END", nil, true},
		{"BEGIN WHILE 0 DO SET @@x = 1; END WHILE; END", nil, true},
		{"BEGIN l1: LOOP SET @@x = 1; LEAVE l1; END LOOP; END", nil, true},
		{"BEGIN lbl: BEGIN SET @@x = 1; END; END", nil, true},
		{"BEGIN REPEAT SET @@x = 1; UNTIL 1 END REPEAT; END", nil, true},
		{"BEGIN NOT ATOMIC SET @@x = 1; END", nil, true},
		{"BEGIN DECLARE CONTINUE HANDLER FOR SQLEXCEPTION SET @@x = 1; END", nil, true},
		{"BEGIN DECLARE CONTINUE HANDLER FOR SQLSTATE '23000' SET @e = 1; END", nil, false},
		{"BEGIN SET NAMES latin1; END", nil, true},
		{"BEGIN SET TRANSACTION READ ONLY; SET ROLE NONE; END", nil, false},
		{"BEGIN SET @@global.x = 1; END", nil, false},
		{"BEGIN SET @a = 1, @@x = 2; END", nil, true},
		{"BEGIN SET STATEMENT max_statement_time = 1 FOR SELECT 1; END", nil, false},
		{"BEGIN SELECT 'SET @@x = 1'; END", nil, false},
		{"BEGIN CASE WHEN 1 THEN SET @@x = 1; END CASE; END", nil, true},
	}
	for _, c := range cases {
		if got := sqlscan.BodySetsSession([]byte(c.body), sqlscan.Mode{}, c.params); got != c.want {
			t.Errorf("BodySetsSession(%q, %v) = %v, want %v", c.body, c.params, got, c.want)
		}
	}
}

func FuzzBodySetsSession(f *testing.F) {
	f.Add("BEGIN DECLARE a INT; SET a = 1, @@b = 2; END", "a")
	f.Fuzz(func(t *testing.T, body, param string) {
		_ = sqlscan.BodySetsSession([]byte(body), sqlscan.Mode{}, []string{param})
		sqlscan.SetAssignments([]byte(body), sqlscan.Mode{}, func(a sqlscan.SetAssign) {
			if len(a.Name) == 0 {
				panic(fmt.Sprintf("empty name in %q", body))
			}
		})
	})
}
