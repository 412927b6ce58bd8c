package prune

import (
	"slices"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// benchUnits: 1,024 units, one hour of timestamps each, id ranges of
// 1,000, kinds a..z; units[i] is indexed by column id.
func benchUnits() ([]catalog.Column, [][]*stats.Column) {
	cols := []catalog.Column{
		{ID: 1, Name: "ts", Type: types.MustParseType("timestamptz"), Path: []string{"ts"}},
		{ID: 2, Name: "id", Type: types.MustParseType("bigint"), Path: []string{"id"}},
		{ID: 3, Name: "kind", Type: types.MustParseType("varchar"), Path: []string{"kind"}},
	}
	codec := func(typ string) *types.Codec { c, _ := types.CodecFor(types.MustParseType(typ)); return c }
	tsc, idc := codec("timestamptz"), codec("bigint")
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
	return cols, units
}

var benchQueries = []string{
	"ts >= '2024-01-20 00:00:00+00' AND ts < '2024-01-20 01:00:00+00'",
	"id = 512345",
	"kind = 'q' AND ts >= '2024-02-01 00:00:00+00'",
	"id IN (5, 50000, 500000, 700000, 900000) OR kind LIKE 'z%'",
}

// BenchmarkEvaluate measures one bound predicate against one unit's stats,
// one unit at a time through Compile (as tools and tests evaluate). Run
// with `go test ./prune -run '^$' -bench Evaluate -benchmem`.
func BenchmarkEvaluate(b *testing.B) {
	cols, units := benchUnits()
	for _, q := range benchQueries {
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

// BenchmarkEvaluateBatch is BenchmarkEvaluate as the planner evaluates
// files: the 1,024 units as one column-major Statistics, decided in one
// pass (8-byte bounds as words, as the catalog offers them). ns/unit is
// the per-file cost.
func BenchmarkEvaluateBatch(b *testing.B) {
	cols, units := benchUnits()
	s := &memStats{n: len(units)}
	for k, c := range cols {
		col := make([]*stats.Column, len(units))
		for i := range units {
			col[i] = units[i][c.ID]
		}
		s.ids, s.cols = append(s.ids, cols[k].ID), append(s.cols, newMemColumn(col))
	}
	for _, q := range benchQueries {
		b.Run(q, func(b *testing.B) {
			bound, err := expr.Compile(q, cols)
			if err != nil {
				b.Fatal(err)
			}
			r := compile(bound.Pred).newRun()
			out := make([]Result, len(units))
			b.ReportAllocs()
			for b.Loop() {
				r.eval(s, 0, len(units), nil, out)
			}
			if !slices.Contains(out, Skip) {
				b.Fatal("nothing skipped: the fixture does not exercise the predicate")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(units)), "ns/unit")
		})
	}
}
