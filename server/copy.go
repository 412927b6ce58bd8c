package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/internal/writesql"
	"github.com/rocklake/rocklake/types"
)

// COPY t [(cols)] FROM STDIN: PostgreSQL's copy-in sub-protocol
// (CopyInResponse, then the client's CopyData until CopyDone or CopyFail)
// in PostgreSQL's formats: text (tab-separated, \N for NULL, backslash
// escapes), CSV, and binary (what pgx's CopyFrom sends). The statement's
// options are PostgreSQL's, in either syntax: WITH (FORMAT csv, HEADER)
// and the older CSV HEADER that psql's \copy passes on.
//
// The data is read here, by PostgreSQL's rules, and staged as one CSV
// file of a single, unambiguous dialect: every value quoted, NULL an
// empty unquoted field, one record per row, bytea turned into DuckDB's
// BLOB text. Lake.Exec then has DuckDB read that file into the table's
// columns, so that casts and constraints are DuckDB's as in any other
// write. Errors in the client's data name its line; DuckDB's errors over
// the staged file are given the line of the client's row.

// copyStmt is a COPY ... FROM STDIN, read.
type copyStmt struct {
	table   string
	colList string   // "(a, b)" as written, or ""
	cols    []string // its names, unquoted
	opts    copyOptions
}

type copyOptions struct {
	format        string // text, csv, binary
	delim         byte
	null          string
	header, match bool
	quote, escape byte
	forceNotNull  []string
	forceNull     []string
	allNotNull    bool
	allNull       bool
	seen          map[string]bool
	delimSet      bool
	nullSet       bool
	quoteSet      bool
	escapeSet     bool
	// to: the options of a COPY ... TO, which FORCE_QUOTE (by column,
	// or all) is for.
	to         bool
	forceQuote []string
	allQuote   bool
}

// parseCopyStdin reads a COPY ... FROM STDIN; nil for any other statement
// (COPY from a path is Lake.Exec's, in DuckDB's syntax).
func parseCopyStdin(q string) (*copyStmt, error) {
	if sqllex.LeadingKeyword(q) != "COPY" {
		return nil, nil
	}
	lx := &copyLexer{src: strings.TrimSpace(q)}
	lx.next() // COPY
	name := lx.next()
	if name.kind != tokWord && name.kind != tokName {
		return nil, nil
	}
	cp := &copyStmt{table: name.text}
	if lx.peek().is(".") {
		return nil, fmt.Errorf("table %s.…: %w: rocklake tables have one-part names", name.text, writesql.ErrUnsupported)
	}
	if open := lx.peek(); open.is("(") {
		var err error
		if cp.cols, err = lx.columnList(); err != nil {
			return nil, err
		}
		cp.colList = strings.TrimSpace(lx.src[open.at:lx.off])
	}
	if !lx.next().isWord("FROM") {
		return nil, nil
	}
	if !lx.next().isWord("STDIN") {
		return nil, nil
	}
	if err := lx.options(&cp.opts); err != nil {
		return nil, err
	}
	if err := cp.opts.check(); err != nil {
		return nil, err
	}
	return cp, nil
}

// columnList reads a parenthesised list of column names.
func (lx *copyLexer) columnList() ([]string, error) {
	lx.next() // (
	var cols []string
	for {
		t := lx.next()
		if t.kind != tokWord && t.kind != tokName {
			return nil, lx.syntax(t, "a column name")
		}
		cols = append(cols, t.text)
		if t = lx.next(); t.is(")") {
			return cols, nil
		} else if !t.is(",") {
			return nil, lx.syntax(t, ", or ) in the column list")
		}
	}
}

// options reads what follows STDIN: [WITH] (option [value], ...), or the
// older option words, then nothing but a semicolon.
func (lx *copyLexer) options(o *copyOptions) error {
	o.seen = map[string]bool{}
	if lx.peek().isWord("WITH") {
		lx.next()
	}
	if lx.peek().is("(") {
		lx.next()
		for {
			t := lx.next()
			if t.kind != tokWord {
				return lx.syntax(t, "a COPY option")
			}
			var val copyValue
			if v := lx.peek(); !v.is(",") && !v.is(")") {
				var err error
				if val, err = lx.value(); err != nil {
					return err
				}
			}
			if err := o.set(strings.ToLower(t.text), val); err != nil {
				return err
			}
			if t = lx.next(); t.is(")") {
				break
			} else if !t.is(",") {
				return lx.syntax(t, ", or ) in the option list")
			}
		}
	} else {
		for {
			t := lx.peek()
			if t.kind != tokWord || t.isWord("WHERE") {
				break
			}
			lx.next()
			word := strings.ToLower(t.text)
			var err error
			switch word {
			case "binary":
				err = o.set("format", copyValue{word: "binary"})
			case "csv":
				err = o.set("format", copyValue{word: "csv"})
			case "freeze", "header":
				err = o.set(word, copyValue{})
			case "delimiter", "null", "quote", "escape", "encoding":
				if lx.peek().isWord("AS") {
					lx.next()
				}
				s := lx.next()
				if s.kind != tokString {
					return lx.syntax(s, "a quoted string after "+strings.ToUpper(word))
				}
				err = o.set(word, copyValue{str: s.text, isStr: true})
			case "force":
				w := lx.next()
				switch {
				case w.isWord("QUOTE"):
					word = "force_quote"
				case w.isWord("NULL"):
					word = "force_null"
				case w.isWord("NOT") && lx.next().isWord("NULL"):
					word = "force_not_null"
				default:
					return lx.syntax(w, "QUOTE, NOT NULL or NULL after FORCE")
				}
				var v copyValue
				if lx.peek().is("*") {
					lx.next()
					v.star = true
				} else {
					for {
						c := lx.next()
						if c.kind != tokWord && c.kind != tokName {
							return lx.syntax(c, "a column name")
						}
						v.cols = append(v.cols, c.text)
						if !lx.peek().is(",") {
							break
						}
						lx.next()
					}
				}
				err = o.set(word, v)
			default:
				return lx.syntax(t, "a COPY option")
			}
			if err != nil {
				return err
			}
		}
	}
	if lx.peek().isWord("WHERE") && !o.to {
		return &pgError{code: "0A000", msg: "COPY FROM STDIN ... WHERE is not supported",
			hint: "copy the rows into a table of their own, then INSERT ... SELECT ... WHERE"}
	}
	if lx.peek().is(";") {
		lx.next()
	}
	if t := lx.next(); t.kind != tokEnd {
		return lx.syntax(t, "the end of the statement")
	}
	return nil
}

