package admin

import "strings"

// tokKind is the lexical class of a token.
type tokKind uint8

const (
	tokEOF    tokKind = iota
	tokWord           // unquoted identifier or keyword
	tokQuoted         // `identifier`
	tokString         // 'text' or "text"
	tokNumber         // 12, 1.5, 2e3 (without sign)
	tokPunct          // operators and punctuation: = <=> != <> < <= > >= := , . ; * / % ( ) + - || && ! ~ ^ | & << >> @@ @
)

// token is one lexeme. text is the identifier, the unescaped string, the
// number or the operator; pos and end index the query.
type token struct {
	kind     tokKind
	text     string
	pos, end int
}

// is reports whether t is the operator p.
func (t token) is(p string) bool { return t.kind == tokPunct && t.text == p }

// isWord reports whether t is the unquoted keyword kw, in any case.
func (t token) isWord(kw string) bool { return t.kind == tokWord && strings.EqualFold(t.text, kw) }

// lex splits q into tokens, ending with one tokEOF. Comments (/* */, --
// and #) are skipped: the mysql clients strip most of them, connectors
// prefix some statements with one.
func lex(q string) ([]token, error) {
	var toks []token
	i := 0
	for {
		for i < len(q) && isSpace(q[i]) {
			i++
		}
		if i >= len(q) {
			return append(toks, token{kind: tokEOF, pos: len(q), end: len(q)}), nil
		}
		start := i
		c := q[i]
		switch {
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return nil, syntaxError(q, start)
			}
			i += 2 + end + 2
			continue
		case c == '#' || (c == '-' && strings.HasPrefix(q[i:], "--") && (i+2 == len(q) || isSpace(q[i+2]))):
			end := strings.IndexByte(q[i:], '\n')
			if end < 0 {
				i = len(q)
			} else {
				i += end + 1
			}
			continue
		case c == '\'' || c == '"':
			s, n, ok := unquote(q[i:], c, true)
			if !ok {
				return nil, syntaxError(q, start)
			}
			i += n
			toks = append(toks, token{kind: tokString, text: s, pos: start, end: i})
		case c == '`':
			s, n, ok := unquote(q[i:], c, false)
			if !ok {
				return nil, syntaxError(q, start)
			}
			i += n
			toks = append(toks, token{kind: tokQuoted, text: s, pos: start, end: i})
		case isDigit(c) || (c == '.' && i+1 < len(q) && isDigit(q[i+1])):
			i = scanNumber(q, i)
			kind := tokNumber
			if i < len(q) && isIdent(q[i]) {
				// 1abc is an identifier to MySQL.
				for i < len(q) && isIdent(q[i]) {
					i++
				}
				kind = tokWord
			}
			toks = append(toks, token{kind: kind, text: q[start:i], pos: start, end: i})
		case isIdent(c):
			for i < len(q) && isIdent(q[i]) {
				i++
			}
			toks = append(toks, token{kind: tokWord, text: q[start:i], pos: start, end: i})
		default:
			n := 1
			for _, op := range multiOps {
				if strings.HasPrefix(q[i:], op) {
					n = len(op)
					break
				}
			}
			if n == 1 && !strings.ContainsRune("=<>,.;*/%()+-@!~^|&", rune(c)) {
				return nil, syntaxError(q, start)
			}
			i += n
			toks = append(toks, token{kind: tokPunct, text: q[start:i], pos: start, end: i})
		}
	}
}

// multiOps are the operators of more than one character, longest first.
var multiOps = []string{"<=>", "@@", "<=", ">=", "<>", "!=", ":=", "||", "&&", "<<", ">>"}

// scanNumber returns the end of the number starting at q[i].
func scanNumber(q string, i int) int {
	for i < len(q) && isDigit(q[i]) {
		i++
	}
	if i < len(q) && q[i] == '.' {
		i++
		for i < len(q) && isDigit(q[i]) {
			i++
		}
	}
	if i < len(q) && (q[i] == 'e' || q[i] == 'E') {
		j := i + 1
		if j < len(q) && (q[j] == '+' || q[j] == '-') {
			j++
		}
		if j < len(q) && isDigit(q[j]) {
			for j < len(q) && isDigit(q[j]) {
				j++
			}
			i = j
		}
	}
	return i
}

// unquote reads the quoted text at the start of s (s[0] is the quote). A
// doubled quote stands for itself; in strings, backslash escapes the next
// byte as MySQL does. It returns the text, the bytes consumed and whether
// the quote was closed.
func unquote(s string, quote byte, backslash bool) (string, int, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == quote && i+1 < len(s) && s[i+1] == quote:
			b.WriteByte(quote)
			i++
		case c == quote:
			return b.String(), i + 1, true
		case c == '\\' && backslash && i+1 < len(s):
			i++
			b.WriteString(unescape(s[i]))
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

// unescape is what a backslash followed by c stands for in a string. \%
// and \_ keep their backslash so that LIKE patterns can escape wildcards.
func unescape(c byte) string {
	switch c {
	case '0':
		return "\x00"
	case 'n':
		return "\n"
	case 'r':
		return "\r"
	case 't':
		return "\t"
	case 'b':
		return "\b"
	case 'Z':
		return "\x1a"
	case '%', '_':
		return "\\" + string(c)
	}
	return string(c)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isIdent reports whether c may appear in an unquoted identifier; every
// byte of a multi-byte UTF-8 character may.
func isIdent(c byte) bool {
	return c == '_' || c == '$' || isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c >= 0x80
}
