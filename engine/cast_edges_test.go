package engine

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// castEdgeLake is table t over three files whose values sit where DuckDB's
// typing of a literal decides an answer: integers either side of 2^53,
// decimals of 17 digits, TIMESTAMP_S/_MS ties before 1970. It returns a
// DuckDB to compare with, the engine, and the files as a read_parquet list.
func castEdgeLake(t *testing.T) (*sql.DB, *Engine, string) {
	t.Helper()
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	dir := t.TempDir()
	rows := []string{
		"9007199254740993, 0.10000000000000001, TIMESTAMP_S '1969-12-31 23:59:59', TIMESTAMP_MS '1969-12-31 23:59:59.999', DATE '2019-06-01', 3",
		"9007199254740992, 0.1, TIMESTAMP_S '1970-01-01 00:00:00', TIMESTAMP_MS '1970-01-01 00:00:00.000', DATE '2021-01-01', 2",
		"0, 0.2, TIMESTAMP_S '2000-01-01 00:00:00', TIMESTAMP_MS '2000-01-01 00:00:00', DATE '2000-01-01', 1",
	}
	var files []string
	for i, r := range rows {
		p := filepath.Join(dir, fmt.Sprintf("b%d.parquet", i))
		q := fmt.Sprintf(`COPY (SELECT x::BIGINT AS x, d::DECIMAL(18,17) AS d, tss, tms, dt, id::INTEGER AS id FROM (VALUES (%s)) v(x, d, tss, tms, dt, id)) TO '%s' (FORMAT parquet)`, r, p)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", files, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	e, _ := New(c)
	t.Cleanup(func() { e.Close() })
	return db, e, "['" + strings.Join(files, "', '") + "']"
}

// TestCastEdgeCasesMatchDuckDB: literals whose meaning depends on DuckDB's
// typing (DOUBLE constants against integers beyond 2^53, decimals of many
// digits, BETWEEN and IN lists with a DOUBLE item, CAST of a DOUBLE,
// TIMESTAMP_S/_MS ties before 1970, a bare BC) and WHERE parts that name
// no column: every answer equals DuckDB's.
func TestCastEdgeCasesMatchDuckDB(t *testing.T) {
	db, e, list := castEdgeLake(t)
	ctx := context.Background()
	for _, where := range []string{
		"x = 9007199254740992e0", "x <> 9007199254740992e0", "x IN (9007199254740992, 1e0)",
		"x BETWEEN 9007199254740993 AND 1e17", "x = 9007199254740992.000000000000000000000000000000001",
		"x <= 9007199254740992.000000000000000000000000000000001", "d = 1e-1", "d = 0.1",
		"id = CAST(2.5e0 AS INTEGER)", "id = CAST(2.5 AS INTEGER)", "d = CAST(1.005e0 AS DECIMAL(4,2))",
		"tss = '1969-12-31 23:59:59.5'", "tms = '1969-12-31 23:59:59.9995'", "tms = '1969-12-31 23:59:59.9995001'",
		"dt <= '2020-01-01 (BC)'", "x > 0 OR 1e0 = 1.00000000000000000001",
		"id IN (SELECT 3)", "1 = 0", "random() < 0", "id = 1 AND 1 = 1",
	} {
		for _, sel := range []string{"count(*)", "max(id)", "min(x)", "count(*), min(d)"} {
			q := fmt.Sprintf("SELECT %s FROM t WHERE %s", sel, where)
			res, err := e.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest})
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			want, err := baseline(t, db, strings.Replace(q, "FROM t", "FROM read_parquet("+list+")", 1))
			if err != nil {
				t.Fatal(err)
			}
			if got := rowText(res.Rows[0]); got != want[0] {
				t.Errorf("%s: rocklake %s (metadata %v), DuckDB %s", q, got, res.Metadata, want[0])
			}
		}
	}
}