// copyValue is an option's argument.
type copyValue struct {
	word  string // lower-cased
	str   string
	isStr bool
	star  bool
	cols  []string
}

func (lx *copyLexer) value() (copyValue, error) {
	t := lx.next()
	switch t.kind {
	case tokWord, tokNumber:
		return copyValue{word: strings.ToLower(t.text)}, nil
	case tokString:
		return copyValue{str: t.text, isStr: true}, nil
	}
	switch {
	case t.is("*"):
		return copyValue{star: true}, nil
	case t.is("("):
		var v copyValue
		for {
			c := lx.next()
			if c.kind != tokWord && c.kind != tokName {
				return v, lx.syntax(c, "a column name")
			}
			v.cols = append(v.cols, c.text)
			if c = lx.next(); c.is(")") {
				return v, nil
			} else if !c.is(",") {
				return v, lx.syntax(c, ", or ) in the column list")
			}
		}
	}
	return copyValue{}, lx.syntax(t, "an option value")
}

// text is a value that may be written as a string or a bare word.
func (v copyValue) text() string {
	if v.isStr {
		return v.str
	}
	return v.word
}

// boolean reads an option's Boolean argument (none is true).
func (v copyValue) boolean(name string) (bool, error) {
	if !v.isStr && v.word == "" {
		return true, nil
	}
	on, ok := parseBool(v.text())
	if !ok {
		return false, &pgError{code: "22023", msg: fmt.Sprintf("%s requires a Boolean value", name)}
	}
	return on, nil
}

// set records one option, checking it as PostgreSQL does.
func (o *copyOptions) set(name string, v copyValue) error {
	if o.seen[name] {
		return &pgError{code: "42601", msg: "conflicting or redundant options", hint: fmt.Sprintf("%s is given twice", name)}
	}
	o.seen[name] = true
	oneByte := func(what string) (byte, error) {
		s := v.text()
		if len(s) != 1 {
			return 0, &pgError{code: "0A000", msg: fmt.Sprintf("COPY %s must be a single one-byte character", what)}
		}
		return s[0], nil
	}
	var err error
	switch name {
	case "format":
		switch f := strings.ToLower(v.text()); f {
		case "text", "csv", "binary":
			o.format = f
		default:
			return &pgError{code: "22023", msg: fmt.Sprintf("COPY format %q not recognized", v.text())}
		}
	case "freeze":
		_, err = v.boolean("freeze")
	case "delimiter":
		o.delim, err = oneByte("delimiter")
		o.delimSet = true
	case "null":
		o.null, o.nullSet = v.text(), true
	case "header":
		if strings.EqualFold(v.text(), "match") {
			if o.to {
				return &pgError{code: "0A000", msg: `cannot use "match" with HEADER in COPY TO`}
			}
			o.header, o.match = true, true
		} else {
			o.header, err = v.boolean("header")
		}
	case "quote":
		o.quote, err = oneByte("quote")
		o.quoteSet = true
	case "escape":
		o.escape, err = oneByte("escape")
		o.escapeSet = true
	case "force_not_null", "force_null":
		if o.to {
			return &pgError{code: "0A000", msg: fmt.Sprintf("COPY %s cannot be used with COPY TO", strings.ToUpper(name))}
		}
		if name == "force_null" {
			o.forceNull, o.allNull = v.cols, v.star
		} else {
			o.forceNotNull, o.allNotNull = v.cols, v.star
		}
	case "force_quote":
		if !o.to {
			return &pgError{code: "0A000", msg: "COPY FORCE_QUOTE cannot be used with COPY FROM"}
		}
		o.forceQuote, o.allQuote = v.cols, v.star
	case "encoding":
		switch strings.ToLower(strings.ReplaceAll(v.text(), "-", "")) {
		case "utf8", "unicode":
		default:
			return &pgError{code: "0A000", msg: fmt.Sprintf("COPY reads and writes UTF8 only, not %q", v.text())}
		}
	case "on_error":
		if o.to {
			return &pgError{code: "0A000", msg: "COPY ON_ERROR cannot be used with COPY TO"}
		}
		if !strings.EqualFold(v.text(), "stop") {
			return &pgError{code: "0A000", msg: fmt.Sprintf("COPY ON_ERROR %s is not supported: a COPY with a bad row writes nothing", v.text())}
		}
	case "log_verbosity":
		// What ON_ERROR's notices say; ON_ERROR stops, so there are none.
	case "default":
		if o.to {
			return &pgError{code: "0A000", msg: "COPY DEFAULT cannot be used with COPY TO"}
		}
		return &pgError{code: "0A000", msg: "COPY DEFAULT is not supported", hint: "leave the column out of the COPY's column list to give it its default"}
	default:
		return &pgError{code: "42601", msg: fmt.Sprintf("option %q not recognized", name)}
	}
	return err
}

