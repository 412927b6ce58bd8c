package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/internal/sqllex"
)

// Writes over the PostgreSQL protocol: INSERT, CREATE TABLE [AS] and
// COPY ... FROM run by Lake.Exec, each its own snapshot; COPY ... FROM
// STDIN takes the client's data first (copy.go).

// write runs one write statement for the session.
func (ss *pgSession) write(q string) (*result, error) {
	if err := ss.mayWrite(q); err != nil {
		return nil, err
	}
	if err := ss.writeInBlock(); err != nil {
		return nil, err
	}
	cp, err := parseCopyStdin(q)
	if err != nil {
		return nil, err
	}
	ctx, done := ss.queryContext()
	defer done()
	var res *rocklake.WriteResult
	if cp != nil {
		res, err = ss.copyIn(ctx, cp)
	} else {
		res, err = ss.s.lake.Exec(ctx, q, rocklake.ExecOptions{Snapshot: ss.readAt()})
	}
	if err != nil {
		return nil, ctxError(ctx, err)
	}
	ss.s.m.observeWrite(res)
	if res.Snapshot.ID == 0 && strings.HasPrefix(res.Statement, "CREATE TABLE") {
		// IF NOT EXISTS of a table that exists: PostgreSQL's notice.
		ss.be.Send(&pgproto3.NoticeResponse{Severity: "NOTICE", SeverityUnlocalized: "NOTICE", Code: "42P07",
			Message: fmt.Sprintf("relation %q already exists, skipping", res.Table)})
	}
	return &result{tag: writeTag(res), s: ss.s}, nil
}

// mayWrite refuses a write to a reader, and to a session that set itself
// read-only, as PostgreSQL does (with its SQLSTATEs).
func (ss *pgSession) mayWrite(q string) error {
	verb := writeVerb(q)
	if ss.role != Writer {
		return &pgError{code: "42501", msg: fmt.Sprintf("permission denied: user %q is a %s; %s needs the %s role", ss.user, ss.role, verb, Writer),
			hint: "connect as a user whose role in the server's auth file is writer"}
	}
	if ss.readOnly() {
		return &pgError{code: "25006", msg: fmt.Sprintf("cannot execute %s in a read-only transaction", verb),
			hint: "SET default_transaction_read_only = off"}
	}
	return nil
}

// writeInBlock is what a write inside BEGIN ... COMMIT gets: an error,
// until writes can be staged and committed with the block (the error then
// fails the block, as any other does).
func (ss *pgSession) writeInBlock() error {
	if !ss.inBlock {
		return nil
	}
	return &pgError{code: "0A000", msg: "writes inside a transaction block are not supported yet; run each write on its own (autocommit)",
		hint: "COMMIT or ROLLBACK this block, then run the write outside it: each write is one snapshot"}
}

// readOnly says whether the session may not write: a reader never may; a
// writer may, unless it set transaction_read_only or
// default_transaction_read_only on.
func (ss *pgSession) readOnly() bool {
	if ss.role != Writer {
		return true
	}
	for _, name := range []string{"transaction_read_only", "default_transaction_read_only"} {
		if v, ok := ss.settings[name]; ok && isOn(v) {
			return true
		}
	}
	return false
}

func isOn(v string) bool {
	on, _ := parseBool(v)
	return on
}

// parseBool reads a Boolean setting as PostgreSQL does (a unique prefix
// of true, false, yes, no; on, off; 1, 0).
func parseBool(v string) (on, ok bool) {
	v = strings.ToLower(strings.TrimSpace(v))
	switch {
	case v == "":
		return false, false
	case v == "1", v == "on", strings.HasPrefix("true", v), strings.HasPrefix("yes", v):
		return true, true
	case v == "0", v == "off", v == "of", strings.HasPrefix("false", v), strings.HasPrefix("no", v):
		return false, true
	}
	return false, false
}

// readOnlySetting is what SHOW says of the read-only settings.
func (ss *pgSession) readOnlySetting() string {
	if ss.readOnly() {
		return "on"
	}
	return "off"
}

// writeTag is PostgreSQL's command tag for a write.
func writeTag(res *rocklake.WriteResult) string {
	n := strconv.FormatInt(res.Rows, 10)
	switch res.Statement {
	case "INSERT":
		return "INSERT 0 " + n
	case "CREATE TABLE AS":
		if res.Snapshot.ID == 0 && res.Rows == 0 {
			return "CREATE TABLE AS" // IF NOT EXISTS found the table: nothing made
		}
		return "SELECT " + n
	case "COPY":
		return "COPY " + n
	}
	return res.Statement
}

// writeVerb names a write statement in messages.
func writeVerb(q string) string {
	if kw := sqllex.LeadingKeyword(q); kw != "CREATE" {
		return kw
	}
	return "CREATE TABLE"
}

// describeWrite says, for Describe, what a write's portal returns: no
// rows, and nothing is run to find that out.
func describeWrite(q string) bool { return rocklake.IsWrite(q) }

// writeContext bounds a write made through HTTP: the statement timeout
// and the server's shutdown, not the client, which may go away while its
// write commits.
func (s *Server) writeContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeoutCause(context.WithoutCancel(parent), s.cfg.StatementTimeout, errStatementTimeout)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// notAQuery gives a writer's session PostgreSQL's "not supported" for a
// statement rocklake does not run (UPDATE, DELETE, ATTACH): saying the
// session is read-only, as it does to a reader, would not be true.
func (ss *pgSession) notAQuery(err error) error {
	if ss.readOnly() || !errors.Is(err, rocklake.ErrNotAQuery) {
		return err
	}
	return &pgError{code: "0A000", msg: err.Error(), hint: "the writes rocklake runs are INSERT, CREATE TABLE [AS] and COPY ... FROM, each committed as one snapshot"}
}
