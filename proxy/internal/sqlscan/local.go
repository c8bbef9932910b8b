package sqlscan

import "math"

// matchLocal recognises the statements the proxy answers itself. Each form must be
// the whole query, in any letter case, with any whitespace between tokens and an
// optional trailing ';', and for SELECT forms an alias given with AS (a plain or
// backquoted name without escapes). Anything more (an alias without AS, a
// comment, FROM DUAL, a second column) goes to the server, because the proxy's answer must be indistinguishable
// from the server's, column name included. It returns the form, the expression as
// typed (which becomes the column name of SELECT forms) and, for SHOW WARNINGS and
// SHOW ERRORS, their LIMIT.
func matchLocal(q []byte) (l Local, expr []byte, offset, count uint64) {
	count = math.MaxUint64
	i := skipSpaces(q, 0)
	switch {
	case hasWordFold(q, i, "select"):
		l, expr, i = matchSelectLocal(q, skipSpaces(q, i+len("select")))
		if l != LocalNone {
			expr, i = matchAlias(q, expr, i)
		}
	case hasWordFold(q, i, "show"):
		l, offset, count, i = matchShowLocal(q, skipSpaces(q, i+len("show")))
	default:
		return LocalNone, nil, 0, math.MaxUint64
	}
	if l == LocalNone || !atEnd(q, i) {
		return LocalNone, nil, 0, math.MaxUint64
	}
	return l, expr, offset, count
}

// matchSelectLocal matches the expression of SELECT name() and SELECT @@var.
func matchSelectLocal(q []byte, start int) (Local, []byte, int) {
	if start >= len(q) {
		return LocalNone, nil, start
	}
	if q[start] == '@' {
		return matchSysVarLocal(q, start)
	}
	i := identEnd(q, start)
	var l Local
	switch name := q[start:i]; {
	case equalFold(name, "connection_id"):
		l = LocalConnectionID
	case equalFold(name, "last_insert_id"):
		l = LocalLastInsertID
	case equalFold(name, "row_count"):
		l = LocalRowCount
	case equalFold(name, "found_rows"):
		l = LocalFoundRows
	default:
		return LocalNone, nil, i
	}
	i = skipSpaces(q, i)
	if i >= len(q) || q[i] != '(' {
		return LocalNone, nil, i
	}
	i = skipSpaces(q, i+1)
	if i >= len(q) || q[i] != ')' {
		return LocalNone, nil, i
	}
	end := i + 1
	return l, q[start:end:end], end
}

// matchSysVarLocal matches @@[session.|local.]warning_count and error_count.
func matchSysVarLocal(q []byte, start int) (Local, []byte, int) {
	i := start
	if i+2 > len(q) || q[i+1] != '@' {
		return LocalNone, nil, i
	}
	i += 2
	for _, scope := range []string{"session.", "local."} {
		if hasPrefixFold(q[i:], scope) {
			i += len(scope)
			break
		}
	}
	j := identEnd(q, i)
	var l Local
	switch name := q[i:j]; {
	case equalFold(name, "warning_count"):
		l = LocalWarningCount
	case equalFold(name, "error_count"):
		l = LocalErrorCount
	default:
		return LocalNone, nil, j
	}
	return l, q[start:j:j], j
}

// matchShowLocal matches WARNINGS, ERRORS (with an optional LIMIT) and
// COUNT(*) WARNINGS|ERRORS after SHOW.
func matchShowLocal(q []byte, i int) (l Local, offset, count uint64, end int) {
	count = math.MaxUint64
	switch {
	case hasWordFold(q, i, "warnings"):
		l, i = LocalShowWarnings, i+len("warnings")
	case hasWordFold(q, i, "errors"):
		l, i = LocalShowErrors, i+len("errors")
	case hasWordFold(q, i, "count"):
		i = skipSpaces(q, i+len("count"))
		for _, c := range []byte("(*)") {
			i = skipSpaces(q, i)
			if i >= len(q) || q[i] != c {
				return LocalNone, 0, count, i
			}
			i++
		}
		i = skipSpaces(q, i)
		switch {
		case hasWordFold(q, i, "warnings"):
			return LocalCountWarnings, 0, count, i + len("warnings")
		case hasWordFold(q, i, "errors"):
			return LocalCountErrors, 0, count, i + len("errors")
		}
		return LocalNone, 0, count, i
	default:
		return LocalNone, 0, count, i
	}
	j := skipSpaces(q, i)
	if !hasWordFold(q, j, "limit") {
		return l, 0, count, i
	}
	j = skipSpaces(q, j+len("limit"))
	a, j, ok := number(q, j)
	if !ok {
		return LocalNone, 0, count, j
	}
	k := skipSpaces(q, j)
	if k < len(q) && q[k] == ',' {
		b, k2, ok := number(q, skipSpaces(q, k+1))
		if !ok {
			return LocalNone, 0, count, k2
		}
		return l, a, b, k2
	}
	return l, 0, a, j
}

// number reads a decimal number that fits in 64 bits.
func number(q []byte, i int) (uint64, int, bool) {
	start := i
	var v uint64
	for i < len(q) && isDigit(q[i]) {
		d := uint64(q[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, i, false
		}
		v = v*10 + d
		i++
	}
	if i == start || (i < len(q) && isIdent(q[i])) {
		return 0, i, false
	}
	return v, i, true
}

// hasWordFold reports whether the whole word w (lower case) starts at q[i].
func hasWordFold(q []byte, i int, w string) bool {
	return i <= len(q) && hasPrefixFold(q[i:], w) && (i+len(w) == len(q) || !isIdent(q[i+len(w)]))
}

// atEnd reports whether only whitespace and one optional ';' follow q[i:].
func atEnd(q []byte, i int) bool {
	i = skipSpaces(q, i)
	if i < len(q) && q[i] == ';' {
		i = skipSpaces(q, i+1)
	}
	return i == len(q)
}

func skipSpaces(q []byte, i int) int {
	for i < len(q) && isSpace(q[i]) {
		i++
	}
	return i
}

// equalFold reports whether b equals the lower-case ASCII word w, ignoring the case
// of b.
func equalFold(b []byte, w string) bool {
	return len(b) == len(w) && hasPrefixFold(b, w)
}

// matchAlias takes an "AS name" or "AS `name`" after a SELECT form's
// expression: the column is then named by it. Without AS the expression
// stands (and a following word makes the query not local).
func matchAlias(q, expr []byte, i int) ([]byte, int) {
	j := skipSpaces(q, i)
	if !hasWordFold(q, j, "as") {
		return expr, i
	}
	j = skipSpaces(q, j+len("as"))
	if j < len(q) && q[j] == '`' {
		for k := j + 1; k < len(q); k++ {
			if q[k] == '`' {
				if k == j+1 || k+1 < len(q) && q[k+1] == '`' {
					return expr, i // empty, or an escaped backquote: the server's
				}
				return q[j+1 : k : k], k + 1
			}
		}
		return expr, i
	}
	k := identEnd(q, j)
	if k == j {
		return expr, i
	}
	return q[j:k:k], k
}
