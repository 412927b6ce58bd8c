package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/types"
)

// pgSession is one PostgreSQL connection after its startup.
type pgSession struct {
	s    *Server
	conn net.Conn
	rd   *connReader
	w    *connWriter
	be   *pgproto3.Backend
	user string
	role Role
	pid  uint32
	key  []byte
	// src is the client's text of the statement running, for the
	// position of an error in it.
	src clientText

	// snapshot is the rocklake.snapshot setting (unset: latest).
	snapshot rocklake.SnapshotRef
	settings map[string]string
	// A transaction block (BEGIN ... COMMIT) reads one snapshot, pinned
	// at BEGIN, so that its queries agree with each other.
	inBlock, blockFailed bool
	blockSnap            rocklake.SnapshotRef
	wtx                  *rocklake.WriteTxn // the block's writes, until COMMIT or ROLLBACK

	tm *pgtype.Map // see typeMap

	stmts   map[string]*prepared
	portals map[string]*portal
	cursors map[string]*cursor // DECLARE's (see cursor.go)
	// simple: the statement came in a Query message, not through Bind
	// (a BINARY cursor's rows are binary only then); implicit: one of
	// several in that message, which PostgreSQL runs as one transaction.
	simple, implicit bool
	// skipping: an error in the extended protocol discards messages up to
	// the next Sync, as PostgreSQL does.
	skipping bool

	// queued is the bytes of rows sent to the protocol's buffer and not
	// yet flushed to the socket, counted in h, the connection's share of
	// the server's buffers.
	queued int64
	h      *hold

	mu      sync.Mutex
	running context.CancelFunc // the query running now, for CancelRequest
	busy    bool
	closing bool // shutdown asked: close when idle
	// What session functions (identity.go) gave while the statement ran.
	notices []*pgproto3.NoticeResponse
	fnErr   *pgError
}

// closeWhenIdle asks a session to end: now if no query runs, else after
// the running one.
func (ss *pgSession) closeWhenIdle() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.closing = true
	if !ss.busy {
		ss.conn.SetReadDeadline(time.Now())
	}
}

func (ss *pgSession) ready() {
	status := byte('I')
	switch {
	case ss.blockFailed:
		status = 'E'
	case ss.inBlock:
		status = 'T'
	}
	ss.be.Send(&pgproto3.ReadyForQuery{TxStatus: status})
}

func (ss *pgSession) loop() {
	defer func() { ss.queued = 0; ss.h.set(ss.h.read, 0, ss.h.room) }()
	for {
		msg, err := ss.be.Receive()
		if err != nil {
			var big *pgproto3.ExceededMaxBodyLenErr
			if errors.As(err, &big) {
				ss.s.tooLarge(ss.be, ss.conn, big)
				return
			}
			var nb *noBufferError
			if errors.As(err, &nb) {
				ss.s.noBuffer(ss.be, ss.conn, ss.h, nb)
				return
			}
			ss.mu.Lock()
			closing := ss.closing
			ss.mu.Unlock()
			if closing {
				ss.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01",
					Message: "terminating connection: the server is shutting down"})
				ss.be.Flush()
			}
			return
		}
		ss.mu.Lock()
		ss.busy = true
		ss.w.calm()
		ss.mu.Unlock()
		stop := ss.handle(msg)
		if err := ss.flush(); err != nil {
			return
		}
		ss.mu.Lock()
		ss.busy = false
		closing := ss.closing
		ss.mu.Unlock()
		if stop {
			return
		}
		if closing {
			if _, sync := msg.(*pgproto3.Sync); sync || isQuery(msg) {
				ss.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01",
					Message: "terminating connection: the server is shutting down"})
				ss.be.Flush()
				return
			}
		}
	}
}

func isQuery(m pgproto3.FrontendMessage) bool { _, ok := m.(*pgproto3.Query); return ok }

