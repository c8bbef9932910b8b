package sqlscan

import "strconv"

// Mode is how the server lexes the session's statements. The zero Mode is today's
// default view: backslash escapes, "..." strings, a character set in which no
// multi-byte character hides an ASCII byte, and every executable comment run.
type Mode struct {
	NoBackslashEscapes bool      // sql_mode has NO_BACKSLASH_ESCAPES
	AnsiQuotes         bool      // sql_mode has ANSI_QUOTES (or ANSI)
	Charset            MBCharset // the client character set, as far as lexing cares
	// Version is the server version as MAJOR*10000+MINOR*100+PATCH (10.11.19 -> 101119,
	// 8.0.36 -> 80036); 0 = unknown, in which case every executable comment is code (today's behaviour).
	Version uint32
	MariaDB bool // the server is MariaDB (its executable-comment rules and /*M! apply)
}

// MBCharset is the class of a client character set as far as the lexer cares: which
// bytes a multi-byte character may end with (a trail byte is never an escape, a quote
// or a delimiter), and which bytes above 0x7F are whitespace.
type MBCharset uint8

// Character set classes. The multi-byte ranges are the server's own (strings/ctype-*.c);
// SBSpaceA0 and SBSpaceFF come from the ctype tables of the single-byte character sets
// (sql/share/charsets/*.xml, ctype-latin1.c) and were checked against MariaDB 10.11:
// with character_set_client=latin1, "SELECT\xa0GET_LOCK('a',0)" takes the lock.
const (
	MBNone MBCharset = iota // no multi-byte character can contain 0x5C, quotes or backquote (utf8mb4, latin1, ...)
	MBBig5                  // big5: lead 0xA1-0xF9, trail 0x40-0x7E or 0xA1-0xFE
	MBGBK                   // gbk: lead 0x81-0xFE, trail 0x40-0x7E or 0x80-0xFE
	MBSJIS                  // sjis and cp932: lead 0x81-0x9F or 0xE0-0xFC, trail 0x40-0x7E or 0x80-0xFC
	// SBSpaceA0 is a single-byte character set in which 0xA0 (no-break space) is
	// whitespace to the lexer: latin1, latin2, latin5, latin7, cp1250, greek, hebrew,
	// armscii8, dec8, geostd8. Otherwise as MBNone.
	SBSpaceA0
	// SBSpaceFF is a single-byte character set in which 0xFF is whitespace to the
	// lexer: cp852, cp866, keybcs2. Otherwise as MBNone.
	SBSpaceFF
	nCharsets
)

// MBCharsetOf maps a character set name (character_set_client, lower or upper case) to its class:
// big5 -> MBBig5, gbk (and MySQL's gb18030, whose two-byte characters have GBK's trail
// bytes) -> MBGBK, sjis and cp932 -> MBSJIS, the single-byte sets listed at SBSpaceA0 and
// SBSpaceFF -> those, anything else MBNone.
func MBCharsetOf(name string) MBCharset {
	switch {
	case equalFoldStr(name, "big5"):
		return MBBig5
	case equalFoldStr(name, "gbk"), equalFoldStr(name, "gb18030"):
		return MBGBK
	case equalFoldStr(name, "sjis"), equalFoldStr(name, "cp932"):
		return MBSJIS
	case equalFoldStr(name, "latin1"), equalFoldStr(name, "latin2"), equalFoldStr(name, "latin5"),
		equalFoldStr(name, "latin7"), equalFoldStr(name, "cp1250"), equalFoldStr(name, "greek"),
		equalFoldStr(name, "hebrew"), equalFoldStr(name, "armscii8"), equalFoldStr(name, "dec8"),
		equalFoldStr(name, "geostd8"):
		return SBSpaceA0
	case equalFoldStr(name, "cp852"), equalFoldStr(name, "cp866"), equalFoldStr(name, "keybcs2"):
		return SBSpaceFF
	}
	return MBNone
}

// String names the class for logs.
func (c MBCharset) String() string {
	switch c {
	case MBNone:
		return "none"
	case MBBig5:
		return "big5"
	case MBGBK:
		return "gbk"
	case MBSJIS:
		return "sjis"
	case SBSpaceA0:
		return "space-a0"
	case SBSpaceFF:
		return "space-ff"
	}
	return "charset(" + strconv.Itoa(int(c)) + ")"
}

