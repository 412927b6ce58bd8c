package pqmeta

import (
	"testing"

	"github.com/rocklake/rocklake/internal/testkit"
)

// FuzzInspect feeds mutated Parquet files to the footer reader, the
// statistics translation and the page index reader: a clear error or an
// answer, never a panic or a hang.
func FuzzInspect(f *testing.F) {
	testkit.FuzzParquet(f, fuzzOne)
}

func fuzzOne(p string) {
	f, err := Read(p, FileIdentity{})
	if err != nil {
		return
	}
	for rg := range f.RowGroups {
		for _, l := range f.Leaves {
			_ = f.ChunkStats(rg, l, l.Type)
		}
	}
	for _, c := range f.Columns {
		_ = f.CastError(c, c.Type)
	}
	fx, err := OpenIndex(p)
	if err != nil {
		return
	}
	defer fx.Close()
	for rg := range max(len(f.RowGroups), 1) {
		for _, l := range f.Leaves {
			if l.Path != nil {
				_, _ = fx.Pages(rg, l.Path, l.Type)
			}
		}
	}
}
