package server

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/internal/writesql"
)

// COPY (query) TO STDOUT and COPY t [(cols)] TO STDOUT: PostgreSQL's
// copy-out sub-protocol (CopyOutResponse, a CopyData per row, CopyDone,
// then the command tag COPY n) in its text, CSV and binary formats. The
// query runs as any other (pruned, at the snapshot the session reads);
// its rows are encoded as DuckDB hands them over and leave a socket's
// worth at a time, so the session holds one flush of the data, never
// the answer. The server's answer limits (--max-result-rows and
// --max-result-bytes) hold for COPY's data as for a query's rows.

// copyOutStmt is a COPY ... TO STDOUT, read.
type copyOutStmt struct {
	query string // (query), or "" for a table
	table string
	cols  []string
	opts  copyOptions
}

// parseCopyTo reads a COPY ... TO STDOUT; nil for any other statement.
func parseCopyTo(q string) (*copyOutStmt, error) {
	if sqllex.LeadingKeyword(q) != "COPY" {
		return nil, nil
	}
	lx := &copyLexer{src: strings.TrimSpace(q)}
	lx.next() // COPY
	cp := &copyOutStmt{}
	if open := lx.peek(); open.is("(") {
		end := closingParen(lx.src, open.at)
		if end < 0 {
			return nil, &pgError{code: "42601", msg: "syntax error: COPY (query has no closing parenthesis"}
		}
		cp.query = strings.TrimSpace(lx.src[open.at+1 : end])
		lx.off, lx.peeked = end+1, nil
	} else {
		name := lx.next()
		if name.kind != tokWord && name.kind != tokName {
			return nil, nil
		}
		cp.table = name.text
		if lx.peek().is(".") {
			return nil, fmt.Errorf("table %s.…: %w: rocklake tables have one-part names", name.text, writesql.ErrUnsupported)
		}
		if lx.peek().is("(") {
			var err error
			if cp.cols, err = lx.columnList(); err != nil {
				return nil, err
			}
		}
	}
	if !lx.next().isWord("TO") || !lx.next().isWord("STDOUT") {
		return nil, nil // COPY ... TO a file is not the client's to ask for
	}
	cp.opts.to = true
	if err := lx.options(&cp.opts); err != nil {
		return nil, err
	}
	if err := cp.opts.check(); err != nil {
		return nil, err
	}
	if cp.query != "" && !readsOnly(cp.query) {
		return nil, &pgError{code: "0A000", msg: "COPY (query) TO STDOUT takes a query (SELECT, VALUES, TABLE or WITH ...)"}
	}
	return cp, nil
}

