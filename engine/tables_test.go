package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"rocklake/catalog"
	"rocklake/ingest"
	"rocklake/internal/pqwrite"
	"rocklake/kv"
	"rocklake/types"
)

// lakeOf registers files as table t in a new in-memory catalog.
func lakeOf(t *testing.T, paths []string) (*catalog.Catalog, ingest.Result, *Engine) {
	t.Helper()
	c, _ := catalog.CreateInStore(kv.NewMemory(), catalog.Options{})
	res, err := ingest.Add(c, "t", paths, ingest.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return c, res, e
}

// answerOf is a query's rows at a snapshot, one line each.
func answerOf(t *testing.T, e *Engine, snap int64, q string) string {
	t.Helper()
	res, err := e.Query(context.Background(), q, QueryOptions{Snapshot: snap})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []string
	for _, row := range res.Rows {
		out = append(out, rowText(row))
	}
	return strings.Join(out, "\n")
}

// twoColumnLake is a table of 20 files whose rows have independent
// uniform x and y: every file spans both columns' whole ranges.
func twoColumnLake(t *testing.T) (string, *catalog.Catalog, ingest.Result, *Engine) {
	t.Helper()
	dir := t.TempDir()
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
	c, res, e := lakeOf(t, paths)
	return dir, c, res, e
}
