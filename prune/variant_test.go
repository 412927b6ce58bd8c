package prune

import (
	"fmt"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// Sub-field statistics stored without per-row-group rows (as catalogs
// written before they were kept have them) still prune files, and leave
// row groups undecided; files without a row for the path, and rows whose
// counts do not add up to the file's rows, are kept.
func TestSubFieldStatsAtEachLevel(t *testing.T) {
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	tx, _ := c.Begin()
	tx.CreateTable("t", []catalog.ColumnDef{{Name: "v", Type: "variant"}, {Name: "x", Type: "bigint"}})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	codec, _ := types.CodecFor(types.Simple(types.KindBigInt))
	enc := func(x int64) stats.Maybe[[]byte] { b, _ := codec.Encode(types.IntValue(x)); return stats.Known(b) }
	file := func(i int, vs []catalog.VariantStats) catalog.NewFile {
		return catalog.NewFile{Path: fmt.Sprintf("f%d", i), RecordCount: 100, RowGroupCount: 2,
			Columns: []catalog.FileColumn{{Path: []string{"v"}, Stats: stats.Column{RowCount: 100}, Variants: vs}}}
	}
	a := func(lo, hi, values int64, rgs []catalog.VariantRowGroup) []catalog.VariantStats {
		return []catalog.VariantStats{{Path: `"a"`, ShreddedType: "int64", ValueCount: values, NullCount: 100 - values,
			Min: enc(lo), Max: enc(hi), ContainsNaN: stats.Known(false), RowGroups: rgs}}
	}
	tx, _ = c.Begin()
	tx.AddFiles("t",
		file(0, a(0, 99, 100, nil)),    // old: no row groups
		file(1, a(100, 199, 100, nil)), // old
		file(2, a(200, 299, 100, []catalog.VariantRowGroup{
			{Index: 0, ValueCount: 50, Min: enc(200), Max: enc(249)},
			{Index: 1, ValueCount: 50, Min: enc(250), Max: enc(299)}})),
		file(3, nil),                  // the field is not shredded here
		file(4, a(400, 499, 90, nil)), // 90 values + 10 NULLs: 100 rows
		file(5, []catalog.VariantStats{{Path: `"a"`, ShreddedType: "int64", ValueCount: 90, NullCount: 0, Min: enc(500), Max: enc(599)}}),
	)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r, _ := c.Read(catalog.Latest)
	defer r.Close()
	for _, c := range []struct {
		pred string
		want string // kept files: row groups
	}{
		{"v.a::BIGINT = 150", "f1:[0 1] f3:[0 1] f5:[0 1]"},
		{"v.a::BIGINT = 260", "f2:[1] f3:[0 1] f5:[0 1]"},
		{"v.a::INT >= 450", "f3:[0 1] f4:[0 1] f5:[0 1]"},
		{"v.a IS NULL", "f3:[0 1] f4:[0 1] f5:[0 1]"},
		{"v.a::VARCHAR = '150'", "f0:[0 1] f1:[0 1] f2:[0 1] f3:[0 1] f4:[0 1] f5:[0 1]"},
	} {
		plan, err := PlanTable(r, "t", c.pred, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, kf := range plan.KeptFiles {
			if got != "" {
				got += " "
			}
			got += fmt.Sprintf("%s:%v", kf.Path[len(kf.Path)-2:], kf.RowGroups)
		}
		if got != c.want {
			t.Errorf("%s: kept %s, want %s", c.pred, got, c.want)
		}
		if len(plan.SubFields) != 1 || plan.SubFields[0].Path != `"a"` {
			t.Errorf("%s: sub-fields %+v", c.pred, plan.SubFields)
		}
	}
}
