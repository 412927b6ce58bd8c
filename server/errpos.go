package server

import (
	"strings"
	"unicode/utf8"

	"github.com/rocklake/rocklake/engine"
)

// clientText is a statement as the client sent it: the whole text of its
// Query or Parse message, and where in it the statement is.
type clientText struct {
	script string
	at     int // byte offset of stmt in script
	stmt   string
}

// position maps a query error's position, in the text rocklake ran, into
// the client's message (1-based characters, as ErrorResponse carries it;
// 0 for none). The text ran is the client's statement itself, the
// statement inside a wrapper of the server's (a Describe's LIMIT 0), or
// the statement with its parameters' literals in: a position after the
// first parameter is left out there rather than guessed.
func (c clientText) position(qe *engine.QueryError) int {
	if qe.Position <= 0 || c.stmt == "" {
		return 0
	}
	off, ok := byteOffset(qe.Query, qe.Position)
	if !ok {
		return 0
	}
	stmt := strings.TrimRight(c.stmt, "; \t\r\n")
	at := -1
	switch i := strings.Index(qe.Query, stmt); {
	case qe.Query == stmt:
		at = off
	case i >= 0 && off >= i && off <= i+len(stmt):
		at = off - i
	default:
		n := 0 // the texts agree up to the first parameter
		for n < len(stmt) && n < len(qe.Query) && stmt[n] == qe.Query[n] {
			n++
		}
		if off < n {
			at = off
		}
	}
	if at < 0 || c.at+at > len(c.script) {
		return 0
	}
	return utf8.RuneCountInString(c.script[:c.at+at]) + 1
}

// byteOffset is the byte offset of 1-based character pos in s.
func byteOffset(s string, pos int) (int, bool) {
	n := 1
	for i := range s {
		if n == pos {
			return i, true
		}
		n++
	}
	return len(s), n == pos
}
