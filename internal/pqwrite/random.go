package pqwrite

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"rocklake/types"
	"rocklake/types/typestest"
)

// RandomColumn draws a column of n values for tests: NULLs in a random
// proportion (none, all, half, or a random share), NaNs among floats, the
// type's extremes mixed in (typestest.Random).
func RandomColumn(r *rand.Rand, name string, typ types.Type, n int) Column {
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
	return Column{Name: name, Type: typ, Values: vals}
}

// SeedFiles writes small files of five types (int64, varchar, float64,
// decimal(38,10), timestamptz; 20 random values each, row groups of 5 to 9
// rows, page indexes on) under dir and returns their bytes: the seeds of
// the fuzz targets that mutate Parquet files.
func SeedFiles(dir string) ([][]byte, error) {
	r := rand.New(rand.NewPCG(1, 2))
	var out [][]byte
	for i, typ := range []string{"int64", "varchar", "float64", "decimal(38,10)", "timestamptz"} {
		p := filepath.Join(dir, "seed.parquet")
		col := RandomColumn(r, "c", types.MustParseType(typ), 20)
		if err := Write(p, []Column{col}, Options{RowGroupRows: int64(5 + i), PageIndex: true}); err != nil {
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