// handle answers one message; true ends the connection.
func (ss *pgSession) handle(msg pgproto3.FrontendMessage) bool {
	switch m := msg.(type) {
	case *pgproto3.Query:
		ss.simpleQuery(m.String)
		ss.ready()
	case *pgproto3.Parse:
		if ss.skipping {
			return false
		}
		ss.parse(m)
	case *pgproto3.Bind:
		if ss.skipping {
			return false
		}
		ss.bind(m)
	case *pgproto3.Describe:
		if ss.skipping {
			return false
		}
		ss.describe(m)
	case *pgproto3.Execute:
		if ss.skipping {
			return false
		}
		ss.execute(m)
	case *pgproto3.Close:
		if ss.skipping {
			return false
		}
		if m.ObjectType == 'S' {
			ss.delStmt(m.Name)
		} else {
			ss.delPortal(m.Name)
		}
		ss.be.Send(&pgproto3.CloseComplete{})
	case *pgproto3.Sync:
		ss.skipping = false
		if !ss.inBlock {
			ss.closePortals()
		}
		ss.ready()
	case *pgproto3.Flush:
	case *pgproto3.Terminate:
		return true
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		// What a client still sends of a COPY that was refused or failed
		// (drivers send their data without waiting for CopyInResponse):
		// dropped, as PostgreSQL drops it.
	default:
		// Function calls and the rest: errors, and as in the extended protocol
		// everything up to the next Sync is skipped.
		ss.sendError(&pgError{code: "0A000", msg: fmt.Sprintf("rocklake does not support the %T message", msg)})
		ss.skipping = true
	}
	return false
}

func (ss *pgSession) closePortals() {
	for name := range ss.portals {
		ss.delPortal(name)
	}
}

// pgError is an error with its SQLSTATE.
type pgError struct {
	code, msg, hint string
	// query, where the error is a query's (engine.QueryError): the text
	// rocklake ran and the 1-based character position DuckDB's error
	// points at in it, mapped into the client's text by sendError.
	query    *engine.QueryError
	position int
}

func (e *pgError) Error() string { return e.msg }

func (ss *pgSession) sendError(err error) {
	if ss.w.err != nil {
		return // the client is gone: nothing more reaches it
	}
	pe := toPGError(err)
	ss.s.m.errors.WithLabelValues(pe.code).Inc()
	if pe.query != nil {
		pe.position = ss.src.position(pe.query)
	}
	ss.be.Send(&pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: pe.code, Message: pe.msg, Hint: pe.hint, Position: int32(pe.position)})
	if ss.inBlock {
		ss.blockFailed = true
	}
}

// simpleQuery runs each statement of a Query message in turn, stopping at
// the first error.
func (ss *pgSession) simpleQuery(text string) {
	stmts := sqllex.Split(text)
	if len(stmts) == 0 {
		ss.be.Send(&pgproto3.EmptyQueryResponse{})
		return
	}
	ss.simple, ss.implicit = true, len(stmts) > 1 && !ss.inBlock
	failed := false
	defer func() {
		ss.simple, ss.implicit = false, false
		if !ss.inBlock {
			// The implicit transaction's cursors end with it.
			ss.endCursors(!failed)
		}
	}()
	for _, st := range stmts {
		ss.src = clientText{script: text, at: st.Start, stmt: st.Text}
		res, err := ss.start(st.Text, nil)
		if err == nil {
			if res.fields != nil {
				ss.be.Send(&pgproto3.RowDescription{Fields: res.fields})
			}
			err = ss.sendRows(res, 0)
			res.close()
		}
		if err != nil {
			ss.sendError(err)
			failed = true
			return
		}
	}
}

// prepared is a parsed statement of the extended protocol.
type prepared struct {
	sql       string
	paramOIDs []uint32 // as many as the highest $n
	described *result  // fields, once Describe ran the statement
	kept      int64    // its bytes counted in the session's hold (kept.go)
}

// portal is a bound statement: its text with the parameters in, and its
// answer once it started.
type portal struct {
	stmt    *prepared
	sql     string
	formats []int16
	res     *result
	done    bool
}

func (p *portal) close() {
	if p.res != nil {
		p.res.close()
	}
}

