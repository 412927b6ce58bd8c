package writesql

import (
	"fmt"
	"slices"
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
	sets, err := setList(rest[:end], "UPDATE")
	if err != nil {
		return err
	}
	if st.Sets = sets; len(sets) == 0 {
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

// setList reads SET's `col = expr, ...`, each column once.
func setList(text, verb string) ([]Assignment, error) {
	var out []Assignment
	for _, part := range splitTop(text) {
		a, err := assignment(part)
		if err != nil {
			return nil, err
		}
		for _, prev := range out {
			if strings.EqualFold(prev.Column, a.Column) {
				return nil, fmt.Errorf("%s: column %q is assigned twice", verb, a.Column)
			}
		}
		out = append(out, a)
	}
	return out, nil
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

// topWords are the unquoted words of s outside parentheses, CASE
// expressions, strings, quoted names and comments.
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
			// CASE ... END nests as a parenthesis does: its WHEN and THEN
			// are not a MERGE's.
			switch w := strings.ToUpper(m[i:j]); {
			case w == "CASE":
				depth++
			case w == "END" && depth > 0:
				depth--
			case depth == 0:
				out = append(out, topWord{w, i})
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

// MergeAction is what a MERGE's WHEN clause does.
type MergeAction int

const (
	DoNothing MergeAction = iota
	MergeUpdate
	MergeDelete
	MergeInsert
)

// MergeClause is one WHEN clause of a MERGE.
type MergeClause struct {
	// Matched: WHEN MATCHED; else WHEN NOT MATCHED, by the target (a
	// source row no target row matches) or, with BySource, by the source
	// (a target row no source row matches).
	Matched  bool
	BySource bool
	Cond     string // its AND condition; "" for none
	Action   MergeAction
	Sets     []Assignment // UPDATE SET's
	// Columns and Values are INSERT's column list (nil: every column, in
	// order) and value expressions; DefaultValues is INSERT DEFAULT
	// VALUES.
	Columns       []string
	Values        []string
	DefaultValues bool
}

func (s *scanner) merge(st *Statement) error {
	if s.word() != "INTO" {
		return s.expected("INTO after MERGE")
	}
	if err := s.target(st); err != nil {
		return err
	}
	if err := s.alias(st, "USING"); err != nil {
		return err
	}
	if s.word() != "USING" {
		return s.expected("USING and a source after the table")
	}
	rest := s.src[s.off:]
	words := topWords(rest)
	on, when := -1, -1
	for _, w := range words {
		switch {
		case w.word == "ON" && on < 0:
			on = w.at
		case w.word == "JOIN" && on < 0:
			return fmt.Errorf("MERGE ... USING %s: %w: put a joined source in parentheses, (SELECT ... FROM a JOIN b ...) AS s", clip(rest[w.at:]), ErrUnsupported)
		case w.word == "USING" && on < 0:
			return fmt.Errorf("MERGE ... USING source USING (columns): %w: write the condition with ON", ErrUnsupported)
		case w.word == "WHEN" && when < 0:
			when = w.at
		case w.word == "RETURNING":
			return fmt.Errorf("MERGE ... RETURNING: %w: the statement returns the count of rows changed", ErrUnsupported)
		}
	}
	if on < 0 {
		return fmt.Errorf("syntax error in MERGE: expected ON and a condition after the source")
	}
	if when < 0 || when < on {
		return fmt.Errorf("syntax error in MERGE: expected WHEN MATCHED or WHEN NOT MATCHED after the condition")
	}
	if st.From = trimTail(rest[:on]); st.From == "" {
		return fmt.Errorf("syntax error in MERGE: expected a source after USING")
	}
	if st.Where = trimTail(rest[on+len("ON") : when]); st.Where == "" {
		return fmt.Errorf("syntax error in MERGE: expected a condition after ON")
	}
	// Each WHEN starts a clause.
	var starts []int
	for _, w := range words {
		if w.word == "WHEN" && w.at >= when {
			starts = append(starts, w.at)
		}
	}
	for i, at := range starts {
		end := len(rest)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		c, err := mergeClause(rest[at+len("WHEN") : end])
		if err != nil {
			return err
		}
		if c.Cond == "" && slices.ContainsFunc(st.When, func(p MergeClause) bool {
			return p.Cond == "" && p.Matched == c.Matched && p.BySource == c.BySource
		}) {
			return fmt.Errorf("MERGE: a second unconditional WHEN %s clause: only one of each kind is allowed (DuckDB's rule)", c.kind())
		}
		st.When = append(st.When, c)
	}
	return nil
}

// kind names the clause's kind as it is written.
func (c MergeClause) kind() string {
	switch {
	case c.Matched:
		return "MATCHED"
	case c.BySource:
		return "NOT MATCHED BY SOURCE"
	}
	return "NOT MATCHED"
}

// mergeClause reads one WHEN clause, after its WHEN.
func mergeClause(text string) (MergeClause, error) {
	var c MergeClause
	words := topWords(text)
	then := slices.IndexFunc(words, func(w topWord) bool { return w.word == "THEN" })
	if then < 0 {
		return c, fmt.Errorf("syntax error in MERGE: expected THEN in WHEN %s", clip(text))
	}
	head := words[:then]
	k := 0
	next := func(w string) bool {
		if k < len(head) && head[k].word == w {
			k++
			return true
		}
		return false
	}
	switch {
	case next("MATCHED"):
		c.Matched = true
	case next("NOT") && next("MATCHED"):
		if next("BY") {
			switch {
			case next("SOURCE"):
				c.BySource = true
			case next("TARGET"):
			default:
				return c, fmt.Errorf("syntax error in MERGE: expected SOURCE or TARGET after WHEN NOT MATCHED BY")
			}
		}
	default:
		return c, fmt.Errorf("syntax error in MERGE: expected MATCHED or NOT MATCHED after WHEN")
	}
	if k < len(head) {
		if head[k].word != "AND" {
			return c, fmt.Errorf("syntax error in MERGE at or near %q: expected AND or THEN", clip(text[head[k].at:]))
		}
		if c.Cond = trimTail(text[head[k].at+len("AND") : words[then].at]); c.Cond == "" {
			return c, fmt.Errorf("syntax error in MERGE: expected a condition after AND")
		}
	}
	act := text[words[then].at+len("THEN"):]
	s := &scanner{src: act}
	switch w := s.word(); w {
	case "DELETE":
		c.Action = MergeDelete
		if !c.Matched && !c.BySource {
			return c, fmt.Errorf("MERGE: WHEN NOT MATCHED THEN DELETE: there is no target row to delete (use WHEN NOT MATCHED BY SOURCE)")
		}
		return c, s.end()
	case "DO":
		if s.word() != "NOTHING" {
			return c, s.expected("NOTHING after DO")
		}
		return c, s.end()
	case "UPDATE":
		if !c.Matched && !c.BySource {
			return c, fmt.Errorf("MERGE: WHEN NOT MATCHED THEN UPDATE: there is no target row to update (use WHEN NOT MATCHED BY SOURCE)")
		}
		if s.word() != "SET" {
			return c, fmt.Errorf("MERGE ... THEN UPDATE without SET: %w: list the columns (UPDATE SET col = expr, ...)", ErrUnsupported)
		}
		if s.peekByte() == '*' {
			return c, fmt.Errorf("MERGE ... THEN UPDATE SET *: %w: list the columns (UPDATE SET col = expr, ...)", ErrUnsupported)
		}
		c.Action = MergeUpdate
		sets, err := setList(act[s.off:], "MERGE")
		if err != nil {
			return c, err
		}
		if c.Sets = sets; len(sets) == 0 {
			return c, fmt.Errorf("syntax error in MERGE: expected col = expr after UPDATE SET")
		}
		return c, nil
	case "INSERT":
		if c.Matched || c.BySource {
			return c, fmt.Errorf("MERGE: INSERT belongs to WHEN NOT MATCHED [BY TARGET]: a matched row exists already")
		}
		c.Action = MergeInsert
		save := s.off
		switch s.word() {
		case "DEFAULT":
			if s.word() != "VALUES" {
				return c, s.expected("VALUES after DEFAULT")
			}
			c.DefaultValues = true
			return c, s.end()
		case "BY":
			return c, fmt.Errorf("MERGE ... THEN INSERT BY NAME: %w: list the columns and VALUES", ErrUnsupported)
		case "VALUES":
			s.off = save
		default:
			s.off = save
			if s.peekByte() == '*' {
				return c, fmt.Errorf("MERGE ... THEN INSERT *: %w: list the columns and VALUES", ErrUnsupported)
			}
			if s.peekByte() != '(' {
				return c, s.expected("a column list or VALUES after INSERT")
			}
			open := s.skip()
			if !s.skipParens() {
				return c, s.expected("a closing parenthesis after the column list")
			}
			for _, n := range splitTop(act[open+1 : s.off-1]) {
				ns := &scanner{src: n}
				name, _, ok := ns.name()
				if !ok || ns.end() != nil {
					return c, fmt.Errorf("syntax error in MERGE: %q is not a column name", strings.TrimSpace(n))
				}
				c.Columns = append(c.Columns, name)
			}
		}
		if s.word() != "VALUES" {
			return c, s.expected("VALUES after INSERT's columns")
		}
		if s.peekByte() != '(' {
			return c, s.expected("a parenthesised value list")
		}
		open := s.skip()
		if !s.skipParens() {
			return c, s.expected("a closing parenthesis after the values")
		}
		for _, v := range splitTop(act[open+1 : s.off-1]) {
			if v = trimTail(v); v == "" {
				return c, fmt.Errorf("syntax error in MERGE: an empty value in INSERT's VALUES")
			}
			c.Values = append(c.Values, v)
		}
		return c, s.end()
	case "ERROR":
		return c, fmt.Errorf("MERGE ... THEN ERROR: %w", ErrUnsupported)
	}
	return c, fmt.Errorf("syntax error in MERGE at or near %q: expected UPDATE, DELETE, INSERT or DO NOTHING after THEN", clip(act))
}