// check fills in the defaults and refuses what does not go together, as
// PostgreSQL's ProcessCopyOptions does.
func (o *copyOptions) check() error {
	if o.format == "" {
		o.format = "text"
	}
	csv, bin := o.format == "csv", o.format == "binary"
	unsupported := func(format string) error { return &pgError{code: "0A000", msg: format} }
	if bin {
		switch {
		case o.delimSet:
			return unsupported("cannot specify DELIMITER in BINARY mode")
		case o.nullSet:
			return unsupported("cannot specify NULL in BINARY mode")
		case o.seen["header"]:
			return unsupported("cannot specify HEADER in BINARY mode")
		}
	}
	if !csv {
		switch {
		case o.quoteSet:
			return unsupported("COPY QUOTE requires CSV mode")
		case o.escapeSet:
			return unsupported("COPY ESCAPE requires CSV mode")
		case o.seen["force_not_null"]:
			return unsupported("COPY FORCE_NOT_NULL requires CSV mode")
		case o.seen["force_null"]:
			return unsupported("COPY FORCE_NULL requires CSV mode")
		case o.seen["force_quote"]:
			return unsupported("COPY FORCE_QUOTE requires CSV mode")
		}
	}
	if !o.delimSet {
		o.delim = '\t'
		if csv {
			o.delim = ','
		}
	}
	if !o.nullSet && !csv {
		o.null = `\N`
	}
	if !o.quoteSet {
		o.quote = '"'
	}
	if !o.escapeSet {
		o.escape = o.quote
	}
	bad := func(format string, a ...any) error { return &pgError{code: "22023", msg: fmt.Sprintf(format, a...)} }
	switch {
	case bin:
	case o.delim == '\n' || o.delim == '\r':
		return bad("COPY delimiter cannot be newline or carriage return")
	case strings.ContainsAny(o.null, "\r\n"):
		return bad("COPY null representation cannot use newline or carriage return")
	case !csv && strings.IndexByte(`\.abcdefghijklmnopqrstuvwxyz0123456789`, o.delim) >= 0:
		return bad("COPY delimiter cannot be %q", string(o.delim))
	case csv && o.delim == o.quote:
		return bad("COPY delimiter and quote must be different")
	case strings.IndexByte(o.null, o.delim) >= 0:
		return bad("COPY delimiter character must not appear in the NULL specification")
	case csv && strings.IndexByte(o.null, o.quote) >= 0:
		return bad("CSV quote character must not appear in the NULL specification")
	}
	return nil
}

func containsName(list []string, name string) bool {
	for _, n := range list {
		if n == name || strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// copyCol is one column the client's rows carry.
type copyCol struct {
	name         string
	oid          uint32
	blob         bool
	notNull, nul bool // FORCE_NOT_NULL, FORCE_NULL
}

// copyIn runs the copy-in sub-protocol for a COPY ... FROM STDIN and
// writes what the client sent.
func (ss *pgSession) copyIn(ctx context.Context, cp *copyStmt) (*rocklake.WriteResult, error) {
	cols, err := ss.copyColumns(cp, rocklake.SnapshotRef{})
	if err != nil {
		return nil, err
	}
	dir, err := ss.s.stageDir()
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "rocklake-copy-*.csv")
	if err != nil {
		return nil, fmt.Errorf("staging COPY FROM STDIN: %w", err)
	}
	path := f.Name()
	defer os.Remove(path) // whatever happens: staged data is never kept
	defer f.Close()
	st := &stager{w: bufio.NewWriterSize(f, 256<<10), cols: cols, table: cp.table, binary: cp.opts.format == "binary", tm: ss.typeMap()}
	var dec copyDecoder
	switch cp.opts.format {
	case "text":
		dec = &textDecoder{st: st, o: &cp.opts}
	case "csv":
		dec = &csvDecoder{st: st, o: &cp.opts}
	case "binary":
		dec = &binaryDecoder{st: st}
	}
	format := int16(0)
	if st.binary {
		format = 1
	}
	codes := make([]uint16, len(cols))
	for i := range codes {
		codes[i] = uint16(format)
	}
	ss.be.Send(&pgproto3.CopyInResponse{OverallFormat: byte(format), ColumnFormatCodes: codes})
	if err := ss.flush(); err != nil {
		return nil, err
	}
	if err := ss.receiveCopy(ctx, dec); err != nil {
		return nil, err
	}
	if err := st.w.Flush(); err != nil {
		return nil, fmt.Errorf("staging COPY FROM STDIN: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("staging COPY FROM STDIN: %w", err)
	}
	if st.records == 0 {
		return &rocklake.WriteResult{Statement: "COPY", Table: cp.table}, nil
	}
	res, err := ss.exec(ctx, st.statement(cp), rocklake.ExecOptions{Snapshot: ss.readAt(), Stdin: path})
	if err != nil {
		return nil, st.explain(err, path)
	}
	return res, nil
}

// receiveCopy hands the client's CopyData to the decoder until CopyDone.
// The statement's context bounds the wait: a cancel or the timeout ends
// a client that stalls. Past an error, what the client still sends of the
// COPY is dropped by the session's loop.
func (ss *pgSession) receiveCopy(ctx context.Context, dec copyDecoder) error {
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		ss.conn.SetReadDeadline(time.Now())
		close(fired)
	})
	defer func() {
		if !stop() {
			<-fired
		}
		ss.conn.SetReadDeadline(time.Time{})
	}()
	limit := ss.s.cfg.MaxCopyBytes
	var total int64
	for {
		msg, err := ss.be.Receive()
		if err != nil {
			var big *pgproto3.ExceededMaxBodyLenErr
			var ne net.Error
			switch {
			case errors.As(err, &big):
				ss.s.tooLarge(ss.be, ss.conn, big)
				return &pgError{code: "54000", msg: "a CopyData message over the server's message limit"}
			case ctx.Err() != nil && errors.As(err, &ne) && ne.Timeout():
				return ctxError(ctx, err)
			}
			ss.s.cfg.Log.Info("pg: client went away during COPY FROM STDIN; nothing written", "user", ss.user, "remote", ss.conn.RemoteAddr().String())
			return &pgError{code: "08006", msg: "the connection ended during COPY FROM STDIN; nothing was written"}
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			total += int64(len(m.Data))
			if total > limit {
				ss.s.dropped.WithLabelValues("copy_too_large").Inc()
				return &pgError{code: "54000", msg: fmt.Sprintf("COPY FROM STDIN data is over the server's limit of %d bytes; nothing was written", limit),
					hint: "split the data into several COPYs, or raise the server's --max-copy-bytes"}
			}
			if err := dec.write(m.Data); err != nil {
				return err
			}
		case *pgproto3.CopyDone:
			return dec.finish()
		case *pgproto3.CopyFail:
			return &pgError{code: "57014", msg: "COPY from stdin failed: " + m.Message}
		case *pgproto3.Flush, *pgproto3.Sync:
			// PostgreSQL ignores both in copy-in mode.
		default:
			return &pgError{code: "08P01", msg: fmt.Sprintf("unexpected message %T during COPY FROM STDIN; nothing was written", msg)}
		}
	}
}

