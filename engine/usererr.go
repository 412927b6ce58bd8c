package engine

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/duckdb/duckdb-go/v2"
	"golang.org/x/text/width"

	"github.com/rocklake/rocklake/engine/duckast"
)

// QueryError is an error DuckDB raised for a query, told in the terms of
// the text the caller sent. DuckDB never runs that text as it is: each
// table reference becomes a view of the kept files ("__rocklake_v0" AS
// events), and the query is wrapped in a statement of rocklake's
// (SELECT ... FROM (query)), so DuckDB's message quotes and points into
// text the user never wrote. Message is DuckDB's message with rocklake's
// names put back and the quoted line left out; Position, where DuckDB
// gave one that falls in the user's text, is the 1-based character offset
// into Query (what PostgreSQL's ErrorResponse carries; 0: none). Error
// quotes Query's line at Position as DuckDB quotes a line.
type QueryError struct {
	Message  string
	Query    string
	Position int
	err      error
}

func (e *QueryError) Error() string {
	if e.Position <= 0 {
		return e.Message
	}
	return e.Message + "\n\n" + QuoteLine(e.Query, e.Position)
}

// NewQueryError is a QueryError for a text the caller ran on a DuckDB of
// its own: message in the user's terms, position (1-based characters;
// 0: none) into query, cause the error as DuckDB gave it.
func NewQueryError(message, query string, position int, cause error) *QueryError {
	return &QueryError{Message: message, Query: query, Position: position, err: cause}
}

// StripLineQuote is DuckDB's message without the line of the text it ran
// that DuckDB quotes at its end.
func StripLineQuote(msg string) string {
	if loc := lastMatch(msg); loc != nil {
		return msg[:loc[0]] + msg[loc[1]:]
	}
	return msg
}

// SyntaxError is DuckDB's parser error for query, as a QueryError
// pointing into it, or nil where DuckDB's parser reads query (or cannot
// say: a statement json_serialize_sql does not take). db is any DuckDB
// database.
func SyntaxError(ctx context.Context, db *sql.DB, query string) error {
	var js string
	if err := db.QueryRowContext(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", query).Scan(&js); err != nil {
		return nil
	}
	_, err := duckast.Decode(js)
	var pe *duckast.ParseError
	if !errors.As(err, &pe) {
		return nil
	}
	return &QueryError{Message: pe.Msg, Query: query, Position: charPosition(query, pe.Offset), err: err}
}

// Within says the error's query was made from text, the statement the
// user wrote: Query becomes text, and Position moves with it where the
// query is text[at:] (the query of an INSERT ... SELECT), or goes where
// it is not (at < 0: a query rocklake built around parts of text).
func (e *QueryError) Within(text string, at int) {
	if at < 0 || at > len(text) || !strings.HasPrefix(text[at:], e.Query) {
		e.Position = 0
	} else if e.Position > 0 {
		e.Position += utf8.RuneCountInString(text[:at])
	}
	e.Query = text
}

// Unwrap is DuckDB's error as it came (a *duckdb.Error, whose type
// callers classify by).
func (e *QueryError) Unwrap() error { return e.err }

// queryText is how a query's text reached DuckDB: the caller's text, the
// edits that made the text run (each table reference replaced by its
// view), and the names rocklake gave the views.
type queryText struct {
	user  string
	edits []textEdit        // on user, sorted, not overlapping
	names map[string]string // a view's name: the table it reads
}

// withPosition is err, the error of prefix+stmt run in one round trip
// (the views and the query: one call into DuckDB fewer per query), or the
// same error with the place DuckDB points at: DuckDB 1.5.6 leaves the
// place out of errors of a statement that follows others in one text, and
// gives it for the statement alone. The statement is run again alone
// (prefix's views exist now), for no longer than twice what the first run
// took to fail, plus 50 ms, and at most a second: an error of the query's
// text (a literal that does not cast, a function that does not bind) comes
// again at once, with its place; one that comes late in reading the data
// keeps err as it was. (The margin is for a loaded machine: with 10 ms,
// a rerun on two busy cores missed its window and the place was lost.)
func withPosition(ctx context.Context, conn *sql.Conn, prefix, stmt string, err error, took time.Duration) error {
	if prefix == "" || lastMatch(err.Error()) != nil || ctx.Err() != nil {
		return err
	}
	if de := (*duckdb.Error)(nil); !errors.As(err, &de) {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, min(2*took+50*time.Millisecond, time.Second))
	defer cancel()
	rows, again := conn.QueryContext(rctx, stmt)
	if again == nil {
		for rows.Next() {
		}
		again = rows.Err()
		rows.Close()
	}
	if again == nil || StripLineQuote(again.Error()) != err.Error() {
		return err
	}
	return again
}

