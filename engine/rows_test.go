package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// TestQueryRowsMatchesText: the typed rows QueryRows streams print, value
// for value, as DuckDB's own VARCHAR cast of the same query (Query's text
// path), whatever the types, for answers from DuckDB and from statistics.
func TestQueryRowsMatchesText(t *testing.T) {
	f := newQueryFixture(t)
	ctx := context.Background()
	for _, q := range []string{
		"SELECT count(*) FROM events",                   // from statistics
		"SELECT count(*), min(id), max(ts) FROM events", // from statistics, typed min/max
		"SELECT min(amount), max(amount) FROM events WHERE id < 100",
		"SELECT * FROM events WHERE id < 300 ORDER BY id", // every column type of the table
		"SELECT kind, count(*) AS n, sum(amount) AS s, avg(value) AS v FROM events GROUP BY kind ORDER BY kind",
		"SELECT e.id, u.id, u.name FROM events e JOIN users u ON e.user_id = u.id WHERE e.id < 50 ORDER BY 1", // a repeated name
		`SELECT id::TINYINT % 100 AS a, id::SMALLINT AS b, id::UTINYINT % 200 AS c, id::USMALLINT AS d, id::UINTEGER AS e,
			id::UBIGINT * 1000000000000 AS f, id::HUGEINT * (1::HUGEINT << 100) AS g, id::UHUGEINT << 120 AS h,
			(id - 50)::DOUBLE / 7 AS i, (id - 50)::FLOAT / 7 AS j, (id - 50)::DECIMAL(38,10) / 7 AS k,
			(id % 3 = 0) AS l, CASE WHEN id % 2 = 0 THEN NULL ELSE id END AS m,
			[id, id + 1] AS n, {'x': id, 'y': 'v' || id} AS o, MAP {id: 'a'} AS p, id::VARCHAR::JSON AS q,
			1e300 * id AS r, -0.0::DOUBLE AS s, 'inf'::DOUBLE AS u, 'nan'::FLOAT AS v, DATE '2024-01-01' + id::INTEGER AS w,
			INTERVAL (id) SECOND AS x, gen_random_uuid() IS NOT NULL AS y, 'ünï "q"' AS z,
			9007199254740990 + id AS big1, -9007199254740990 - id AS big2, (9007199254740990 + id)::HUGEINT AS big3,
			(id * 100000000000000)::DECIMAL(18,0) AS dec15
			FROM events WHERE id < 120 ORDER BY id`,
	} {
		want, err := f.eng.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		// Twice each: the second run takes its columns from the cache
		// (no LIMIT 0 round trip) and must answer the same.
		for _, nested := range []bool{false, true, false, true} {
			rows, err := f.eng.QueryRows(ctx, q, QueryOptions{Snapshot: catalog.Latest}, RowsOptions{NestedJSON: nested})
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			cols := rows.Columns()
			if len(cols) != len(want.Columns) {
				t.Fatalf("%s: columns %v, want %v", q, cols, want.Columns)
			}
			for i, c := range cols {
				if c.Name != want.Columns[i] || c.Type == "" {
					t.Errorf("%s: column %d is %+v, want the name %q and a type", q, i, c, want.Columns[i])
				}
			}
			n := 0
			for rows.Next() {
				if n >= len(want.Rows) {
					t.Fatalf("%s: more rows than Query's %d", q, len(want.Rows))
				}
				var line []byte
				for i, v := range rows.Values() {
					k := kindOf(cols[i].Type, nested)
					if k != rkJSON { // JSON text is not DuckDB's text of a nested value
						got, wantText := Text(v), "NULL"
						if w := want.Rows[n][i]; w != nil {
							wantText = *w
						}
						if got != wantText {
							t.Errorf("%s: row %d column %s (%s): %T %q, want %q", q, n, cols[i].Name, cols[i].Type, v, got, wantText)
						}
					}
					line = AppendJSON(append(line[:0], '['), v)
					line = append(line, ']')
					dec := json.NewDecoder(bytes.NewReader(line))
					dec.UseNumber()
					var anyBack []any
					if err := dec.Decode(&anyBack); err != nil {
						t.Fatalf("%s: %s is not JSON: %v", q, line, err)
					}
					checkJSONValue(t, q, cols[i], v, anyBack[0])
				}
				n++
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			if n != len(want.Rows) || rows.Count() != int64(n) {
				t.Errorf("%s: %d rows (count %d), want %d", q, n, rows.Count(), len(want.Rows))
			}
			res := rows.Result()
			if res.Metadata != want.Metadata || res.Elapsed <= 0 || len(res.Phases) == 0 || res.Phases[len(res.Phases)-1].Name != map[bool]string{true: "metadata", false: "execute"}[want.Metadata] {
				t.Errorf("%s: result %+v, want metadata=%v and phases ending in execute or metadata", q, res, want.Metadata)
			}
		}
	}
}

// checkJSONValue: a value's JSON is a number exactly when a double holds
// it, and then denotes the same value; otherwise DuckDB's text as a string.
func checkJSONValue(t *testing.T, q string, col Column, v, back any) {
	t.Helper()
	switch x := v.(type) {
	case nil:
		if back != nil {
			t.Errorf("%s: NULL in %s became %v", q, col.Name, back)
		}
		return
	case bool:
		if back != x {
			t.Errorf("%s: %v in %s became %v", q, x, col.Name, back)
		}
		return
	case json.RawMessage:
		if !json.Valid(x) {
			t.Errorf("%s: %s in %s is not JSON", q, x, col.Name)
		}
		return
	case string:
		if back != x {
			t.Errorf("%s: %q in %s became %v", q, x, col.Name, back)
		}
		return
	}
	exact := false
	switch x := v.(type) {
	case int64:
		exact = x >= -1<<53 && x <= 1<<53
	case uint64:
		exact = x <= 1<<53
	case *big.Int:
		exact = x.IsInt64() && x.Int64() >= -1<<53 && x.Int64() <= 1<<53
	case float64:
		exact = !math.IsNaN(x) && !math.IsInf(x, 0)
	case Decimal:
		exact = len(new(big.Int).Abs(x.Unscaled).String()) <= 15
	case json.Number:
		_, err := x.Float64()
		exact = err == nil && !strings.ContainsAny(string(x), "nN")
	default:
		t.Errorf("%s: column %s (%s) handed out a %T", q, col.Name, col.Type, v)
		return
	}
	num, isNum := back.(json.Number)
	switch {
	case exact && !isNum:
		t.Errorf("%s: %s in %s (%s) is not a JSON number: %v", q, Text(v), col.Name, col.Type, back)
	case exact:
		a, _ := new(big.Float).SetString(string(num))
		b, _ := new(big.Float).SetString(Text(v))
		if a == nil || b == nil || a.Cmp(b) != 0 {
			t.Errorf("%s: %s in %s became the number %s", q, Text(v), col.Name, num)
		}
	case back != Text(v):
		t.Errorf("%s: %s in %s (%s) must be the string of DuckDB's text, got %v", q, Text(v), col.Name, col.Type, back)
	}
}

// TestQueryRowsStopsEarly: a caller may stop reading and close; the
// connection and the views go back, and the engine answers the next query.
func TestQueryRowsStopsEarly(t *testing.T) {
	f := newQueryFixture(t)
	ctx := context.Background()
	for range 20 { // more than the connection pool would hold if Close leaked
		rows, err := f.eng.QueryRows(ctx, "SELECT id FROM events ORDER BY id", QueryOptions{Snapshot: catalog.Latest}, RowsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !rows.Next() || rows.Values()[0] != int64(0) {
			t.Fatalf("first row: %v %v", rows.Values(), rows.Err())
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := f.eng.Query(ctx, "SELECT count(*) FROM events WHERE id % 2 = 0", QueryOptions{Snapshot: catalog.Latest})
	if err != nil || *res.Rows[0][0] != "13500" {
		t.Fatalf("after early closes: %v %v", res, err)
	}
}

// TestNotAQuery: statements that are not queries are refused with a message
// saying what rocklake runs, whatever comes before their keyword; a PIVOT
// with USING, which DuckDB cannot serialise either, still runs.
func TestNotAQuery(t *testing.T) {
	f := newQueryFixture(t)
	ctx := context.Background()
	for q, kw := range map[string]string{
		"COPY (SELECT * FROM events) TO '/tmp/never.csv'": "COPY",
		"create table x AS SELECT 1":                      "CREATE",
		"-- a comment\n/* and another */ PRAGMA version":  "PRAGMA",
		"SET threads = 1":                                 "SET",
		"EXPLAIN SELECT * FROM events":                    "EXPLAIN",
		"INSERT INTO events VALUES (1)":                   "INSERT",
	} {
		_, err := f.eng.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest})
		if !errors.Is(err, ErrNotAQuery) || !strings.Contains(err.Error(), kw+" statements are not run") || !strings.Contains(err.Error(), "SELECT") {
			t.Errorf("%q: %v", q, err)
		}
	}
	res, err := f.eng.Query(ctx, "PIVOT (SELECT kind, id FROM events WHERE id < 10) ON kind USING count(*)", QueryOptions{Snapshot: catalog.Latest})
	if err != nil || len(res.Rows) != 10 || len(res.Columns) != 5 { // a row per id, a column per kind
		t.Fatalf("PIVOT ... USING: %v %v", res, err)
	}
}

// A query reading a file by path is not given the columns of its last
// run: the file may have changed shape since.
func TestQueryRowsFileChangesShape(t *testing.T) {
	f := newQueryFixture(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.parquet")
	q := "SELECT * FROM read_parquet('" + path + "')"
	columns := func() []Column {
		rows, err := f.eng.QueryRows(ctx, q, QueryOptions{Snapshot: catalog.Latest}, RowsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return rows.Columns()
	}
	writeInts(t, path, 1, 2)
	if c := columns(); len(c) != 1 || c[0].Type != "BIGINT" {
		t.Fatalf("columns %v", c)
	}
	s := types.StringValue("a")
	if err := pqwrite.Write(path, []pqwrite.Column{
		{Name: "y", Type: types.MustParseType("varchar"), Values: []*types.Value{&s}},
		{Name: "z", Type: types.MustParseType("varchar"), Values: []*types.Value{&s}},
	}, pqwrite.Options{}); err != nil {
		t.Fatal(err)
	}
	if c := columns(); len(c) != 2 || c[0].Name != "y" || c[0].Type != "VARCHAR" {
		t.Errorf("after the file changed: columns %v", c)
	}
}
