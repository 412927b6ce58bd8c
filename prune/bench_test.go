package prune

import (
	"testing"

	"rocklake/catalog"
	"rocklake/expr"
	"rocklake/stats"
	"rocklake/types"
)

// BenchmarkEvaluate measures one bound predicate against one unit's stats:
// the per-file cost of planning once the stats are in memory. Run with
// `go test ./prune -run '^$' -bench Evaluate -benchmem`.
func BenchmarkEvaluate(b *testing.B) {
	cols := []catalog.Column{
		{ID: 1, Name: "ts", Type: types.MustParseType("timestamptz"), Path: []string{"ts"}},
		{ID: 2, Name: "id", Type: types.MustParseType("bigint"), Path: []string{"id"}},
		{ID: 3, Name: "kind", Type: types.MustParseType("varchar"), Path: []string{"kind"}},
	}
	codec := func(typ string) *types.Codec { c, _ := types.CodecFor(types.MustParseType(typ)); return c }
	tsc, idc := codec("timestamptz"), codec("bigint")
	// 1,024 units: one hour of timestamps each, id ranges of 1,000, kinds a..z.
	const hour = int64(3600e6)
	base := int64(1704067200e6) // 2024-01-01 UTC
	units := make([][]*stats.Column, 1024)
	for i := range units {
		lo, hi := base+int64(i)*hour, base+int64(i+1)*hour-1
		tmin, _ := tsc.Encode(types.IntValue(lo))
		tmax, _ := tsc.Encode(types.IntValue(hi))
		imin, _ := idc.Encode(types.IntValue(int64(i) * 1000))
		imax, _ := idc.Encode(types.IntValue(int64(i)*1000 + 999))
		k := []byte{byte('a' + i%26)}
		mk := func(min, max []byte) *stats.Column {
			return &stats.Column{Min: stats.Known(min), Max: stats.Known(max), MinIsExact: true, MaxIsExact: true,
				NullCount: stats.Known(int64(0)), ContainsNull: stats.Known(false), RowCount: 2000, ValueCount: stats.Known(int64(2000))}
		}
		units[i] = []*stats.Column{nil, mk(tmin, tmax), mk(imin, imax), mk(k, k)}
	}
	for _, q := range []string{
		"ts >= '2024-01-20 00:00:00+00' AND ts < '2024-01-20 01:00:00+00'",
		"id = 512345",
		"kind = 'q' AND ts >= '2024-02-01 00:00:00+00'",
		"id IN (5, 50000, 500000, 700000, 900000) OR kind LIKE 'z%'",
	} {
		b.Run(q, func(b *testing.B) {
			bound, err := expr.Compile(q, cols)
			if err != nil {
				b.Fatal(err)
			}
			eval := Compile(bound.Pred)
			var cur []*stats.Column
			u := StatsOnly(func(id int64) *stats.Column { return cur[id] })
			skipped := 0
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				cur = units[i%len(units)]
				if eval(u) == Skip {
					skipped++
				}
			}
			if skipped == 0 {
				b.Fatal("nothing skipped: the fixture does not exercise the predicate")
			}
		})
	}
}
