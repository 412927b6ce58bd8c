package server

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/sqllex"
)

// A COPY ... TO STDOUT in the text or CSV format whose columns all have
// a text form SQL can spell is written by DuckDB itself: DuckDB runs
//
//	COPY (SELECT <each row's line, encoded> FROM (<the query over its
//	views>)) TO '<fifo>' (FORMAT csv, QUOTE '', ESCAPE '', HEADER false
//	[, PRESERVE_ORDER false where the query has no ORDER BY])
//
// into a named pipe in the server's temporary directory, and the session
// reads the pipe in runs of whole lines, each line framed as its own
// CopyData message (sendStream). DuckDB's COPY is a streaming sink, where
// a query's rows through duckdb-go are a materialised answer: without an
// ORDER BY to keep, the server's memory stays flat in the rows, and no
// value crosses into Go. The line is the row as the row path
// (copyOut.row) writes it, byte for byte, which a test checks over
// tables of every type; a column of another type (DOUBLE, whose text Go
// spells; INTERVAL; nested types) takes the row path.
//
// The pipe: the session opens its read end first (non-blocking, so the
// open does not wait for a writer) and holds a write end of its own
// until DuckDB's COPY has returned, so that reading ends at the COPY's
// end, whether DuckDB opened the pipe or failed before it did. A reader
// that stops early (a client gone, a limit passed) cancels the COPY and
// closes its end: DuckDB's next write fails and the statement ends.

// orderBy finds the word ORDER outside strings and comments: a query
// that may order its rows. DuckDB's COPY keeps its query's order by
// holding back what its threads wrote ahead of the slowest, up to its
// memory limit, so the server's memory grew with the rows (0.3 GB at
// 2,000,000 rows, 0.75 GB at 20,000,000). A query without one promises
// no order, as in PostgreSQL: its COPY writes as DuckDB's threads finish,
// in memory flat in the rows.
var orderBy = regexp.MustCompile(`(?i)\border\b`)

// streamCopies is whether COPY TO STDOUT may take DuckDB's own COPY; the
// tests turn it off to compare with the row path.
var streamCopies = true

// streamedCopies and streamedCursors count the COPYs and cursors that
// took DuckDB's own COPY, for the tests.
var streamedCopies, streamedCursors atomic.Int64

// copyStream is a running COPY of DuckDB's into a pipe.
type copyStream struct {
	dir   string
	r     *os.File
	guard *os.File // the session's write end, closed when the COPY returns
	br    *bufio.Reader
	line  []byte // a line longer than br's buffer, gathered
	// pending is a row lines gathered and its caller gave back.
	pending []byte
	// csv: rows are CSV, where a quoted value may hold a newline (quote
	// and escape are the format's); row gathers one past the buffer.
	csv           bool
	quote, escape byte
	row           []byte
	end           chan struct{}
	mu            sync.Mutex
	err           error // the COPY's, once end is closed
	rows          int64
	res           *rocklake.Result
	close         sync.Once
}

// streamSafe are the DuckDB types whose text never holds a letter other
// than those of infinity, a hex digit or t/f, a quote, a backslash or a
// control character: for them, with a delimiter outside that alphabet,
// the text needs no escape and no quotes.
var streamSafe = map[string]bool{
	"TINYINT": true, "SMALLINT": true, "INTEGER": true, "BIGINT": true, "HUGEINT": true,
	"UTINYINT": true, "USMALLINT": true, "UINTEGER": true, "UBIGINT": true, "UHUGEINT": true,
	"TIME": true, "TIME WITH TIME ZONE": true, "TIMETZ": true, "UUID": true, // dates and timestamps: streamTime
}

