// Package testkit holds what the tests of several packages share: random
// Parquet columns, the fuzz harness for mutated Parquet files, and fixture
// files. Only tests import it.
package testkit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
	"github.com/rocklake/rocklake/types/typestest"
)

// RandomColumn draws a column of n values for tests: NULLs in a random
// proportion (none, all, half, or a random share), NaNs among floats, the
// type's extremes mixed in (typestest.Random).
func RandomColumn(r *rand.Rand, name string, typ types.Type, n int) pqwrite.Column {
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

// seedFiles writes small files of five types (int64, varchar, float64,
// decimal(38,10), timestamptz; 20 random values each, row groups of 5 to 9
// rows, page indexes on) under dir and returns their bytes: the seeds of
// the fuzz targets that mutate Parquet files.
func seedFiles(dir string) ([][]byte, error) {
	r := rand.New(rand.NewPCG(1, 2))
	var out [][]byte
	for i, typ := range []string{"int64", "varchar", "float64", "decimal(38,10)", "timestamptz"} {
		p := filepath.Join(dir, "seed.parquet")
		col := RandomColumn(r, "c", types.MustParseType(typ), 20)
		if err := pqwrite.Write(p, []pqwrite.Column{col}, pqwrite.Options{RowGroupRows: int64(5 + i), PageIndex: true}); err != nil {
			return nil, err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// FuzzParquet fuzzes check with mutated Parquet files, seeded by small
// files of five types: check must give a clear error or an answer, never
// panic, and return within 5 s (else the input fails as a hang).
func FuzzParquet(f *testing.F, check func(path string)) {
	seeds, err := seedFiles(f.TempDir())
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
			check(p)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("hang: no answer in 5s")
		}
	})
}

// TwoColumnFiles writes 20 files under dir whose rows have independent
// uniform int64 x and y (y 1% NULL) and a varchar z: every file spans both
// columns' whole ranges, so no order of files separates them.
func TwoColumnFiles(t testing.TB, dir string) []string {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	var paths []string
	for f := range 20 {
		xs, ys, zs := make([]*types.Value, 2000), make([]*types.Value, 2000), make([]*types.Value, 2000)
		for i := range xs {
			x, y := types.IntValue(r.Int64N(10_000)), types.IntValue(r.Int64N(10_000))
			z := types.StringValue(fmt.Sprintf("s%05d", r.IntN(100_000)))
			xs[i], ys[i], zs[i] = &x, &y, &z
			if r.IntN(100) == 0 {
				ys[i] = nil
			}
		}
		p := filepath.Join(dir, fmt.Sprintf("f%02d.parquet", f))
		err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: xs},
			{Name: "y", Type: types.MustParseType("int64"), Values: ys},
			{Name: "z", Type: types.MustParseType("varchar"), Values: zs}}, pqwrite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}