// copyColumns are the columns the client's rows carry, in order: the
// COPY's column list, or every column of the table.
func (ss *pgSession) copyColumns(cp *copyStmt, at rocklake.SnapshotRef) ([]copyCol, error) {
	info, err := ss.s.lake.Describe(context.Background(), cp.table, rocklake.ReadOptions{Snapshot: at})
	if err != nil {
		return nil, err
	}
	var all []copyCol
	for _, c := range info.Columns {
		if len(c.Path) != 1 {
			continue
		}
		duck := types.DuckDBName(c.Type)
		all = append(all, copyCol{name: c.Path[0], oid: oidOf(duck), blob: duck == "BLOB"})
	}
	cols := all
	if len(cp.cols) > 0 {
		cols = nil
		for _, name := range cp.cols {
			i := -1
			for j, c := range all {
				if c.name == name {
					i = j
					break
				}
				if i < 0 && strings.EqualFold(c.name, name) {
					i = j
				}
			}
			if i < 0 {
				return nil, &pgError{code: "42703", msg: fmt.Sprintf("column %q of relation %q does not exist", name, cp.table)}
			}
			for _, c := range cols {
				if c.name == all[i].name {
					return nil, &pgError{code: "42701", msg: fmt.Sprintf("column %q specified more than once", name)}
				}
			}
			cols = append(cols, all[i])
		}
	}
	o := &cp.opts
	for i := range cols {
		cols[i].notNull = o.allNotNull || containsName(o.forceNotNull, cols[i].name)
		cols[i].nul = o.allNull || containsName(o.forceNull, cols[i].name)
	}
	for _, list := range [][]string{o.forceNotNull, o.forceNull} {
		for _, name := range list {
			found := false
			for _, c := range cols {
				found = found || c.name == name || strings.EqualFold(c.name, name)
			}
			if !found {
				return nil, &pgError{code: "42P10", msg: fmt.Sprintf("column %q is forced but not copied", name)}
			}
		}
	}
	return cols, nil
}

// stageDir is where COPY FROM STDIN's data is staged: the sandbox's
// temporary directory, which its DuckDB may read, or the system's when
// DuckDB is not sandboxed.
func (s *Server) stageDir() (string, error) {
	if s.cfg.Sandbox == nil {
		return os.TempDir(), nil
	}
	if s.cfg.Sandbox.TempDir == "" {
		return "", &pgError{code: "0A000", msg: "COPY FROM STDIN needs the server's temporary directory (Sandbox.TempDir), which this server has none of"}
	}
	return s.cfg.Sandbox.TempDir, nil
}

// stager writes the client's rows as the staged CSV file.
type stager struct {
	w      *bufio.Writer
	cols   []copyCol
	table  string
	binary bool // rows come from binary COPY: bytea values are their bytes
	tm     *pgtype.Map

	records   int64
	maxRecord int
	size      int
	// marks say which client line each staged record came from: the
	// record number plus delta, from mark.record on.
	marks []lineMark
}

type lineMark struct{ record, delta int64 }

// where names a row of the client's data in messages.
func (st *stager) where(line int64) string {
	if st.binary {
		return fmt.Sprintf("COPY %s, row %d", st.table, line)
	}
	return fmt.Sprintf("COPY %s, line %d", st.table, line)
}

func (st *stager) fail(code string, line int64, format string, a ...any) error {
	return &pgError{code: code, msg: st.where(line) + ": " + fmt.Sprintf(format, a...)}
}

// record stages one row: fields[i] is column i's value, nil for NULL.
// line is where the row starts in the client's data (its row number, for
// binary).
func (st *stager) record(fields [][]byte, nulls []bool, line int64) error {
	if len(fields) > len(st.cols) {
		return st.fail("22P04", line, "extra data after last expected column")
	}
	if len(fields) < len(st.cols) {
		return st.fail("22P04", line, "missing data for column %q", st.cols[len(fields)].name)
	}
	st.size = 0
	for i, v := range fields {
		if i > 0 {
			st.put(',')
		}
		if nulls[i] {
			continue
		}
		c := st.cols[i]
		if c.blob {
			b := v
			if !st.binary {
				var err error
				if b, err = byteaText(v); err != nil {
					return st.fail("22P02", line, "column %q: %v", c.name, err)
				}
			}
			st.put('"')
			for _, x := range b {
				if x >= 0x20 && x < 0x7f && x != '\\' {
					if x == '"' {
						st.put('"')
					}
					st.put(x)
				} else {
					st.puts(`\x`)
					st.puts(strconv.FormatUint(uint64(x)>>4, 16))
					st.puts(strconv.FormatUint(uint64(x)&15, 16))
				}
			}
			st.put('"')
			continue
		}
		if !utf8.Valid(v) || containsNUL(v) {
			return st.fail("22021", line, "column %q: invalid byte sequence for encoding \"UTF8\"", c.name)
		}
		st.put('"')
		for {
			j := indexByte(v, '"')
			if j < 0 {
				break
			}
			st.write(v[:j+1])
			st.put('"')
			v = v[j+1:]
		}
		st.write(v)
		st.put('"')
	}
	st.put('\n')
	st.records++
	st.maxRecord = max(st.maxRecord, st.size)
	if delta := line - st.records; len(st.marks) == 0 || st.marks[len(st.marks)-1].delta != delta {
		st.marks = append(st.marks, lineMark{st.records, delta})
	}
	return nil
}