func (ss *pgSession) parse(m *pgproto3.Parse) {
	if _, taken := ss.stmts[m.Name]; taken && m.Name != "" {
		// PostgreSQL replaces only the unnamed statement; a named one
		// stays until Close (or DEALLOCATE) ends it.
		ss.fail(&pgError{code: "42P05", msg: fmt.Sprintf("prepared statement %q already exists", m.Name)})
		return
	}
	n, err := countParams(m.Query)
	if err != nil {
		ss.fail(err)
		return
	}
	kw := sqllex.LeadingKeyword(m.Query)
	if kw == "PREPARE" {
		n = 0 // the $n are the prepared statement's, bound by its EXECUTE
	}
	oids := make([]uint32, max(n, len(m.ParameterOIDs)))
	copy(oids, m.ParameterOIDs)
	if kw == "EXECUTE" {
		ss.inferExecuteParams(m.Query, oids)
	}
	if slices.Contains(oids, 0) {
		ss.inferParams(m.Query, oids)
	}
	if err := ss.putStmt(m.Name, &prepared{sql: m.Query, paramOIDs: oids}); err != nil {
		ss.fail(err)
		return
	}
	ss.be.Send(&pgproto3.ParseComplete{})
}

func (ss *pgSession) fail(err error) {
	ss.sendError(err)
	ss.skipping = true
}

func (ss *pgSession) bind(m *pgproto3.Bind) {
	st := ss.stmts[m.PreparedStatement]
	if st == nil {
		ss.fail(&pgError{code: "26000", msg: fmt.Sprintf("prepared statement %q does not exist", m.PreparedStatement)})
		return
	}
	if len(m.Parameters) != len(st.paramOIDs) {
		ss.fail(&pgError{code: "08P01", msg: fmt.Sprintf("bind message supplies %d parameters, but the statement needs %d", len(m.Parameters), len(st.paramOIDs))})
		return
	}
	lits := make([]string, len(m.Parameters))
	for i, raw := range m.Parameters {
		format := int16(0)
		switch len(m.ParameterFormatCodes) {
		case 0:
		case 1:
			format = m.ParameterFormatCodes[0]
		default:
			format = m.ParameterFormatCodes[i]
		}
		lit, err := literal(ss.typeMap(), st.paramOIDs[i], format, raw)
		if err != nil {
			ss.fail(&pgError{code: "22P02", msg: fmt.Sprintf("parameter $%d: %v", i+1, err)})
			return
		}
		lits[i] = lit
	}
	text, err := substituteParams(st.sql, lits)
	if err != nil {
		ss.fail(err)
		return
	}
	if err := ss.putPortal(m.DestinationPortal, &portal{stmt: st, sql: text, formats: append([]int16(nil), m.ResultFormatCodes...)}); err != nil {
		ss.fail(err)
		return
	}
	ss.be.Send(&pgproto3.BindComplete{})
}

func (ss *pgSession) describe(m *pgproto3.Describe) {
	if m.ObjectType == 'S' {
		st := ss.stmts[m.Name]
		if st == nil {
			ss.fail(&pgError{code: "26000", msg: fmt.Sprintf("prepared statement %q does not exist", m.Name)})
			return
		}
		described := st.described
		if described == nil {
			// The answer's columns, from the query with a value of its
			// type for every parameter and no row asked for (LIMIT 0:
			// DuckDB binds the query and reads nothing).
			samples := make([]string, len(st.paramOIDs))
			for i, o := range st.paramOIDs {
				samples[i] = sampleLiteral(o)
			}
			text, err := substituteParams(st.sql, samples)
			if err == nil {
				ss.src = clientText{script: st.sql, stmt: st.sql}
				described, err = ss.describeOnly(text)
			}
			if err != nil {
				ss.fail(err)
				return
			}
			ss.setDescribed(m.Name, st, described)
		}
		ss.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: st.paramOIDs})
		if described.fields == nil {
			ss.be.Send(&pgproto3.NoData{})
		} else {
			ss.be.Send(&pgproto3.RowDescription{Fields: described.fields})
		}
		return
	}
	p := ss.portals[m.Name]
	if p == nil {
		ss.fail(&pgError{code: "34000", msg: fmt.Sprintf("portal %q does not exist", m.Name)})
		return
	}
	if p.res == nil && describeWrite(p.sql) {
		ss.be.Send(&pgproto3.NoData{})
		return
	}
	if err := ss.startPortal(p); err != nil {
		ss.fail(err)
		return
	}
	if p.res.fields == nil {
		ss.be.Send(&pgproto3.NoData{})
		return
	}
	ss.be.Send(&pgproto3.RowDescription{Fields: p.res.fields})
}

// startPortal runs a portal's statement if it has not started, with the
// result formats Bind asked for.
func (ss *pgSession) startPortal(p *portal) error {
	if p.res != nil {
		return nil
	}
	ss.src = clientText{script: p.stmt.sql, stmt: p.stmt.sql}
	res, err := ss.start(p.sql, p.formats)
	if err != nil {
		return err
	}
	p.res = res
	return nil
}

