package server

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/rocklake/rocklake/internal/sqllex"
)

// Server-side cursors, as PostgreSQL's SQL has them:
//
//	DECLARE name [BINARY] [ASENSITIVE | INSENSITIVE] [NO SCROLL] CURSOR [WITH HOLD | WITHOUT HOLD] FOR query
//	FETCH [NEXT | FORWARD [n | ALL] | n | ALL | ABSOLUTE n | RELATIVE n] [FROM | IN] name
//	MOVE (as FETCH)
//	CLOSE name | ALL
//
// A cursor is its query's answer being read: DECLARE runs the query
// (reading the snapshot the transaction reads) and each FETCH hands on
// the next rows, so the session holds what one FETCH sends, not the
// answer. Where its columns allow, the query runs as DuckDB's own COPY
// into a pipe (copystream.go), which waits at the pipe for the next
// FETCH, so DuckDB holds no answer either; otherwise duckdb-go hands the
// rows over from an answer DuckDB materialises at DECLARE. Cursors read forward only: PostgreSQL's SCROLL, and the
// directions that go back, are refused.

// cursor is one DECLAREd cursor.
type cursor struct {
	name     string
	res      *result // the query's answer, at pos
	binary   bool
	hold     bool
	inTx     bool // declared in the transaction now open: its ROLLBACK closes it, WITH HOLD or not
	pos      int64
	done     bool // the rows have ended
	finished bool // and the answer was recorded
	cancel   context.CancelCauseFunc
}

func (c *cursor) close() { c.res.close() }

// cursorStatement marks a statement that reads the cursor as the session's
// running one, for CancelRequest and the statement timeout; the cursor's
// context outlives the statement, so the timeout is armed per statement.
func (ss *pgSession) cursorStatement(c *cursor) (end func()) {
	t := time.AfterFunc(ss.s.cfg.StatementTimeout, func() { c.cancel(errStatementTimeout) })
	ss.mu.Lock()
	ss.running = func() { c.cancel(context.Canceled) }
	ss.mu.Unlock()
	return func() {
		t.Stop()
		ss.mu.Lock()
		ss.running = nil
		ss.mu.Unlock()
	}
}

// cursorCommand answers DECLARE, FETCH, MOVE and CLOSE.
func (ss *pgSession) cursorCommand(kw, q string, formats []int16) (*result, error) {
	lx := &copyLexer{src: strings.TrimRight(strings.TrimSpace(q), "; \t\r\n")}
	lx.next() // the keyword
	switch kw {
	case "DECLARE":
		return ss.declare(lx)
	case "CLOSE":
		t := lx.next()
		if t.isWord("ALL") && lx.peek().kind == tokEnd {
			ss.closeCursors(func(*cursor) bool { return true })
			return &result{tag: "CLOSE CURSOR ALL", s: ss.s}, nil
		}
		c, err := ss.namedCursor(lx, t)
		if err != nil {
			return nil, err
		}
		c.close()
		delete(ss.cursors, c.name)
		return &result{tag: "CLOSE CURSOR", s: ss.s}, nil
	}
	skip, take, c, err := ss.fetchArgs(lx, kw)
	if err != nil {
		return nil, err
	}
	end := ss.cursorStatement(c)
	if skip > 0 {
		if _, err := ss.advance(c, skip); err != nil {
			end()
			return nil, err
		}
	}
	if kw == "MOVE" {
		n, err := ss.advance(c, take)
		end()
		if err != nil {
			return nil, err
		}
		return &result{tag: "MOVE " + strconv.FormatInt(n, 10), s: ss.s}, nil
	}
	if ss.simple && c.binary {
		formats = []int16{1} // a Bind's formats win over BINARY
	}
	fields, cols, err := reformat(c.res.fields, c.res.cols, formats)
	if err != nil {
		end()
		return nil, err
	}
	return &result{fields: fields, cols: cols, cur: c, want: take, tm: ss.typeMap(), s: ss.s, done: end}, nil
}

// advance reads up to n of the cursor's rows without sending them.
func (ss *pgSession) advance(c *cursor, n int64) (int64, error) {
	r := &result{cur: c, want: n}
	for {
		_, ok, err := r.next()
		if err != nil || !ok {
			if err == nil {
				err = r.finish()
			}
			return r.got, err
		}
	}
}

