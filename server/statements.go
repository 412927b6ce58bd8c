package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/types"
)

// result is a statement's answer being sent: rows from the engine, rows
// the session made itself (static, PostgreSQL text already), or a command
// tag alone.
type result struct {
	fields []pgproto3.FieldDescription // nil: the statement returns no rows
	cols   []column
	rows   *rocklake.Rows
	static [][]*string
	next_  int
	tag    string
	tm     *pgtype.Map

	ctx   context.Context
	done  func()
	start time.Time
	s     *Server

	count, bytes int64
	suspended    bool
	closed       bool

	// A FETCH takes at most want rows (got so far) from its cursor, whose
	// result counts them against the server's limits.
	cur       *cursor
	want, got int64
	// out: the rows go as COPY ... TO STDOUT's data; stream, when DuckDB
	// writes them itself (copystream.go), sent by sendStream as it wrote
	// them.
	out    *copyOut
	stream *copyStream
	// lines: a cursor's rows as DuckDB writes them, in COPY's text
	// format (streamCursor), read into vals.
	lines *copyStream
	vals  []any
}

func (r *result) next() ([]any, bool, error) {
	if r.cur != nil {
		if r.got >= r.want || r.cur.done {
			return nil, false, nil
		}
		vals, ok, err := r.cur.res.next()
		switch {
		case ok:
			r.got++
			r.cur.pos++
		case err == nil:
			r.cur.done = true
		}
		return vals, ok, err
	}
	if r.lines != nil {
		line, ok, err := r.lines.next()
		if !ok {
			return nil, false, ctxError(r.ctx, err)
		}
		r.vals, err = textFields(line, r.vals[:0])
		if err == nil && len(r.vals) != len(r.cols) {
			err = fmt.Errorf("a streamed row has %d fields for %d columns", len(r.vals), len(r.cols))
		}
		return r.vals, err == nil, err
	}
	if r.rows != nil {
		if r.rows.Next() {
			return r.rows.Values(), true, nil
		}
		if err := r.rows.Err(); err != nil {
			return nil, false, ctxError(r.ctx, err)
		}
		return nil, false, nil
	}
	if r.next_ >= len(r.static) {
		return nil, false, nil
	}
	row := r.static[r.next_]
	r.next_++
	vals := make([]any, len(row))
	for i, v := range row {
		if v != nil {
			vals[i] = *v
		}
	}
	return vals, true, nil
}

func (r *result) encode(vals []any) ([][]byte, error) {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		b, err := encodeValue(r.tm, r.cols[i], v)
		if err != nil {
			return nil, &pgError{code: "22000", msg: fmt.Sprintf("column %s: %v", r.fields[i].Name, err)}
		}
		out[i] = b
	}
	return out, nil
}

// finish records a completed answer: for a FETCH, its cursor's once the
// cursor's rows have ended.
func (r *result) finish() error {
	if r.cur != nil {
		if !r.cur.done || r.cur.finished {
			return nil
		}
		r.cur.finished = true
		return r.cur.res.finish()
	}
	if r.lines != nil {
		_, res, err := r.lines.finish()
		if err != nil {
			return ctxError(r.ctx, err)
		}
		if res != nil {
			r.s.m.observeQuery(res)
		}
		return nil
	}
	if r.stream != nil {
		n, res, err := r.stream.finish()
		if err != nil {
			return ctxError(r.ctx, err)
		}
		r.count = n // DuckDB's count: a CSV row may hold newlines
		if res != nil {
			r.s.m.observeQuery(res)
		}
		return nil
	}
	if r.rows == nil {
		return nil
	}
	if err := r.rows.Close(); err != nil {
		return ctxError(r.ctx, err)
	}
	if res := r.rows.Result(); res != nil {
		r.s.m.observeQuery(res)
	}
	return nil
}

