package ingest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"rocklake/catalog"
	"rocklake/internal/pqwrite"
)

// FuzzRegister feeds mutated Parquet files to the registration built from
// them (the decoder itself is pqmeta's FuzzInspect): a clear error or a
// registration, never a panic or a hang.
func FuzzRegister(f *testing.F) {
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
	fi, err := inspect(p)
	if err != nil {
		return
	}
	_ = fi.creatable()
	cols, err := catalog.PlanColumns(fi.columnDefs())
	if err != nil {
		return
	}
	_, _ = fi.newFile("t", cols)
}
