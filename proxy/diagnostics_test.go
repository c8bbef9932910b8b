package proxy

import (
	"testing"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// TestDiagAreaAnswer: SHOW WARNINGS / SHOW ERRORS with LIMIT and the
// counts are answered from the copy alone.
func TestDiagAreaAnswer(t *testing.T) {
	var a diagArea
	a.conds = []diagnostic{
		{level: "Warning", code: 1265, message: "Data truncated"},
		{level: "Error", code: 1146, message: "Table 't.x' doesn't exist"},
		{level: "Note", code: 1051, message: "Unknown table"},
		{level: "Error", code: 1054, message: "Unknown column"},
	}
	a.warningCount = 4
	if n := a.errorCount(); n != 2 {
		t.Fatalf("errorCount %d", n)
	}
	for _, tc := range []struct {
		name string
		info sqlscan.Info
		want []string // message column of each row, or the one value
	}{
		{"warnings", sqlscan.Info{Local: sqlscan.LocalShowWarnings, LimitCount: ^uint64(0)}, []string{"Data truncated", "Table 't.x' doesn't exist", "Unknown table", "Unknown column"}},
		{"warnings limit 1,2", sqlscan.Info{Local: sqlscan.LocalShowWarnings, LimitOffset: 1, LimitCount: 2}, []string{"Table 't.x' doesn't exist", "Unknown table"}},
		{"errors", sqlscan.Info{Local: sqlscan.LocalShowErrors, LimitCount: ^uint64(0)}, []string{"Table 't.x' doesn't exist", "Unknown column"}},
		{"errors limit 1,5", sqlscan.Info{Local: sqlscan.LocalShowErrors, LimitOffset: 1, LimitCount: 5}, []string{"Unknown column"}},
		{"warning_count", sqlscan.Info{Local: sqlscan.LocalWarningCount, LocalExpr: []byte("@@warning_count")}, []string{"4"}},
		{"error_count", sqlscan.Info{Local: sqlscan.LocalErrorCount, LocalExpr: []byte("@@error_count")}, []string{"2"}},
		{"count(*) errors", sqlscan.Info{Local: sqlscan.LocalCountErrors}, []string{"2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, cr, _ := pipeConn(t)
			cols := 3
			if len(tc.want) == 1 && tc.info.Local != sqlscan.LocalShowWarnings && tc.info.Local != sqlscan.LocalShowErrors {
				cols = 1
			}
			got := readAsync(t, cr, 1+cols+1+len(tc.want)+1)
			rows, err := a.answer(cc, &tc.info, 33, 3, mysqlwire.StatusAutocommit)
			if err == nil {
				err = cc.w.Flush()
			}
			if err != nil {
				t.Fatal(err)
			}
			if rows != uint64(len(tc.want)) {
				t.Errorf("%d rows, want %d", rows, len(tc.want))
			}
			ps := <-got
			for i, want := range tc.want {
				vals, err := mysqlwire.RowValues(nil, ps[1+cols+1+i])
				if err != nil {
					t.Fatal(err)
				}
				if msg := string(vals[len(vals)-1]); msg != want {
					t.Errorf("row %d: %q, want %q", i, msg, want)
				}
			}
			if last := ps[len(ps)-1]; !mysqlwire.IsEOF(last) {
				t.Errorf("no closing EOF: %x", last)
			}
		})
	}
	a.ownError(&mysqlwire.Error{Code: 1064, State: "42000", Message: "syntax"})
	if len(a.conds) != 1 || a.warningCount != 1 || !a.local || a.errorCount() != 1 {
		t.Errorf("ownError: %+v", a)
	}
	a.reset()
	if len(a.conds) != 0 || a.warningCount != 0 || a.local {
		t.Errorf("reset: %+v", a)
	}
}
