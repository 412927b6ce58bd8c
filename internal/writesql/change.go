package writesql

import (
	"fmt"
	"strings"

	"github.com/rocklake/rocklake/internal/sqllex"
)

// Assignment is one `col = expr` of an UPDATE's SET list.
type Assignment struct {
	Column string // unquoted
	Expr   string // the expression's text
}

func (s *scanner) delete(st *Statement) error {
	if s.word() != "FROM" {
		return s.expected("FROM after DELETE")
	}
	if err := s.target(st); err != nil {
		return err
	}
	if err := s.alias(st, "USING", "WHERE", "RETURNING"); err != nil {
		return err
	}
	return s.clauses(st, "USING")
}

func (s *scanner) update(st *Statement) error {
	if err := s.target(st); err != nil {
		return err
	}
	if err := s.alias(st, "SET"); err != nil {
		return err
	}
	if s.word() != "SET" {
		return s.expected("SET after the table")
	}
	rest := s.src[s.off:]
	words := topWords(rest)
	end := len(rest)
	for i, w := range words {
		// a IS [NOT] DISTINCT FROM b is an expression, not the clause.
		distinct := i > 0 && words[i-1].word == "DISTINCT"
		if w.word == "FROM" && !distinct || w.word == "WHERE" || w.word == "RETURNING" {
			end = w.at
			break
		}
	}
	for _, part := range splitTop(rest[:end]) {
		a, err := assignment(part)
		if err != nil {
			return err
		}
		for _, prev := range st.Sets {
			if strings.EqualFold(prev.Column, a.Column) {
				return fmt.Errorf("UPDATE: column %q is assigned twice", a.Column)
			}
		}
		st.Sets = append(st.Sets, a)
	}
	if len(st.Sets) == 0 {
		return s.expected("col = expr after SET")
	}
	s.off += end
	return s.clauses(st, "FROM")
}

// alias reads the target's alias, if one follows ([AS] name) before one
// of the clause words next.
func (s *scanner) alias(st *Statement, next ...string) error {
	save := s.off
	w := s.word()
	if w == "AS" {
		n, _, ok := s.name()
		if !ok {
			return s.expected("an alias after AS")
		}
		st.Alias = n
		return nil
	}
	s.off = save
	for _, n := range next {
		if w == n {
			return nil
		}
	}
	if w == "" && s.peekByte() != '"' {
		return nil
	}
	n, _, ok := s.name()
	if !ok {
		return s.expected("an alias or " + strings.Join(next, ", "))
	}
	st.Alias = n
	return nil
}

// clauses reads what follows a DELETE's or UPDATE's target: [list WORD
// from_item, ...] [WHERE condition], and refuses RETURNING.
func (s *scanner) clauses(st *Statement, list string) error {
	rest := s.src[s.off:]
	words := topWords(rest)
	at := sqllex.SkipSpace(rest, 0)
	for _, w := range words {
		if w.word == "RETURNING" {
			return fmt.Errorf("%s ... RETURNING: %w: the statement returns the count of rows changed", st.Kind.Verb(), ErrUnsupported)
		}
	}
	if at >= len(rest) {
		return nil
	}
	where := -1
	for _, w := range words {
		if w.word == "WHERE" {
			where = w.at
			break
		}
	}
	head := rest
	if where >= 0 {
		head = rest[:where]
		st.Where = trimTail(rest[where+len("WHERE"):])
		if st.Where == "" {
			return fmt.Errorf("syntax error at end of statement: expected a condition after WHERE")
		}
	}
	if h := trimTail(head); h != "" {
		hw := topWords(h)
		if len(hw) == 0 || hw[0].at != 0 || hw[0].word != list {
			return fmt.Errorf("syntax error at or near %q: expected %s or WHERE", clip(h), list)
		}
		st.From = trimTail(h[len(list):])
		if st.From == "" {
			return fmt.Errorf("syntax error: expected a table after %s", list)
		}
	}
	return nil
}

