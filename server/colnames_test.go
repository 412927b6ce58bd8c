package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/internal/pgtest"
)

// genItem draws an expression over t's columns that PostgreSQL and DuckDB
// both take, of every class PostgreSQL names apart: column references,
// function calls, casts, CASE, COALESCE, subscripts, scalar and EXISTS
// subqueries, constants, operators and comparisons (which it does not
// name). depth bounds the nesting.
func genItem(rng *rand.Rand, depth int) string {
	cols := []string{"id", "name", "amount", "score", "even", "day", "t.id", "t.name"}
	col := cols[rng.IntN(len(cols))]
	if depth <= 0 {
		switch rng.IntN(6) {
		case 0:
			return "1"
		case 1:
			return "'x'"
		case 2:
			return []string{"true", "false", "NULL", "2.5"}[rng.IntN(4)]
		}
		return col
	}
	sub := func() string { return genItem(rng, depth-1) }
	switch rng.IntN(18) {
	case 15:
		return []string{"row_number() OVER ()", "sum(id) OVER (PARTITION BY even)", "current_date", "now()", "upper(name)", "substring(name, 1, 2)",
			"ROW(id, 2)", "ARRAY[id]", "position('a' IN name)", "true", "(false)", "date_part('year', day)"}[rng.IntN(12)]
	case 16:
		return "(" + sub() + ")::int8 + 1"
	case 0:
		return "lower(" + []string{"name", "'A'", "t.name"}[rng.IntN(3)] + ")"
	case 1:
		return "abs(" + []string{"id", "score", "-1"}[rng.IntN(3)] + ")"
	case 2:
		return "CAST(" + sub() + " AS " + []string{"INTEGER", "BIGINT", "VARCHAR", "TEXT", "DOUBLE PRECISION", "REAL", "NUMERIC", "BOOLEAN", "SMALLINT"}[rng.IntN(9)] + ")"
	case 3:
		return "(" + sub() + ")::" + []string{"int4", "int8", "text", "float8", "numeric"}[rng.IntN(5)]
	case 4:
		return "CASE WHEN even THEN " + sub() + " END"
	case 5:
		return "coalesce(" + col + ", " + col + ")"
	case 6:
		return "nullif(id, 1)"
	case 7:
		return []string{"greatest(id, 2)", "least(score, 1)"}[rng.IntN(2)]
	case 8:
		return "(id + " + []string{"1", "id"}[rng.IntN(2)] + ")"
	case 9:
		return []string{"id = 1", "id > 1 AND even", "NOT even", "id IS NULL", "id BETWEEN 1 AND 2", "id IN (1, 2)", "name LIKE 'a%'", "name || 'x'", "-id"}[rng.IntN(9)]
	case 10:
		return "(SELECT " + []string{"max(id)", "id", "id AS k", "count(*)", "1", "name"}[rng.IntN(6)] + " FROM t LIMIT 1)"
	case 11:
		return "EXISTS (SELECT 1 FROM t)"
	case 12:
		return "(ARRAY[id, 2])[1]"
	case 13:
		return "length(" + []string{"name", "'abc'"}[rng.IntN(2)] + ")"
	case 14:
		return "round(" + []string{"amount", "score::numeric"}[rng.IntN(2)] + ", 1)"
	}
	return "(" + sub() + ")"
}

// genAggregate draws an aggregate expression, for select lists of
// aggregates only.
func genAggregate(rng *rand.Rand) string {
	return []string{"count(*)", "count(id)", "sum(id)", "max(name)", "min(day)", "avg(score)", "count(DISTINCT id)", "bool_and(even)",
		"CAST(count(*) AS INTEGER)", "count(*) + 1", "max(id)::text", "sum(amount) / 2"}[rng.IntN(12)]
}

