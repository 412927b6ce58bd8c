// Package sqllex scans the pieces of DuckDB's SQL syntax that the predicate
// parser (package expr) and the type parser (package types) read alike:
// white space, quoted names and strings, and unquoted names.
//
// The two lexers stay apart: the type lexer reads no comments, only whole
// numbers, no '$' in a name and no operators but ( ) [ ] ,. Giving it the
// predicate lexer's tokens would make ParseType (and so the column lists
// of package catalog) accept text it refuses, and name other tokens in its
// errors; keeping both behaviours in one lexer would take a switch for
// each of these differences.
package sqllex

import "strings"

// SkipSpace returns the offset of the first byte at or after off that is
// not white space.
func SkipSpace(s string, off int) int {
	for off < len(s) && (s[off] == ' ' || s[off] == '\t' || s[off] == '\n' || s[off] == '\r') {
		off++
	}
	return off
}

// Quoted reads the quoted name ("…") or string ('…') whose opening quote
// is s[off]. Inside, the quote doubled stands for itself, the only escape
// DuckDB knows in either. It returns the text between the quotes and the
// offset after the closing one; with no closing quote, ok is false and end
// is len(s).
func Quoted(s string, off int) (text string, end int, ok bool) {
	q := s[off]
	var sb strings.Builder
	for i := off + 1; ; {
		j := strings.IndexByte(s[i:], q)
		if j < 0 {
			return "", len(s), false
		}
		sb.WriteString(s[i : i+j])
		i += j + 1
		if i < len(s) && s[i] == q {
			sb.WriteByte(q)
			i++
			continue
		}
		return sb.String(), i, true
	}
}

// QuoteName writes a name as a quoted identifier ("…", the quote doubled
// inside), which DuckDB reads back as exactly that name.
func QuoteName(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// QuoteString quotes s as an SQL string literal.
func QuoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// IsNameStart reports whether an unquoted name (an identifier or a
// keyword) may start with c. Every byte of a multi-byte UTF-8 character
// counts as a letter, as in DuckDB, whatever the character.
func IsNameStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80
}

// IsNamePart reports whether c may continue an unquoted name.
func IsNamePart(c byte) bool { return IsNameStart(c) || IsDigit(c) }

// IsDigit reports whether c is an ASCII digit.
func IsDigit(c byte) bool { return '0' <= c && c <= '9' }