// assignment reads `col = expr`.
func assignment(part string) (Assignment, error) {
	s := &scanner{src: part}
	if s.peekByte() == '(' {
		return Assignment{}, fmt.Errorf("UPDATE ... SET (a, b) = ...: %w: assign each column on its own", ErrUnsupported)
	}
	name, _, ok := s.name()
	if !ok {
		return Assignment{}, s.expected("a column name in SET")
	}
	if s.peekByte() == '.' {
		return Assignment{}, fmt.Errorf("UPDATE ... SET %s.…: %w: name the column alone", name, ErrUnsupported)
	}
	if s.peekByte() != '=' {
		return Assignment{}, s.expected("= after column " + name)
	}
	s.off = s.skip() + 1
	x := trimTail(s.src[s.off:])
	if x == "" {
		return Assignment{}, fmt.Errorf("syntax error: expected an expression after %s =", name)
	}
	return Assignment{Column: name, Expr: x}, nil
}

type topWord struct {
	word string // upper-cased
	at   int
}

// topWords are the unquoted words of s outside parentheses, strings,
// quoted names and comments.
func topWords(s string) []topWord {
	m := sqllex.Mask(s)
	var out []topWord
	depth := 0
	for i := 0; i < len(m); {
		c := m[i]
		switch {
		case c == '(' || c == '[' || c == '{':
			depth++
			i++
		case c == ')' || c == ']' || c == '}':
			depth--
			i++
		case sqllex.IsNameStart(c) && (i == 0 || !sqllex.IsNamePart(m[i-1])):
			j := i
			for j < len(m) && sqllex.IsNamePart(m[j]) {
				j++
			}
			if depth == 0 {
				out = append(out, topWord{strings.ToUpper(m[i:j]), i})
			}
			i = j
		default:
			i++
		}
	}
	return out
}

// splitTop splits s at its commas outside parentheses, strings, quoted
// names and comments.
func splitTop(s string) []string {
	m := sqllex.Mask(s)
	var out []string
	depth, from := 0, 0
	for i := 0; i < len(m); i++ {
		switch m[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[from:i])
				from = i + 1
			}
		}
	}
	if strings.TrimSpace(s[from:]) != "" || len(out) > 0 {
		out = append(out, s[from:])
	}
	return out
}

// Rows is the query that finds a DELETE's or UPDATE's rows: selecting
// list (expressions over the target, by its alias or name, and the other
// FROM items) from the target and its USING or FROM list, where the
// condition holds. at is where the target's name starts in it.
func (st *Statement) Rows(list string) (query string, at int) {
	var b strings.Builder
	b.WriteString("SELECT ")
	b.WriteString(list)
	b.WriteString(" FROM ")
	at = b.Len()
	b.WriteString(sqllex.QuoteName(st.Table))
	if st.Alias != "" {
		b.WriteString(" AS " + sqllex.QuoteName(st.Alias))
	}
	if st.From != "" {
		// A join binds tighter than the comma: the list stays one item
		// whatever it holds.
		b.WriteString(", " + st.From + "\n")
	}
	if st.Where != "" {
		b.WriteString(" WHERE (" + st.Where + "\n)")
	}
	return b.String(), at
}

// Qualifier is the name a DELETE's or UPDATE's condition knows the target
// by: its alias, or its name.
func (st *Statement) Qualifier() string {
	if st.Alias != "" {
		return st.Alias
	}
	return st.Table
}

// trimTail is x without the white space and comments around it.
func trimTail(x string) string {
	s := &scanner{src: x}
	first, last := -1, 0
	for {
		at := s.skip()
		if at >= len(x) {
			break
		}
		if first < 0 {
			first = at
		}
		if c := x[at]; c == '\'' || c == '"' {
			_, end, ok := sqllex.Quoted(x, at)
			if !ok {
				return strings.TrimSpace(x)
			}
			s.off = end
		} else {
			s.off = at + 1
		}
		last = s.off
	}
	if first < 0 {
		return ""
	}
	return x[first:last]
}