func (ss *pgSession) declare(lx *copyLexer) (*result, error) {
	name, ok := identOf(lx.next())
	if !ok {
		return nil, lx.syntax(lx.peek(), "a cursor name after DECLARE")
	}
	c := &cursor{name: name}
	for {
		t := lx.next()
		switch {
		case t.isWord("BINARY"):
			c.binary = true
			continue
		case t.isWord("ASENSITIVE"), t.isWord("INSENSITIVE"):
			continue // a cursor reads its snapshot: it is insensitive whatever is asked
		case t.isWord("NO"):
			if s := lx.next(); !s.isWord("SCROLL") {
				return nil, lx.syntax(s, "SCROLL after NO")
			}
			continue
		case t.isWord("SCROLL"):
			return nil, &pgError{code: "0A000", msg: "SCROLL cursors are not supported: rocklake's cursors read forward only",
				hint: "declare the cursor NO SCROLL (the default), or run the query again to read it anew"}
		case t.isWord("CURSOR"):
		default:
			return nil, lx.syntax(t, "CURSOR")
		}
		break
	}
	if t := lx.peek(); t.isWord("WITH") || t.isWord("WITHOUT") {
		lx.next()
		if h := lx.next(); !h.isWord("HOLD") {
			return nil, lx.syntax(h, "HOLD")
		}
		c.hold = t.isWord("WITH")
	}
	if t := lx.next(); !t.isWord("FOR") {
		return nil, lx.syntax(t, "FOR and the cursor's query")
	}
	query := strings.TrimSpace(lx.src[lx.off:])
	if !readsOnly(query) {
		return nil, &pgError{code: "42601", msg: "DECLARE CURSOR ... FOR takes a query (SELECT, VALUES, TABLE or WITH ...)"}
	}
	if _, taken := ss.cursors[name]; taken {
		return nil, &pgError{code: "42P03", msg: fmt.Sprintf("cursor %q already exists", name)}
	}
	c.inTx = ss.inBlock || ss.implicit
	if !c.hold && !c.inTx {
		return nil, &pgError{code: "25P01", msg: "DECLARE CURSOR can only be used in transaction blocks",
			hint: "BEGIN first, or DECLARE the cursor WITH HOLD"}
	}
	if err := ss.roomForAnswer(nil); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(context.WithValue(ss.s.ctx, sessionKey{}, ss))
	c.cancel = cancel
	end := ss.cursorStatement(c)
	defer end()
	var res *result
	var err error
	if ss.wtx == nil {
		// Rows a block wrote lie in files its later statements may
		// replace before the cursor reads them: such a cursor's answer is
		// made at DECLARE.
		res = ss.streamCursor(ctx, func() { cancel(context.Canceled) }, query)
	}
	if res == nil {
		res, err = ss.query(query, nil, func() (context.Context, func()) { return ctx, func() { cancel(context.Canceled) } })
	}
	if err != nil {
		return nil, err
	}
	c.res = res
	ss.cursors[name] = c
	return &result{tag: "DECLARE CURSOR", s: ss.s}, nil
}

// readsOnly says whether a statement is a query, returning rows and
// changing nothing: what a cursor and COPY (query) TO may hold.
func readsOnly(q string) bool {
	switch sqllex.LeadingKeyword(q) {
	case "SELECT", "WITH", "VALUES", "TABLE", "FROM":
		return true
	}
	return false
}

// fetchArgs reads FETCH's or MOVE's direction and cursor: the rows to
// pass over, then the rows to take.
func (ss *pgSession) fetchArgs(lx *copyLexer, kw string) (skip, take int64, c *cursor, err error) {
	const all = math.MaxInt64
	number := func() (int64, bool) {
		t := lx.peek()
		if t.kind != tokNumber {
			return 0, false
		}
		n, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return 0, false
		}
		lx.next()
		return n, true
	}
	backward := false
	take = 1
	t := lx.peek()
	switch {
	case t.isWord("NEXT"):
		lx.next()
	case t.isWord("PRIOR"), t.isWord("LAST"), t.isWord("BACKWARD"):
		backward = true
		lx.next()
		if t.isWord("BACKWARD") {
			if !lx.peek().isWord("ALL") {
				number()
			} else {
				lx.next()
			}
		}
	case t.isWord("FIRST"):
		lx.next()
		skip = -1 // row 1: ABSOLUTE 1
	case t.isWord("ALL"):
		lx.next()
		take = all
	case t.isWord("FORWARD"):
		lx.next()
		if lx.peek().isWord("ALL") {
			lx.next()
			take = all
		} else if n, ok := number(); ok {
			take = n
			backward = n <= 0
		}
	case t.isWord("ABSOLUTE"), t.isWord("RELATIVE"):
		lx.next()
		n, ok := number()
		if !ok {
			return 0, 0, nil, lx.syntax(lx.peek(), "a row count after "+strings.ToUpper(t.text))
		}
		if t.isWord("ABSOLUTE") {
			skip = -n // resolved against the cursor's position below
		} else {
			skip, backward = n-1, n <= 0
		}
	case t.kind == tokNumber:
		n, ok := number()
		if !ok {
			return 0, 0, nil, lx.syntax(t, "a row count")
		}
		take, backward = n, n <= 0
	}
	if f := lx.peek(); f.isWord("FROM") || f.isWord("IN") {
		lx.next()
	}
	c, err = ss.namedCursor(lx, lx.next())
	if err != nil {
		return 0, 0, nil, err
	}
	if skip < 0 { // ABSOLUTE -skip: the row after pos only, or one further on
		target := -skip
		skip = target - c.pos - 1
		backward = target <= c.pos
	}
	if backward {
		return 0, 0, nil, &pgError{code: "55000", msg: "cursor can only scan forward",
			hint: "rocklake's cursors read forward only: FETCH NEXT, n, FORWARD n, ALL, or ABSOLUTE or RELATIVE to a later row"}
	}
	return skip, take, c, nil
}

