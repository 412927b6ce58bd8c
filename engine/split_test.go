package engine

import (
	"errors"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/types"
)

// combine adds the statistics' part to DuckDB's answer, takes the better
// bound, keeps DuckDB's own text on a tie, and refuses (errSplit, which
// reruns the query unsplit) a value that does not read back exactly.
func TestSplitCombine(t *testing.T) {
	typ := types.MustParseType("bigint")
	codec, _ := types.CodecFor(typ)
	col := &catalog.Column{Name: "v", Type: typ}
	enc := func(v int64) []byte {
		b, err := codec.Encode(types.IntValue(v))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	newSplit := func() *splitAnswer {
		return &splitAnswer{
			aggs:    []splitAgg{{}, {col: col, codec: codec, wantMin: true}, {col: col, codec: codec}},
			whole:   100,
			wholeB:  []bound{{}, {enc(5), true}, {enc(50), true}},
			inPart:  []int64{7, 9},
			inPartB: [][]bound{{{}, {enc(-3), true}, {}}, {{}, {enc(-100), true}, {enc(1000), true}}},
		}
	}
	s := func(v string) *string { return &v }
	reads := []FileRead{{How: ReadPages}, {How: ReadWhole}} // the second file's proven part is DuckDB's
	for _, tc := range []struct {
		name     string
		row      []*string
		want     []string
		wantNull bool
	}{
		{"statistics better", []*string{s("4"), s("2"), s("20")}, []string{"111", "-3", "50"}, false},
		{"DuckDB better", []*string{s("4"), s("-7"), s("60")}, []string{"111", "-7", "60"}, false},
		{"tie keeps DuckDB's text", []*string{s("0"), s("-3"), s("50")}, []string{"107", "-3", "50"}, false},
		{"DuckDB read no row", []*string{s("0"), nil, nil}, []string{"107", "-3", "50"}, false},
	} {
		res := &Result{Columns: []string{"c", "mn", "mx"}, Rows: [][]*string{tc.row}}
		if err := newSplit().combine(res, reads); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i, w := range tc.want {
			if g := res.Rows[0][i]; g == nil || *g != w {
				t.Errorf("%s: column %d is %v, want %s", tc.name, i, g, w)
			}
		}
		if res.StatsRows != 107 {
			t.Errorf("%s: %d rows from statistics, want 107 (the file read whole gives none)", tc.name, res.StatsRows)
		}
	}
	for _, row := range [][]*string{{s("x"), s("1"), s("1")}, {s("1"), s("1.5"), s("1")}, {nil, s("1"), s("1")}} {
		res := &Result{Columns: []string{"c", "mn", "mx"}, Rows: [][]*string{row}}
		if err := newSplit().combine(res, reads); !errors.Is(err, errSplit) {
			t.Errorf("%v: %v, want errSplit", row, err)
		}
	}
}
