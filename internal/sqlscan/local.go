package sqlscan

// matchLocal recognises the statements the proxy answers itself: exactly
// SELECT name() for the names of the Local forms, in any letter case, with any
// whitespace between tokens and an optional trailing ';'. Anything more (an alias, a
// comment, FROM DUAL, a second column) goes to the server, because the proxy's answer
// must be indistinguishable from the server's, column name included. It returns the
// form and the expression as typed, which becomes the column name.
func matchLocal(q []byte) (Local, []byte) {
	i := skipSpaces(q, 0)
	if !hasPrefixFold(q[i:], "select") {
		return LocalNone, nil
	}
	i += len("select")
	start := skipSpaces(q, i)
	if start == i {
		return LocalNone, nil // "selectconnection_id()" is another word
	}
	i = identEnd(q, start)
	var l Local
	switch name := q[start:i]; {
	case equalFold(name, "connection_id"):
		l = LocalConnectionID
	case equalFold(name, "last_insert_id"):
		l = LocalLastInsertID
	case equalFold(name, "row_count"):
		l = LocalRowCount
	default:
		return LocalNone, nil
	}
	i = skipSpaces(q, i)
	if i >= len(q) || q[i] != '(' {
		return LocalNone, nil
	}
	i = skipSpaces(q, i+1)
	if i >= len(q) || q[i] != ')' {
		return LocalNone, nil
	}
	end := i + 1
	i = skipSpaces(q, end)
	if i < len(q) && q[i] == ';' {
		i = skipSpaces(q, i+1)
	}
	if i != len(q) {
		return LocalNone, nil
	}
	return l, q[start:end:end]
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
