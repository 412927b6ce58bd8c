// Package writesql reads the heads of the SQL statements that write to a
// catalog table: INSERT, CREATE TABLE [AS] and COPY ... FROM. DuckDB's
// parser serialises SELECT statements only (json_serialize_sql), so the
// words before a write's query are read here; the query itself, and every
// option, stay text for DuckDB to parse where it runs them:
//
//	INSERT INTO name [[AS] alias] [BY NAME | BY POSITION] [(col, ...)] query | DEFAULT VALUES
//	CREATE TABLE [IF NOT EXISTS] name AS query
//	CREATE TABLE [IF NOT EXISTS] name (col type, ...)
//	COPY name [(col, ...)] FROM 'path' | STDIN [[WITH] (option, ...)]
//	DELETE FROM name [[AS] alias] [USING from_item, ...] [WHERE condition]
//	UPDATE name [[AS] alias] SET col = expr, ... [FROM from_item, ...] [WHERE condition]
//	MERGE INTO name [[AS] alias] USING source ON condition
//	    WHEN MATCHED [AND condition] THEN UPDATE SET col = expr, ... | DELETE | DO NOTHING
//	    WHEN NOT MATCHED [BY TARGET] [AND condition] THEN INSERT [(col, ...)] VALUES (expr, ...) | INSERT DEFAULT VALUES | DO NOTHING
//	    WHEN NOT MATCHED BY SOURCE [AND condition] THEN UPDATE SET ... | DELETE | DO NOTHING
//
// A write is run by DuckDB over a temporary table of the target's columns
// (Statement.Over): the statement's own text, with only the target's name
// replaced, so that column lists, BY NAME, VALUES, DEFAULT VALUES and COPY
// options mean exactly what they mean in DuckDB. A DELETE or an UPDATE
// becomes a query instead (Statement.Rows): its target and lists in a
// FROM, its condition the WHERE, each assignment an expression of the
// select list, for DuckDB to evaluate over the target's candidate rows.
package writesql

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rocklake/rocklake/internal/sqllex"
)

// Kind is the statement a write is.
type Kind int

const (
	Insert      Kind = iota + 1 // INSERT INTO ... query | DEFAULT VALUES
	CreateAs                    // CREATE TABLE ... AS query
	CreateTable                 // CREATE TABLE ... (columns)
	Copy                        // COPY ... FROM 'path' | STDIN
	Delete                      // DELETE FROM ... [USING ...] [WHERE ...]
	Update                      // UPDATE ... SET ... [FROM ...] [WHERE ...]
	Merge                       // MERGE INTO ... USING ... ON ... WHEN ...
)

// Verb is the statement's name in messages and PostgreSQL command tags.
func (k Kind) Verb() string {
	switch k {
	case Insert:
		return "INSERT"
	case CreateAs:
		return "CREATE TABLE AS"
	case CreateTable:
		return "CREATE TABLE"
	case Copy:
		return "COPY"
	case Delete:
		return "DELETE"
	case Update:
		return "UPDATE"
	case Merge:
		return "MERGE"
	}
	return "?"
}

// Statement is a write, read.
type Statement struct {
	Kind  Kind
	Table string // the target, unquoted
	// Query is the text of the rows' query (INSERT, CREATE TABLE AS);
	// "" for DEFAULT VALUES and the other kinds.
	Query string
	// Columns is the text inside CREATE TABLE's parentheses.
	Columns string
	// Path is COPY's file ("" for STDIN); Stdin says COPY reads the
	// client's data.
	Path  string
	Stdin bool
	// Options is COPY's option list, with its parentheses, or "".
	Options     string
	IfNotExists bool
	// Alias is a DELETE's or UPDATE's name for its target ("" for none);
	// From is the text of DELETE's USING list or UPDATE's FROM list, Where
	// that of the condition ("" for none), Sets UPDATE's assignments.
	Alias string
	From  string
	Where string
	Sets  []Assignment
	// A MERGE's source (its USING item, with its alias) is From, its ON
	// condition Where, its WHEN clauses When.
	When []MergeClause

	text       string
	nameAt     [2]int // the target name's span in text
	queryAt    int    // where Query starts in text (-1: none)
	pathAt     [2]int // COPY's 'path' or STDIN span
	optionsEnd int
}

// ErrNotWrite is returned by Parse for a statement that is none of the
// writes (a query, or a statement rocklake does not run).
var ErrNotWrite = errors.New("not a write")

