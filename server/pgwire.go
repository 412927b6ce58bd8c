package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/xdg-go/scram"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/types"
)

// startupTimeout bounds the handshake: a client that connects and says
// nothing holds no slot for long.
const startupTimeout = 30 * time.Second

func (s *Server) servePG() error {
	for {
		c, err := s.pgLn.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			s.handlePG(c)
		}()
	}
}

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

func (s *Server) handlePG(c net.Conn) {
	defer c.Close()
	// A bug in one session ends that connection, not the server and every
	// other client's query with it.
	defer func() {
		if r := recover(); r != nil {
			s.cfg.Log.Error("pg: session failed", "remote", c.RemoteAddr().String(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	c.SetDeadline(time.Now().Add(startupTimeout))
	h := &hold{b: s.budget}
	h.begin()
	defer h.release()
	rd := &connReader{c: c, h: h}
	w := &connWriter{c: c, timeout: s.cfg.WriteTimeout}
	be := pgproto3.NewBackend(rd, w)
	secure := false
	var binding scram.ChannelBinding
	var startup *pgproto3.StartupMessage
	for startup == nil {
		msg, err := be.ReceiveStartupMessage()
		if err != nil {
			var nb *noBufferError
			if errors.As(err, &nb) {
				s.noBuffer(be, c, h, nb)
			}
			return
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if s.cfg.TLS == nil || secure {
				if _, err := c.Write([]byte{'N'}); err != nil {
					return
				}
				continue
			}
			if _, err := c.Write([]byte{'S'}); err != nil {
				return
			}
			var cert *tls.Certificate
			tc := tls.Server(c, recordCertificate(s.cfg.TLS, &cert))
			if err := tc.Handshake(); err != nil {
				s.cfg.Log.Info("pg: TLS handshake failed", "remote", c.RemoteAddr().String(), "err", err)
				return
			}
			if cert == nil && len(s.cfg.TLS.Certificates) == 1 {
				cert = &s.cfg.TLS.Certificates[0] // a resumed session chooses none
			}
			if cert != nil {
				if hash, err := serverEndPoint(cert); err == nil {
					binding = scram.ChannelBinding{Type: scram.ChannelBindingTLSServerEndpoint, Data: hash}
				} else {
					s.cfg.Log.Info("pg: no channel binding for this certificate", "err", err)
				}
			}
			c, secure = tc, true
			defer c.Close()
			rd.release()
			rd = &connReader{c: c, h: h}
			w = &connWriter{c: c, timeout: s.cfg.WriteTimeout}
			be = pgproto3.NewBackend(rd, w)
		case *pgproto3.GSSEncRequest:
			if _, err := c.Write([]byte{'N'}); err != nil {
				return
			}
		case *pgproto3.CancelRequest:
			s.cancelRequest(m.ProcessID, m.SecretKey)
			return
		case *pgproto3.StartupMessage:
			startup = m
		default:
			return
		}
	}
	rd.limit(be, min(authMessageLimit, s.cfg.MaxMessageBytes))
	fatal := func(code, msg string) {
		be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg})
		be.Flush()
	}
	if s.cfg.TLS != nil && !secure {
		fatal("28000", "this server requires TLS (sslmode=require or stricter)")
		return
	}
	if n := s.active.Add(1); n > int64(s.cfg.MaxConns) {
		s.active.Add(-1)
		s.m.refused.Inc()
		fatal("53300", fmt.Sprintf("too many connections (the server allows %d)", s.cfg.MaxConns))
		return
	}
	defer s.active.Add(-1)
	h.admit()
	defer h.release()
	user := startup.Parameters["user"]
	if user == "" {
		fatal("28000", "no user name given in the startup message")
		return
	}
	role, bound := Writer, false
	if s.cfg.Auth != nil {
		var err error
		if role, bound, err = s.scramAuth(be, binding, user); err != nil {
			var big *pgproto3.ExceededMaxBodyLenErr
			if errors.As(err, &big) {
				s.tooLarge(be, c, big)
				return
			}
			var nb *noBufferError
			if errors.As(err, &nb) {
				s.noBuffer(be, c, h, nb)
				return
			}
			s.m.authFailures.Inc()
			// Only the server's own reasons are logged: SCRAM's errors can
			// quote what the client sent, proof included.
			var pe *pgError
			if errors.As(err, &pe) {
				s.cfg.Log.Info("pg: authentication failed", "user", user, "remote", c.RemoteAddr().String(), "why", pe.msg)
				fatal(pe.code, pe.msg)
			} else {
				s.cfg.Log.Info("pg: authentication failed", "user", user, "remote", c.RemoteAddr().String())
				fatal("28P01", fmt.Sprintf("password authentication failed for user %q", user))
			}
			return
		}
	}
	rd.limit(be, s.cfg.MaxMessageBytes)
	if db := startup.Parameters["database"]; db != "" && db != "rocklake" && db != user {
		// Any name is accepted: one server serves one catalog.
		_ = db
	}
	ss := &pgSession{s: s, conn: c, rd: rd, be: be, w: w, h: h, user: user, role: role, settings: map[string]string{},
		stmts: map[string]*prepared{}, portals: map[string]*portal{}, cursors: map[string]*cursor{}}
	for k, v := range startup.Parameters {
		if _, ok := pgSettings[strings.ToLower(k)]; ok {
			// As SET would take it; a value SET refuses keeps the default.
			_ = ss.set(strings.ToLower(k), v)
		}
	}
	if !s.register(ss) {
		fatal("57P01", "the server is shutting down")
		return
	}
	defer s.unregister(ss)
	defer ss.endWrites(false) // a client gone inside a block commits nothing
	s.m.connections.Inc()
	defer s.m.connections.Dec()
	c.SetDeadline(time.Time{})
	be.Send(&pgproto3.AuthenticationOk{})
	for _, p := range [][2]string{
		{"server_version", serverVersion + " (rocklake)"}, {"server_encoding", "UTF8"}, {"client_encoding", "UTF8"},
		{"DateStyle", "ISO, MDY"}, {"TimeZone", "UTC"}, {"integer_datetimes", "on"}, {"IntervalStyle", "postgres"},
		{"standard_conforming_strings", "on"}, {"is_superuser", "off"}, {"session_authorization", user},
		{"application_name", startup.Parameters["application_name"]},
	} {
		be.Send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
	}
	be.Send(&pgproto3.BackendKeyData{ProcessID: ss.pid, SecretKey: ss.key})
	ss.ready()
	if err := be.Flush(); err != nil {
		return
	}
	s.cfg.Log.Info("pg: connected", "user", user, "remote", c.RemoteAddr().String(), "tls", secure, "channel_binding", bound)
	ss.loop()
}

// authMessageLimit bounds a message before login: SCRAM's are a few
// hundred bytes (PostgreSQL allows 64 KiB for an authentication token).
const authMessageLimit = 64 << 10

// tooLarge ends a connection whose client sent a header claiming more
// than the limit, saying which limit, before any room is made for it.
func (s *Server) tooLarge(be *pgproto3.Backend, c net.Conn, big *pgproto3.ExceededMaxBodyLenErr) {
	s.dropped.WithLabelValues("message_too_large").Inc()
	s.cfg.Log.Info("pg: message over the limit", "remote", c.RemoteAddr().String(), "bytes", big.ActualBodyLen, "limit", big.MaxExpectedBodyLen)
	be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "54000",
		Message: fmt.Sprintf("message of %d bytes is over the server's limit of %d bytes per message", big.ActualBodyLen, big.MaxExpectedBodyLen),
		Hint:    "send large values in smaller pieces, or raise the server's message limit"})
	if be.Flush() == nil {
		lingerClose(c, int64(big.ActualBodyLen))
	}
}