// namedCursor is the cursor t names, which must end the statement.
func (ss *pgSession) namedCursor(lx *copyLexer, t copyToken) (*cursor, error) {
	name, ok := identOf(t)
	if !ok {
		return nil, lx.syntax(t, "a cursor name")
	}
	if e := lx.next(); e.kind != tokEnd {
		return nil, lx.syntax(e, "the end of the statement")
	}
	c := ss.cursors[name]
	if c == nil {
		return nil, &pgError{code: "34000", msg: fmt.Sprintf("cursor %q does not exist", name)}
	}
	return c, nil
}

// describeFetch is a FETCH's columns: its cursor's, or none while no
// such cursor is open.
func (ss *pgSession) describeFetch(q string) (*result, error) {
	lx := &copyLexer{src: strings.TrimRight(strings.TrimSpace(q), "; \t\r\n")}
	lx.next()
	_, _, c, err := ss.fetchArgs(lx, "FETCH")
	if err != nil {
		return &result{s: ss.s}, nil
	}
	fields, cols, err := reformat(c.res.fields, c.res.cols, nil)
	if err != nil {
		return nil, err
	}
	return &result{fields: fields, cols: cols, s: ss.s}, nil
}

// reformat is an answer's columns sent in the formats a Bind asks for.
func reformat(fields []pgproto3.FieldDescription, cols []column, formats []int16) ([]pgproto3.FieldDescription, []column, error) {
	if len(formats) > 1 && len(formats) != len(cols) {
		return nil, nil, &pgError{code: "08P01", msg: fmt.Sprintf("bind message has %d result formats for %d columns", len(formats), len(cols))}
	}
	f := make([]pgproto3.FieldDescription, len(fields))
	c := make([]column, len(cols))
	for i := range cols {
		format := formatAt(formats, i)
		if format != 0 && format != 1 {
			return nil, nil, &pgError{code: "08P01", msg: fmt.Sprintf("result format %d is neither text (0) nor binary (1)", format)}
		}
		f[i], c[i] = fields[i], cols[i]
		f[i].Format, c[i].format = format, format
	}
	return f, c, nil
}

// endCursors ends the transaction's cursors: at COMMIT those without
// HOLD; at ROLLBACK also those it declared WITH HOLD, as PostgreSQL does.
func (ss *pgSession) endCursors(commit bool) {
	ss.closeCursors(func(c *cursor) bool { return !c.hold || !commit && c.inTx })
	for _, c := range ss.cursors {
		c.inTx = false
	}
}

func (ss *pgSession) closeCursors(which func(*cursor) bool) {
	for name, c := range ss.cursors {
		if which(c) {
			c.close()
			delete(ss.cursors, name)
		}
	}
}

// identOf is the name an identifier token stands for: a quoted one as
// written, a bare one in lower case, as PostgreSQL folds it.
func identOf(t copyToken) (string, bool) {
	switch t.kind {
	case tokWord:
		return strings.ToLower(t.text), true
	case tokName:
		return t.text, true
	}
	return "", false
}

// roomForAnswer refuses to leave one more answer open (a cursor, or a
// portal suspended part-way: except is the portal asking, not counted)
// when the session holds Config.MaxCursors: each is a DuckDB query under
// way, and a client that never closes them would hold the server's memory
// and threads for as long as it stays connected.
func (ss *pgSession) roomForAnswer(except *portal) error {
	open := len(ss.cursors)
	for _, p := range ss.portals {
		if p != except && p.res != nil && p.res.suspended && !p.done {
			open++
		}
	}
	if limit := ss.s.cfg.MaxCursors; open >= limit {
		return &pgError{code: "54000", msg: fmt.Sprintf("this session holds %d open cursors and suspended portals, the server's limit (--max-cursors %d)", open, limit),
			hint: "CLOSE the cursors no longer read (CLOSE ALL closes every one), or read portals to their end"}
	}
	return nil
}