// streamText says how a column of DuckDB type typ is spelled in SQL as
// the row path's text of it (NULL for NULL), and whether that text may
// hold characters that need escaping; ok is false for a type the row
// path spells in Go.
func streamText(col, typ string) (expr string, plain bool, ok bool) {
	if typ == "TIMESTAMP_NS" {
		// Its years are 1677 to 2262.
		return "CAST(" + col + " AS VARCHAR)", true, true
	}
	if t, ok := streamTime(col, typ); ok {
		// A year before the first as PostgreSQL spells it (pgTime).
		return "CASE WHEN " + col + " < DATE '0001-01-01' AND contains(" + t + ", ' (BC)') THEN replace(" + t + ", ' (BC)', '') || ' BC' ELSE " + t + " END", true, true
	}
	switch {
	case streamSafe[typ], strings.HasPrefix(typ, "DECIMAL("):
		return "CAST(" + col + " AS VARCHAR)", true, true
	case typ == "BOOLEAN":
		return "CASE WHEN " + col + " IS NULL THEN NULL WHEN " + col + " THEN 't' ELSE 'f' END", true, true
	case typ == "VARCHAR", typ == "JSON":
		return "CAST(" + col + " AS VARCHAR)", false, true
	case typ == "BLOB":
		return `'\x' || lower(hex(` + col + `))`, false, true
	}
	return "", false, false
}

// streamTime is DuckDB's text of a date or timestamp column.
func streamTime(col, typ string) (string, bool) {
	switch typ {
	case "DATE", "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS":
		return "CAST(" + col + " AS VARCHAR)", true
	case "TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ":
		// DuckDB's text of a TIMESTAMPTZ goes through ICU's calendar, a
		// third of a COPY's time. The engine's DuckDB runs in UTC (its
		// sessions cannot set another zone), where, within the years DuckDB
		// spells alike for both types, the naive timestamp of the same
		// instant has the same text (checked over the whole range).
		return "(CASE WHEN " + col + " BETWEEN TIMESTAMPTZ '0001-01-01 00:00:00+00' AND TIMESTAMPTZ '9999-12-31 23:59:59.999999+00'" +
			" THEN CAST(make_timestamp(epoch_us(" + col + ")) AS VARCHAR) || '+00' ELSE CAST(" + col + " AS VARCHAR) END)", true
	}
	return "", false
}

