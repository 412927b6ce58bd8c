package ingest

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"rocklake/catalog"
	"rocklake/internal/pqwrite"
	"rocklake/types"
)

// FuzzRegister feeds mutated Parquet files to the registration built from
// them (the decoder itself is pqmeta's FuzzInspect): a clear error or a
// registration, never a panic or a hang.
func FuzzRegister(f *testing.F) {
	dir := f.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	for i, typ := range []string{"int64", "varchar", "float64", "decimal(38,10)", "timestamptz"} {
		p := filepath.Join(dir, "seed.parquet")
		col := randomColumn(r, "c", types.MustParseType(typ), 20)
		if err := pqwrite.Write(p, []pqwrite.Column{col}, pqwrite.Options{RowGroupRows: int64(5 + i), PageIndex: true}); err != nil {
			f.Fatal(err)
		}
		b, _ := os.ReadFile(p)
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
