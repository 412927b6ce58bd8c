package engine

import (
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/types"
)

// TestDuckDBVariantStats ingests VARIANT columns as DuckDB 1.5 writes them
// (shredded: typed_value leaves per object field) and checks the variant
// stats: fields shredded with one type and nothing left untyped get a row
// with their bounds; a field whose values are partly untyped gets none; the
// table keeps only fields shredded alike in every file.
func TestDuckDBVariantStats(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	f1 := filepath.Join(dir, "v1.parquet")
	f2 := filepath.Join(dir, "v2.parquet")
	for _, q := range []string{
		`COPY (SELECT {'a': i, 'b': 'x' || i::VARCHAR}::VARIANT AS v, i FROM range(1, 4) r(i)) TO '` + f1 + `' (FORMAT parquet)`,
		// In the second file a is sometimes a string: not fully shredded.
		`COPY (SELECT CASE WHEN i = 2 THEN {'a': 'str', 'b': 'y'}::VARIANT ELSE {'a': i * 10, 'b': 'z'}::VARIANT END AS v, i FROM range(1, 5) r(i)) TO '` + f2 + `' (FORMAT parquet)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", []string{f1}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	r, _ := c.Read(catalog.Latest)
	tb, _ := r.Table("t")
	col, err := r.Column(tb.ID, "v")
	if err != nil || col.Type.Kind != types.KindVariant {
		t.Fatalf("v: %+v %v", col, err)
	}
	files, _ := r.Files(tb.ID)
	vs, _ := r.FileVariantStats(tb.ID, col.ID, files[0].ID)
	got := map[string]catalog.VariantStats{}
	for _, v := range vs {
		got[v.Path] = v
	}
	a, ok := got[`"a"`]
	if !ok || a.ShreddedType != "int64" && a.ShreddedType != "int32" {
		t.Fatalf(`file 1: want "a" shredded as an integer, got %+v`, vs)
	}
	codec, _ := types.CodecFor(types.MustParseType(a.ShreddedType))
	lo, _ := codec.Decode(a.Min.V)
	hi, _ := codec.Decode(a.Max.V)
	if codec.Format(lo) != "1" || codec.Format(hi) != "3" || a.ValueCount != 3 || a.NullCount != 0 {
		t.Fatalf(`file 1 "a": [%s, %s] values %d nulls %d`, codec.Format(lo), codec.Format(hi), a.ValueCount, a.NullCount)
	}
	if b, ok := got[`"b"`]; !ok || b.ShreddedType != "varchar" || string(b.Min.V) != "x1" || string(b.Max.V) != "x3" {
		t.Fatalf(`file 1 "b": %+v`, b)
	}
	if len(a.RowGroups) != 1 || a.RowGroups[0].ValueCount != 3 || !a.RowGroups[0].Min.Known {
		t.Fatalf(`file 1 "a": row groups %+v`, a.RowGroups)
	}
	for pred, kept := range map[string]int{"v.a::INT > 3": 0, "v.a::INT >= 3": 1, "v.b::VARCHAR = 'x0'": 0, "v.a IS NULL": 0, "v.a IS NOT NULL": 1} {
		plan, err := prune.PlanTable(r, "t", pred, prune.Options{})
		if err != nil || plan.Files.Kept != kept {
			t.Fatalf("%s: want %d files kept, got %+v %v", pred, kept, plan, err)
		}
	}
	r.Close()
	if _, err := ingest.Add(c, "t", []string{f2}, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	r, _ = c.Read(catalog.Latest)
	defer r.Close()
	files, _ = r.Files(tb.ID)
	vs2, _ := r.FileVariantStats(tb.ID, col.ID, files[1].ID)
	for _, v := range vs2 {
		if v.Path == `"a"` {
			t.Fatalf(`file 2: "a" is partly untyped and must have no variant stats: %+v`, v)
		}
	}
	ts, _ := r.TableStats(tb.ID)
	var paths []string
	for _, v := range ts.Columns[col.ID].Variants {
		paths = append(paths, v.Path)
	}
	if len(paths) != 1 || paths[0] != `"b"` {
		t.Fatalf(`table variant stats: want only "b" (shredded alike in both files), got %v`, paths)
	}
	if b := ts.Columns[col.ID].Variants[0]; string(b.Min.V) != "x1" || string(b.Max.V) != "z" {
		t.Fatalf(`table "b" bounds: [%s, %s]`, b.Min.V, b.Max.V)
	}
}