// TestColumnNamesArePostgres runs random select lists on a real PostgreSQL
// and on the server, over tables of the same columns, and compares the
// names each gives its answer columns: PostgreSQL's names for unaliased
// expressions (count(*) is "count", a constant "?column?"), and aliases,
// those that look like DuckDB's own names included, kept as written.
func TestColumnNamesArePostgres(t *testing.T) {
	ctx := context.Background()
	pg, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(ctx)
	if _, err := pg.Exec(ctx, "CREATE TABLE t (id int8, ts timestamptz, name text, amount numeric(10,2), score float8, uid uuid, raw bytea, pair int8[], even bool, day date, big numeric, span interval)"); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, newConfig())
	conn := f.connect(t, pgx.QueryExecModeExec)
	names := func(c *pgx.Conn, q string) ([]string, error) {
		rows, err := c.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []string
		for _, fd := range rows.FieldDescriptions() {
			out = append(out, fd.Name)
		}
		for rows.Next() {
		}
		return out, rows.Err()
	}
	aliases := []string{"x", `"count_star()"`, `"?column?"`, `"Mixed"`, "count", `"(id + 1)"`, `"1"`}
	n := 400
	if v := os.Getenv("ROCKLAKE_COLNAMES_N"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	if testing.Short() {
		n = 100
	}
	rng := rand.New(rand.NewPCG(38, 11))
	compared := 0
	for i := 0; i < n; i++ {
		var items []string
		agg := rng.IntN(3) == 0
		for k := 1 + rng.IntN(3); k > 0; k-- {
			e := genItem(rng, 2)
			if agg {
				e = genAggregate(rng)
			}
			if rng.IntN(4) == 0 {
				e += " AS " + aliases[rng.IntN(len(aliases))]
			}
			items = append(items, e)
		}
		q := "SELECT " + strings.Join(items, ", ") + " FROM t"
		switch rng.IntN(6) {
		case 0:
			q = "SELECT *, " + strings.Join(items, ", ") + " FROM t"
		case 1:
			q += " UNION ALL " + q
		case 2:
			q = "WITH w AS (SELECT 1 AS one) " + q
		}
		q += " LIMIT 0"
		want, err := names(pg, q)
		if err != nil {
			// A query PostgreSQL refuses (types it will not mix) says
			// nothing about names.
			continue
		}
		got, err := names(conn, q)
		if err != nil {
			continue // nor one DuckDB refuses
		}
		compared++
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s\n  server names %q\n  PostgreSQL   %q", q, got, want)
		}
	}
	t.Logf("%d of %d select lists compared", compared, n)
	if compared < n/2 {
		t.Errorf("only %d of %d select lists ran on both", compared, n)
	}
}

// Select items that stand for a number of columns the parse tree does not
// say (a star inside an expression, an unnest of a struct) and UNION BY
// NAME leave DuckDB's names: each name stays on its own column, the
// marker 10 AS "K" naming the column that holds 10 and no other.
func TestColumnNamesStayOnTheirColumns(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, newConfig())
	conn := f.connect(t, pgx.QueryExecModeExec)
	for _, q := range []string{
		`SELECT unnest({'x': 1, 'y': 2}), 10 AS "K", * FROM t LIMIT 1`,
		`SELECT COLUMNS('^(id|name)$')::VARCHAR, 10 AS "K", * FROM t LIMIT 1`,
		`SELECT *, upper(COLUMNS('^(name)$')), 10 AS "K" FROM t LIMIT 1`,
		`SELECT *, 10 AS "K" FROM t UNION ALL BY NAME SELECT *, 20 AS extra, 10 AS "K" FROM t LIMIT 1`,
		`SELECT * EXCLUDE (id), 10 AS "K", count(*) OVER () FROM t LIMIT 1`,
		`SELECT unnest([1, 2]), 10 AS "K", count(*) OVER () FROM t LIMIT 1`,
	} {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var names []string
		for _, fd := range rows.FieldDescriptions() {
			names = append(names, fd.Name)
		}
		if !rows.Next() {
			t.Fatalf("%s: no row", q)
		}
		vals, err := rows.Values()
		rows.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(vals) != len(names) {
			t.Fatalf("%s: %d names for %d values", q, len(names), len(vals))
		}
		if k := slices.Index(names, "K"); k < 0 || fmt.Sprint(vals[k]) != "10" || slices.Index(names[k+1:], "K") >= 0 {
			t.Errorf("%s: names %v over values %v", q, names, vals)
		}
	}
}