// closingParen is the offset of the parenthesis closing the one at open,
// outside strings, quoted names and comments; -1 if there is none.
func closingParen(src string, open int) int {
	masked := sqllex.Mask(src)
	depth := 0
	for i := open; i < len(masked); i++ {
		switch masked[i] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// copyTo starts a COPY ... TO STDOUT: its query runs now, its data is
// sent as rows are.
func (ss *pgSession) copyTo(cp *copyOutStmt) (*result, error) {
	q := cp.query
	if q == "" {
		sel := "*"
		if len(cp.cols) > 0 {
			cols, err := ss.copyColumns(&copyStmt{table: cp.table, cols: cp.cols}, ss.readAt())
			if err != nil {
				return nil, err
			}
			names := make([]string, len(cols))
			for i, c := range cols {
				names[i] = sqllex.QuoteName(c.name)
			}
			sel = strings.Join(names, ", ")
		}
		q = "SELECT " + sel + " FROM " + sqllex.QuoteName(cp.table)
	}
	format := int16(0)
	if cp.opts.format == "binary" {
		format = 1
	}
	if res, err := ss.streamCopy(q, cp); res != nil || err != nil {
		return res, err
	}
	res, err := ss.query(q, []int16{format}, ss.queryContext)
	if err != nil {
		return nil, err
	}
	out := &copyOut{o: &cp.opts, cols: res.cols, tm: ss.typeMap(), quote: make([]bool, len(res.cols))}
	for _, f := range res.fields {
		out.names = append(out.names, string(f.Name))
	}
	for i, n := range out.names {
		out.quote[i] = cp.opts.allQuote || containsName(cp.opts.forceQuote, n)
	}
	for _, n := range cp.opts.forceQuote {
		if !containsName(out.names, n) {
			res.close()
			return nil, &pgError{code: "42P10", msg: fmt.Sprintf("FORCE_QUOTE column %q not referenced by COPY", n)}
		}
	}
	res.out, res.fields = out, nil
	return res, nil
}

// copyOut encodes a COPY's rows in its format.
type copyOut struct {
	o       *copyOptions
	names   []string
	cols    []column
	quote   []bool // FORCE_QUOTE, by column
	tm      *pgtype.Map
	buf     []byte // one row's data, reused: Send copies it
	started bool
}

func (w *copyOut) response() *pgproto3.CopyOutResponse {
	format := byte(0)
	if w.o.format == "binary" {
		format = 1
	}
	codes := make([]uint16, len(w.cols))
	for i := range codes {
		codes[i] = uint16(format)
	}
	return &pgproto3.CopyOutResponse{OverallFormat: format, ColumnFormatCodes: codes}
}

// header is what goes before the rows: the binary format's signature,
// flags (none) and header extension (empty), or HEADER's line of names.
func (w *copyOut) header() []byte {
	switch {
	case w.o.format == "binary":
		return append(append([]byte{}, binarySignature...), 0, 0, 0, 0, 0, 0, 0, 0)
	case !w.o.header:
		return nil
	}
	b := w.buf[:0]
	for i, n := range w.names {
		if i > 0 {
			b = append(b, w.o.delim)
		}
		b = w.field(b, n, false)
	}
	return append(b, '\n')
}

// trailer ends the binary format's data: a field count of -1.
func (w *copyOut) trailer() []byte {
	if w.o.format == "binary" {
		return []byte{0xff, 0xff}
	}
	return nil
}

// row is one row's data: valid until the next call.
func (w *copyOut) row(vals []any) ([]byte, error) {
	b := w.buf[:0]
	if w.o.format == "binary" {
		b = binary.BigEndian.AppendUint16(b, uint16(len(vals)))
		for i, v := range vals {
			if t, ok := v.(pgText); ok && w.cols[i].format == 1 {
				if nb, ok := appendBinary(b, w.cols[i].oid, string(t)); ok {
					b = nb
					continue
				}
			}
			enc, err := encodeValue(w.tm, w.cols[i], v)
			if err != nil {
				return nil, w.fail(i, err)
			}
			if enc == nil {
				b = binary.BigEndian.AppendUint32(b, 0xffffffff) // -1: NULL
				continue
			}
			b = binary.BigEndian.AppendUint32(b, uint32(len(enc)))
			b = append(b, enc...)
		}
		w.buf = b
		return b, nil
	}
	for i, v := range vals {
		if i > 0 {
			b = append(b, w.o.delim)
		}
		s, ok, err := text(w.cols[i], v)
		if err != nil {
			return nil, w.fail(i, err)
		}
		if !ok {
			b = append(b, w.o.null...)
			continue
		}
		b = w.field(b, s, w.quote[i])
	}
	b = append(b, '\n')
	w.buf = b
	return b, nil
}

func (w *copyOut) fail(col int, err error) error {
	return &pgError{code: "22000", msg: fmt.Sprintf("COPY TO STDOUT: column %s: %v", w.names[col], err)}
}

// textEscapes are the bytes the text format writes as a backslash and a
// letter (a delimiter is written after a backslash as itself).
var textEscapes = [256]byte{'\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't', '\v': 'v', '\\': '\\'}

// field appends one value in the text or CSV format, as PostgreSQL's
// CopyAttributeOutText and CopyAttributeOutCSV write it.
func (w *copyOut) field(b []byte, s string, force bool) []byte {
	if w.o.format == "csv" {
		quote := force || s == w.o.null || len(w.names) == 1 && s == `\.`
		for i := 0; !quote && i < len(s); i++ {
			c := s[i]
			quote = c == w.o.delim || c == w.o.quote || c == '\n' || c == '\r'
		}
		if !quote {
			return append(b, s...)
		}
		b = append(b, w.o.quote)
		for i := 0; i < len(s); i++ {
			if c := s[i]; c == w.o.quote || c == w.o.escape {
				b = append(b, w.o.escape)
			}
			b = append(b, s[i])
		}
		return append(b, w.o.quote)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case textEscapes[c] != 0:
			b = append(b, '\\', textEscapes[c])
		case c == w.o.delim:
			b = append(b, '\\', c)
		default:
			b = append(b, c)
		}
	}
	return b
}
