package engine

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// queryFixture is two catalog tables written by DuckDB over several files,
// registered in two snapshots, and a plain DuckDB database holding the same
// rows as tables: the baseline every answer is compared with.
type queryFixture struct {
	cat       *catalog.Catalog
	eng       *Engine
	base      *sql.DB // tables over all files of the latest snapshot
	oldBase   *sql.DB // events as of the first snapshot
	firstSnap int64
}

func newQueryFixture(t *testing.T) *queryFixture {
	t.Helper()
	dir := t.TempDir()
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	write := func(name, q string) string {
		p := filepath.Join(dir, name)
		if _, err := db.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE 2048)", q, p)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	events := func(from, to int) string {
		return fmt.Sprintf(`SELECT i::BIGINT AS id, (TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i) MINUTE) AS ts,
			(hash(i) %% 500)::INTEGER AS user_id,
			['click','view','buy','scroll'][(hash(i * 3) %% 4)::INTEGER + 1] AS kind,
			CASE WHEN i %% 97 = 0 THEN 'nan'::DOUBLE WHEN i %% 13 = 0 THEN NULL ELSE (hash(i) %% 10000)::DOUBLE / 100 END AS value,
			(((hash(i) %% 100000)::BIGINT - 50000) / 100)::DECIMAL(12,2) AS amount
			FROM range(%d, %d) r(i) ORDER BY i`, from, to)
	}
	var first, second []string
	for f := range 6 {
		first = append(first, write(fmt.Sprintf("events-%d.parquet", f), events(f*3000, (f+1)*3000)))
	}
	for f := 6; f < 9; f++ {
		second = append(second, write(fmt.Sprintf("events-%d.parquet", f), events(f*3000, (f+1)*3000)))
	}
	users := []string{
		write("users-0.parquet", "SELECT i::INTEGER AS id, 'user-' || i AS name, (18 + i % 60)::INTEGER AS age FROM range(0, 250) r(i)"),
		write("users-1.parquet", "SELECT i::INTEGER AS id, 'user-' || i AS name, (18 + i % 60)::INTEGER AS age FROM range(250, 500) r(i)"),
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "events", first, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "users", users, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	snaps, _ := c.Snapshots()
	firstSnap := snaps[len(snaps)-1].ID
	if _, err := ingest.Add(c, "events", second, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	list := func(ps []string) string { return "['" + strings.Join(ps, "', '") + "']" }
	mk := func(tables map[string][]string) *sql.DB {
		b, err := Open("")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		for name, files := range tables {
			if _, err := b.Exec(fmt.Sprintf("CREATE TABLE %s AS SELECT * FROM read_parquet(%s)", name, list(files))); err != nil {
				t.Fatal(err)
			}
		}
		return b
	}
	return &queryFixture{
		cat: c, eng: e, firstSnap: firstSnap,
		base:    mk(map[string][]string{"events": append(append([]string{}, first...), second...), "users": users}),
		oldBase: mk(map[string][]string{"events": first, "users": users}),
	}
}

// baseline runs a query on plain DuckDB tables, values as text.
func baseline(t *testing.T, db *sql.DB, q string) ([]string, error) {
	t.Helper()
	rows, err := db.Query("SELECT COLUMNS(*)::VARCHAR FROM (" + q + ")")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]*string, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, rowText(vals))
	}
	return out, rows.Err()
}

func rowText(vals []*string) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = "NULL"
		if v != nil {
			parts[i] = *v
		}
	}
	return strings.Join(parts, "|")
}