func (r *result) close() {
	if r.closed {
		return
	}
	r.closed = true
	if r.rows != nil {
		r.rows.Close()
	}
	if r.done != nil {
		r.done()
	}
	if r.stream != nil {
		r.stream.stop() // after done: the COPY is cancelled, its rest dropped
	}
	if r.lines != nil {
		r.lines.stop()
	}
	if !r.start.IsZero() {
		r.s.m.queryTime.Observe(time.Since(r.start).Seconds())
	}
}

// ctxError turns an error from a cancelled or timed-out query into the
// error PostgreSQL gives for it.
func ctxError(ctx context.Context, err error) error {
	if ctx == nil || ctx.Err() == nil {
		return err
	}
	if errors.Is(context.Cause(ctx), errStatementTimeout) {
		return &pgError{code: "57014", msg: "canceling statement due to statement timeout"}
	}
	return &pgError{code: "57014", msg: "canceling statement due to user request"}
}

// start begins one statement: a session command the server answers
// itself, or a query run by the engine.
func (ss *pgSession) start(q string, formats []int16) (*result, error) {
	kw := sqllex.LeadingKeyword(q)
	if ss.blockFailed && kw != "COMMIT" && kw != "END" && kw != "ROLLBACK" && kw != "ABORT" {
		return nil, &pgError{code: "25P02", msg: "current transaction is aborted, commands ignored until end of transaction block"}
	}
	if res, ok, err := ss.command(kw, q, formats); ok || err != nil {
		return res, err
	}
	if rocklake.IsWrite(q) {
		return ss.write(q)
	}
	if cp, err := parseCopyTo(q); cp != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return ss.copyTo(cp)
	}
	return ss.query(q, formats, ss.queryContext)
}

// query runs a query on the engine (or answers psql's \dt itself), in
// the context run makes; the result holds the context until it closes.
func (ss *pgSession) query(q string, formats []int16, run func() (context.Context, func())) (*result, error) {
	system, bare := systemRoute(q)
	if system && len(bare) > 0 && ss.hasTable(bare) {
		// A rocklake table named like a system relation (pg_stats, say)
		// is the table a bare name means: its rows, not the catalogs'.
		system = false
	}
	ss.s.m.queries.Inc()
	ctx, done := run()
	start := time.Now()
	if system {
		return ss.systemQuery(ctx, done, q, formats)
	}
	// DuckDB computes the whole answer inside QueryRows: a client that
	// goes away meanwhile cancels it.
	stopWatch := ss.rd.watch(func() {
		ss.mu.Lock()
		if ss.running != nil {
			ss.running()
		}
		ss.mu.Unlock()
	})
	rows, err := ss.s.lake.QueryRows(ctx, q, ss.queryOptions())
	stopWatch()
	err = ss.afterEngine(err)
	if err != nil {
		err = ss.notAQuery(ctxError(ctx, err)) // before done() cancels ctx
		done()
		return nil, err
	}
	return ss.rowsResult(ctx, done, q, rows, formats, start)
}

// hasTable says whether the session's snapshot has a table of one of
// the names.
func (ss *pgSession) hasTable(names []string) bool {
	tables, err := ss.s.lake.Tables(context.Background(), rocklake.ReadOptions{Snapshot: ss.readAt()})
	if err != nil {
		return false
	}
	for _, t := range tables {
		if slices.Contains(names, strings.ToLower(t.Name)) || slices.Contains(names, t.Name) {
			return true
		}
	}
	return false
}

// rowsResult is a result sending rows, which it closes, and done, when
// it closes.
func (ss *pgSession) rowsResult(ctx context.Context, done func(), q string, rows *rocklake.Rows, formats []int16, start time.Time) (*result, error) {
	fields, cols, err := columnsFor(rows.Columns(), ss.pgNames(q, rows.Columns()), formats)
	if err != nil {
		rows.Close()
		done()
		return nil, err
	}
	return &result{fields: fields, cols: cols, rows: rows, tm: ss.typeMap(), ctx: ctx, done: done, start: start, s: ss.s}, nil
}