// noBuffer ends a connection whose message does not fit in what is left
// of the server's buffers: a message is handed on only whole, so the
// session could not go on without the room, and waiting for it would
// hold what it has while others may be waiting the same way.
func (s *Server) noBuffer(be *pgproto3.Backend, c net.Conn, h *hold, nb *noBufferError) {
	s.dropped.WithLabelValues("buffer_limit").Inc()
	what := "the client's message"
	if nb.claim > 0 {
		what = fmt.Sprintf("a message of %d bytes", nb.claim)
	}
	pe := h.outOfBuffers(what)
	s.cfg.Log.Info("pg: no room in the buffers for a message", "remote", c.RemoteAddr().String(), "bytes", nb.claim,
		"free", h.free(), "limit", s.budget.limit)
	s.m.errors.WithLabelValues(pe.code).Inc()
	be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: pe.code, Message: pe.msg, Hint: pe.hint})
	if be.Flush() == nil {
		lingerClose(c, nb.claim)
	}
}

// scramAuth runs SCRAM-SHA-256 and, when the connection has channel
// binding data (TLS, tls-server-end-point), offers SCRAM-SHA-256-PLUS
// first. PostgreSQL takes the user from the startup message and ignores
// the SCRAM user name; an unknown user runs the exchange against a random
// verifier, so a client cannot tell unknown users from wrong passwords.
func (s *Server) scramAuth(be *pgproto3.Backend, binding scram.ChannelBinding, user string) (role Role, bound bool, err error) {
	u, known := s.cfg.Auth.user(user)
	cred := scram.StoredCredentials{}
	role = Reader
	if known {
		cred, role = u.cred, u.Role
	} else {
		v, _ := Verifier(string(rand.Text()))
		cred, _ = ParseVerifier(v)
	}
	srv, err := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) { return cred, nil })
	if err != nil {
		return "", false, err
	}
	mechs := []string{"SCRAM-SHA-256"}
	conv := srv.NewConversation()
	if binding.IsSupported() {
		mechs = append([]string{"SCRAM-SHA-256-PLUS"}, mechs...)
		conv = srv.NewConversationWithChannelBinding(binding)
	}
	be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: mechs})
	if err := be.Flush(); err != nil {
		return "", false, err
	}
	if err := be.SetAuthType(pgproto3.AuthTypeSASL); err != nil {
		return "", false, err
	}
	msg, err := be.Receive()
	if err != nil {
		return "", false, err
	}
	first, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok || !slices.Contains(mechs, first.AuthMechanism) {
		return "", false, &pgError{code: "28000", msg: "the client did not choose one of the SASL mechanisms offered: " + strings.Join(mechs, ", ")}
	}
	// The mechanism and the GS2 flag must agree, as PostgreSQL checks:
	// SCRAM-SHA-256-PLUS binds ("p="), plain SCRAM-SHA-256 does not. A
	// client choosing PLUS without binding, or binding under the plain
	// name, is not one to trust with either.
	plus := first.AuthMechanism == "SCRAM-SHA-256-PLUS"
	if plus != strings.HasPrefix(string(first.Data), "p=") {
		return "", false, &pgError{code: "08P01", msg: "SCRAM channel binding check failed: the mechanism and the client's channel binding flag disagree"}
	}
	out, err := conv.Step(string(first.Data))
	switch {
	case out == scram.ErrServerDoesSupportChannelBinding:
		return "", false, &pgError{code: "08P01", msg: "SCRAM channel binding check failed: the client says SCRAM-SHA-256-PLUS was not offered, and it was"}
	case out == scram.ErrUnsupportedChannelBindingType || out == scram.ErrChannelBindingNotSupported:
		return "", false, &pgError{code: "08P01", msg: "SCRAM channel binding check failed: the server binds with tls-server-end-point only"}
	case err != nil:
		return "", false, err
	}
	be.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(out)})
	if err := be.Flush(); err != nil {
		return "", false, err
	}
	if err := be.SetAuthType(pgproto3.AuthTypeSASLContinue); err != nil {
		return "", false, err
	}
	msg, err = be.Receive()
	if err != nil {
		return "", false, err
	}
	resp, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return "", false, errors.New("expected a SASL response")
	}
	out, err = conv.Step(string(resp.Data))
	if out == scram.ErrChannelBindingsDontMatch {
		return "", false, &pgError{code: "08P01", msg: "SCRAM channel binding check failed"}
	}
	if err != nil || !conv.Valid() || !known {
		return "", false, errors.New("wrong password or unknown user")
	}
	be.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte(out)})
	return role, plus, nil
}