func sameRows(got, want []string, ordered bool) bool {
	if len(got) != len(want) {
		return false
	}
	if !ordered {
		got = append([]string(nil), got...)
		want = append([]string(nil), want...)
		sort.Strings(got)
		sort.Strings(want)
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func genQueries(r *rand.Rand, n int) []string {
	filters := []string{
		"ts >= TIMESTAMPTZ '2024-01-03 00:00:00+00' AND ts < TIMESTAMPTZ '2024-01-03 06:00:00+00'",
		"ts < '2024-01-01 12:00:00'",
		"ts > '2024-01-10'",
		"id = %d", "id BETWEEN %d AND %d", "id IN (%d, %d, 7)", "id < %d OR id > %d",
		"user_id = %d", "kind = 'buy'", "kind IN ('view', 'scroll')", "kind LIKE 'cl%%'", "kind <> 'click'",
		"value > 50", "value < 1", "isnan(value)", "value IS NULL", "NOT (value <= 20)", "value = 'nan'::DOUBLE",
		"amount > 100", "amount = %d.25", "amount < -250.5",
		"NOT (id < %d AND kind = 'view')", "(kind = 'buy' OR value > 90) AND id < %d",
		"id %% 7 = 0", "abs(user_id) = %d", "starts_with(kind, 'b')", "id > 1e4",
	}
	shapes := []string{
		"SELECT count(*) FROM events WHERE %s",
		"SELECT * FROM events WHERE %s",
		"SELECT kind, count(*), sum(amount), max(value) FROM events WHERE %s GROUP BY kind",
		"SELECT id, ts FROM events WHERE %s ORDER BY id DESC LIMIT 7",
		"SELECT min(id), max(id), min(ts), max(amount) FROM events WHERE %s",
		"SELECT e.kind, u.age, count(*) FROM events e JOIN users u ON e.user_id = u.id WHERE %s AND u.age < 30 GROUP BY ALL",
		"SELECT count(*) FROM events WHERE %s AND id IN (SELECT id FROM users WHERE age > 70)",
		"WITH x AS (SELECT * FROM events WHERE %s) SELECT count(*), count(DISTINCT kind) FROM x",
	}
	var out []string
	for len(out) < n {
		f := filters[r.IntN(len(filters))]
		var args []any
		for range strings.Count(f, "%d") {
			args = append(args, r.IntN(30000))
		}
		f = fmt.Sprintf(f, args...)
		if r.IntN(4) == 0 {
			g := filters[r.IntN(len(filters))]
			var args []any
			for range strings.Count(g, "%d") {
				args = append(args, r.IntN(30000))
			}
			f = "(" + f + ") " + []string{"AND", "OR"}[r.IntN(2)] + " (" + fmt.Sprintf(g, args...) + ")"
		}
		out = append(out, fmt.Sprintf(shapes[r.IntN(len(shapes))], f))
	}
	return out
}

// TestQueriesMatchDuckDB: every query returns exactly DuckDB's rows over
// all files, at the latest and at an older snapshot.
func TestQueriesMatchDuckDB(t *testing.T) {
	fx := newQueryFixture(t)
	r := rand.New(rand.NewPCG(21, 22))
	queries := genQueries(r, 250)
	queries = append(queries,
		"SELECT count(*) FROM events", "SELECT min(id), max(id), count(*) FROM events WHERE id >= 3000",
		"SELECT max(value) FROM events", "SELECT min(amount) FROM events WHERE id < 100",
		"SELECT count(*) FROM users WHERE age BETWEEN 20 AND 30",
		"SELECT count(*) FROM events e WHERE e.id < 10 OR e.kind = 'buy'")
	ctx := context.Background()
	var pruned, total, metadata int
	for i, q := range queries {
		for _, old := range []bool{false, true} {
			opts := QueryOptions{Snapshot: catalog.Latest}
			base := fx.base
			if old {
				if i%5 != 0 {
					continue
				}
				opts.Snapshot, base = fx.firstSnap, fx.oldBase
			}
			want, werr := baseline(t, base, q)
			res, err := fx.eng.Query(ctx, q, opts)
			if (err != nil) != (werr != nil) {
				t.Fatalf("%q (old=%v): rocklake error %v, DuckDB error %v", q, old, err, werr)
			}
			if err != nil {
				continue
			}
			var got []string
			for _, row := range res.Rows {
				got = append(got, rowText(row))
			}
			if !sameRows(got, want, strings.Contains(q, "ORDER BY")) {
				t.Fatalf("%q (old=%v): rocklake returned %d rows, DuckDB %d\n got %v\nwant %v", q, old, len(got), len(want), head(got), head(want))
			}
			if res.Metadata {
				metadata++
			}
			for _, tp := range res.Tables {
				total += tp.Plan.Files.Total
				pruned += tp.Plan.Files.Total - tp.Plan.Files.Kept
			}
		}
	}
	t.Logf("%d queries equal to DuckDB's answers; %d of %d table files pruned; %d answered from metadata", len(queries), pruned, total, metadata)
	if metadata == 0 || pruned == 0 {
		t.Fatal("expected some pruning and some metadata answers")
	}
}

func head(x []string) []string {
	if len(x) > 5 {
		return x[:5]
	}
	return x
}

func TestQueryErrors(t *testing.T) {
	fx := newQueryFixture(t)
	ctx := context.Background()
	for q, want := range map[string]string{
		"SELECT * FROM nope":                    "tables: events, users",
		"SELEC 1":                               "syntax error",
		"SELECT nope FROM events":               "nope",
		"SELECT * FROM events WHERE id = 'abc'": "Conversion Error",
	} {
		_, err := fx.eng.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: want an error containing %q, got %v", q, want, err)
		}
	}
}

func TestMetadataAnswers(t *testing.T) {
	fx := newQueryFixture(t)
	ctx := context.Background()
	for _, q := range []string{
		"SELECT count(*) FROM events",
		"SELECT count(*) AS n, min(id), max(id) FROM events",
		"SELECT min(ts), max(ts) FROM events WHERE ts >= '2024-01-01'",
		"SELECT count(*) FROM events WHERE id > 100000",
		"SELECT min(kind), max(kind) FROM events",
	} {
		res, err := fx.eng.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Metadata {
			t.Errorf("%q: expected an answer from metadata", q)
		}
		want, _ := baseline(t, fx.base, q)
		if len(res.Rows) != 1 || rowText(res.Rows[0]) != want[0] {
			t.Errorf("%q: metadata answer %v, DuckDB %v", q, res.Rows, want)
		}
		names, _ := baselineColumns(fx.base, q)
		if strings.Join(res.Columns, ",") != strings.Join(names, ",") {
			t.Errorf("%q: columns %v, DuckDB %v", q, res.Columns, names)
		}
	}
	// A float column that holds NaN: DuckDB's max is NaN, so DuckDB answers.
	res, err := fx.eng.Query(ctx, "SELECT max(value) FROM events", QueryOptions{Snapshot: catalog.Latest})
	if err != nil || res.Metadata || *res.Rows[0][0] != "nan" {
		t.Fatalf("max over NaN: %+v %v", res, err)
	}
}

func baselineColumns(db *sql.DB, q string) ([]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return rows.Columns()
}