// describeOnly finds a statement's answer columns without its rows, and
// without doing what it does: describing BEGIN must not begin.
func (ss *pgSession) describeOnly(q string) (*result, error) {
	kw := sqllex.LeadingKeyword(q)
	switch kw {
	case "SHOW", "DESCRIBE", "DESC": // no side effects, and rows
		res, ok, err := ss.command(kw, q, nil)
		if ok || err != nil {
			return res, err
		}
	case "BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT", "DISCARD", "DEALLOCATE", "SET", "RESET",
		"DECLARE", "MOVE", "CLOSE", "PREPARE":
		return &result{s: ss.s}, nil
	case "FETCH":
		// The cursor's columns, if it is open now; PostgreSQL describes a
		// FETCH of a cursor yet to be declared as returning no rows.
		return ss.describeFetch(q)
	case "EXECUTE":
		return ss.describeExecute(q)
	}
	if rocklake.IsWrite(q) {
		return &result{s: ss.s}, nil // no rows; not run
	}
	if cp, err := parseCopyTo(q); cp != nil || err != nil {
		return &result{s: ss.s}, err // COPY's data is no rows
	}
	if namesSystemCatalog(q) {
		return ss.start(q, nil)
	}
	ctx, done := ss.queryContext()
	defer done()
	rows, err := ss.s.lake.QueryRows(ctx, "SELECT * FROM (\n"+strings.TrimRight(q, "; \t\r\n")+"\n) LIMIT 0", ss.queryOptions())
	err = ss.afterEngine(err)
	if err != nil {
		return nil, ctxError(ctx, err)
	}
	defer rows.Close()
	fields, cols, err := columnsFor(rows.Columns(), ss.pgNames(q, rows.Columns()), nil)
	if err != nil {
		return nil, err
	}
	return &result{fields: fields, cols: cols, s: ss.s}, nil
}

// typeMap is the session's pgx type map (made once: a new one registers
// every built-in type, which costs more than a small query's encoding).
// A session runs one statement at a time, so one map serves them all.
func (ss *pgSession) typeMap() *pgtype.Map {
	if ss.tm == nil {
		ss.tm = pgtype.NewMap()
	}
	return ss.tm
}

// pgSettings are the PostgreSQL settings clients set at connect (JDBC,
// pgx, psql): accepted and shown back, changing nothing in DuckDB. The
// read-only settings are the session's (see readOnlySetting); their
// values here are a reader's.
var pgSettings = map[string]string{
	"application_name": "", "client_encoding": "UTF8", "datestyle": "ISO, MDY", "timezone": "UTC",
	"extra_float_digits": "1", "search_path": "main", "intervalstyle": "postgres", "client_min_messages": "notice",
	"standard_conforming_strings": "on", "statement_timeout": "0", "bytea_output": "hex", "lc_messages": "C",
	"default_transaction_isolation": "read committed", "transaction_isolation": "read committed",
	"transaction_read_only": "on", "default_transaction_read_only": "on", "server_version": serverVersion + " (rocklake)",
	"server_version_num": serverVersionNum, "integer_datetimes": "on", "max_identifier_length": "63",
}

// fixedSettings may be set only to their one value: rocklake sends text
// in UTF-8 and times in UTC.
var fixedSettings = map[string][]string{
	"client_encoding": {"utf8", "utf-8", "unicode"}, "timezone": {"utc", "etc/utc", "gmt", "z", "0", "+00", "00:00"},
	"standard_conforming_strings": {"on"}, "integer_datetimes": {"on"}, "server_version": nil, "server_version_num": nil,
	"bytea_output": {"hex"},
}

// readOnlySettings say whether the session may write: a reader's are on
// for good; a writer's are off unless it sets them on.
var readOnlySettings = map[string]bool{"transaction_read_only": true, "default_transaction_read_only": true}

const snapshotSetting = "rocklake.snapshot"

