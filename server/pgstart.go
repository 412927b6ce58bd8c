package server

import (
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"
)

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

// startupTimeout bounds the handshake: a client that connects and says
// nothing holds no slot for long.
const startupTimeout = 30 * time.Second