func (ss *pgSession) execute(m *pgproto3.Execute) {
	p := ss.portals[m.Portal]
	if p == nil {
		ss.fail(&pgError{code: "34000", msg: fmt.Sprintf("portal %q does not exist", m.Portal)})
		return
	}
	if p.done {
		ss.fail(&pgError{code: "34000", msg: fmt.Sprintf("portal %q has already returned its rows", m.Portal)})
		return
	}
	if m.MaxRows > 0 && (p.res == nil || !p.res.suspended) {
		// This Execute may leave the portal's answer open.
		if err := ss.roomForAnswer(p); err != nil {
			ss.fail(err)
			return
		}
	}
	if err := ss.startPortal(p); err != nil {
		ss.fail(err)
		return
	}
	if err := ss.sendRows(p.res, int64(m.MaxRows)); err != nil {
		p.done = true
		ss.fail(err)
		return
	}
	if !p.res.suspended {
		p.done = true
	}
}

// sendRows sends a result's rows (at most max when max > 0, then
// PortalSuspended) and its CommandComplete.
func (ss *pgSession) sendRows(res *result, limit int64) error {
	if res.rows == nil && res.static == nil && res.cur == nil && res.stream == nil && res.lines == nil {
		ss.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(res.tag)})
		return nil
	}
	// The server's limits hold for a query's whole answer, however many
	// Executes or FETCHes take it.
	acct := res
	if res.cur != nil {
		acct = res.cur.res
	}
	if res.out != nil && !res.out.started {
		res.out.started = true
		ss.be.Send(res.out.response())
		if h := res.out.header(); h != nil {
			ss.be.Send(&pgproto3.CopyData{Data: h})
		}
	}
	res.suspended = false
	var sent int64
	for {
		// COPY's data is not a portal's rows: it goes whole.
		if limit > 0 && sent == limit && res.out == nil {
			res.suspended = true
			ss.be.Send(&pgproto3.PortalSuspended{})
			return nil
		}
		if res.stream != nil {
			if err := ss.sendStream(res, acct); err != nil {
				return err
			}
			break
		}
		vals, ok, err := res.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		var msg pgproto3.BackendMessage
		var size, wire int // what the limits count; the message's bytes
		if res.out != nil {
			line, err := res.out.row(vals)
			if err != nil {
				return err
			}
			msg, size, wire = &pgproto3.CopyData{Data: line}, len(line), 5+len(line)
		} else {
			row, err := res.encode(vals)
			if err != nil {
				return err
			}
			msg, size, wire = &pgproto3.DataRow{Values: row}, rowBytes(row), 5+2+rowBytes(row)
		}
		acct.count++
		acct.bytes += int64(size)
		if acct.count > ss.s.cfg.MaxResultRows {
			return &pgError{code: "54000", msg: fmt.Sprintf("the answer has more than %d rows, the server's limit per query", ss.s.cfg.MaxResultRows),
				hint: "add a LIMIT, or aggregate"}
		}
		if acct.bytes > ss.s.cfg.MaxResultBytes {
			return &pgError{code: "54000", msg: fmt.Sprintf("the answer is larger than %d bytes, the server's limit per query", ss.s.cfg.MaxResultBytes),
				hint: "add a LIMIT, select fewer columns, or aggregate"}
		}
		n := int64(wire)
		// A row that would take the session past its share of the buffers
		// waits until what is queued has gone: the client's pace, not the
		// server's memory, sets how fast rows leave DuckDB. Past the share
		// only a row larger than it goes, taking from the pool; if the pool
		// lacks it the query fails, and the others keep what they hold.
		if ss.queued > 0 && !ss.h.fits(n) {
			if err := ss.flush(); err != nil {
				return err
			}
		}
		if !ss.h.set(ss.h.read, ss.queued+n, ss.h.room) {
			return ss.h.outOfBuffers(fmt.Sprintf("a row of %d bytes", n))
		}
		ss.be.Send(msg)
		sent++
		ss.queued += n
		// Rows go out as DuckDB hands them over, a socket's worth at a
		// time: a client that reads slowly slows its query's sending, and
		// the server holds one flush of it, not the answer.
		if ss.queued >= flushBytes || !ss.h.fits(0) {
			if err := ss.flush(); err != nil {
				return err
			}
		}
	}
	if err := res.finish(); err != nil {
		return err
	}
	verb, count := "SELECT ", res.count
	switch {
	case res.out != nil:
		if t := res.out.trailer(); t != nil {
			ss.be.Send(&pgproto3.CopyData{Data: t})
		}
		ss.be.Send(&pgproto3.CopyDone{})
		verb = "COPY "
	case res.cur != nil:
		verb, count = "FETCH ", res.got
	}
	ss.s.m.rowsSent.Add(float64(count))
	ss.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(verb + strconv.FormatInt(count, 10))})
	if res.cur != nil && res.done != nil {
		// The FETCH is over; its cursor lives on, its timeout must not.
		res.done()
		res.done = nil
	}
	return nil
}

