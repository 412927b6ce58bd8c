package prune

import (
	"fmt"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// BenchmarkWarmPlan plans a selective predicate again and again at one
// state, as a server's repeated query does: 64 files of four row groups,
// each file's a values in a range of their own. Full plans read the kept
// file's row-group statistics; files-only plans stop at its file.
// ROCKLAKE_TEST_CATALOG=postgres runs it on PostgreSQL, where each read
// of the store is a round trip.
func BenchmarkWarmPlan(b *testing.B) {
	store := kvtest.Store(b)
	l := newWarmLake(b, store, false)
	defer l.c.Close()
	l.opts = pqwrite.Options{RowGroupRows: 100}
	var paths []string
	for f := range int64(64) {
		i := int64(0)
		paths = append(paths, l.write(400, func() (int64, int64) {
			i++
			return f*1000 + i - 1, (i - 1) % 7
		}))
	}
	if _, err := ingest.Add(l.c, "t", paths, ingest.Options{Create: true, NoAutoFilters: true}); err != nil {
		b.Fatal(err)
	}
	p := pred{"a BETWEEN 31150 AND 31160 AND b = 3", func(a, b int64) bool { return 31150 <= a && a <= 31160 && b == 3 }}
	for _, filesOnly := range []bool{true, false} {
		b.Run(fmt.Sprintf("files-only=%v", filesOnly), func(b *testing.B) {
			trips := func() int64 { return 0 }
			if rt, ok := store.(interface{ RoundTrips() int64 }); ok {
				trips = rt.RoundTrips
			}
			before := trips()
			for b.Loop() {
				r, err := l.c.Read(catalog.Latest)
				if err != nil {
					b.Fatal(err)
				}
				pl, err := PlanTable(r, "t", p.sql, Options{FilesOnly: filesOnly})
				r.Close()
				if err != nil {
					b.Fatal(err)
				}
				if len(pl.KeptFiles) != 1 {
					b.Fatalf("kept %d files, want 1", len(pl.KeptFiles))
				}
			}
			b.ReportMetric(float64(trips()-before)/float64(b.N), "statements/op")
			// Once, outside the timing: the kept file holds every match.
			l.plan(p, filesOnly)
		})
	}
}
