package pgkv

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestCommitSent: a COMMIT that failed is taken for one that wrote
// nothing only when the server answered it with an ERROR (the transaction
// rolled back) or pgx knows nothing went out. Every way the session can
// end instead (a FATAL or PANIC of any class: an immediate shutdown, a
// crash, a terminated backend; a connection cut) leaves the outcome
// unknown, because the commit may be durable already.
func TestCommitSent(t *testing.T) {
	notSent := []error{
		&pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "23505"},
		&pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "40001"},
		&pgconn.PgError{Severity: "ERREUR", SeverityUnlocalized: "ERROR", Code: "40P01"},
		fmt.Errorf("commit: %w", &pgconn.PgError{Severity: "ERROR", Code: "25P02"}),
	}
	sent := []error{
		&pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01"},
		&pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P02"},
		&pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P03"},
		&pgconn.PgError{Severity: "PANIC", SeverityUnlocalized: "PANIC", Code: "XX000"},
		&pgconn.PgError{Severity: "FATAL", Code: "08006"},
		&pgconn.PgError{Severity: "WARNING", SeverityUnlocalized: "WARNING", Code: "57P01"},
		io.EOF,
		io.ErrUnexpectedEOF,
		&net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")},
		fmt.Errorf("wrapped: %w", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}),
	}
	for _, err := range notSent {
		if commitSent(err) {
			t.Errorf("%v: taken for a COMMIT that may have landed; the server rolled it back or never got it", err)
		}
	}
	for _, err := range sent {
		if !commitSent(err) {
			t.Errorf("%v: taken for a COMMIT that wrote nothing; it may have landed", err)
		}
	}
}
