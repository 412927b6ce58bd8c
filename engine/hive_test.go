package engine

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/types"
)

// hiveLake writes rows with DuckDB's COPY ... PARTITION_BY into dir,
// registers dir as table t (add --create finds the layout), and opens a
// reference database in which t is DuckDB's own reading of the same files:
// read_parquet(glob, hive_partitioning = true).
func hiveLake(t *testing.T, dir, rows, partitionBy string) (*catalog.Catalog, *Engine, *sql.DB) {
	t.Helper()
	base, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { base.Close() })
	if _, err := base.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet, PARTITION_BY (%s))", rows, dir, partitionBy)); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Exec(fmt.Sprintf("CREATE VIEW t AS SELECT * FROM read_parquet('%s/**/*.parquet', hive_partitioning = true)", dir)); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "t", []string{dir}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return c, e, base
}

// A table DuckDB wrote partitioned by an integer, a string and a date, with
// NULL partitions (__HIVE_DEFAULT_PARTITION__), an empty string and values
// that need URL-encoding: every query's answer, column names and types
// equal DuckDB's over read_parquet(..., hive_partitioning = true), and a
// partition predicate keeps only that partition's files.
func TestHivePartitionsMatchDuckDB(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	rows := `SELECT i AS id, (i * 7) % 23 AS v,
		CASE WHEN i % 5 = 0 THEN NULL ELSE i % 3 END AS p,
		CASE i % 6 WHEN 0 THEN NULL WHEN 1 THEN '' WHEN 2 THEN 'a b/c=%' WHEN 3 THEN 'Zürich' ELSE 'x' || (i % 2) END AS s,
		DATE '2024-01-01' + (i % 4)::INTEGER AS d,
		TIMESTAMP '2024-01-01 10:00:00' + INTERVAL (i % 2) HOUR AS ts
		FROM range(200) r(i)`
	// ts is written URL-encoded (2024-01-01%2010%3A00%3A00), which DuckDB
	// reads as VARCHAR.
	_, e, base := hiveLake(t, dir, rows, "p, s, d, ts")
	ctx := context.Background()

	queries := []string{
		"SELECT * FROM t",
		"SELECT typeof(p), typeof(s), typeof(d), typeof(ts), count(*) FROM t GROUP BY ALL",
		"SELECT * FROM t WHERE ts = '2024-01-01 11:00:00'",
		"SELECT * FROM t WHERE p = 1",
		"SELECT * FROM t WHERE p IS NULL",
		"SELECT * FROM t WHERE p IS NOT NULL AND p <> 2",
		"SELECT * FROM t WHERE s IS NULL",
		"SELECT * FROM t WHERE s = ''",
		"SELECT * FROM t WHERE s = 'a b/c=%'",
		"SELECT * FROM t WHERE s > 'x' AND p IN (0, 2)",
		"SELECT * FROM t WHERE s LIKE 'Z%'",
		"SELECT * FROM t WHERE d = '2024-01-03'",
		"SELECT * FROM t WHERE d >= DATE '2024-01-03' AND v < 10",
		"SELECT * FROM t WHERE NOT (p = 1) OR s IS NULL",
		"SELECT count(*), min(p), max(p), min(d), max(d) FROM t",
		"SELECT count(*), min(s), max(s) FROM t WHERE p = 0",
		"SELECT count(*) FROM t WHERE p IS NULL",
		"SELECT p, s, d, count(*), sum(v) FROM t GROUP BY ALL",
		"SELECT a.id AS x, b.id AS y FROM t a JOIN t b ON a.id = b.v WHERE a.p = 2 AND b.s IS NULL",
		"SELECT * FROM t WHERE p = 3",
		"SELECT * FROM query_table('t') WHERE s = 'x1'",
	}
	for _, q := range queries {
		for _, opts := range []QueryOptions{{Snapshot: catalog.Latest}, {Snapshot: catalog.Latest, NoPruning: true, NoMetadataAnswers: true}} {
			res, err := e.Query(ctx, q, opts)
			want, werr := baseline(t, base, q)
			if err != nil || werr != nil {
				if err == nil || werr == nil {
					t.Errorf("%s: rocklake's error %v, DuckDB's %v", q, err, werr)
				}
				continue
			}
			var got []string
			for _, r := range res.Rows {
				got = append(got, rowText(r))
			}
			if !sameRows(got, want, false) {
				t.Errorf("%s (no pruning %v): %d rows, DuckDB %d\n got %v\nwant %v", q, opts.NoPruning, len(got), len(want), head(got), head(want))
			}
			names, _ := baselineColumns(base, q)
			if strings.Join(res.Columns, ",") != strings.Join(names, ",") {
				t.Errorf("%s: columns %v, DuckDB %v", q, res.Columns, names)
			}
		}
	}

	// A partition predicate keeps exactly that partition's files, each
	// matching in full.
	for _, tc := range []struct {
		q, dirPart string
	}{
		{"SELECT * FROM t WHERE p = 1", "/p=1/"},
		{"SELECT * FROM t WHERE p IS NULL", "/p=__HIVE_DEFAULT_PARTITION__/"},
		{"SELECT * FROM t WHERE s IS NULL", "/s=__HIVE_DEFAULT_PARTITION__/"},
		{"SELECT * FROM t WHERE s = 'a b/c=%'", "/s=a%20b%2Fc%3D%25/"},
		{"SELECT * FROM t WHERE d = '2024-01-03'", "/d=2024-01-03/"},
	} {
		res, err := e.Query(ctx, tc.q, QueryOptions{Snapshot: catalog.Latest})
		if err != nil {
			t.Fatal(err)
		}
		plan := res.Tables[0].Plan
		var want int
		err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && strings.Contains(p, tc.dirPart) {
				want++
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if want == 0 || len(plan.KeptFiles) != want {
			t.Errorf("%s: kept %d files, the partition has %d", tc.q, len(plan.KeptFiles), want)
		}
		for _, kf := range plan.KeptFiles {
			if !strings.Contains(kf.Path, tc.dirPart) || !kf.AllMatch {
				t.Errorf("%s: kept %s (all match %v)", tc.q, kf.Path, kf.AllMatch)
			}
		}
	}

	// count, min and max of partition columns come from the catalog.
	for _, q := range []string{
		"SELECT count(*) FROM t WHERE p = 1",
		"SELECT count(*), min(d), max(d) FROM t WHERE p IS NULL",
		"SELECT min(s), max(s) FROM t WHERE p = 2",
	} {
		res, err := e.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Metadata {
			t.Errorf("%s: not answered from metadata", q)
		}
	}
}

// The types ingest gives partition keys are those DuckDB's
// hive_partitioning gives them, for sets of values DuckDB types every way
// it does.
func TestHiveTypesMatchDuckDB(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, vals := range [][]string{
		{"5", "-7", "0"}, {"1", "007"}, {"+5"}, {"9223372036854775807"}, {"9223372036854775808"},
		{"1.5", "2"}, {"1", "x"}, {"2024-01-02", "2024-12-31"}, {"2024-01-02 10:00:00", "2024-01-02 10:00:00.5"},
		{"2024-01-02", "x"}, {"", "5"}, {"true", "false"}, {"5", "__HIVE_DEFAULT_PARTITION__"}, {"NULL", "x"},
		{"1e3"}, {"-0"}, {"0"}, {"-007", "5"}, {"00"}, {"a%20b"}, {"%35"}, {"2024-01-02%2010%3A00%3A00"}, {"1_000"},
	} {
		dir := filepath.Join(t.TempDir(), fmt.Sprint("set", i))
		for j, v := range vals {
			p := filepath.Join(dir, "k="+v, fmt.Sprintf("f%d.parquet", j))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(fmt.Sprintf("COPY (SELECT %d AS id) TO '%s'", j, p)); err != nil {
				t.Fatal(err)
			}
		}
		var duck string
		if err := db.QueryRow(fmt.Sprintf("SELECT DISTINCT typeof(k) FROM read_parquet('%s/*/*.parquet', hive_partitioning = true)", dir)).Scan(&duck); err != nil {
			t.Fatal(err)
		}
		c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
		if _, err := ingest.Add(c, "t", []string{dir}, ingest.Options{Create: true, Hive: true}); err != nil {
			t.Fatalf("%q: %v", vals, err)
		}
		r, _ := c.Read(catalog.Latest)
		tb, _ := r.Table("t")
		col, err := r.Column(tb.ID, "k")
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := types.DuckDBName(col.Type); got != duck {
			t.Errorf("%q: ingest types k as %s, DuckDB as %s", vals, got, duck)
		}
		// And the values read back as DuckDB reads them.
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		const q = "SELECT id, k FROM t ORDER BY id"
		res, err := e.Query(context.Background(), q, QueryOptions{Snapshot: catalog.Latest})
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, row := range res.Rows {
			got = append(got, rowText(row))
		}
		want, err := baseline(t, db, fmt.Sprintf("SELECT id, k FROM read_parquet('%s/*/*.parquet', hive_partitioning = true) ORDER BY id", dir))
		if err != nil {
			t.Fatal(err)
		}
		if !sameRows(got, want, true) {
			t.Errorf("%q: rocklake reads %v, DuckDB %v", vals, got, want)
		}
	}
}

// A table that declares its partition columns' types (table create
// --partition-by): values read in those types, as DuckDB reads them with
// hive_types, whatever DuckDB would have inferred (INTEGER for what it
// infers BIGINT, VARCHAR for dates, DECIMAL for what it keeps as text).
func TestDeclaredHivePartitionsMatchDuckDB(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	base, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	rows := `SELECT i AS id, CASE WHEN i % 7 = 0 THEN NULL ELSE (i % 4) - 2 END AS k,
		(DATE '2024-01-01' + (i % 3)::INTEGER)::VARCHAR AS d, ((i % 5) * 1.25)::DECIMAL(5,2) AS m
		FROM range(100) r(i)`
	if _, err := base.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet, PARTITION_BY (k, d, m))", rows, dir)); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Exec(fmt.Sprintf(`CREATE VIEW t AS SELECT * FROM read_parquet('%s/**/*.parquet', hive_partitioning = true,
		hive_types = {'k': 'INTEGER', 'd': 'VARCHAR', 'm': 'DECIMAL(5,2)'})`, dir)); err != nil {
		t.Fatal(err)
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	defs, err := catalog.ParseColumnDefs("id BIGINT, k INTEGER, d VARCHAR, m DECIMAL(5,2)")
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.PartitionBy(defs, []string{"k", "d", "m"}); err != nil {
		t.Fatal(err)
	}
	tx, _ := c.Begin()
	tx.CreateTable("t", defs)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "t", []string{dir}, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, q := range []string{
		"SELECT id, k, d, m, typeof(k), typeof(d), typeof(m) FROM t",
		"SELECT id, k, d, m FROM t WHERE k = -1",
		"SELECT id, k, d, m FROM t WHERE k IS NULL OR m > 2.5",
		"SELECT id, d FROM t WHERE d = '2024-01-02'",
		"SELECT count(*), min(m), max(m), min(k), max(d) FROM t WHERE k >= 0",
	} {
		res, err := e.Query(context.Background(), q, QueryOptions{Snapshot: catalog.Latest})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var got []string
		for _, r := range res.Rows {
			got = append(got, rowText(r))
		}
		want, err := baseline(t, base, q)
		if err != nil {
			t.Fatalf("%s: DuckDB: %v", q, err)
		}
		if !sameRows(got, want, false) {
			t.Errorf("%s: got %v\nwant %v", q, head(got), head(want))
		}
	}
}
