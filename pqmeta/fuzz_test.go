package pqmeta

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"rocklake/internal/pqwrite"
	"rocklake/types"
	"rocklake/types/typestest"
)

// randomColumn draws a column: NULLs in a random proportion (none, all,
// half, or a random share), NaNs among floats, extremes mixed in.
func randomColumn(r *rand.Rand, name string, typ types.Type, n int) pqwrite.Column {
	nullShare := []float64{0, 1, 0.5, r.Float64()}[r.IntN(4)]
	vals := make([]*types.Value, n)
	for i := range vals {
		if r.Float64() < nullShare {
			continue
		}
		v := typestest.Random(r, typ)
		if (typ.Kind == types.KindFloat || typ.Kind == types.KindDouble) && r.IntN(10) == 0 {
			v = types.FloatValue(math.NaN())
		}
		vals[i] = &v
	}
	return pqwrite.Column{Name: name, Type: typ, Values: vals}
}

// FuzzInspect feeds mutated Parquet files to the footer reader, the
// statistics translation and the page index reader: a clear error or an
// answer, never a panic or a hang.
func FuzzInspect(f *testing.F) {
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