func (st *stager) put(b byte)        { st.w.WriteByte(b); st.size++ }
func (st *stager) puts(s string)     { st.w.WriteString(s); st.size += len(s) }
func (st *stager) write(b []byte)    { st.w.Write(b); st.size += len(b) }
func indexByte(b []byte, c byte) int { return bytes.IndexByte(b, c) }

func containsNUL(b []byte) bool { return indexByte(b, 0) >= 0 }

// lineOf is the client's line (or row) of staged record n.
func (st *stager) lineOf(n int64) int64 {
	delta := int64(0)
	for _, m := range st.marks {
		if m.record > n {
			break
		}
		delta = m.delta
	}
	return n + delta
}

// statement is the COPY Lake.Exec runs over the staged file: its
// dialect, spelled out (DuckDB detects nothing).
func (st *stager) statement(cp *copyStmt) string {
	opts := `FORMAT csv, HEADER false, DELIMITER ',', QUOTE '"', ESCAPE '"', NULL '', ALLOW_QUOTED_NULLS false, AUTO_DETECT false`
	// DuckDB refuses a line over 2 MB unless told of it.
	if st.maxRecord >= 2<<20-1 {
		opts += ", MAX_LINE_SIZE " + strconv.Itoa(st.maxRecord+2)
	}
	q := "COPY " + sqllex.QuoteName(cp.table)
	if cp.colList != "" {
		q += " " + cp.colList
	}
	return q + " FROM STDIN (" + opts + ")"
}

var csvErrorLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`CSV Error on Line: (\d+)`) })

// explain turns DuckDB's error over the staged file into one about the
// client's data: its line, not the staged file's; the message, not the
// staged dialect's settings and the fixes DuckDB suggests for them.
func (st *stager) explain(err error, path string) error {
	msg := err.Error()
	m := csvErrorLine().FindStringSubmatchIndex(msg)
	if m == nil {
		if strings.Contains(msg, path) {
			return errors.New(strings.ReplaceAll(msg, path, "STDIN"))
		}
		return err
	}
	n, _ := strconv.ParseInt(msg[m[2]:m[3]], 10, 64)
	head := msg[:m[0]]
	var detail []string
	for _, l := range strings.Split(msg[m[1]:], "\n")[1:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		if !strings.HasPrefix(l, "Original Line:") {
			detail = append(detail, strings.TrimSpace(l))
		}
	}
	return errors.New(head + st.where(st.lineOf(n)) + ": " + strings.Join(detail, " "))
}

// byteaText reads PostgreSQL's text of a bytea: \x and hex digits, or the
// older escape form (\\ and \ooo).
func byteaText(v []byte) ([]byte, error) {
	if len(v) >= 2 && v[0] == '\\' && v[1] == 'x' {
		h := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, string(v[2:]))
		b, err := hex.DecodeString(h)
		if err != nil {
			return nil, errors.New("invalid hexadecimal data for type bytea")
		}
		return b, nil
	}
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' {
			out = append(out, v[i])
			continue
		}
		switch {
		case i+1 < len(v) && v[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(v) && isOctal(v[i+1]) && v[i+1] <= '3' && isOctal(v[i+2]) && isOctal(v[i+3]):
			out = append(out, (v[i+1]-'0')<<6|(v[i+2]-'0')<<3|(v[i+3]-'0'))
			i += 3
		default:
			return nil, errors.New("invalid input syntax for type bytea")
		}
	}
	return out, nil
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }

func hexValue(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// copyDecoder reads one format of the client's data, as it arrives in
// CopyData pieces that cut rows anywhere.
type copyDecoder interface {
	write(p []byte) error
	finish() error
}

// fieldBuf holds the fields of the row being read.
type fieldBuf struct {
	buf    []byte
	ends   []int
	nulls  []bool
	fields [][]byte
}

// rowOut hands the n-th decoded row on to the stager; a header row is
// checked against the columns (HEADER MATCH) or skipped.
func rowOut(st *stager, o *copyOptions, n int64, fb *fieldBuf, start int64) error {
	fields, nulls := fb.row()
	if n == 1 && o.header {
		if o.match {
			return headerRow(st, fields, nulls, start)
		}
		return nil
	}
	return st.record(fields, nulls, start)
}

func (f *fieldBuf) end(null bool) {
	f.ends = append(f.ends, len(f.buf))
	f.nulls = append(f.nulls, null)
}

func (f *fieldBuf) row() ([][]byte, []bool) {
	f.fields = f.fields[:0]
	start := 0
	for _, e := range f.ends {
		f.fields = append(f.fields, f.buf[start:e])
		start = e
	}
	return f.fields, f.nulls
}

func (f *fieldBuf) reset() { f.buf, f.ends, f.nulls = f.buf[:0], f.ends[:0], f.nulls[:0] }

// value is the field being read.
func (f *fieldBuf) value() []byte {
	start := 0
	if len(f.ends) > 0 {
		start = f.ends[len(f.ends)-1]
	}
	return f.buf[start:]
}

// headerRow checks a HEADER MATCH row against the columns.
func headerRow(st *stager, fields [][]byte, nulls []bool, line int64) error {
	if len(fields) != len(st.cols) {
		return st.fail("22P04", line, "wrong number of fields in header line: got %d, expected %d", len(fields), len(st.cols))
	}
	for i, f := range fields {
		if nulls[i] || string(f) != st.cols[i].name {
			return st.fail("22P04", line, "column name mismatch in header line field %d: got %q, expected %q", i+1, f, st.cols[i].name)
		}
	}
	return nil
}

// textDecoder reads PostgreSQL's text format: fields split by the
// delimiter, rows by newlines, \N (the NULL string, compared before
// escapes are read) for NULL, and backslash escapes: \b \f \n \r \t \v,
// \ and one to three octal digits, \x and one or two hex digits, and a
// backslash before any other byte for that byte. A row of \. alone ends
// the data.
type textDecoder struct {
	st *stager
	o  *copyOptions
	fieldBuf

	state   int // textNormal, textEscape, textOctal, textHexStart, textHex
	num     byte
	digits  int
	raw     []byte // the field as sent, as far as the NULL test needs
	rawLong bool
	skipLF  bool
	pending bool // some of a row has been read
	line    int64
	start   int64 // the line the row started on
	rows    int64
	done    bool
}

const (
	textNormal = iota
	textEscape
	textOctal
	textHexStart
	textHex
)

func (d *textDecoder) addRaw(c byte) {
	if len(d.raw) <= max(len(d.o.null), 2) {
		d.raw = append(d.raw, c)
	} else {
		d.rawLong = true
	}
}

func (d *textDecoder) rawIs(s string) bool { return !d.rawLong && string(d.raw) == s }

func (d *textDecoder) endField() {
	d.flushPending()
	null := d.rawIs(d.o.null)
	if null {
		d.buf = d.buf[:len(d.buf)-len(d.value())]
	}
	d.end(null)
	d.raw, d.rawLong = d.raw[:0], false
}

func (d *textDecoder) flushPending() {
	switch d.state {
	case textOctal, textHex:
		d.buf = append(d.buf, d.num)
	case textHexStart:
		d.buf = append(d.buf, 'x')
	}
	if d.state != textEscape {
		d.state = textNormal
	}
}

func (d *textDecoder) endRow() error {
	marker := len(d.ends) == 0 && d.rawIs(`\.`)
	d.endField()
	defer func() { d.reset(); d.pending = false }()
	if marker {
		d.done = true
		return nil
	}
	d.rows++
	return rowOut(d.st, d.o, d.rows, &d.fieldBuf, d.start)
}

func (d *textDecoder) write(p []byte) error {
	for i := 0; i < len(p); i++ {
		if d.done {
			return nil
		}
		c := p[i]
		if d.skipLF {
			d.skipLF = false
			if c == '\n' {
				continue
			}
		}
		if !d.pending {
			d.pending, d.line = true, d.line+1
			d.start = d.line
		}
		switch d.state {
		case textNormal:
			switch c {
			case '\\':
				d.state = textEscape
				d.addRaw(c)
			case d.o.delim:
				d.endField()
			case '\n', '\r':
				d.skipLF = c == '\r'
				if err := d.endRow(); err != nil {
					return err
				}
			default:
				d.buf = append(d.buf, c)
				d.addRaw(c)
			}
		case textEscape:
			d.addRaw(c)
			d.state = textNormal
			switch c {
			case 'b':
				d.buf = append(d.buf, '\b')
			case 'f':
				d.buf = append(d.buf, '\f')
			case 'n':
				d.buf = append(d.buf, '\n')
			case 'r':
				d.buf = append(d.buf, '\r')
			case 't':
				d.buf = append(d.buf, '\t')
			case 'v':
				d.buf = append(d.buf, '\v')
			case 'x':
				d.state = textHexStart
			case '0', '1', '2', '3', '4', '5', '6', '7':
				d.state, d.num, d.digits = textOctal, c-'0', 1
			case '\n':
				d.buf = append(d.buf, c) // a backslash and a newline: a newline in the data
				d.line++
			default:
				d.buf = append(d.buf, c)
			}
		case textOctal:
			if isOctal(c) {
				d.addRaw(c)
				d.num, d.digits = d.num<<3|(c-'0'), d.digits+1
				if d.digits == 3 {
					d.buf = append(d.buf, d.num)
					d.state = textNormal
				}
				continue
			}
			d.buf = append(d.buf, d.num)
			d.state = textNormal
			i-- // c is read again, outside the escape
		case textHexStart, textHex:
			if h, ok := hexValue(c); ok {
				d.addRaw(c)
				if d.state == textHexStart {
					d.state, d.num = textHex, h
				} else {
					d.buf = append(d.buf, d.num<<4|h)
					d.state = textNormal
				}
				continue
			}
			d.flushPending()
			i--
		}
	}
	return nil
}

func (d *textDecoder) finish() error {
	if d.done || !d.pending {
		return nil
	}
	if d.state == textEscape {
		return d.st.fail("22P04", d.start, "the data ends after a backslash")
	}
	return d.endRow()
}

// csvDecoder reads CSV as PostgreSQL does: a quote anywhere in a field
// starts a quoted part, in which the escape (the quote itself unless
// ESCAPE says otherwise) before a quote or the escape stands for that
// byte; an unquoted field equal to the NULL string (empty by default) is
// NULL, a quoted one never is (but FORCE_NULL makes it so, FORCE_NOT_NULL
// the reverse); a row of \. alone ends the data.
type csvDecoder struct {
	st *stager
	o  *copyOptions
	fieldBuf

	state    int // csvUnquoted, csvQuoted, csvQuoteInQuoted, csvEscapeInQuoted
	sawQuote bool
	skipLF   bool
	pending  bool
	line     int64
	start    int64
	rows     int64
	done     bool
}

const (
	csvUnquoted = iota
	csvQuoted
	csvQuoteInQuoted
	csvEscapeInQuoted
)

func (d *csvDecoder) endField() {
	col := len(d.ends)
	v := d.value()
	null := false
	if col < len(d.st.cols) {
		c := d.st.cols[col]
		null = !d.sawQuote && !c.notNull && string(v) == d.o.null || d.sawQuote && c.nul && string(v) == d.o.null
	} else {
		null = !d.sawQuote && string(v) == d.o.null
	}
	if null {
		d.buf = d.buf[:len(d.buf)-len(v)]
	}
	d.end(null)
	d.sawQuote = false
}

func (d *csvDecoder) endRow() error {
	marker := len(d.ends) == 0 && !d.sawQuote && string(d.value()) == `\.`
	d.endField()
	defer func() { d.reset(); d.pending = false }()
	if marker {
		d.done = true
		return nil
	}
	d.rows++
	return rowOut(d.st, d.o, d.rows, &d.fieldBuf, d.start)
}

func (d *csvDecoder) write(p []byte) error {
	q, e, delim := d.o.quote, d.o.escape, d.o.delim
	for i := 0; i < len(p); i++ {
		if d.done {
			return nil
		}
		c := p[i]
		if d.skipLF {
			d.skipLF = false
			if c == '\n' {
				continue
			}
		}
		if !d.pending {
			d.pending, d.line = true, d.line+1
			d.start = d.line
		}
		switch d.state {
		case csvUnquoted:
			switch c {
			case delim:
				d.endField()
			case q:
				d.state, d.sawQuote = csvQuoted, true
			case '\n', '\r':
				d.skipLF = c == '\r'
				if err := d.endRow(); err != nil {
					return err
				}
			default:
				d.buf = append(d.buf, c)
			}
		case csvQuoted:
			switch {
			case c == e && e != q:
				d.state = csvEscapeInQuoted
			case c == q:
				if e == q {
					d.state = csvQuoteInQuoted
				} else {
					d.state = csvUnquoted
				}
			default:
				if c == '\n' {
					d.line++
				}
				d.buf = append(d.buf, c)
			}
		case csvQuoteInQuoted:
			if c == q {
				d.buf = append(d.buf, q)
				d.state = csvQuoted
				continue
			}
			d.state = csvUnquoted
			i--
		case csvEscapeInQuoted:
			d.state = csvQuoted
			if c == q || c == e {
				d.buf = append(d.buf, c)
				continue
			}
			d.buf = append(d.buf, e)
			i--
		}
	}
	return nil
}

func (d *csvDecoder) finish() error {
	if d.done || !d.pending {
		return nil
	}
	if d.state == csvQuoted || d.state == csvEscapeInQuoted {
		return d.st.fail("22P04", d.start, "unterminated CSV quoted field")
	}
	return d.endRow()
}

// binaryDecoder reads PostgreSQL's binary COPY format: the PGCOPY
// signature, flags and a header extension, then each row as a field
// count and each field as a length (-1 for NULL) and its bytes in the
// type's binary form, then -1. Values are turned into their text through
// pgx's codecs, for the types the server describes the columns as.
type binaryDecoder struct {
	st     *stager
	buf    []byte
	off    int
	header bool
	done   bool
	rows   int64
	fields [][]byte
	nulls  []bool
}

var binarySignature = []byte("PGCOPY\n\xff\r\n\x00")

func (d *binaryDecoder) write(p []byte) error {
	if d.done {
		return nil
	}
	if d.off > 0 && d.off >= len(d.buf)/2 {
		d.buf = append(d.buf[:0], d.buf[d.off:]...)
		d.off = 0
	}
	d.buf = append(d.buf, p...)
	for !d.done {
		ok, err := d.step()
		if err != nil || !ok {
			return err
		}
	}
	return nil
}

// step reads the header or one row when the whole of it has arrived.
func (d *binaryDecoder) step() (bool, error) {
	b := d.buf[d.off:]
	if !d.header {
		if len(b) < len(binarySignature)+8 {
			if len(b) > 0 && !strings.HasPrefix(string(binarySignature), string(b[:min(len(b), len(binarySignature))])) {
				return false, d.bad("COPY file signature not recognized")
			}
			return false, nil
		}
		if string(b[:len(binarySignature)]) != string(binarySignature) {
			return false, d.bad("COPY file signature not recognized")
		}
		flags := binary.BigEndian.Uint32(b[11:])
		if flags&(1<<16) != 0 {
			return false, &pgError{code: "0A000", msg: "binary COPY with OIDs is not supported"}
		}
		if flags>>16 != 0 {
			return false, d.bad("unrecognized critical flags in COPY file header")
		}
		ext := int(binary.BigEndian.Uint32(b[15:]))
		if ext < 0 || ext > 1<<20 {
			return false, d.bad("invalid COPY file header (wrong length)")
		}
		if len(b) < 19+ext {
			return false, nil
		}
		d.off += 19 + ext
		d.header = true
		return true, nil
	}
	if len(b) < 2 {
		return false, nil
	}
	n := int(int16(binary.BigEndian.Uint16(b)))
	if n == -1 {
		d.done = true
		return true, nil
	}
	line := d.rows + 1
	if n != len(d.st.cols) {
		return false, d.st.fail("22P04", line, "row field count is %d, expected %d", n, len(d.st.cols))
	}
	pos := 2
	d.fields, d.nulls = d.fields[:0], d.nulls[:0]
	for range n {
		if len(b) < pos+4 {
			return false, nil
		}
		l := int(int32(binary.BigEndian.Uint32(b[pos:])))
		pos += 4
		if l == -1 {
			d.fields, d.nulls = append(d.fields, nil), append(d.nulls, true)
			continue
		}
		if l < 0 {
			return false, d.st.fail("22P04", line, "invalid field size")
		}
		if len(b) < pos+l {
			return false, nil
		}
		d.fields, d.nulls = append(d.fields, b[pos:pos+l]), append(d.nulls, false)
		pos += l
	}
	d.rows++
	if err := d.decode(line); err != nil {
		return false, err
	}
	if err := d.st.record(d.fields, d.nulls, line); err != nil {
		return false, err
	}
	d.off += pos
	return true, nil
}

// decode turns each field's binary form into its text (bytea stays
// bytes, text types are their own text).
func (d *binaryDecoder) decode(line int64) error {
	tm := d.st.tm
	for i, raw := range d.fields {
		c := d.st.cols[i]
		if d.nulls[i] || c.blob {
			continue
		}
		switch c.oid {
		case oidText, oidVarchar, oidJSON:
			continue
		}
		t, ok := tm.TypeForOID(c.oid)
		if !ok {
			return d.st.fail("0A000", line, "column %q: binary COPY cannot carry its type (oid %d); use COPY's text or CSV format", c.name, c.oid)
		}
		v, err := t.Codec.DecodeValue(tm, c.oid, pgtype.BinaryFormatCode, raw)
		if err != nil {
			return d.st.fail("22P03", line, "column %q: invalid binary %s: %v", c.name, t.Name, err)
		}
		txt, err := tm.Encode(c.oid, pgtype.TextFormatCode, v, nil)
		if err != nil {
			return d.st.fail("22P03", line, "column %q: %s value as text: %v", c.name, t.Name, err)
		}
		d.fields[i] = txt
	}
	return nil
}

func (d *binaryDecoder) bad(msg string) error {
	return &pgError{code: "22P04", msg: "COPY " + d.st.table + ": " + msg}
}

func (d *binaryDecoder) finish() error {
	if d.done {
		return nil
	}
	if !d.header {
		if len(d.buf) == d.off {
			return nil // no data at all: no rows
		}
		return d.bad("the data ends inside the binary COPY header")
	}
	if len(d.buf) > d.off {
		return d.st.fail("22P04", d.rows+1, "the data ends inside a row")
	}
	return nil
}

// copyLexer reads the words of a COPY statement.
type copyLexer struct {
	src    string
	off    int
	peeked *copyToken
}

type tokKind int

const (
	tokEnd tokKind = iota
	tokWord
	tokName   // a quoted identifier, unquoted
	tokString // a string constant, its value
	tokNumber
	tokPunct
)

type copyToken struct {
	kind tokKind
	text string
	at   int
}

func (t copyToken) is(p string) bool     { return t.kind == tokPunct && t.text == p }
func (t copyToken) isWord(w string) bool { return t.kind == tokWord && strings.EqualFold(t.text, w) }
func (lx *copyLexer) syntax(t copyToken, want string) error {
	near := "end of statement"
	if t.kind != tokEnd {
		near = fmt.Sprintf("or near %q", clipText(lx.src[t.at:]))
	}
	return &pgError{code: "42601", msg: fmt.Sprintf("syntax error at %s: expected %s", near, want)}
}

func clipText(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		s = f[0]
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

func (lx *copyLexer) peek() copyToken {
	if lx.peeked == nil {
		t := lx.scan()
		lx.peeked = &t
	}
	return *lx.peeked
}

func (lx *copyLexer) next() copyToken {
	t := lx.peek()
	lx.peeked = nil
	return t
}

func (lx *copyLexer) scan() copyToken {
	s := lx.src
	for lx.off < len(s) {
		switch {
		case s[lx.off] == ' ' || s[lx.off] == '\t' || s[lx.off] == '\n' || s[lx.off] == '\r':
			lx.off++
		case strings.HasPrefix(s[lx.off:], "--"):
			if j := strings.IndexByte(s[lx.off:], '\n'); j >= 0 {
				lx.off += j
			} else {
				lx.off = len(s)
			}
		case strings.HasPrefix(s[lx.off:], "/*"):
			if j := strings.Index(s[lx.off+2:], "*/"); j >= 0 {
				lx.off += j + 4
			} else {
				lx.off = len(s)
			}
		default:
			goto token
		}
	}
	return copyToken{kind: tokEnd, at: lx.off}
token:
	at := lx.off
	c := s[at]
	switch {
	case (c == 'E' || c == 'e') && at+1 < len(s) && s[at+1] == '\'':
		v, end := escapeString(s, at+1)
		lx.off = end
		return copyToken{kind: tokString, text: v, at: at}
	case c == '\'' || c == '"':
		v, end, _ := sqllex.Quoted(s, at)
		lx.off = end
		if c == '"' {
			return copyToken{kind: tokName, text: v, at: at}
		}
		return copyToken{kind: tokString, text: v, at: at}
	case sqllex.IsNameStart(c):
		j := at
		for j < len(s) && sqllex.IsNamePart(s[j]) {
			j++
		}
		lx.off = j
		return copyToken{kind: tokWord, text: s[at:j], at: at}
	case sqllex.IsDigit(c) || c == '-' || c == '+':
		j := at + 1
		for j < len(s) && (sqllex.IsDigit(s[j]) || s[j] == '.') {
			j++
		}
		lx.off = j
		return copyToken{kind: tokNumber, text: s[at:j], at: at}
	}
	lx.off++
	return copyToken{kind: tokPunct, text: string(c), at: at}
}

// escapeString reads an E'...' string whose quote is at s[at]: the
// backslash escapes of PostgreSQL's escape strings (\b \f \n \r \t,
// octal, \x hex, \u and \U, and a backslash before any other byte), and
// the quote doubled.
func escapeString(s string, at int) (string, int) {
	var b strings.Builder
	i := at + 1
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i += 2
		case c == '\'':
			return b.String(), i + 1
		case c == '\\' && i+1 < len(s):
			i++
			switch e := s[i]; e {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'x':
				v, n := 0, 0
				for n < 2 && i+1 < len(s) {
					h, ok := hexValue(s[i+1])
					if !ok {
						break
					}
					v, n, i = v<<4|int(h), n+1, i+1
				}
				if n == 0 {
					b.WriteByte('x')
				} else {
					b.WriteByte(byte(v))
				}
			case 'u', 'U':
				n := 4
				if e == 'U' {
					n = 8
				}
				if i+n < len(s) {
					if r, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32); err == nil {
						b.WriteRune(rune(r))
						i += n
						break
					}
				}
				b.WriteByte(e)
			default:
				if isOctal(e) {
					v, n := int(e-'0'), 1
					for n < 3 && i+1 < len(s) && isOctal(s[i+1]) {
						v, n, i = v<<3|int(s[i+1]-'0'), n+1, i+1
					}
					b.WriteByte(byte(v))
				} else {
					b.WriteByte(e)
				}
			}
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), len(s)
}