// ErrUnsupported is a write rocklake recognises but does not run (OR
// REPLACE, a temporary table, ON CONFLICT, RETURNING, a two-part name);
// the message says which.
var ErrUnsupported = errors.New("not supported")

// Is reports whether q starts as a write statement does: INSERT,
// CREATE [OR REPLACE] [TEMP] TABLE, COPY name ... FROM, DELETE, UPDATE or
// MERGE. Parse says
// whether it is a well-formed one.
func Is(q string) bool {
	s := &scanner{src: q}
	switch s.word() {
	case "INSERT":
		return true
	case "CREATE":
		for {
			switch s.word() {
			case "OR", "REPLACE", "TEMP", "TEMPORARY":
				continue
			case "TABLE":
				return true
			}
			return false
		}
	case "DELETE", "UPDATE", "MERGE":
		return true
	case "COPY":
		// COPY (query) TO and COPY t TO are exports, not writes.
		if s.peekByte() == '(' {
			return false
		}
		if _, _, ok := s.name(); !ok {
			return false
		}
		if s.peekByte() == '(' {
			s.skipParens()
		}
		return s.word() == "FROM"
	}
	return false
}

// Parse reads a write statement. A statement that is not a write is
// ErrNotWrite; a malformed one says what was expected where.
func Parse(q string) (*Statement, error) {
	q = strings.TrimRight(q, "; \t\r\n")
	s := &scanner{src: q}
	st := &Statement{text: q, queryAt: -1}
	switch s.word() {
	case "INSERT":
		st.Kind = Insert
		return st, s.insert(st)
	case "CREATE":
		return st, s.create(st)
	case "COPY":
		st.Kind = Copy
		return st, s.copyFrom(st)
	case "DELETE":
		st.Kind = Delete
		return st, s.delete(st)
	case "UPDATE":
		st.Kind = Update
		return st, s.update(st)
	case "MERGE":
		st.Kind = Merge
		return st, s.merge(st)
	}
	return nil, ErrNotWrite
}

func (s *scanner) insert(st *Statement) error {
	w := s.word()
	if w == "OR" {
		return fmt.Errorf("INSERT OR %s: %w: rocklake tables have no keys to conflict on", s.word(), ErrUnsupported)
	}
	if w != "INTO" {
		return s.expected("INTO after INSERT")
	}
	if err := s.target(st); err != nil {
		return err
	}
	save := s.off
	switch s.word() {
	case "AS":
		if _, _, ok := s.name(); !ok {
			return s.expected("an alias after AS")
		}
	case "BY", "DEFAULT", "VALUES", "SELECT", "FROM", "WITH", "TABLE", "PIVOT", "UNPIVOT", "":
		s.off = save
	default:
		s.off = save
		if s.peekByte() != '(' {
			s.name() // an alias without AS
		}
	}
	save = s.off
	if s.word() == "BY" {
		if w := s.word(); w != "NAME" && w != "POSITION" {
			return s.expected("NAME or POSITION after BY")
		}
	} else {
		s.off = save
	}
	// A column list, or a parenthesised query: a query starts with a
	// keyword.
	if s.peekByte() == '(' {
		save = s.off
		s.off++
		switch s.word() {
		case "SELECT", "FROM", "WITH", "VALUES", "TABLE", "PIVOT", "UNPIVOT":
			s.off = save
		default:
			s.off = save
			if !s.skipParens() {
				return s.expected("a closing parenthesis after the column list")
			}
		}
	}
	save = s.off
	if s.word() == "DEFAULT" {
		if s.word() != "VALUES" {
			return s.expected("VALUES after DEFAULT")
		}
		return s.end()
	}
	s.off = save
	at := s.skip()
	if at >= len(s.src) {
		return s.expected("a query or VALUES after the target")
	}
	st.queryAt, st.Query = at, s.src[at:]
	return unsupportedClauses(st.Query)
}

// unsupportedClauses refuses what follows an INSERT's query and needs keys
// or returns rows: DuckDB would read either as part of the query.
func unsupportedClauses(query string) error {
	words := strings.Fields(strings.ToUpper(sqllex.Mask(query)))
	for i, w := range words {
		w = strings.Trim(w, "(),;")
		switch {
		case w == "RETURNING":
			return fmt.Errorf("INSERT ... RETURNING: %w: the statement returns the count of rows written", ErrUnsupported)
		case w == "ON" && i+1 < len(words) && strings.Trim(words[i+1], "(),;") == "CONFLICT":
			return fmt.Errorf("INSERT ... ON CONFLICT: %w: rocklake tables have no keys to conflict on", ErrUnsupported)
		}
	}
	return nil
}

