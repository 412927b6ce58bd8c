package pqmeta

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"rocklake/internal/pqwrite"
)

// FuzzInspect feeds mutated Parquet files to the footer reader, the
// statistics translation and the page index reader: a clear error or an
// answer, never a panic or a hang.
func FuzzInspect(f *testing.F) {
	seeds, err := pqwrite.SeedFiles(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	for _, b := range seeds {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.parquet")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			fuzzOne(p)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("hang: no answer in 5s")
		}
	})
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
