package sqllex

import (
	"strings"
	"unicode"
)

// Statement is one statement of a script, the line (1-based) it starts
// on, for messages, and the byte offset of Text in the script, for
// positions.
type Statement struct {
	Text  string
	Line  int
	Start int
}

// Split cuts a script at the semicolons that end statements, as DuckDB's
// lexer reads them: not inside a string ('…', E'…' with backslash
// escapes), a quoted name ("…"), a dollar-quoted string ($$…$$,
// $tag$…$tag$), a -- comment or a /* */ comment (which nest). Statements
// holding nothing but white space and comments are left out. Text that
// ends inside a quote or comment is one last statement, for DuckDB to
// refuse with its own message.
func Split(script string) []Statement {
	var out []Statement
	start, line, startLine := 0, 1, 1
	emit := func(end int) {
		text := script[start:end]
		if !onlySpaceAndComments(text) {
			lead := len(text) - len(strings.TrimLeftFunc(text, unicode.IsSpace))
			out = append(out, Statement{Text: strings.TrimSpace(text), Line: startLine + leadingLines(text), Start: start + lead})
		}
	}
	walk(script, func(i int) {
		switch script[i] {
		case '\n':
			line++
		case ';':
			emit(i)
			start, startLine = i+1, line
		}
	}, func(from, to int) { line += strings.Count(script[from:to], "\n") })
	emit(len(script))
	return out
}

// Placeholder is one $n parameter of a statement: its number and where
// its text is.
type Placeholder struct {
	N          int
	Start, End int
}

// Placeholders finds a statement's $n parameters, as DuckDB's and
// PostgreSQL's lexers read them: not inside strings, quoted names,
// dollar-quoted strings or comments, nor part of a name (a$1).
func Placeholders(stmt string) []Placeholder {
	var out []Placeholder
	walk(stmt, func(i int) {
		if stmt[i] != '$' || (i > 0 && IsNamePart(stmt[i-1])) {
			return
		}
		j := i + 1
		n := 0
		for j < len(stmt) && IsDigit(stmt[j]) && n < 1<<20 {
			n = n*10 + int(stmt[j]-'0')
			j++
		}
		if j > i+1 {
			out = append(out, Placeholder{N: n, Start: i, End: j})
		}
	}, nil)
	return out
}

// Mask is s with every string, quoted name, dollar-quoted string and
// comment blanked out (each byte a space), offsets kept: what is left is
// the statement's keywords, names, operators and parameters, for callers
// that match patterns on them.
func Mask(s string) string {
	b := []byte(s)
	walk(s, func(int) {}, func(from, to int) {
		for i := from; i < to; i++ {
			b[i] = ' '
		}
	})
	return string(b)
}

// walk calls visit with the offset of every byte of script outside
// strings ('…', E'…' with backslash escapes), quoted names ("…"),
// dollar-quoted strings ($$…$$, $tag$…$tag$), -- comments and /* */
// comments (which nest), in order, and skipped (when not nil) with each
// span [from, to) it steps over. Text that ends inside a quote or comment
// is skipped to its end.
func walk(script string, visit func(i int), skipped func(from, to int)) {
	skip := func(from, to int) int {
		if skipped != nil {
			skipped(from, to)
		}
		return to
	}
	for i := 0; i < len(script); {
		c := script[i]
		switch {
		case c == '-' && strings.HasPrefix(script[i:], "--"):
			j := strings.IndexByte(script[i:], '\n')
			if j < 0 {
				i = skip(i, len(script))
			} else {
				i = skip(i, i+j)
			}
		case c == '/' && strings.HasPrefix(script[i:], "/*"):
			i = skip(i, blockCommentEnd(script, i))
		case c == '\'' || c == '"':
			i = skip(i, quotedEnd(script, i, c, (c == '\'') && i > 0 && (script[i-1] == 'E' || script[i-1] == 'e') && (i < 2 || !IsNamePart(script[i-2]))))
		case c == '$' && (i == 0 || !IsNamePart(script[i-1])):
			if end := dollarEnd(script, i); end > i+1 {
				i = skip(i, end)
				continue
			}
			visit(i)
			i++
		default:
			visit(i)
			i++
		}
	}
}

// LeadingKeyword is a statement's first word, upper-cased, after white
// space, comments and opening parentheses ("" when it starts otherwise).
func LeadingKeyword(q string) string {
	for i := 0; i < len(q); {
		switch {
		case q[i] == ' ' || q[i] == '\t' || q[i] == '\n' || q[i] == '\r' || q[i] == '(':
			i++
		case strings.HasPrefix(q[i:], "--"):
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				return ""
			}
			i += j
		case strings.HasPrefix(q[i:], "/*"):
			j := strings.Index(q[i:], "*/")
			if j < 0 {
				return ""
			}
			i += j + 2
		default:
			j := i
			for j < len(q) && IsNamePart(q[j]) {
				j++
			}
			return strings.ToUpper(q[i:j])
		}
	}
	return ""
}

// quotedEnd is the offset after the quote closing the one at off; a
// doubled quote stands for itself, and in an E'…' string a backslash
// escapes the next byte.
func quotedEnd(s string, off int, q byte, backslash bool) int {
	for i := off + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if backslash {
				i++
			}
		case q:
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return len(s)
}

// blockCommentEnd is the offset after the */ closing the /* at off,
// counting nested ones.
func blockCommentEnd(s string, off int) int {
	depth := 0
	for i := off; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "/*"):
			depth++
			i += 2
		case strings.HasPrefix(s[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return len(s)
}

// dollarEnd is the offset after a dollar-quoted string opening at off
// ($$ or $tag$, the tag a name), or off+1 when the $ opens none (a
// parameter such as $1).
func dollarEnd(s string, off int) int {
	j := off + 1
	for j < len(s) && IsNamePart(s[j]) && s[j] != '$' {
		j++
	}
	if j >= len(s) || s[j] != '$' || (j > off+1 && IsDigit(s[off+1])) {
		return off + 1
	}
	tag := s[off : j+1]
	k := strings.Index(s[j+1:], tag)
	if k < 0 {
		return len(s)
	}
	return j + 1 + k + len(tag)
}

// onlySpaceAndComments reports whether a statement holds no SQL.
func onlySpaceAndComments(s string) bool {
	for i := 0; i < len(s); {
		switch {
		case s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r':
			i++
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return true
			}
			i += j
		case strings.HasPrefix(s[i:], "/*"):
			i = blockCommentEnd(s, i)
		default:
			return false
		}
	}
	return true
}

// leadingLines counts the line breaks before a statement's first byte of
// SQL, so its line is where its text starts, not where the previous one
// ended.
func leadingLines(s string) int {
	n := 0
	for i := 0; i < len(s); {
		switch {
		case s[i] == '\n':
			n++
			i++
		case s[i] == ' ' || s[i] == '\t' || s[i] == '\r':
			i++
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return n
			}
			i += j
		case strings.HasPrefix(s[i:], "/*"):
			end := blockCommentEnd(s, i)
			n += strings.Count(s[i:end], "\n")
			i = end
		default:
			return n
		}
	}
	return n
}
