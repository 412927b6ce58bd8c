package ingest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/types"
	"github.com/rocklake/rocklake/types/typestest"
)

// Filters built from the column reader's integers (Leaf.IntKind) are the
// filters built from each value's plain bytes through Leaf.Value, byte for
// byte, for every integer type a filter is built on: random values, the
// type's extremes, NULLs, several row groups. A filter built otherwise
// would hash a value unlike the predicate's literal and prune its file.
func TestIntFiltersAsPlainBytes(t *testing.T) {
	defer func() { intFastPath = true }()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(4, 7))
	kinds := []string{"tinyint", "smallint", "integer", "bigint", "utinyint", "usmallint", "uinteger", "ubigint"}
	for _, name := range kinds {
		typ := types.MustParseType(name)
		if !filterable(typ) {
			t.Fatalf("%s: no longer filterable; the test covers nothing", name)
		}
		for k := range 3 {
			n := 1 + r.IntN(5000)
			vals := make([]*types.Value, n)
			ext := typestest.Extremes(typ)
			for i := range vals {
				switch x := r.IntN(10); {
				case x == 0:
					// NULL
				case x == 1 && len(ext) > 0:
					v := ext[r.IntN(len(ext))]
					vals[i] = &v
				default:
					v := typestest.Random(r, typ)
					vals[i] = &v
				}
			}
			path := filepath.Join(dir, fmt.Sprintf("%s-%d.parquet", name, k))
			if err := pqwrite.Write(path, []pqwrite.Column{{Name: "c", Type: typ, Values: vals}}, pqwrite.Options{RowGroupRows: int64(1 + r.IntN(2000))}); err != nil {
				t.Fatal(err)
			}
			meta, err := pqmeta.Read(path, pqmeta.FileIdentity{})
			if err != nil {
				t.Fatal(err)
			}
			leaf := meta.Leaves[0]
			if _, ok := leaf.IntKind(); !ok {
				t.Fatalf("%s: the leaf does not read as integers: the fast path is not taken", name)
			}
			build := func(fast bool) ([]*catalog.Filter, []int64) {
				intFastPath = fast
				fls, nonNull, err := fileFilters(path, catalog.FileIdentity{}, meta, []*pqmeta.Leaf{leaf}, []types.Type{typ})
				if err != nil {
					t.Fatalf("%s (fast %v): %v", name, fast, err)
				}
				return fls, nonNull
			}
			fast, fastN := build(true)
			slow, slowN := build(false)
			if !slices.Equal(fastN, slowN) {
				t.Fatalf("%s: %v values read from ints, %v from plain bytes", name, fastN, slowN)
			}
			if (fast[0] == nil) != (slow[0] == nil) {
				t.Fatalf("%s: a filter one way and none the other", name)
			}
			if fast[0] != nil && (!bytes.Equal(fast[0].Data, slow[0].Data) || fast[0].Distinct != slow[0].Distinct || !slices.Equal(fast[0].Signature, slow[0].Signature)) {
				t.Fatalf("%s, file %d: the filter from ints differs from the filter from plain bytes", name, k)
			}
		}
	}
}
