package pqmeta

import (
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// TestReadWrittenFile reads a file whose contents are known and checks
// each step of the API on it: schema, leaf lookup, row groups, chunk
// statistics in the file's type and in a wider one, the cast check, and
// the page index and bloom filters below them.
func TestReadWrittenFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.parquet")
	val := func(v types.Value) *types.Value { return &v }
	var ids, names []*types.Value
	for i := range 10 {
		ids = append(ids, val(types.IntValue(int64(i*10))))
		names = append(names, val(types.BytesValue([]byte{byte('a' + i)})))
	}
	names[3] = nil
	err := pqwrite.Write(p, []pqwrite.Column{
		{Name: "Id", Type: types.MustParseType("int32"), Values: ids},
		{Name: "name", Type: types.MustParseType("varchar"), Values: names},
		{Name: "d", Type: types.MustParseType("decimal(4,3)"), Values: []*types.Value{
			val(types.IntValue(1)), val(types.IntValue(9999)), nil, nil, nil, nil, nil, nil, nil, nil}},
	}, pqwrite.Options{RowGroupRows: 5, PageIndex: true, BloomFilters: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Read(p, FileIdentity{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Rows != 10 || len(f.RowGroups) != 2 || len(f.Columns) != 3 || len(f.Leaves) != 3 || f.Size <= f.FooterSize {
		t.Fatalf("rows %d, row groups %d, columns %d, leaves %d, size %d, footer %d",
			f.Rows, len(f.RowGroups), len(f.Columns), len(f.Leaves), f.Size, f.FooterSize)
	}
	if c := f.Columns[0]; c.Name != "Id" || c.Type.DuckLakeName() != "int32" || len(c.Leaves) != 1 || c.Leaves[0] != f.Leaves[0] {
		t.Fatalf("column 0: %+v", c)
	}
	// Names match as DuckDB binds them: ASCII case aside.
	id, ok := f.Leaf([]string{"ID"})
	if !ok || id.Index != 0 {
		t.Fatalf("leaf ID: %+v %v", id, ok)
	}
	if _, ok := f.Leaf([]string{"nope"}); ok {
		t.Fatal("a leaf for a column the file lacks")
	}
	int32Codec, _ := types.CodecFor(id.Type)
	bigint := types.MustParseType("bigint")
	bigintCodec, _ := types.CodecFor(bigint)
	for rg, want := range [][2]int64{{0, 40}, {50, 90}} {
		for _, as := range []struct {
			typ   types.Type
			codec *types.Codec
		}{{id.Type, int32Codec}, {bigint, bigintCodec}} {
			st := f.ChunkStats(rg, id, as.typ)
			lo, _ := as.codec.Decode(st.Min.V)
			hi, _ := as.codec.Decode(st.Max.V)
			if !st.Min.Known || !st.Max.Known || lo.Int64() != want[0] || hi.Int64() != want[1] || !st.MinIsExact || !st.MaxIsExact {
				t.Errorf("row group %d as %s: [%v, %v] exact %v/%v, want [%d, %d] exact", rg, as.typ, lo.Int64(), hi.Int64(), st.MinIsExact, st.MaxIsExact, want[0], want[1])
			}
			if st.RowCount != 5 || !st.NullCount.Known || st.NullCount.V != 0 || !st.ContainsNaN.Known || st.ContainsNaN.V {
				t.Errorf("row group %d as %s: counts %+v", rg, as.typ, st)
			}
		}
	}
	name := f.Leaves[1]
	if st := f.ChunkStats(0, name, name.Type); !st.NullCount.Known || st.NullCount.V != 1 || f.RowGroups[0].Chunks[1].Values != 5 {
		t.Errorf("name, row group 0: null count %+v, values %d", st.NullCount, f.RowGroups[0].Chunks[1].Values)
	}
	// 9.999 rounds to 10.00 in decimal(3,2), which DuckDB refuses; the
	// file's exact bounds show it is there. decimal(4,2) holds it.
	d := f.Columns[2]
	if !Fits(d.Type, types.MustParseType("decimal(3,2)")) {
		t.Fatal("decimal(4,3) does not fit decimal(3,2)")
	}
	if err := f.CastError(d, types.MustParseType("decimal(3,2)")); err == nil {
		t.Error("no cast error for 9.999 to decimal(3,2)")
	}
	if err := f.CastError(d, types.MustParseType("decimal(4,2)")); err != nil {
		t.Errorf("cast to decimal(4,2): %v", err)
	}
	for _, ch := range f.RowGroups[1].Chunks {
		if ch.ColumnIndex == (Location{}) || ch.OffsetIndex == (Location{}) || ch.BloomFilter == (Location{}) {
			t.Fatalf("row group 1: no page index or bloom filter location: %+v", ch)
		}
	}

	fx, err := OpenIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fx.Close()
	pages, err := fx.Pages(1, []string{"id"}, bigint)
	if err != nil || len(pages) == 0 {
		t.Fatalf("pages of id in row group 1: %v %v", pages, err)
	}
	var rows int64
	for _, pg := range pages {
		lo, _ := bigintCodec.Decode(pg.Stats.Min.V)
		hi, _ := bigintCodec.Decode(pg.Stats.Max.V)
		if !pg.Stats.Min.Known || !pg.Stats.Max.Known || lo.Int64() < 50 || hi.Int64() > 90 || pg.FirstRow != rows {
			t.Errorf("page %+v: [%d, %d]", pg, lo.Int64(), hi.Int64())
		}
		rows += pg.Rows
	}
	if rows != 5 {
		t.Errorf("pages cover %d rows, want 5", rows)
	}
	ruledOut := 0
	for v, present := range map[int64]bool{60: true, 90: true, 20: false, 61: false, 1000: false} {
		absent, err := fx.BloomAbsent(1, []string{"Id"}, bigint, types.IntValue(v))
		if err != nil || (present && absent) {
			t.Errorf("bloom filter, %d in row group 1: absent %v, %v", v, absent, err)
		}
		if absent {
			ruledOut++
		}
	}
	if ruledOut == 0 {
		t.Error("the bloom filter ruled out none of 20, 61, 1000")
	}
}
