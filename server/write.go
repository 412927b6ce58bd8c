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

// Writes over the PostgreSQL protocol: INSERT, CREATE TABLE [AS],
// COPY ... FROM, DELETE and UPDATE run by Lake.Exec, each its own
// snapshot; COPY ... FROM STDIN takes the client's data first (copy.go).

// write runs one write statement for the session.
func (ss *pgSession) write(q string) (*result, error) {
	if err := ss.mayWrite(q); err != nil {
		return nil, err
	}
	if err := ss.writeInBlock(q); err != nil {
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
		res, err = ss.exec(ctx, q, rocklake.ExecOptions{Snapshot: ss.readAt()})
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

// writeInBlock refuses, inside BEGIN ... COMMIT, what a transaction of
// writes cannot hold: CREATE TABLE (a transaction writes to tables that
// exist).
func (ss *pgSession) writeInBlock(q string) error {
	if !ss.inBlock {
		return nil
	}
	if kw := sqllex.LeadingKeyword(q); kw == "CREATE" {
		return &pgError{code: "0A000", msg: "CREATE TABLE inside a transaction block is not supported; create the table on its own, then write to it in the block",
			hint: "COMMIT or ROLLBACK this block, run CREATE TABLE, then BEGIN again"}
	}
	return nil
}

// exec runs a write: on its own, one snapshot, or inside BEGIN ... COMMIT
// as a statement of the session's transaction of writes, whose files wait
// for COMMIT (one snapshot for the block) or ROLLBACK (removed).
func (ss *pgSession) exec(ctx context.Context, q string, o rocklake.ExecOptions) (*rocklake.WriteResult, error) {
	if !ss.inBlock {
		return ss.s.lake.Exec(ctx, q, o)
	}
	if ss.wtx == nil {
		ss.wtx = ss.s.lake.BeginWrite()
	}
	// The statement reads the transaction's state: the latest snapshot
	// when its first write began, and its writes.
	o.Snapshot = rocklake.SnapshotRef{}
	if _, set := ss.snapshot.ID(); set {
		o.Snapshot = ss.snapshot
	}
	return ss.wtx.Exec(ctx, q, o)
}

// endWrites ends the session's transaction of writes: committed, or
// rolled back (its files removed).
func (ss *pgSession) endWrites(commit bool) error {
	tx := ss.wtx
	ss.wtx = nil
	if tx == nil {
		return nil
	}
	if !commit {
		tx.Rollback()
		return nil
	}
	ctx, done := ss.queryContext()
	defer done()
	if _, err := tx.Commit(ctx); err != nil {
		return err
	}
	return nil
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
	case "COPY", "DELETE", "UPDATE", "MERGE":
		return res.Statement + " " + n
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
// statement rocklake does not run (ATTACH, for one): saying the
// session is read-only, as it does to a reader, would not be true.
func (ss *pgSession) notAQuery(err error) error {
	if ss.readOnly() || !errors.Is(err, rocklake.ErrNotAQuery) {
		return err
	}
	return &pgError{code: "0A000", msg: err.Error(), hint: "the writes rocklake runs are INSERT, CREATE TABLE [AS], COPY ... FROM, DELETE and UPDATE, each committed as one snapshot"}
}