func (s *scanner) create(st *Statement) error {
	w := s.word()
	if w == "OR" {
		if s.word() == "REPLACE" {
			return fmt.Errorf("CREATE OR REPLACE TABLE: %w: drop the table first (rocklake table drop)", ErrUnsupported)
		}
		return s.expected("REPLACE after OR")
	}
	if w == "TEMP" || w == "TEMPORARY" {
		return fmt.Errorf("CREATE TEMP TABLE: %w: every rocklake table is a catalog table", ErrUnsupported)
	}
	if w != "TABLE" {
		return ErrNotWrite
	}
	save := s.off
	if s.word() == "IF" {
		if s.word() != "NOT" || s.word() != "EXISTS" {
			return s.expected("NOT EXISTS after IF")
		}
		st.IfNotExists = true
	} else {
		s.off = save
	}
	if err := s.target(st); err != nil {
		return err
	}
	if s.peekByte() == '(' {
		open := s.skip()
		if !s.skipParens() {
			return s.expected("a closing parenthesis after the columns")
		}
		st.Kind, st.Columns = CreateTable, strings.TrimSpace(s.src[open+1:s.off-1])
		return s.end()
	}
	if s.word() != "AS" {
		return s.expected("AS and a query, or a parenthesised column list, after the table name")
	}
	at := s.skip()
	if at >= len(s.src) {
		return s.expected("a query after AS")
	}
	st.Kind, st.queryAt, st.Query = CreateAs, at, s.src[at:]
	return nil
}

func (s *scanner) copyFrom(st *Statement) error {
	if s.peekByte() == '(' {
		return ErrNotWrite // COPY (query) TO
	}
	if err := s.target(st); err != nil {
		return err
	}
	if s.peekByte() == '(' && !s.skipParens() {
		return s.expected("a closing parenthesis after the column list")
	}
	switch s.word() {
	case "FROM":
	case "TO":
		return ErrNotWrite
	default:
		return s.expected("FROM after the table")
	}
	at := s.skip()
	switch {
	case at < len(s.src) && s.src[at] == '\'':
		path, end, ok := sqllex.Quoted(s.src, at)
		if !ok {
			return s.expected("a closing quote after the path")
		}
		st.Path, st.pathAt, s.off = path, [2]int{at, end}, end
	case s.word() == "STDIN":
		st.Stdin, st.pathAt = true, [2]int{at, s.off}
	default:
		return s.expected("a quoted path or STDIN after FROM")
	}
	save := s.off
	if s.word() != "WITH" {
		s.off = save
	}
	if at := s.skip(); at < len(s.src) {
		if s.src[at] != '(' {
			return s.expected("a parenthesised option list")
		}
		if !s.skipParens() {
			return s.expected("a closing parenthesis after the options")
		}
		st.Options = s.src[at:s.off]
	}
	st.optionsEnd = s.off
	return s.end()
}

// target reads the table's name: one part, as rocklake's tables have.
func (s *scanner) target(st *Statement) error {
	name, at, ok := s.name()
	if !ok {
		return s.expected("a table name")
	}
	end := s.off
	if s.peekByte() == '.' {
		return fmt.Errorf("table %s.…: %w: rocklake tables have one-part names", name, ErrUnsupported)
	}
	st.Table, st.nameAt = name, [2]int{at, end}
	return nil
}

// Text is the statement as parsed; QueryAt is where Query starts in it
// (-1: the statement has no query), for positions in Query told in the
// statement's terms.
func (st *Statement) Text() string { return st.text }
func (st *Statement) QueryAt() int { return st.queryAt }