// sendStream sends the rows of a COPY that DuckDB writes (copystream.go)
// as sendRows sends rows, a run of rows at a time, each its own CopyData
// message: the same limits, counted per row, and the same share of the
// buffers, taken per run. A message value per row cost more than DuckDB's
// writing of the row did.
func (ss *pgSession) sendStream(res, acct *result) error {
	msg := &copyLines{}
	for {
		room := ss.h.floor - ss.h.read - ss.h.write - ss.h.room
		b, peeked, ok, err := res.stream.lines(int(max(1, min(room, flushBytes))))
		if err != nil || !ok {
			return ctxError(res.ctx, err)
		}
		msg.b, msg.ends = b, msg.ends[:0]
		var wire int64
		used, full := 0, false
		var stop error
		for used < len(b) {
			e := res.stream.rowEnd(b[used:])
			if e == 0 {
				if len(msg.ends) > 0 {
					break // the rest of the chunk is the start of a row: the next run's
				}
				// A row longer than the chunk: gathered whole, it is the run.
				if b, err = res.stream.gather(b, peeked); err != nil {
					return ctxError(res.ctx, err)
				}
				msg.b, peeked = b, false
				continue
			}
			end := used + e
			n := int64(5 + end - used)
			// A line past the share waits for what is queued to go, and
			// goes alone, taking from the pool, as a large row does.
			if ss.queued+wire+n > ss.h.floor-ss.h.read-ss.h.room && (len(msg.ends) > 0 || ss.queued > 0) {
				full = true
				break
			}
			acct.count++
			acct.bytes += int64(end - used)
			if acct.count > ss.s.cfg.MaxResultRows {
				stop = &pgError{code: "54000", msg: fmt.Sprintf("the answer has more than %d rows, the server's limit per query", ss.s.cfg.MaxResultRows),
					hint: "add a LIMIT, or aggregate"}
				break
			}
			if acct.bytes > ss.s.cfg.MaxResultBytes {
				stop = &pgError{code: "54000", msg: fmt.Sprintf("the answer is larger than %d bytes, the server's limit per query", ss.s.cfg.MaxResultBytes),
					hint: "add a LIMIT, select fewer columns, or aggregate"}
				break
			}
			msg.ends = append(msg.ends, end)
			wire += n
			used = end
		}
		if len(msg.ends) > 0 {
			if !ss.h.set(ss.h.read, ss.queued+wire, ss.h.room) {
				return ss.h.outOfBuffers(fmt.Sprintf("a row of %d bytes", wire))
			}
			ss.be.Send(msg)
			ss.queued += wire
		}
		if peeked {
			res.stream.consume(used)
		} else if used < len(b) {
			// A gathered line is taken whole or not at all: it waits in
			// the stream for the next run.
			res.stream.unread(b)
		}
		if stop != nil {
			return stop
		}
		if full || ss.queued >= flushBytes || !ss.h.fits(0) {
			if err := ss.flush(); err != nil {
				return err
			}
		}
	}
}

// flushBytes is how much of an answer is queued before it is written.
const flushBytes = 64 << 10