// lineQuote is the line DuckDB quotes at the end of a message: the line's
// number in the statement it ran, the line (or a window of it, cut with
// "..."), and a caret under the error's place.
var lineQuote = regexp.MustCompile(`(?s)\n\nLINE (\d+): ([^\n]*)\n( *)\^[ \t]*`)

// translate gives err in the terms of the user's text, or err itself
// where DuckDB's message has nothing of rocklake's in it.
func (q *queryText) translate(err error) error {
	if err == nil || q == nil {
		return err
	}
	var qe *QueryError
	if errors.As(err, &qe) {
		return err
	}
	var pe *duckast.ParseError
	if errors.As(err, &pe) {
		// The parser read the user's text itself.
		return &QueryError{Message: pe.Msg, Query: q.user, Position: charPosition(q.user, pe.Offset), err: err}
	}
	msg := err.Error()
	out := &QueryError{Query: q.user, err: err}
	if loc := lastMatch(msg); loc != nil {
		n, _ := strconv.Atoi(msg[loc[2]:loc[3]])
		if off, ok := q.locate(n, msg[loc[4]:loc[5]], loc[7]-loc[6]); ok {
			out.Position = charPosition(q.user, off)
		}
		msg = msg[:loc[0]] + msg[loc[1]:]
	} else if de := (*duckdb.Error)(nil); !errors.As(err, &de) && !strings.Contains(msg, "__rocklake_") {
		return err // rocklake's own
	}
	names := slices.SortedFunc(maps.Keys(q.names), func(a, b string) int { return len(b) - len(a) }) // v12 before v1
	for _, v := range names {
		msg = strings.ReplaceAll(msg, v, q.names[v])
	}
	// DuckDB calls a view without a FROM of its own, as every empty view
	// of a table is, a values list: to the user it is the table.
	msg = strings.ReplaceAll(msg, `Values list "`, `Table "`)
	out.Message = msg
	return out
}

// lastMatch is the last line quote in msg (DuckDB puts it after its
// message, before anything a caller added), as regexp submatch indexes.
func lastMatch(msg string) []int {
	all := lineQuote.FindAllStringSubmatchIndex(msg, -1)
	if len(all) == 0 {
		return nil
	}
	return all[len(all)-1]
}

// locate finds the byte offset in the user's text of the place DuckDB
// pointed at: line n of the statement it ran shows shown, the caret caret
// columns from the start of "LINE n: ". The statement DuckDB ran is the
// rewritten text (or the user's own, over views named like the tables)
// after a line or two of rocklake's, and a line DuckDB shows is cut to a
// window around the place: the line is found by the window's text, and an
// offset that falls in rocklake's text (a view's SQL) is not the user's.
func (q *queryText) locate(n int, shown string, caret int) (int, bool) {
	// The wrapper rocklake put before the text is one line (EXPLAIN puts
	// none); more are tried in case.
	ds := []int{1, 0, 2, 3}
	if off, ok := q.locateIn(applyEdits(q.user, q.edits), true, n, shown, caret, ds); ok {
		return off, true
	}
	return q.locateIn(q.user, false, n, shown, caret, ds)
}