// command answers the statements a session handles itself: settings,
// transaction blocks, SHOW, DESCRIBE. ok is false for anything else.
func (ss *pgSession) command(kw, q string, formats []int16) (*result, bool, error) {
	words := strings.Fields(strings.TrimRight(strings.TrimSpace(q), ";"))
	tag := func(t string) (*result, bool, error) { return &result{tag: t, s: ss.s}, true, nil }
	switch kw {
	case "BEGIN", "START":
		if ss.inBlock {
			return tag("BEGIN") // PostgreSQL warns and goes on
		}
		id, err := ss.s.latestSnapshot()
		if err != nil {
			return nil, true, err
		}
		ss.inBlock, ss.blockSnap = true, rocklake.AtSnapshot(id)
		return tag("BEGIN")
	case "COMMIT", "END":
		failed := ss.blockFailed
		ss.inBlock, ss.blockFailed = false, false
		ss.endCursors(!failed)
		if failed {
			ss.endWrites(false)
			return tag("ROLLBACK")
		}
		if err := ss.endWrites(true); err != nil {
			// The block's writes are gone with it, as PostgreSQL's are
			// when its COMMIT fails.
			return nil, true, err
		}
		return tag("COMMIT")
	case "ROLLBACK", "ABORT":
		ss.inBlock, ss.blockFailed = false, false
		ss.endCursors(false)
		ss.endWrites(false)
		return tag("ROLLBACK")
	case "DISCARD":
		ss.snapshot = rocklake.SnapshotRef{}
		ss.clearStmts()
		ss.closePortals()
		ss.closeCursors(func(*cursor) bool { return true })
		return tag("DISCARD ALL")
	case "DECLARE", "FETCH", "MOVE", "CLOSE":
		res, err := ss.cursorCommand(kw, q, formats)
		return res, true, err
	case "PREPARE", "EXECUTE", "DEALLOCATE":
		res, err := ss.preparedCommand(kw, q, formats)
		return res, true, err
	case "SET":
		if modes, ok := sessionCharacteristics(words[1:]); ok {
			if err := ss.setCharacteristics(modes); err != nil {
				return nil, true, err
			}
			return tag("SET")
		}
		name, value, err := parseSet(words[1:])
		if err != nil {
			return nil, true, err
		}
		if err := ss.set(name, value); err != nil {
			return nil, true, err
		}
		ss.reportSetting(name)
		return tag("SET")
	case "RESET":
		if len(words) != 2 {
			return nil, true, &pgError{code: "42601", msg: "RESET takes one setting name, or ALL"}
		}
		name := strings.ToLower(words[1])
		if name == "all" {
			ss.snapshot = rocklake.SnapshotRef{}
			ss.settings = map[string]string{}
		} else if err := ss.set(name, "default"); err != nil {
			return nil, true, err
		}
		return tag("RESET")
	case "SHOW":
		// PostgreSQL's spelled-out names of two settings.
		switch strings.ToLower(strings.Join(words[1:], " ")) {
		case "transaction isolation level":
			words = []string{words[0], "transaction_isolation"}
		case "time zone":
			words = []string{words[0], "timezone"}
		}
		if len(words) != 2 {
			return nil, true, &pgError{code: "42601", msg: "SHOW takes one setting name, or TABLES"}
		}
		name := strings.ToLower(words[1])
		if name == "tables" {
			return ss.showTables(formats)
		}
		v, err := ss.show(name)
		if err != nil {
			return nil, true, err
		}
		return ss.static([]string{name}, []uint32{oidText}, [][]*string{{&v}}, formats)
	case "DESCRIBE", "DESC":
		if len(words) != 2 {
			return nil, false, nil // DESCRIBE SELECT ...: DuckDB's
		}
		return ss.describeTable(unquoteName(words[1]), formats)
	}
	return nil, false, nil
}

