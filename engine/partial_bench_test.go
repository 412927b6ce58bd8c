package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/pqmeta"
)

// BenchmarkPagePathRow times the page path's work for one row of a big
// file, every column (what a point lookup does for the columns beside the
// predicate's): the footer read by pqmeta, then arrow-go opening the file
// and decoding, per column, the page holding the row. A profile of it
// (-cpuprofile) shows where a lookup's bind phase goes.
// ROCKLAKE_BENCH_PARQUET names a file (bench/partial's) to use instead of
// one written here (1,000,000 rows in one row group).
func BenchmarkPagePathRow(b *testing.B) {
	path := os.Getenv("ROCKLAKE_BENCH_PARQUET")
	if path == "" {
		path = filepath.Join(b.TempDir(), "big.parquet")
		bigEvents(&testing.T{}, path, 1_000_000, 1)
	}
	f, err := pqmeta.Read(path, pqmeta.FileIdentity{})
	if err != nil {
		b.Fatal(err)
	}
	var cols []catalog.Column
	for i, c := range f.Columns {
		cols = append(cols, catalog.Column{ID: int64(i + 1), Name: c.Name, Type: c.Type})
	}
	if _, err := pageColumns(f, cols); err != nil {
		b.Skip(err)
	}
	firsts := []int64{0}
	for _, rg := range f.RowGroups {
		firsts = append(firsts, firsts[len(firsts)-1]+rg.Rows)
	}
	row := firsts[len(firsts)-1]/2 + 12_345
	for b.Loop() {
		f, err := pqmeta.Read(path, pqmeta.FileIdentity{})
		if err != nil {
			b.Fatal(err)
		}
		pcs, _ := pageColumns(f, cols)
		osf, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		ld, err := readPages(context.Background(), osf, nil, pcs, []rowSpan{{row, row + 1}}, firsts, nil, nil)
		osf.Close()
		if err != nil || ld.rows != 1 {
			b.Fatalf("%v, %d rows", err, ld.rows)
		}
	}
}

// BenchmarkHandOverFloor times what DuckDB alone costs a point lookup
// whose one row the page path hands over, on a warm connection: the
// lookup's query over that row as a VALUES list (the page path's inline
// form, pagesSQL), with and without the temporary view the engine makes,
// beside SELECT 1. It is a floor under any read that hands rows to DuckDB:
// bench/partial's DuckDB over the kept file answers the lookup in about
// 10 ms, so a lookup 10x faster would have to spend under 1 ms in all,
// parse and plan included.
func BenchmarkHandOverFloor(b *testing.B) {
	db, err := Open("")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	const row = "SELECT CAST(id AS BIGINT) AS id, make_timestamp(ts) AS ts, CAST(user_id AS BIGINT) AS user_id, CAST(amount AS DOUBLE) AS amount, " +
		"CAST(kind AS VARCHAR) AS kind FROM (VALUES (CAST(8012345 AS BIGINT), CAST(1700000000000000 AS BIGINT), CAST(42 AS BIGINT), " +
		"CAST('12.5' AS DOUBLE), CAST('buy' AS VARCHAR))) AS __rocklake_rows(id, ts, user_id, amount, kind)"
	const lookup = "SELECT COLUMNS(*)::VARCHAR FROM (\nSELECT id, ts, user_id, amount, kind FROM %s WHERE id = 8012345 ORDER BY ALL\n)"
	for _, tc := range []struct{ name, sql string }{
		{"select1", "SELECT 1"},
		{"inline", fmt.Sprintf(lookup, "("+row+")")},
		{"view", "CREATE OR REPLACE TEMP VIEW v AS " + row + ";\n" + fmt.Sprintf(lookup, "v")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				rows, err := conn.QueryContext(ctx, tc.sql)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for rows.Next() {
					n++
				}
				if err := rows.Close(); err != nil || n != 1 {
					b.Fatalf("%d rows, %v", n, err)
				}
			}
		})
	}
}