// flush writes what is queued. A client that took none of it for the
// write timeout, or for cancelGrace after a cancel request, has its
// session ended (see Config.WriteTimeout): the error stays, and nothing
// more is written.
func (ss *pgSession) flush() error {
	err := ss.be.Flush()
	ss.queued = 0
	ss.h.set(ss.h.read, 0, ss.h.room)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && !ss.w.timedOut {
		ss.w.timedOut = true
		ss.w.mu.Lock()
		cut := ss.w.cut
		ss.w.mu.Unlock()
		if cut {
			ss.s.dropped.WithLabelValues("cancelled").Inc()
			ss.s.cfg.Log.Info("pg: a cancel request found the session writing to a client that took nothing; session ended", "user", ss.user,
				"remote", ss.conn.RemoteAddr().String(), "grace", cancelGrace.String())
		} else {
			ss.s.dropped.WithLabelValues("write_timeout").Inc()
			ss.s.cfg.Log.Info("pg: client took nothing for the write timeout; session ended", "user", ss.user,
				"remote", ss.conn.RemoteAddr().String(), "timeout", ss.s.cfg.WriteTimeout.String())
		}
	}
	return err
}

func rowBytes(row [][]byte) int {
	n := 4 * len(row)
	for _, v := range row {
		n += len(v)
	}
	return n
}

// queryContext is a running statement's context: the statement timeout,
// the server's shutdown, and CancelRequest.
func (ss *pgSession) queryContext() (context.Context, func()) {
	// The session rides in the context to the functions of identity.go.
	ctx, cancel := context.WithTimeoutCause(context.WithValue(ss.s.ctx, sessionKey{}, ss), ss.s.cfg.StatementTimeout, errStatementTimeout)
	ss.mu.Lock()
	ss.running = cancel
	ss.mu.Unlock()
	return ctx, func() {
		ss.mu.Lock()
		ss.running = nil
		ss.mu.Unlock()
		cancel()
	}
}

var errStatementTimeout = errors.New("statement timeout")

// queryOptions are the options of a query the session runs: at readAt,
// and inside the session's transaction of writes, if it has one.
func (ss *pgSession) queryOptions() rocklake.QueryOptions {
	return rocklake.QueryOptions{Snapshot: ss.readAt(), In: ss.wtx}
}

// readAt is the snapshot the session's statements read: the
// rocklake.snapshot setting when set; inside a transaction block, the
// snapshot pinned at BEGIN until the block writes, then (the zero value)
// the block's transaction of writes, which reads its own writes over the
// latest snapshot as of its first write; else the latest.
func (ss *pgSession) readAt() rocklake.SnapshotRef {
	if _, set := ss.snapshot.ID(); set {
		return ss.snapshot
	}
	if ss.inBlock && ss.wtx == nil {
		return ss.blockSnap
	}
	return rocklake.SnapshotRef{}
}

// columnTypes are the columns of the tables the session reads, by name;
// a name two tables type differently is left out.
func (ss *pgSession) columnTypes() map[string]types.Type {
	out := map[string]types.Type{}
	ambiguous := map[string]bool{}
	ctx := context.Background()
	tables, err := ss.s.lake.Tables(ctx, rocklake.ReadOptions{Snapshot: ss.readAt()})
	if err != nil {
		return out
	}
	for _, t := range tables {
		info, err := ss.s.lake.Describe(ctx, t.Name, rocklake.ReadOptions{Snapshot: ss.readAt()})
		if err != nil {
			continue
		}
		for _, c := range info.Columns {
			if len(c.Path) != 1 {
				continue
			}
			name := c.Path[0]
			if old, ok := out[name]; ok && !old.Equal(c.Type) {
				ambiguous[name] = true
			}
			out[name] = c.Type
		}
	}
	for n := range ambiguous {
		delete(out, n)
	}
	return out
}

// readRoom is the most one read of the socket takes.
const readRoom = 16 << 10

// registerClientMetrics adds the series of what clients make the server
// hold, and of the clients dropped for it.
func (s *Server) registerClientMetrics() {
	s.dropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rocklake_pg_clients_dropped_total",
		Help: "PostgreSQL-protocol sessions ended by the server: write_timeout (the client stopped reading), message_too_large, buffer_limit (a message did not fit in what was left of --max-buffered-bytes), cancelled (a cancel request found the session blocked writing to its client)."}, []string{"reason"})
	s.m.reg.MustRegister(s.dropped, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rocklake_pg_buffered_bytes",
		Help: "Bytes the PostgreSQL sessions hold for their clients: messages partly received, rows queued and not yet taken by the socket (at most --max-buffered-bytes)."},
		func() float64 { return float64(s.budget.held.Load()) }))
}