func parseSet(w []string) (name, value string, err error) {
	if len(w) > 0 && (strings.EqualFold(w[0], "SESSION") || strings.EqualFold(w[0], "LOCAL")) {
		w = w[1:]
	}
	if len(w) >= 2 && strings.EqualFold(w[0], "TIME") && strings.EqualFold(w[1], "ZONE") {
		return "timezone", strings.Trim(strings.Join(w[2:], " "), "'"), nil
	}
	if len(w) >= 1 {
		if n, v, ok := strings.Cut(w[0], "="); ok {
			w = append([]string{n, "="}, append([]string{v}, w[1:]...)...)
			if v == "" {
				w = append(w[:2], w[3:]...)
			}
		}
	}
	if len(w) < 3 || (w[1] != "=" && !strings.EqualFold(w[1], "TO")) {
		return "", "", &pgError{code: "42601", msg: "SET takes name = value (or name TO value)"}
	}
	value = strings.Join(w[2:], " ")
	if len(value) >= 2 && value[0] == '\'' && value[len(value)-1] == '\'' {
		value = strings.ReplaceAll(value[1:len(value)-1], "''", "'")
	}
	return strings.ToLower(strings.Trim(w[0], `"`)), value, nil
}

func (ss *pgSession) set(name, value string) error {
	if name == snapshotSetting {
		switch v := strings.ToLower(value); v {
		case "default", "latest":
			ss.snapshot = rocklake.SnapshotRef{}
			return nil
		default:
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil || id < 0 {
				return &pgError{code: "22023", msg: fmt.Sprintf("rocklake.snapshot must be a snapshot id or latest, not %q", value)}
			}
			if err := ss.s.checkSnapshot(id); err != nil {
				return err
			}
			ss.snapshot = rocklake.AtSnapshot(id)
			return nil
		}
	}
	if _, known := pgSettings[name]; !known {
		return &pgError{code: "42704", msg: fmt.Sprintf("unrecognized configuration parameter %q", name),
			hint: "rocklake accepts rocklake.snapshot and the connection settings PostgreSQL drivers send; DuckDB's settings are the server's to choose"}
	}
	if strings.EqualFold(value, "default") {
		delete(ss.settings, name)
		return nil
	}
	if readOnlySettings[name] {
		on, ok := parseBool(value)
		switch {
		case !ok:
			return &pgError{code: "22023", msg: fmt.Sprintf("parameter %q requires a Boolean value", name)}
		case !on && ss.role != Writer:
			return &pgError{code: "25006", msg: fmt.Sprintf("%s cannot be turned off: user %q is a %s", name, ss.user, ss.role)}
		}
	}
	switch name {
	case "transaction_isolation", "default_transaction_isolation":
		level := strings.ToLower(strings.Join(strings.Fields(value), " "))
		if !slices.Contains(isolationLevels, level) {
			return &pgError{code: "22023", msg: fmt.Sprintf("invalid value for parameter %q: %q", name, value),
				hint: "one of " + strings.Join(isolationLevels, ", ")}
		}
		value = level
	case "datestyle":
		// Dates are sent in ISO form, month before day when ambiguous.
		for _, w := range strings.FieldsFunc(strings.ToLower(value), func(r rune) bool { return r == ',' || r == ' ' }) {
			if w != "iso" && w != "mdy" && w != "us" && w != "noneuropean" {
				return &pgError{code: "22023", msg: fmt.Sprintf("DateStyle cannot be changed from %q on this server", pgSettings[name])}
			}
		}
		value = pgSettings[name]
	case "extra_float_digits":
		// Floats are sent in their shortest exact form, as PostgreSQL
		// does for any value above 0.
		if n, err := strconv.Atoi(strings.TrimSpace(value)); err != nil || n < -15 || n > 3 {
			return &pgError{code: "22023", msg: fmt.Sprintf("invalid value for parameter %q: %q", name, value), hint: "an integer from -15 to 3"}
		}
	}
	if allowed, fixed := fixedSettings[name]; fixed {
		ok := false
		for _, a := range allowed {
			ok = ok || strings.EqualFold(strings.TrimSpace(value), a)
		}
		if !ok {
			return &pgError{code: "22023", msg: fmt.Sprintf("%s cannot be changed from %q on this server", name, pgSettings[name])}
		}
	}
	ss.settings[name] = value
	return nil
}

