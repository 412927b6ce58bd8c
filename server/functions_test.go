package server_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A client that calls a function changing the whole database gets 42501,
// over both protocols' ways of sending SQL, and the next client's queries
// answer as before: nothing was switched on, nothing written.
func TestClientCannotSwitchTheDatabase(t *testing.T) {
	f := newFixture(t, newConfig())
	logDir := filepath.Join(f.data, "log")
	ctx := t.Context()
	other := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	var before int64
	if err := other.QueryRow(ctx, "SELECT count(*) FROM t WHERE id > 10").Scan(&before); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		c := f.connect(t, mode)
		for _, q := range []string{
			"SELECT * FROM enable_logging(storage='file', storage_path='" + logDir + "')",
			"SELECT * FROM disable_logging()",
			"SELECT * FROM enable_profiling()",
			"SELECT * FROM query('SELECT * FROM checkpoint()')",
			// DuckDB's own, by its qualified name: the bare name is the
			// session's (below).
			"SELECT system.main.current_setting('allowed_directories')",
		} {
			_, err := c.Exec(ctx, q)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "42501" {
				t.Errorf("%v %s: %v, want 42501", mode, q, err)
			}
		}
	}
	// A function no one has is undefined (42883), as PostgreSQL says, not
	// a refusal, over both protocols, in every position a name can call.
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		c := f.connect(t, mode)
		for _, q := range []string{"SELECT no_such_fn(1)", "SELECT * FROM no_such_table_fn()", "SELECT id FROM t WHERE no_such_fn(id) > 1",
			"SELECT list_transform([1], v -> no_such_fn(v))"} {
			_, err := c.Exec(ctx, q)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "42883" || !strings.Contains(pe.Message, "does not exist") {
				t.Errorf("%v %s: %v, want 42883 saying the function does not exist", mode, q, err)
			}
		}
	}
	// current_setting is PostgreSQL's, the session's settings: DuckDB's
	// are not among them.
	if _, err := other.Exec(ctx, "SELECT current_setting('allowed_directories')"); err == nil || !strings.Contains(err.Error(), "unrecognized configuration parameter") {
		t.Errorf("current_setting('allowed_directories'): %v, want unrecognized", err)
	}
	var after int64
	if err := other.QueryRow(ctx, "SELECT count(*) FROM t WHERE id > 10").Scan(&after); err != nil {
		t.Fatalf("the other client after the refusals: %v", err)
	}
	if after != before {
		t.Errorf("the other client's answer went from %d to %d", before, after)
	}
	if _, err := os.Stat(logDir); err == nil {
		t.Errorf("%s was written", logDir)
	}
}