func (s *Server) register(ss *pgSession) bool {
	ss.key = make([]byte, 4)
	rand.Read(ss.key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	for {
		ss.pid = s.nextPID.Add(1)
		if _, taken := s.sessions[ss.pid]; !taken && ss.pid != 0 {
			break
		}
	}
	s.sessions[ss.pid] = ss
	return true
}

func (s *Server) unregister(ss *pgSession) {
	s.mu.Lock()
	delete(s.sessions, ss.pid)
	s.mu.Unlock()
	ss.closePortals()
	ss.closeCursors(func(*cursor) bool { return true })
}

// cancelRequest cancels the query a session runs, when the key matches
// (compared in constant time; a wrong key does nothing, as in
// PostgreSQL, and says nothing), and hurries the session's writes (see
// cancelGrace).
func (s *Server) cancelRequest(pid uint32, key []byte) {
	s.mu.Lock()
	ss := s.sessions[pid]
	s.mu.Unlock()
	if ss == nil || subtle.ConstantTimeCompare(ss.key, key) != 1 {
		return
	}
	ss.cancelQuery()
	s.m.cancels.Inc()
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
			delete(ss.stmts, m.Name)
		} else if p := ss.portals[m.Name]; p != nil {
			p.close()
			delete(ss.portals, m.Name)
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
	for name, p := range ss.portals {
		p.close()
		delete(ss.portals, name)
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
	ss.stmts[m.Name] = &prepared{sql: m.Query, paramOIDs: oids}
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
	if old := ss.portals[m.DestinationPortal]; old != nil {
		old.close()
	}
	ss.portals[m.DestinationPortal] = &portal{stmt: st, sql: text, formats: append([]int16(nil), m.ResultFormatCodes...)}
	ss.be.Send(&pgproto3.BindComplete{})
}

func (ss *pgSession) describe(m *pgproto3.Describe) {
	if m.ObjectType == 'S' {
		st := ss.stmts[m.Name]
		if st == nil {
			ss.fail(&pgError{code: "26000", msg: fmt.Sprintf("prepared statement %q does not exist", m.Name)})
			return
		}
		if st.described == nil {
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
				st.described, err = ss.describeOnly(text)
			}
			if err != nil {
				ss.fail(err)
				return
			}
		}
		ss.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: st.paramOIDs})
		if st.described.fields == nil {
			ss.be.Send(&pgproto3.NoData{})
		} else {
			ss.be.Send(&pgproto3.RowDescription{Fields: st.described.fields})
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
	if res.rows == nil && res.static == nil && res.cur == nil && res.stream == nil {
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

// readKey is how the session's statements read: inside a transaction
// block the snapshot pinned at BEGIN, else the rocklake.snapshot setting.
func (ss *pgSession) readAt() rocklake.SnapshotRef {
	if _, set := ss.snapshot.ID(); set {
		return ss.snapshot
	}
	if ss.inBlock {
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

// connReader is the connection as the protocol reads it.
//
// It hands the protocol a message only once the whole message has
// arrived. pgproto3 makes room for a message's body as soon as it reads
// the header, so a header claiming a large body and nothing after it
// would make the server hold that much per connection; here what a client
// makes the server hold is what it has sent. A header over the limit (or
// malformed) is handed on at once, for pgproto3 to refuse. The startup
// exchange, whose messages pgproto3 bounds itself, is read as it comes.
//
// And it has a watch: while a statement runs nothing reads the socket, so
// a client that went away would go unnoticed until its answer is written,
// and DuckDB would run its query to the end. The watch reads meanwhile,
// keeps what the client sent (pipelined messages, up to watchLimit) for
// the protocol, and reports a closed connection.
type connReader struct {
	c   net.Conn
	buf []byte // buf[off:] is received and not yet handed on
	off int
	// whole is how many bytes of buf[off:] are whole messages.
	whole int
	// framed: past the startup exchange. max is the body limit the
	// protocol applies. raw: a header was over it or malformed, and
	// everything is handed on as it comes.
	framed, raw bool
	max         int
	h           *hold // the connection's share of the server's buffers
}

// watchLimit is how much the watch keeps of what a client sends while its
// statement runs; past it the rest waits in the socket.
const watchLimit = 64 << 10

func (r *connReader) Read(p []byte) (int, error) {
	for {
		if n := r.ready(); n > 0 {
			n = copy(p, r.buf[r.off:r.off+n])
			r.off += n
			r.whole = max(0, r.whole-n)
			if r.off == len(r.buf) {
				r.off, r.whole = 0, 0
				if cap(r.buf) > 64<<10 {
					r.buf = nil // a large message passed: do not keep its room
				} else {
					r.buf = r.buf[:0]
				}
			}
			r.count()
			return n, nil
		}
		if err := r.fill(true); err != nil {
			return 0, err
		}
	}
}

// ready is how many buffered bytes may be handed on.
func (r *connReader) ready() int {
	pending := r.buf[r.off:]
	if !r.framed || r.raw {
		return len(pending)
	}
	for len(pending)-r.whole >= 5 {
		n := int(int32(binary.BigEndian.Uint32(pending[r.whole+1:])))
		if n < 4 || n-4 > r.max {
			r.raw = true
			return len(pending)
		}
		if len(pending)-r.whole < 1+n {
			break
		}
		r.whole += 1 + n
	}
	return r.whole
}

// readRoom is the most one read of the socket takes.
const readRoom = 16 << 10

// fill reads what the socket has, growing the buffer by what arrives.
// The room for the read is taken from the budget before the read, since
// what is read cannot be given back: within the connection's floor, and
// past it from the pool if pool says so. With no room at all it reads
// nothing and returns a *noBufferError.
func (r *connReader) fill(pool bool) error {
	if r.off > 0 {
		n := copy(r.buf, r.buf[r.off:])
		r.buf, r.off = r.buf[:n], 0
	}
	room := r.reserve(pool)
	if room == 0 {
		return &noBufferError{claim: r.claim()}
	}
	r.buf = slices.Grow(r.buf, room)
	n, err := r.c.Read(r.buf[len(r.buf) : len(r.buf)+room])
	r.buf = r.buf[:len(r.buf)+n]
	r.count()
	if n > 0 {
		return nil
	}
	return err
}

// reserve takes room for a read: a whole readRoom if it can, else what
// is left of the floor.
func (r *connReader) reserve(pool bool) int {
	h, held := r.h, int64(len(r.buf)-r.off)
	if (pool || h.fits(readRoom)) && h.set(held, h.write, readRoom) {
		return readRoom
	}
	if free := h.floor - held - h.write; free > 0 {
		h.set(held, h.write, free)
		return int(free)
	}
	return 0
}

// claim is the size of the message being received, as its header says
// (0 before a header has arrived).
func (r *connReader) claim() int64 {
	pending := r.buf[r.off:]
	if !r.framed || len(pending)-r.whole < 5 {
		return 0
	}
	return 1 + int64(binary.BigEndian.Uint32(pending[r.whole+1:]))
}

// count keeps the connection's share of the buffers up to date with what
// the reader holds (its room given back: the read is done).
func (r *connReader) count() {
	r.h.set(int64(len(r.buf)-r.off), r.h.write, 0)
}

// release gives back what the reader still holds, when it is replaced.
func (r *connReader) release() {
	r.buf, r.off, r.whole = nil, 0, 0
	r.count()
}

// noBufferError is a read the server's buffers had no room for.
type noBufferError struct{ claim int64 }

func (e *noBufferError) Error() string {
	return "no room left in the server's buffers for the client's message"
}

// limit sets the body limit, for the reader and the protocol alike.
func (r *connReader) limit(be *pgproto3.Backend, n int) {
	r.framed, r.max = true, n
	be.SetMaxBodyLen(n)
}

// watch calls gone if the client closes the connection before stop is
// called; stop returns once the watch has ended.
func (r *connReader) watch(gone func()) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(r.buf)-r.off < watchLimit {
			// Within the floor only: what a client sends ahead may wait in
			// the socket, and must not take what other sessions need.
			if err := r.fill(false); err != nil {
				var ne net.Error
				var nb *noBufferError
				if !errors.As(err, &nb) && (!errors.As(err, &ne) || !ne.Timeout()) {
					gone()
				}
				return
			}
		}
	}()
	return func() {
		r.c.SetReadDeadline(time.Now())
		<-done
		r.c.SetReadDeadline(time.Time{})
	}
}

// connWriter writes to the connection with a deadline on each piece: a
// client that takes nothing for the write timeout is gone for the
// server's purposes, however long it keeps its socket open. Pieces keep
// a slow reader that does take the answer alive; a deadline over a whole
// flush would drop it.
type connWriter struct {
	c       net.Conn
	timeout time.Duration
	// err is the first write error: after it nothing is written (a new
	// deadline would only make a gone client hold the session longer).
	err      error
	timedOut bool
	// mu orders a cancel request's deadline with the one each piece sets:
	// a piece begun after the cancel must not put the whole write timeout
	// back.
	mu sync.Mutex
	// hurry: a cancel request came while the session was answering, and
	// until its next message each piece must be taken within cancelGrace.
	// cut: the write failed so.
	hurry, cut bool
}

const writePiece = 64 << 10

// cancelGrace is how long, after a cancel request, a client has to take
// each piece of what it is sent. One that reads takes a piece in far less
// and gets the cancel's 57014 as PostgreSQL's clients expect; one that
// does not read would otherwise keep the session, its rows in DuckDB and
// its share of the buffers until the write timeout. Its session ends: a
// write cut mid-message leaves nothing an error could follow.
const cancelGrace = time.Second

func (w *connWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	done := 0
	for done < len(p) {
		end := min(len(p), done+writePiece)
		w.mu.Lock()
		d := w.timeout
		if w.hurry {
			d = min(d, cancelGrace)
		}
		w.c.SetWriteDeadline(time.Now().Add(d))
		w.mu.Unlock()
		n, err := w.c.Write(p[done:end])
		done += n
		if err != nil {
			w.mu.Lock()
			w.err, w.cut = err, w.hurry
			w.mu.Unlock()
			return done, err
		}
	}
	return done, nil
}

// cancel shortens the deadline of a write under way, and of those after
// it, to cancelGrace (from the first cancel: more do not extend it).
func (w *connWriter) cancel() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.hurry {
		w.hurry = true
		w.c.SetWriteDeadline(time.Now().Add(min(w.timeout, cancelGrace)))
	}
}

// calm ends a cancel's hurry, at the session's next message.
func (w *connWriter) calm() {
	w.mu.Lock()
	w.hurry = false
	w.mu.Unlock()
}

// lingerTimeout bounds how long a refused client is read from before its
// connection closes.
const lingerTimeout = 2 * time.Second

// lingerClose closes a connection whose client may still be sending (a
// driver writing the message it was refused for): closing with its bytes
// unread would reset the connection, and the reset can overtake the error
// sent just before it. What it sends meanwhile is read into nothing.
func lingerClose(c net.Conn, upTo int64) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.CopyN(io.Discard, c, upTo)
	c.Close()
}

// registerClientMetrics adds the series of what clients make the server
// hold, and of the clients dropped for it.
func (s *Server) registerClientMetrics() {
	s.dropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rocklake_pg_clients_dropped_total",
		Help: "PostgreSQL-protocol sessions ended by the server: write_timeout (the client stopped reading), message_too_large, buffer_limit (a message did not fit in what was left of --max-buffered-bytes), cancelled (a cancel request found the session blocked writing to its client)."}, []string{"reason"})
	s.m.reg.MustRegister(s.dropped, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rocklake_pg_buffered_bytes",
		Help: "Bytes the PostgreSQL sessions hold for their clients: messages partly received, rows queued and not yet taken by the socket (at most --max-buffered-bytes)."},
		func() float64 { return float64(s.budget.held.Load()) }))
}