// isolationLevels are PostgreSQL's, all accepted: a transaction block
// reads one snapshot (pinned at BEGIN), and a write that meets another's
// commit fails with 40001, whichever level is asked for.
var isolationLevels = []string{"serializable", "repeatable read", "read committed", "read uncommitted"}

// sessionCharacteristics reads SET SESSION CHARACTERISTICS AS TRANSACTION
// modes (w after SET): the modes, comma-separated, lower-case.
func sessionCharacteristics(w []string) ([]string, bool) {
	if len(w) < 4 || !strings.EqualFold(w[0], "SESSION") || !strings.EqualFold(w[1], "CHARACTERISTICS") ||
		!strings.EqualFold(w[2], "AS") || !strings.EqualFold(w[3], "TRANSACTION") {
		return nil, false
	}
	var modes []string
	for _, m := range strings.Split(strings.ToLower(strings.Join(w[4:], " ")), ",") {
		modes = append(modes, strings.Join(strings.Fields(m), " "))
	}
	return modes, true
}

// setCharacteristics sets the session's defaults for its transactions:
// ISOLATION LEVEL l, READ ONLY, READ WRITE, [NOT] DEFERRABLE.
func (ss *pgSession) setCharacteristics(modes []string) error {
	for _, m := range modes {
		var err error
		switch {
		case strings.HasPrefix(m, "isolation level "):
			err = ss.set("default_transaction_isolation", strings.TrimPrefix(m, "isolation level "))
		case m == "read only":
			err = ss.set("default_transaction_read_only", "on")
		case m == "read write":
			err = ss.set("default_transaction_read_only", "off")
		case m == "deferrable", m == "not deferrable":
			// Nothing waits: a read-only block never fails to serialize.
		default:
			err = &pgError{code: "42601", msg: fmt.Sprintf("SET SESSION CHARACTERISTICS AS TRANSACTION: unknown mode %q", m),
				hint: "ISOLATION LEVEL level, READ ONLY, READ WRITE, [NOT] DEFERRABLE"}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// reportedSettings are the settings PostgreSQL reports to the client
// (ParameterStatus) when a SET changes them, by their reported names.
var reportedSettings = map[string]string{"application_name": "application_name", "datestyle": "DateStyle"}

func (ss *pgSession) reportSetting(name string) {
	if wire, ok := reportedSettings[name]; ok {
		if v, err := ss.show(name); err == nil {
			ss.be.Send(&pgproto3.ParameterStatus{Name: wire, Value: v})
		}
	}
}

func (ss *pgSession) show(name string) (string, error) {
	if name == snapshotSetting {
		if id, set := ss.readAt().ID(); set {
			return strconv.FormatInt(id, 10), nil
		}
		return "latest", nil
	}
	switch name {
	case "transaction_read_only":
		return ss.readOnlySetting(), nil
	case "default_transaction_read_only":
		if ss.role != Writer || isOn(ss.settings[name]) {
			return "on", nil
		}
		return "off", nil
	}
	if v, ok := ss.settings[name]; ok {
		return v, nil
	}
	if v, ok := ss.settings["default_"+name]; ok && name == "transaction_isolation" {
		return v, nil
	}
	if v, ok := pgSettings[name]; ok {
		return v, nil
	}
	return "", &pgError{code: "42704", msg: fmt.Sprintf("unrecognized configuration parameter %q", name)}
}

func (ss *pgSession) static(names []string, oids []uint32, rows [][]*string, formats []int16) (*result, bool, error) {
	fields := make([]pgproto3.FieldDescription, len(names))
	cols := make([]column, len(names))
	for i, n := range names {
		f := formatAt(formats, i)
		fields[i] = pgproto3.FieldDescription{Name: []byte(n), DataTypeOID: oids[i], DataTypeSize: typeSize(oids[i]), TypeModifier: -1, Format: f}
		cols[i] = column{oid: oids[i], format: f}
	}
	if rows == nil {
		rows = [][]*string{}
	}
	return &result{fields: fields, cols: cols, static: rows, tm: ss.typeMap(), s: ss.s}, true, nil
}

func (ss *pgSession) showTables(formats []int16) (*result, bool, error) {
	tables, err := ss.s.lake.Tables(context.Background(), rocklake.ReadOptions{Snapshot: ss.readAt()})
	if err != nil {
		return nil, true, err
	}
	rows := make([][]*string, len(tables))
	for i, t := range tables {
		name := t.Name
		rows[i] = []*string{&name}
	}
	return ss.static([]string{"name"}, []uint32{oidText}, rows, formats)
}

func (ss *pgSession) describeTable(name string, formats []int16) (*result, bool, error) {
	info, err := ss.s.lake.Describe(context.Background(), name, rocklake.ReadOptions{Snapshot: ss.readAt()})
	if err != nil {
		return nil, true, err
	}
	var rows [][]*string
	for _, c := range info.Columns {
		if len(c.Path) != 1 {
			continue // nested fields are part of their column's type
		}
		n, t := c.Path[0], types.DisplayName(c.Type)
		rows = append(rows, []*string{&n, &t})
	}
	return ss.static([]string{"column_name", "column_type"}, []uint32{oidText, oidText}, rows, formats)
}

// systemQuery runs a query over PostgreSQL's system catalogs (syscat.go)
// at the snapshot the session reads.
func (ss *pgSession) systemQuery(ctx context.Context, done func(), q string, formats []int16) (*result, error) {
	id, err := ss.snapshotID()
	if err != nil {
		done()
		return nil, err
	}
	start := time.Now()
	rows, err := ss.s.sys.query(ctx, q, id)
	if err != nil {
		err = ctxError(ctx, err)
		done()
		return nil, err
	}
	return ss.rowsResult(ctx, done, q, rows, formats, start)
}

func (s *Server) latestSnapshot() (int64, error) {
	r, err := s.lake.Catalog().Read(-1)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	return r.Snapshot().ID, nil
}

func (s *Server) checkSnapshot(id int64) error {
	r, err := s.lake.Catalog().Read(id)
	if err != nil {
		return err
	}
	return r.Close()
}

// splitStatements splits a simple-protocol query string at the
// semicolons that end statements; empty statements are dropped.
func splitStatements(q string) []string {
	var out []string
	for _, st := range sqllex.Split(q) {
		out = append(out, st.Text)
	}
	return out
}

// countParams is the highest $n a statement uses.
func countParams(q string) (int, error) {
	if len(sqllex.Split(q)) > 1 {
		return 0, &pgError{code: "42601", msg: "cannot insert multiple commands into a prepared statement"}
	}
	n := 0
	for _, p := range sqllex.Placeholders(q) {
		if p.N < 1 || p.N > 65535 {
			return 0, &pgError{code: "42P02", msg: fmt.Sprintf("there is no parameter %s", q[p.Start:p.End])}
		}
		n = max(n, p.N)
	}
	return n, nil
}

// substituteParams puts each $n's literal into the statement text.
func substituteParams(q string, lits []string) (string, error) {
	if len(lits) == 0 {
		return q, nil
	}
	var b strings.Builder
	last := 0
	for _, p := range sqllex.Placeholders(q) {
		if p.N < 1 || p.N > len(lits) {
			return "", &pgError{code: "42P02", msg: fmt.Sprintf("there is no parameter $%d", p.N)}
		}
		b.WriteString(q[last:p.Start])
		b.WriteString(lits[p.N-1])
		last = p.End
	}
	b.WriteString(q[last:])
	return b.String(), nil
}

// unquoteName reads a table name as written: "Quoted" exactly, a bare
// name as is (rocklake's table names are case-sensitive).
func unquoteName(w string) string {
	if len(w) >= 2 && w[0] == '"' {
		if name, end, ok := sqllex.Quoted(w, 0); ok && end == len(w) {
			return name
		}
	}
	return w
}
