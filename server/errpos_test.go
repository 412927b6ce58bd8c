package server_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// internalName is any name of rocklake's own that a message must not
// show: its views and wrappers, and the system catalogs' schemas.
var internalName = regexp.MustCompile(`__rocklake|\bpc_\d+\.|\bpgs\.|\bis_\d+\.|\biss\.|LINE \d+:`)

// An error's message and position are in the client's text, over every
// way a statement reaches the server: the simple protocol (a statement
// after others in one message, its position counted from the message's
// start, as PostgreSQL counts it), the extended protocol (parameters
// before the place), the system catalogs, and a write's query. psql
// quotes the line from the position, so the message holds no quote of
// its own and names nothing of rocklake's.
func TestErrorPositionsAreTheClients(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	simple := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	extended := f.connect(t, pgx.QueryExecModeExec)
	for _, c := range []struct {
		conn *pgx.Conn
		sql  string
		args []any
		at   string // the text the position must point at ("": no position)
		code string
	}{
		{simple, "SELECT id FROM t WHERE name = 1 +", nil, "", "42601"},
		{simple, "SELECT id FROM t WHERE id = 'abc'", nil, "'abc'", "22P02"},
		{simple, "SELECT 1;\n  SELECT name,\n id FROM t WHERE ts > 'garbage'", nil, "'garbage'", "22P02"},
		{simple, "SELECT 'ü漢字', id FROM t AS x WHERE x.id::DATE IS NULL", nil, "::DATE", "22P02"},
		{simple, "SELECT id + name FROM t", nil, "+", "42883"}, // PostgreSQL: operator does not exist
		{simple, "SELECT * FROM pg_class WHERE relname = 1 +", nil, "", "42601"},
		{simple, "SELECT relname::INT FROM pg_catalog.pg_class", nil, "", "22P02"},
		{simple, "SELECT c.nosuch FROM pg_class c JOIN information_schema.tables t ON c.relname = t.table_name", nil, "", "42703"},
		{extended, "SELECT id FROM t WHERE id = 'abc' AND name = $1", []any{"n1"}, "'abc'", "22P02"},
		{extended, "SELECT id FROM t WHERE name = $1 AND id = 'abc'", []any{"n1"}, "", "22P02"},
		// A write's statement is rocklake's, around the user's query:
		// no place in it is guessed.
		{simple, "INSERT INTO t (id) SELECT id FROM t WHERE id = 'abc'", nil, "", "22P02"},
		{simple, "DELETE FROM t WHERE id = 'abc'", nil, "", "22P02"},
		{simple, "INSERT INTO t (id) SELECT nosuch FROM t", nil, "", "42703"},
	} {
		var err error
		rows, qerr := c.conn.Query(ctx, c.sql, c.args...)
		if qerr == nil {
			for rows.Next() {
			}
			rows.Close()
			err = rows.Err()
		} else {
			err = qerr
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Errorf("%q: %v is not a PostgreSQL error", c.sql, err)
			continue
		}
		if pe.Code != c.code {
			t.Errorf("%q: SQLSTATE %s, want %s (%s)", c.sql, pe.Code, c.code, pe.Message)
		}
		if internalName.MatchString(pe.Message) {
			t.Errorf("%q: the message shows rocklake's text: %s", c.sql, pe.Message)
		}
		want := 0
		if c.at != "" {
			want = utf8.RuneCountInString(c.sql[:strings.Index(c.sql, c.at)]) + 1
		}
		if strings.Contains(pe.Message, "syntax error at end of input") {
			want = utf8.RuneCountInString(c.sql) + 1 // PostgreSQL's place for it
		}
		if int(pe.Position) != want {
			t.Errorf("%q: position %d, want %d (%s)", c.sql, pe.Position, want, pe.Message)
		}
	}
}
