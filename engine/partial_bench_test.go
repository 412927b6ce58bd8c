package engine

import (
	"context"
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
		ld, err := readPages(context.Background(), osf, nil, pcs, []rowSpan{{row, row + 1}}, firsts, nil)
		osf.Close()
		if err != nil || ld.rows != 1 {
			b.Fatalf("%v, %d rows", err, ld.rows)
		}
	}
}