// streamLine is the SQL of one row's line in the COPY's format, over the
// columns c0, c1, ... of types types; ok is false where a column takes
// the row path.
func streamLine(o *copyOptions, names, types []string, force []bool) (string, bool) {
	d := string(o.delim)
	// The alphabet of the plain types' text: digits, a-z (infinity, hex,
	// t/f), and - + : . space.
	plainDelim := !strings.ContainsAny(strings.ToLower(d), "0123456789abcdefghijklmnopqrstuvwxyz-+:. ")
	lit := sqllex.QuoteString
	fields := make([]string, len(types))
	for i, typ := range types {
		col := "c" + strconv.Itoa(i)
		t, plain, ok := streamText(col, typ)
		if !ok {
			return "", false
		}
		v := "(" + t + ")" // repeated, not a subquery: DuckDB evaluates each over the chunk
		if o.format == "csv" {
			if plain && plainDelim && o.null == "" && !force[i] {
				fields[i] = "COALESCE(" + t + ", '')"
				continue
			}
			q, e := string(o.quote), string(o.escape)
			esc := "replace(" + v + ", " + lit(q) + ", " + lit(q+q) + ")"
			if e != q {
				esc = "replace(replace(" + v + ", " + lit(e) + ", " + lit(e+e) + "), " + lit(q) + ", " + lit(e+q) + ")"
			}
			cond := "contains(" + v + ", " + lit(d) + ") OR contains(" + v + ", " + lit(q) + ") OR contains(" + v + ", chr(10)) OR contains(" + v + ", chr(13)) OR " + v + " = " + lit(o.null)
			if force[i] {
				cond = "true"
			}
			if len(types) == 1 {
				cond += " OR " + v + ` = '\.'`
			}
			fields[i] = "CASE WHEN " + v + " IS NULL THEN " + lit(o.null) + " WHEN " + cond + " THEN " + lit(q) + " || " + esc + " || " + lit(q) + " ELSE " + v + " END"
			continue
		}
		if plain && plainDelim {
			fields[i] = "COALESCE(" + t + ", " + lit(o.null) + ")"
			continue
		}
		for _, r := range []struct{ from, to string }{{`'\'`, `'\\'`}, {"chr(8)", `'\b'`}, {"chr(12)", `'\f'`}, {"chr(10)", `'\n'`}, {"chr(13)", `'\r'`}, {"chr(9)", `'\t'`}, {"chr(11)", `'\v'`}} {
			v = "replace(" + v + ", " + r.from + ", " + r.to + ")"
		}
		if textEscapes[o.delim] == 0 && o.delim != '\\' {
			v = "replace(" + v + ", " + lit(d) + ", " + lit(`\`+d) + ")"
		}
		fields[i] = "COALESCE(" + v + ", " + lit(o.null) + ")"
	}
	return strings.Join(fields, " || "+lit(d)+" || "), true
}

// streamCopy starts cp's COPY as DuckDB's own when its format and column
// types allow (nil, nil when they do not: the row path copies it).
func (ss *pgSession) streamCopy(q string, cp *copyOutStmt) (*result, error) {
	if !streamCopies || namesSystemCatalog(q) || rocklake.IsWrite(q) {
		return nil, nil
	}
	ctx, done := ss.queryContext()
	cols, ok := ss.streamColumns(ctx, q)
	if !ok {
		done()
		return nil, nil
	}
	if cp.opts.format == "binary" {
		// Binary rows are made in Go from each value's text, as a binary
		// cursor's are: DuckDB writes the text format.
		res := ss.streamRows(ctx, done, q, cols, []int16{1})
		if res == nil {
			done()
			return nil, nil
		}
		res.out = &copyOut{o: &cp.opts, cols: res.cols, tm: res.tm}
		for _, f := range res.fields {
			res.out.names = append(res.out.names, string(f.Name))
		}
		res.fields = nil
		streamedCopies.Add(1)
		return res, nil
	}
	names, types := make([]string, len(cols)), make([]string, len(cols))
	force := make([]bool, len(cols))
	for i, c := range cols {
		names[i], types[i] = c.Name, c.Type
		force[i] = cp.opts.allQuote || containsName(cp.opts.forceQuote, c.Name)
	}
	for _, n := range cp.opts.forceQuote {
		if !containsName(names, n) {
			done()
			return nil, &pgError{code: "42P10", msg: fmt.Sprintf("FORCE_QUOTE column %q not referenced by COPY", n)}
		}
	}
	line, ok := streamLine(&cp.opts, names, types, force)
	if !ok {
		done()
		return nil, nil
	}
	st := ss.startStream(ctx, q, line, len(cols))
	if st == nil {
		done()
		return nil, nil
	}
	if cp.opts.format == "csv" {
		st.csv, st.quote, st.escape = true, cp.opts.quote, cp.opts.escape
	}
	streamedCopies.Add(1)
	out := &copyOut{o: &cp.opts, names: names, quote: force}
	out.cols = make([]column, len(cols))
	return &result{out: out, stream: st, ctx: ctx, done: done, s: ss.s, tm: ss.typeMap()}, nil
}

// streamColumns are the columns of q's answer, when DuckDB's COPY may
// write it (false when it has none, or q fails: the row path then says
// what is wrong, as it would).
func (ss *pgSession) streamColumns(ctx context.Context, q string) ([]engine.Column, bool) {
	rows, err := ss.s.lake.QueryRows(ctx, "SELECT * FROM (\n"+strings.TrimRight(q, "; \t\r\n")+"\n) LIMIT 0", ss.queryOptions())
	if err != nil {
		return nil, false
	}
	cols := rows.Columns()
	rows.Close()
	return cols, len(cols) > 0
}

// startStream starts q's rows on their way through a pipe as DuckDB's
// COPY of line over q's n columns (named c0, c1, ...); nil when the
// server has no temporary directory to make the pipe in, or cannot.
func (ss *pgSession) startStream(ctx context.Context, q, line string, n int) *copyStream {
	stage, err := ss.s.stageDir()
	if err != nil {
		return nil
	}
	st, err := openStream(stage)
	if err != nil {
		// The row path answers as well, holding more.
		ss.s.cfg.Log.Warn("pg: no pipe for DuckDB's COPY; the rows take the row path", "err", err)
		return nil
	}
	aliases := make([]string, n)
	for i := range aliases {
		aliases[i] = "c" + strconv.Itoa(i)
	}
	order := ""
	if !orderBy.MatchString(sqllex.Mask(q)) {
		order = ", PRESERVE_ORDER false"
	}
	fifo := filepath.Join(st.dir, "rows")
	run := func(ctx context.Context, conn *sql.Conn, views, query string) error {
		r, err := conn.ExecContext(ctx, views+"COPY (SELECT "+line+" FROM (\n"+query+"\n) AS __rocklake_q("+strings.Join(aliases, ", ")+
			")) TO "+sqllex.QuoteString(fifo)+" (FORMAT csv, QUOTE '', ESCAPE '', HEADER false"+order+")")
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		st.mu.Lock()
		st.rows = n
		st.mu.Unlock()
		return err
	}
	o := ss.queryOptions()
	go func() {
		res, err := ss.s.lake.QueryInto(ctx, q, o, run)
		st.mu.Lock()
		st.err, st.res = err, res
		st.mu.Unlock()
		st.guard.Close() // reading ends once what DuckDB wrote is read
		// Wakes a read waiting on the pipe, before end says why (stop
		// takes the deadline off once end is closed).
		st.r.SetReadDeadline(time.Now())
		close(st.end)
	}()
	return st
}

// cursorLine is the COPY text format a streamed cursor's rows come in:
// tab between fields, \N for NULL, backslash escapes (textFields reads
// it back).
var cursorLine = copyOptions{format: "text", delim: '\t', null: `\N`}

// streamCursor starts a cursor's query as DuckDB's own COPY, in the text
// format, where its columns allow (nil, nil where they do not): each
// FETCH then reads the rows it sends from the pipe, and the rows not yet
// fetched wait in DuckDB's COPY, stopped at the pipe, instead of in a
// materialised answer. Its columns are those the row path would send.
func (ss *pgSession) streamCursor(ctx context.Context, done func(), q string) *result {
	if !streamCopies || namesSystemCatalog(q) || rocklake.IsWrite(q) {
		return nil
	}
	cols, ok := ss.streamColumns(ctx, q)
	if !ok {
		return nil
	}
	res := ss.streamRows(ctx, done, q, cols, nil)
	if res != nil {
		streamedCursors.Add(1)
		ss.s.m.queries.Inc()
	}
	return res
}

// streamRows starts q, of columns cols, as DuckDB's own COPY in the text
// format, its rows read back into values (textFields) and sent in formats
// (nil where a column's type takes the row path).
func (ss *pgSession) streamRows(ctx context.Context, done func(), q string, cols []engine.Column, formats []int16) *result {
	fields, enc, err := columnsFor(cols, ss.pgNames(q, cols), formats)
	if err != nil {
		return nil
	}
	names, types := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		names[i], types[i] = c.Name, c.Type
	}
	line, ok := streamLine(&cursorLine, names, types, make([]bool, len(cols)))
	if !ok {
		return nil
	}
	st := ss.startStream(ctx, q, line, len(cols))
	if st == nil {
		return nil
	}
	return &result{fields: fields, cols: enc, lines: st, ctx: ctx, done: done, start: time.Now(), s: ss.s, tm: ss.typeMap()}
}

// textFields reads a line of the COPY text format into its fields (nil
// for NULL), each the PostgreSQL text of its value, appended to vals.
func textFields(line []byte, vals []any) ([]any, error) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	for {
		f := line
		i := bytes.IndexByte(line, '\t')
		if i >= 0 {
			f = line[:i]
		}
		switch {
		case string(f) == `\N`:
			vals = append(vals, nil)
		case bytes.IndexByte(f, '\\') < 0:
			vals = append(vals, pgText(f))
		default:
			u := make([]byte, 0, len(f))
			for j := 0; j < len(f); j++ {
				c := f[j]
				if c == '\\' && j+1 < len(f) {
					j++
					switch c = f[j]; c {
					case 'b':
						c = '\b'
					case 'f':
						c = '\f'
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'v':
						c = '\v'
					}
				}
				u = append(u, c)
			}
			vals = append(vals, pgText(u))
		}
		if i < 0 {
			return vals, nil
		}
		line = line[i+1:]
	}
}

// pgText is a value already in PostgreSQL's text form (a streamed
// cursor's field), sent as it is in the text format and through pgx's
// codecs in the binary one.
type pgText string

// openStream makes the pipe in a directory of its own under stage and
// opens the session's ends of it.
func openStream(stage string) (*copyStream, error) {
	dir, err := os.MkdirTemp(stage, "copy-")
	if err != nil {
		return nil, fmt.Errorf("COPY TO STDOUT: %w", err)
	}
	fifo := filepath.Join(dir, "rows")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("COPY TO STDOUT: a pipe for DuckDB's rows: %w", err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("COPY TO STDOUT: %w", err)
	}
	growPipe(r)
	guard, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		r.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("COPY TO STDOUT: %w", err)
	}
	st := &copyStream{dir: dir, r: r, guard: guard, end: make(chan struct{})}
	st.br = bufio.NewReaderSize(&pipeReader{f: r, end: st.end}, 256<<10)
	return st, nil
}

// next is the next line DuckDB wrote (with its newline), valid until the
// next call; false at the end of the COPY.
func (s *copyStream) next() ([]byte, bool, error) {
	s.line = s.line[:0]
	for {
		b, err := s.br.ReadSlice('\n')
		switch {
		case err == nil && len(s.line) == 0:
			return b, true, nil
		case err == nil:
			return append(s.line, b...), true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			s.line = append(s.line, b...)
			continue
		case errors.Is(err, io.EOF):
			if len(b)+len(s.line) > 0 {
				// DuckDB ends every line: a partial one is a COPY that
				// failed while writing it.
				<-s.end
				if err := s.copyErr(); err != nil {
					return nil, false, err
				}
				return nil, false, fmt.Errorf("COPY TO STDOUT: the rows' data ended inside a line")
			}
			<-s.end
			return nil, false, s.copyErr()
		default:
			return nil, false, err
		}
	}
}

// lines is whole lines DuckDB wrote: at most max bytes of them, still in
// the buffer (peeked; consume takes them), or, where the buffer holds no
// whole line, the next line gathered past it and taken already. ok is
// false at the COPY's end.
func (s *copyStream) lines(max int) (b []byte, peeked, ok bool, err error) {
	if s.pending != nil {
		b, s.pending = s.pending, nil
		return b, false, true, nil
	}
	if s.br.Buffered() > 0 || s.fill() {
		b, _ := s.br.Peek(min(max, s.br.Buffered()))
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return b[:i+1], true, true, nil
		}
	}
	b, ok, err = s.next()
	return b, false, ok, err
}

// rowEnd is the length of the row b starts with, through its newline; 0
// when b does not hold all of it. A row is a line, but in CSV a quoted
// value may hold newlines of its own (PostgreSQL's COPY writes them raw,
// and sends the row as one message).
func (s *copyStream) rowEnd(b []byte) int {
	e := bytes.IndexByte(b, '\n') + 1
	if !s.csv || e == 0 || bytes.IndexByte(b[:e], s.quote) < 0 {
		return e
	}
	end, _ := s.scan(b, false)
	return end
}

// scan reads CSV from inside a quoted value or not (in): the length of
// the row through its newline, or 0 and whether b ends inside a quoted
// value.
func (s *copyStream) scan(b []byte, in bool) (int, bool) {
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == s.escape && s.escape != s.quote:
			i++ // the escaped quote or escape
		case c == s.quote:
			in = !in // in a quoted value, a doubled quote goes out and in again
		case c == '\n' && !in:
			return i + 1, false
		}
	}
	return 0, in
}

// gather is the row that starts with part, read on from the pipe past
// what the buffer holds; peeked says part is still in the buffer (else it
// was taken already).
func (s *copyStream) gather(part []byte, peeked bool) ([]byte, error) {
	row := s.row[:0]
	in := false
	if !peeked {
		row = append(row, part...)
		var end int
		if end, in = s.scan(row, false); end == len(row) {
			s.row = row
			return row, nil
		}
	}
	for {
		line, ok, err := s.next()
		if !ok {
			if err == nil {
				err = errors.New("COPY TO STDOUT: the rows' data ended inside a quoted value")
			}
			return nil, err
		}
		row = append(row, line...)
		var end int
		// A line ends at its newline: it ends the row unless that newline
		// is inside a quoted value.
		if end, in = s.scan(line, in); end == len(line) {
			s.row = row
			return row, nil
		}
	}
}

// fill waits for the pipe's next bytes; at its end, or on an error, next
// says which.
func (s *copyStream) fill() bool {
	_, err := s.br.Peek(1)
	return err == nil
}

// consume takes n bytes of what lines peeked.
func (s *copyStream) consume(n int) { s.br.Discard(n) }

// unread gives back the line lines gathered, for its next call; nothing
// is read from the pipe meanwhile, so the line stays valid.
func (s *copyStream) unread(line []byte) { s.pending = line }

// pipeReader reads the pipe until DuckDB's COPY has returned and what it
// wrote is read. The pipe's end of file does not say so: it comes once
// every write end is closed, and a COPY cancelled midway (a cursor's,
// its client gone) was seen to return with DuckDB's end still open, the
// session then waiting for ever. So once the COPY has returned, a read
// takes only what the pipe holds, and an empty pipe is the end.
type pipeReader struct {
	f   *os.File
	end chan struct{}
}

func (p *pipeReader) Read(b []byte) (int, error) {
	for {
		select {
		case <-p.end:
			// The COPY's writes are done: what it wrote is in the pipe.
			var n int
			var ioErr error
			c, err := p.f.SyscallConn()
			if err == nil {
				err = c.Control(func(fd uintptr) { n, ioErr = pipeHolds(fd) })
			}
			if err = errors.Join(err, ioErr); err != nil {
				return 0, fmt.Errorf("COPY TO STDOUT: the rows left in the pipe: %w", err)
			}
			if n == 0 {
				return 0, io.EOF
			}
			p.f.SetReadDeadline(time.Time{})
			return p.f.Read(b[:min(len(b), n)])
		default:
		}
		n, err := p.f.Read(b)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue // the COPY returned meanwhile
		}
		return n, err
	}
}

// copyLines is a run of lines, each its own CopyData message as
// PostgreSQL sends a row, framed straight into the backend's buffer: one
// copy of the bytes, and no message value per row.
type copyLines struct {
	b    []byte
	ends []int // where each line ends in b
}

func (*copyLines) Backend() {}

func (*copyLines) Decode([]byte) error { return errors.New("copyLines is only sent") }

func (m *copyLines) Encode(dst []byte) ([]byte, error) {
	start := 0
	for _, e := range m.ends {
		dst = append(dst, 'd')
		dst = binary.BigEndian.AppendUint32(dst, uint32(4+e-start))
		dst = append(dst, m.b[start:e]...)
		start = e
	}
	return dst, nil
}

func (s *copyStream) copyErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// finish waits for the COPY: its rows, its result, its error.
func (s *copyStream) finish() (int64, *rocklake.Result, error) {
	<-s.end
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rows, s.res, s.err
}

// stop ends the COPY (the caller has cancelled its context) and removes
// the pipe. What DuckDB still writes is read and dropped until the COPY
// returns: with the read end closed, a DuckDB yet to open the pipe would
// wait in open for ever, where a cancelled one stops at its next chunk.
func (s *copyStream) stop() {
	s.close.Do(func() {
		io.Copy(io.Discard, s.br)
		<-s.end
		os.RemoveAll(s.dir)
		// A COPY cancelled midway may return with DuckDB's end of the pipe
		// still open, and DuckDB may write what it buffered when it lets go
		// of it: into a pipe without a reader that write would raise
		// SIGPIPE on DuckDB's thread, which ends the process. So the read
		// end stays open until every writer has gone, read and dropped
		// off the session's way.
		go func() {
			s.r.SetReadDeadline(time.Time{})
			io.Copy(io.Discard, s.r)
			s.r.Close()
		}()
	})
}