// Over is the statement with its target replaced by target (a quoted
// name) and its query by query (the same query with its tables replaced
// by views: "" keeps it as written): the statement DuckDB runs over a
// temporary table of the target's columns. A COPY's path becomes path
// when it is not "" (STDIN's data, staged in a file).
func (st *Statement) Over(target, query, path string) string {
	var b strings.Builder
	// The target stands apart from the words around it, however the
	// statement ran the name into them (INTO"t"(a) is one).
	if rest := st.text[st.nameAt[1]:]; rest != "" && (rest[0] == '"' || sqllex.IsNamePart(rest[0])) {
		target += " "
	}
	switch st.Kind {
	case Insert:
		b.WriteString(st.text[:st.nameAt[0]])
		if st.nameAt[0] > 0 && sqllex.IsNamePart(st.text[st.nameAt[0]-1]) {
			b.WriteByte(' ')
		}
		b.WriteString(target)
		if st.queryAt < 0 {
			b.WriteString(st.text[st.nameAt[1]:])
			return b.String()
		}
		b.WriteString(st.text[st.nameAt[1]:st.queryAt])
		if query == "" {
			query = st.Query
		}
		// A newline before the end: a trailing -- comment in the query
		// would otherwise swallow what follows it.
		b.WriteString(query + "\n")
	case Copy:
		b.WriteString("COPY ")
		b.WriteString(target)
		b.WriteString(st.text[st.nameAt[1]:st.pathAt[0]])
		if path == "" {
			path = st.Path
		}
		b.WriteString("'" + strings.ReplaceAll(path, "'", "''") + "'")
		b.WriteString(st.text[st.pathAt[1]:])
	default:
		panic("writesql: Over of a " + st.Kind.Verb())
	}
	return b.String()
}

// scanner reads words, names and parentheses, skipping white space and
// comments.
type scanner struct {
	src string
	off int
}

// skip moves past white space and comments and returns the offset.
func (s *scanner) skip() int {
	for s.off < len(s.src) {
		switch {
		case strings.IndexByte(" \t\n\r\f\v", s.src[s.off]) >= 0:
			s.off++
		case strings.HasPrefix(s.src[s.off:], "--"):
			j := strings.IndexByte(s.src[s.off:], '\n')
			if j < 0 {
				s.off = len(s.src)
			} else {
				s.off += j
			}
		case strings.HasPrefix(s.src[s.off:], "/*"):
			j := strings.Index(s.src[s.off+2:], "*/")
			if j < 0 {
				s.off = len(s.src)
			} else {
				s.off += j + 4
			}
		default:
			return s.off
		}
	}
	return s.off
}

func (s *scanner) peekByte() byte {
	if at := s.skip(); at < len(s.src) {
		return s.src[at]
	}
	return 0
}

// word reads an unquoted word, upper-cased ("" when none is next).
func (s *scanner) word() string {
	at := s.skip()
	if at >= len(s.src) || !sqllex.IsNameStart(s.src[at]) {
		return ""
	}
	j := at
	for j < len(s.src) && sqllex.IsNamePart(s.src[j]) {
		j++
	}
	s.off = j
	return strings.ToUpper(s.src[at:j])
}

// name reads a name, quoted or not (as written, unquoted), and where it
// starts.
func (s *scanner) name() (string, int, bool) {
	at := s.skip()
	if at >= len(s.src) {
		return "", at, false
	}
	if s.src[at] == '"' {
		n, end, ok := sqllex.Quoted(s.src, at)
		if !ok || n == "" {
			return "", at, false
		}
		s.off = end
		return n, at, true
	}
	save := s.off
	w := s.word()
	if w == "" {
		s.off = save
		return "", at, false
	}
	return s.src[at:s.off], at, true
}

// skipParens moves past the parenthesised group that starts next,
// strings and quoted names inside included; false when it does not end.
func (s *scanner) skipParens() bool {
	at := s.skip()
	if at >= len(s.src) || s.src[at] != '(' {
		return false
	}
	depth := 0
	for i := at; i < len(s.src); i++ {
		switch c := s.src[i]; c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				s.off = i + 1
				return true
			}
		case '\'', '"':
			_, end, ok := sqllex.Quoted(s.src, i)
			if !ok {
				return false
			}
			i = end - 1
		}
	}
	return false
}

// end requires nothing but white space and comments to follow.
func (s *scanner) end() error {
	if at := s.skip(); at < len(s.src) {
		return fmt.Errorf("syntax error at or near %q: the statement should end here", clip(s.src[at:]))
	}
	return nil
}

func (s *scanner) expected(what string) error {
	at := s.skip()
	if at >= len(s.src) {
		return fmt.Errorf("syntax error at end of statement: expected %s", what)
	}
	return fmt.Errorf("syntax error at or near %q: expected %s", clip(s.src[at:]), what)
}

func clip(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		s = f[0]
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
