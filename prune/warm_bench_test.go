package prune

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/types"
)

// BenchmarkWarmPlan plans a selective predicate again and again at one
// state, as a server's repeated query does: 64 files of four row groups,
// each file's a values in a range of their own. Full plans read the kept
// file's row-group statistics; files-only plans stop at its file.
// ROCKLAKE_TEST_CATALOG=postgres runs it on PostgreSQL, where each read
// of the store is a round trip.
func BenchmarkWarmPlan(b *testing.B) {
	store := kvtest.Store(b)
	c, err := catalog.CreateInStore(store, catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	dir := b.TempDir()
	var paths []string
	for f := range int64(64) {
		var as, bs []*types.Value
		for i := range int64(400) {
			a, v := types.IntValue(f*1000+i), types.IntValue(i%7)
			as, bs = append(as, &a), append(bs, &v)
		}
		p := filepath.Join(dir, fmt.Sprintf("f%02d.parquet", f))
		err := pqwrite.Write(p, []pqwrite.Column{{Name: "a", Type: types.MustParseType("int64"), Values: as},
			{Name: "b", Type: types.MustParseType("int64"), Values: bs}}, pqwrite.Options{RowGroupRows: 100})
		if err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	if _, err := ingest.Add(c, "t", paths, ingest.Options{Create: true, NoAutoFilters: true}); err != nil {
		b.Fatal(err)
	}
	for _, filesOnly := range []bool{true, false} {
		b.Run(fmt.Sprintf("files-only=%v", filesOnly), func(b *testing.B) {
			trips := func() int64 { return 0 }
			if rt, ok := store.(interface{ RoundTrips() int64 }); ok {
				trips = rt.RoundTrips
			}
			before := trips()
			for b.Loop() {
				r, err := c.Read(catalog.Latest)
				if err != nil {
					b.Fatal(err)
				}
				pl, err := PlanTable(r, "t", "a BETWEEN 31150 AND 31160 AND b = 3", Options{FilesOnly: filesOnly})
				r.Close()
				if err != nil {
					b.Fatal(err)
				}
				if len(pl.KeptFiles) != 1 {
					b.Fatalf("kept %d files, want 1", len(pl.KeptFiles))
				}
			}
			b.ReportMetric(float64(trips()-before)/float64(b.N), "statements/op")
		})
	}
}