// locateIn is locate in text, the rewritten text (mapped: offsets go back
// through the edits) or the user's, tried at line n-d for each d.
func (q *queryText) locateIn(text string, mapped bool, n int, shown string, caret int, ds []int) (int, bool) {
	prefix := len("LINE " + strconv.Itoa(n) + ": ")
	cutStart := strings.HasPrefix(shown, "...")
	if cutStart {
		shown = shown[3:]
		prefix += 3
	}
	col := caret - prefix
	if col < 0 {
		return 0, false
	}
	lines := strings.SplitAfter(text, "\n")
	starts := make([]int, len(lines))
	for i := 1; i < len(lines); i++ {
		starts[i] = starts[i-1] + len(lines[i-1])
	}
	for _, d := range ds {
		j := n - 1 - d
		if j < 0 || j >= len(lines) {
			continue
		}
		line := strings.TrimRight(lines[j], "\r\n")
		at, ok := windowAt(line, shown, cutStart)
		if !ok {
			continue
		}
		off, ok := columnOffset(line[at:], col)
		if !ok {
			continue
		}
		off += starts[j] + at
		if mapped {
			return q.toUser(off)
		}
		return off, true
	}
	return 0, false
}

// windowAt is where in line the text DuckDB showed starts: the line's
// start unless DuckDB cut the line's beginning; a shown text cut at its
// end ends in "..." that the line may not have.
func windowAt(line, shown string, cutStart bool) (int, bool) {
	for _, s := range []string{shown, strings.TrimSuffix(shown, "...")} {
		if s == "" && shown != "" {
			continue
		}
		if !cutStart {
			if strings.HasPrefix(line, s) {
				return 0, true
			}
			continue
		}
		if i := strings.Index(line, s); i >= 0 {
			return i, true
		}
	}
	return 0, false
}

// columnOffset is the byte offset in s of the character at render column
// col (wide characters take two columns, combining marks none).
func columnOffset(s string, col int) (int, bool) {
	w := 0
	for i, r := range s {
		if w >= col {
			return i, w == col
		}
		w += runeWidth(r)
	}
	return len(s), w == col
}

func runeWidth(r rune) int {
	if unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) {
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// toUser maps an offset in the rewritten text back to the user's: inside
// an edit's replacement it is the edit's start (the table name the view
// replaced); elsewhere the text is the user's, shifted.
func (q *queryText) toUser(off int) (int, bool) {
	shift := 0 // rewritten minus user, before the current edit
	for _, e := range q.edits {
		from := e.at + shift
		if off < from {
			break
		}
		if off < from+len(e.text) {
			return e.at, true
		}
		shift += len(e.text) - (e.end - e.at)
	}
	u := off - shift
	return u, u >= 0 && u <= len(q.user)
}

// charPosition is PostgreSQL's position of a byte offset: 1-based, in
// characters; 0 for an offset outside s.
func charPosition(s string, off int) int {
	if off < 0 || off > len(s) {
		return 0
	}
	return utf8.RuneCountInString(s[:off]) + 1
}

// QuoteLine quotes the line of query holding the character at pos
// (1-based, as QueryError.Position) as DuckDB quotes a line: "LINE n: "
// and the line, cut to about sixty columns either side of the place (as
// DuckDB 1.5 cuts it, near enough), then a caret under it.
func QuoteLine(query string, pos int) string {
	const quoteWidth = 60
	runes := []rune(query)
	if pos < 1 || pos > len(runes)+1 {
		return ""
	}
	at := pos - 1
	start, line := 0, 1
	for i := 0; i < at; i++ {
		if runes[i] == '\n' {
			start, line = i+1, line+1
		}
	}
	end := len(runes)
	for i := at; i < len(runes); i++ {
		if runes[i] == '\n' || runes[i] == '\r' {
			end = i
			break
		}
	}
	from, w := at, 0
	for from > start && w < quoteWidth {
		from--
		w += runeWidth(runes[from])
	}
	to, w := at, 0
	for to < end && w < quoteWidth {
		w += runeWidth(runes[to])
		to++
	}
	head := "LINE " + strconv.Itoa(line) + ": "
	var b strings.Builder
	b.WriteString(head)
	if from > start {
		b.WriteString("...")
	}
	b.WriteString(string(runes[from:to]))
	if to < end {
		b.WriteString("...")
	}
	col := len(head)
	if from > start {
		col += 3
	}
	for _, r := range runes[from:at] {
		col += runeWidth(r)
	}
	b.WriteString("\n" + strings.Repeat(" ", col) + "^")
	return b.String()
}
