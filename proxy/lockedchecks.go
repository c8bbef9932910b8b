package proxy

import (
	"context"

	"github.com/tpproxy/tpproxy/proxy/internal/catalog"
	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// lockedChecksMax bounds the statement text a session keeps for the
// catalog while it holds LOCK TABLES; beyond it, the session counts as
// having run something stateful.
const lockedChecksMax = 64 << 10

// lockedChecks are the statements a session ran under LOCK TABLES, which
// the catalog judges after UNLOCK TABLES: until then the session is pinned
// whatever they did, and a lookup could wait for the very tables the
// session locked (REPAIR TABLE ... USE_FRM, say). What they left on the
// connection is still there at UNLOCK, so judging them then decides as
// well whether the session may leave its connection.
type lockedChecks struct {
	stmts    []lockedStmt
	seen     map[string]bool // statement texts kept, by schema and text
	size     int             // bytes of text kept
	overflow bool            // more than lockedChecksMax: count as stateful
}

// lockedStmt is a statement as the catalog needs it: text, how it is
// lexed, the default schema it ran in, and its scan.
type lockedStmt struct {
	q      string
	mode   sqlscan.Mode
	schema string
	info   sqlscan.Info
}

// add keeps a statement for judging later.
func (l *lockedChecks) add(q []byte, m sqlscan.Mode, schema string, info *sqlscan.Info) {
	if l.overflow {
		return
	}
	key := schema + "\x00" + string(q)
	if l.seen[key] {
		return
	}
	if l.size+len(key) > lockedChecksMax {
		*l = lockedChecks{overflow: true}
		return
	}
	if l.seen == nil {
		l.seen = make(map[string]bool)
	}
	l.seen[key] = true
	l.size += len(key)
	l.stmts = append(l.stmts, lockedStmt{q: string(q), mode: m, schema: schema, info: *info})
}

// judge asks the catalog about every statement kept (with qr): the
// verdict is stateful when any of them was, or could not be judged.
func (l *lockedChecks) judge(ctx context.Context, cat *catalog.Catalog, qr catalog.Querier) catalog.Verdict {
	var v catalog.Verdict
	if l.overflow {
		v = catalog.Verdict{Stateful: true, Object: "(statements under LOCK TABLES)"}
	}
	for i := range l.stmts {
		st := &l.stmts[i]
		sv, err := cat.CheckIn(ctx, qr, cat.Schema(st.schema), []byte(st.q), st.mode, &st.info)
		if err != nil {
			sv = catalog.Verdict{Stateful: true, Object: "(catalog unavailable)"}
		}
		if sv.Stateful && !v.Stateful {
			v.Object = sv.Object
		}
		v.Stateful = v.Stateful || sv.Stateful
		v.Flags |= sv.Flags
	}
	return v
}
