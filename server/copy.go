package server

import (
	"bufio"
	"bytes"
	"context"
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
		if (c.oid == oidDate || c.oid == oidTimestamp || c.oid == oidTimestamptz) && bytes.IndexAny(v, "bB") >= 0 {
			v = []byte(duckTime(string(v)))
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

const (
	textNormal = iota
	textEscape
	textOctal
	textHexStart
	textHex
)

const (
	csvUnquoted = iota
	csvQuoted
	csvQuoteInQuoted
	csvEscapeInQuoted
)

var binarySignature = []byte("PGCOPY\n\xff\r\n\x00")
