package stats

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// unitOf is the statistics of a unit holding vals (nil is NULL), with
// everything known, bounds exact.
func unitOf(vals []*byte) Column {
	st := Column{RowCount: int64(len(vals)), NullCount: Known[int64](0), ValueCount: Known[int64](0),
		ContainsNull: Known(false), ContainsNaN: Known(false)}
	for _, v := range vals {
		if v == nil {
			st.NullCount.V++
			st.ContainsNull.V = true
			continue
		}
		st.ValueCount.V++
		b := []byte{*v}
		if !st.Min.Known || bytes.Compare(b, st.Min.V) < 0 {
			st.Min = Known(b)
		}
		if !st.Max.Known || bytes.Compare(b, st.Max.V) > 0 {
			st.Max = Known(b)
		}
	}
	st.MinIsExact, st.MaxIsExact = st.Min.Known, st.Max.Known
	return st
}

// TestMergeIsTheStatsOfTheUnion: merging the statistics of row groups
// gives the statistics of the rows they hold together; forgetting any
// input statistic makes the merged one unknown, never wrong.
func TestMergeIsTheStatsOfTheUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var units []Column
		var all []*byte
		for range 1 + r.IntN(4) {
			var vals []*byte
			for range r.IntN(5) {
				if r.IntN(3) == 0 {
					vals = append(vals, nil)
				} else {
					v := byte(r.IntN(8))
					vals = append(vals, &v)
				}
			}
			all = append(all, vals...)
			units = append(units, unitOf(vals))
		}
		want := unitOf(all)
		got := Merge(units)
		if got.RowCount != want.RowCount || got.NullCount != want.NullCount || got.ValueCount != want.ValueCount ||
			got.ContainsNull != want.ContainsNull || got.Min.Known != want.Min.Known || got.Max.Known != want.Max.Known ||
			!bytes.Equal(got.Min.V, want.Min.V) || !bytes.Equal(got.Max.V, want.Max.V) || got.MinIsExact != want.MinIsExact {
			t.Fatalf("merge of %+v\n got  %+v\n want %+v", units, got, want)
		}
		// Forget something in one unit: the merge may know less, never
		// something false.
		k := r.IntN(len(units))
		units[k].NullCount, units[k].Min = Maybe[int64]{}, Maybe[[]byte]{}
		got = Merge(units)
		if got.NullCount.Known && len(units) > 0 {
			t.Fatalf("null count known though one unit's is not: %+v", got)
		}
		if got.Min.Known && (!want.Min.Known || bytes.Compare(got.Min.V, want.Min.V) > 0) {
			t.Fatalf("min %v above the true min %v", got.Min, want.Min)
		}
		if HoldsNoValue(&units[k]) {
			continue
		}
		if got.Min.Known {
			t.Fatalf("min known though a unit holding values has none: %+v", got)
		}
	}
}
