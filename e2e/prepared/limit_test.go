package prepared

import (
	"fmt"
	"testing"
)

// TestPrepareCloseLoopUnderLowLimit: code that prepares and closes
// statements in a loop under a low max_prepared_stmt_count works through
// tpproxy as directly, although tpproxy keeps closed statements prepared
// for reuse: the server's 1461 makes it close what only its cache holds
// and prepare again, and a lowered global caps the cache at once. Another
// application holding most of the server's statements meanwhile is the
// case the cap alone does not cover.
func TestPrepareCloseLoopUnderLowLimit(t *testing.T) {
	root := env.Root(t)
	old := rootInt(t, root, "SELECT @@GLOBAL.max_prepared_stmt_count")
	rootExec(t, root, "SET GLOBAL max_prepared_stmt_count = 20")
	t.Cleanup(func() { _, _ = root.Exec(fmt.Sprintf("SET GLOBAL max_prepared_stmt_count = %d", old)) })
	px := env.StartProxy(t)
	// Another application holds 18 of the 20 statements the whole time:
	// what tpproxy caches must give way.
	other := openSession(t, directPSDSN(t))
	for i := range 18 {
		other.prepare(t, fmt.Sprintf("SELECT 'held %d', ?", i))
	}
	for _, dsn := range []string{directPSDSN(t), psDSN(px)} {
		s := openSession(t, dsn)
		for i := range 200 {
			ctx, cancel := opCtx()
			st, err := s.conn.PrepareContext(ctx, fmt.Sprintf("SELECT %d + ?", i))
			cancel()
			if err != nil {
				t.Fatalf("session %d: prepare %d of 200 with max_prepared_stmt_count=20: %v", s.ID, i, err)
			}
			if got, err := queryString(st, 1); err != nil || got != fmt.Sprint(i+1) {
				t.Fatalf("statement %d: %q, %v", i, got, err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
	}
}
