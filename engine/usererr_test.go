package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/sqllex"
)

// A query's error reads as DuckDB's error for the same text over a real
// table would: the same message, no name of rocklake's views or
// wrappers, and the same position in the user's text, though DuckDB ran
// views of the kept files inside a statement of rocklake's. Every shape
// of query (a line of its own, joins, CTEs, subqueries, a long line cut
// to a window, wide characters, an answer from statistics) is crossed
// with every kind of error (conversions, binding, syntax, functions),
// and each is compared with a DuckDB that holds the table's rows as a
// table of its own.
func TestQueryErrorsAreTheUsersText(t *testing.T) {
	dir, _, _, e := twoColumnLake(t)
	ref, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	ctx := context.Background()
	if _, err := ref.ExecContext(ctx, "CREATE TABLE t AS SELECT * FROM read_parquet("+sqllex.QuoteString(dir+"/*.parquet")+")"); err != nil {
		t.Fatal(err)
	}
	shapes := []string{
		"SELECT x FROM t WHERE %s",
		"SELECT %s FROM t",
		"SELECT count(*) FROM t WHERE %s",
		"SELECT x,\n  y\nFROM t\nWHERE y > 0\n  AND %s\nORDER BY x",
		"SELECT count(*) FROM t AS a JOIN t AS b ON a.x = b.y WHERE a.%s",
		"WITH c AS (SELECT * FROM t WHERE %s) SELECT count(*) FROM c",
		"SELECT (SELECT max(x) FROM t WHERE %s) AS m",
		"SELECT 'ü漢字' AS u, x FROM t WHERE %s",
		"SELECT x FROM t WHERE x > 0 AND y > 0 AND x + y > -1000000000 AND z <> 'nothing at all' AND %s AND x < 1000000000000",
		"SELECT x FROM (SELECT * FROM t) AS s\n\tWHERE %s",
		"SELECT x FROM t WHERE x IN (SELECT y FROM t WHERE %s)",
	}
	faults := []string{
		"x = 'abc'",
		"x > 'garbage'::INT",
		"nosuch = 1",
		"x = nosuchfn(1)",
		"x = 1 +",
		"y::DATE > DATE '2020-01-01'",
		"CAST('zz' AS INTEGER) = x",
		"x IN (1, 'two')",
		"z + 1 > 0",
		"x = ANY('nope')",
		"strptime(x, 1) IS NULL",
		"x BETWEEN 'a' AND 'b'",
	}
	var checked, positions int
	for _, shape := range shapes {
		for _, fault := range faults {
			q := fmt.Sprintf(shape, fault)
			want := refError(ctx, ref, q)
			for path, got := range map[string]error{"Query": queryError(ctx, e, q), "QueryRows": rowsError(ctx, e, q)} {
				checked++
				if n := compareError(t, path, q, got, want); n > 0 {
					positions++
				}
			}
		}
	}
	if checked < len(shapes)*len(faults) || positions < checked/2 {
		t.Fatalf("only %d errors compared, %d with a position: the generator lost its teeth", checked, positions)
	}
	t.Logf("%d errors compared with DuckDB's, %d with a position", checked, positions)
}

func queryError(ctx context.Context, e *Engine, q string) error {
	_, err := e.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest})
	return err
}

// rowsError is the error of a query's rows read to their end, as the
// server and the CLI read them.
func rowsError(ctx context.Context, e *Engine, q string) error {
	rows, err := e.QueryRows(ctx, q, QueryOptions{Snapshot: catalog.Latest}, RowsOptions{})
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

// compareError checks rocklake's error for q against DuckDB's over a
// real table; it returns the position both gave (0: none).
func compareError(t *testing.T, path, q string, got, want error) int {
	t.Helper()
	text := q
	q = path + " " + q
	if want == nil {
		// The text is valid DuckDB: rocklake answers it too.
		if got != nil {
			t.Errorf("%q: DuckDB answers, rocklake says %v", q, got)
		}
		return 0
	}
	if got == nil {
		t.Errorf("%q: DuckDB says %v, rocklake answers", q, want)
		return 0
	}
	msg := got.Error()
	if strings.Contains(msg, "__rocklake") {
		t.Errorf("%q: the message names rocklake's text: %s", q, msg)
	}
	var qe *QueryError
	if !errors.As(got, &qe) {
		t.Errorf("%q: %T is not a QueryError: %v", q, got, got)
		return 0
	}
	wantMsg, wantPos := splitQuote(text, want.Error())
	if qe.Query != text {
		t.Errorf("%q: the error's query is %q", q, qe.Query)
	}
	// The error itself; what DuckDB adds under it (candidate
	// bindings) it gives for tables, not always for views.
	if firstLine(strings.ReplaceAll(wantMsg, `Values list "`, `Table "`)) != firstLine(qe.Message) {
		t.Errorf("%q:\nrocklake: %s\nDuckDB:   %s", q, qe.Message, wantMsg)
	}
	if qe.Position != wantPos {
		t.Errorf("%q: position %d, DuckDB's %d\nrocklake: %s\nDuckDB:   %s", q, qe.Position, wantPos, msg, want)
		return 0
	}
	if wantPos > 0 {
		// The line quoted points where DuckDB's quote of the
		// same text points.
		if _, pos := splitQuote(text, msg); pos != wantPos {
			t.Errorf("%q: quoted at %d, not %d:\n%s", q, pos, wantPos, msg)
		}
	}
	return wantPos
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// refError is DuckDB's error for q run as it is (nil: DuckDB answers),
// its syntax errors as json_serialize_sql reports them, as the engine
// reads them.
func refError(ctx context.Context, db *sql.DB, q string) error {
	if err := SyntaxError(ctx, db, q); err != nil {
		return err
	}
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

// splitQuote is DuckDB's message without its line quote, and the 1-based
// character position the quote points at in q (0: none).
func splitQuote(q, msg string) (string, int) {
	loc := lastMatch(msg)
	if loc == nil {
		return msg, 0
	}
	n, _ := strconv.Atoi(msg[loc[2]:loc[3]])
	qt := &queryText{user: q}
	off, ok := qt.locateIn(q, false, n, msg[loc[4]:loc[5]], loc[7]-loc[6], []int{0})
	if !ok {
		return msg[:loc[0]] + msg[loc[1]:], -1
	}
	return msg[:loc[0]] + msg[loc[1]:], charPosition(q, off)
}