// equalFoldStr reports whether s equals the lower-case ASCII word w, ignoring the case of s.
func equalFoldStr(s, w string) bool {
	if len(s) != len(w) {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// ParseVersion reads a server version string: "10.11.19-MariaDB-0+deb12u1" -> (101119, true),
// "8.0.36" -> (80036, false), "8.4.3-log" -> (80403,false), "5.5.5-10.11.19-MariaDB" -> (101119, true)
// (MariaDB's replication-compatible prefix), "" or garbage -> (0, false). A version needs
// at least MAJOR.MINOR (PATCH defaults to 0), each part below 100 except MAJOR (below 400).
func ParseVersion(s string) (v uint32, mariadb bool) {
	v, rest, ok := parseVersionNumber(s)
	if !ok {
		return 0, false
	}
	mariadb = containsFold(s, "mariadb")
	if v == 50505 && len(rest) > 1 && rest[0] == '-' {
		// MariaDB 10+ prefixes its version with "5.5.5-" for old replicas.
		if v2, _, ok := parseVersionNumber(rest[1:]); ok {
			return v2, true
		}
	}
	return v, mariadb
}

// parseVersionNumber reads MAJOR.MINOR[.PATCH] at the start of s.
func parseVersionNumber(s string) (v uint32, rest string, ok bool) {
	var parts [3]uint32
	n := 0
	i := 0
	for n < 3 {
		start := i
		var x uint32
		for i < len(s) && '0' <= s[i] && s[i] <= '9' && i-start < 4 {
			x = x*10 + uint32(s[i]-'0')
			i++
		}
		if i == start || i < len(s) && '0' <= s[i] && s[i] <= '9' {
			return 0, s, false // no digits, or too many
		}
		parts[n] = x
		n++
		if n == 3 || i+1 >= len(s) || s[i] != '.' || s[i+1] < '0' || s[i+1] > '9' {
			break
		}
		i++ // '.'
	}
	if n < 2 || parts[0] >= 400 || parts[1] >= 100 || parts[2] >= 100 {
		return 0, s, false
	}
	return parts[0]*10000 + parts[1]*100 + parts[2], s[i:], true
}

// containsFold reports whether s contains the lower-case ASCII word w, ignoring case.
func containsFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if equalFoldStr(s[i:i+len(w)], w) {
			return true
		}
	}
	return false
}

// Byte classes, per character set class. They follow the server's lexer: cIdent bytes
// continue an unquoted identifier (where a lead byte followed by a trail byte is one
// character), cSys bytes the first part of a system variable name and cHost bytes a
// user variable name (both of which the server walks byte by byte, not character by
// character), cSpace bytes are whitespace, cLead and cTrail make up a multi-byte
// character.
const (
	cIdent uint8 = 1 << iota
	cSys
	cHost
	cSpace
	cLead
	cTrail
)

var charClasses = buildCharClasses()

func buildCharClasses() (t [nCharsets][256]uint8) {
	for cs := MBCharset(0); cs < nCharsets; cs++ {
		tab := &t[cs]
		for i := 0; i < 256; i++ {
			c := byte(i)
			switch {
			case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '$':
				tab[i] = cIdent | cSys | cHost
			case c == '.':
				tab[i] = cHost // @a.b is one user variable name
			case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
				tab[i] = cSpace
			case c >= 0x80:
				// A byte above 0x7F starts or continues an identifier here even where
				// the server takes it for a one-byte token of its own: that token is
				// a syntax error, and the way bytes pair up into characters is the
				// same either way.
				tab[i] = cIdent
				if lead, _ := mbRange(cs, c); lead {
					tab[i] |= cLead
				}
				if _, trail := mbRange(cs, c); trail {
					tab[i] |= cTrail
				}
				tab[i] |= highSysHost(cs, c)
				if cs == SBSpaceA0 && c == 0xA0 || cs == SBSpaceFF && c == 0xFF {
					tab[i] = cSpace
				}
			}
		}
		// ASCII trail bytes: only their cTrail bit differs from the table above.
		for i := 0x40; i <= 0x7E; i++ {
			if _, trail := mbRange(cs, byte(i)); trail {
				tab[i] |= cTrail
			}
		}
	}
	return t
}

// mbRange tells whether c can lead, and whether it can end, a two-byte character of cs.
func mbRange(cs MBCharset, c byte) (lead, trail bool) {
	switch cs {
	case MBBig5:
		return 0xA1 <= c && c <= 0xF9, 0x40 <= c && c <= 0x7E || 0xA1 <= c && c <= 0xFE
	case MBGBK:
		return 0x81 <= c && c <= 0xFE, 0x40 <= c && c <= 0x7E || 0x80 <= c && c <= 0xFE
	case MBSJIS:
		return 0x81 <= c && c <= 0x9F || 0xE0 <= c && c <= 0xFC, 0x40 <= c && c <= 0x7E || 0x80 <= c && c <= 0xFC
	}
	return false, false
}

// highSysHost gives the cSys and cHost bits of a byte above 0x7F: the server's
// ident_map (letters and lead bytes) and my_isalnum (letters) of the character set.
// Without lead bytes the answer does not matter (no ASCII byte hides in a character),
// so every such byte counts.
func highSysHost(cs MBCharset, c byte) uint8 {
	switch cs {
	case MBGBK: // ctype_gbk: letters 0xA1-0xFE; leads 0x81-0xFE
		var b uint8
		if 0x81 <= c && c <= 0xFE {
			b |= cSys
		}
		if 0xA1 <= c && c <= 0xFE {
			b |= cHost
		}
		return b
	case MBBig5: // ctype_big5: letters are exactly the leads 0xA1-0xF9
		if 0xA1 <= c && c <= 0xF9 {
			return cSys | cHost
		}
		return 0
	case MBSJIS: // ctype_sjis: no letters above 0x7F
		if lead, _ := mbRange(cs, c); lead {
			return cSys
		}
		return 0
	}
	return cSys | cHost
}
