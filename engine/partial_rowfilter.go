package engine

import (
	"database/sql/driver"
	"math"

	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// rowFilter drops, before the Appender, decoded rows that the query's
// pushed conjuncts cannot match. Each row is a unit of its own for the
// planner's evaluator — the one that skipped the file's other row groups
// and pages — with min = max = its value, exact: a row it drops is one a
// skipped page holding only that row would have dropped too, and DuckDB
// still filters every row handed over. Only columns whose type in the
// file is the table's take part (the value decoded is the value compared,
// no cast between); any other column in the predicate leaves the filter
// out.
type rowFilter struct {
	eval   prune.Evaluator
	preds  []int   // the page columns the predicate reads
	ids    []int64 // their column ids
	codecs []*types.Codec
	st     []stats.Column
	buf    [][]byte
	unit   prune.Unit
}

func newRowFilter(b *expr.Bound, pcs []pageColumn) *rowFilter {
	if b == nil || b.Pred == nil || len(b.Columns) == 0 {
		return nil
	}
	rf := &rowFilter{}
	for _, c := range b.Columns {
		if c.Variant != nil || c.Codec == nil || c.Parent.Known {
			return nil
		}
		k := -1
		for i, pc := range pcs {
			if pc.id == c.ID {
				k = i
			}
		}
		if k < 0 || !pcs[k].fileT.Equal(c.Type) {
			return nil
		}
		rf.preds = append(rf.preds, k)
		rf.ids = append(rf.ids, c.ID)
		rf.codecs = append(rf.codecs, c.Codec)
	}
	rf.eval = prune.Compile(b.Pred)
	rf.st = make([]stats.Column, len(rf.preds))
	rf.buf = make([][]byte, len(rf.preds))
	rf.unit.Stats = func(id int64) *stats.Column {
		for j, x := range rf.ids {
			if x == id {
				return &rf.st[j]
			}
		}
		return nil
	}
	return rf
}

// keep says whether row r of vals (by page column; only the predicate's
// columns are read) may match.
func (rf *rowFilter) keep(vals [][]driver.Value, r int) bool {
	for j, k := range rf.preds {
		st := stats.Column{RowCount: 1}
		v := vals[k][r]
		if v == nil {
			st.NullCount, st.ValueCount = stats.Known[int64](1), stats.Known[int64](0)
			st.ContainsNull, st.ContainsNaN = stats.Known(true), stats.Known(false)
			rf.st[j] = st
			continue
		}
		st.NullCount, st.ValueCount, st.ContainsNull = stats.Known[int64](0), stats.Known[int64](1), stats.Known(false)
		tv, nan, ok := typedValue(v)
		switch {
		case !ok:
			return true
		case nan:
			// NaN is never a bound: no bounds, the NaN flag set.
			st.ContainsNaN = stats.Known(true)
		default:
			enc, err := rf.codecs[j].Append(rf.buf[j][:0], tv)
			if err != nil {
				return true
			}
			rf.buf[j] = enc
			st.ContainsNaN = stats.Known(false)
			st.Min, st.Max = stats.Known(enc), stats.Known(enc)
			st.MinIsExact, st.MaxIsExact = true, true
		}
		rf.st[j] = st
	}
	return rf.eval(&rf.unit) != prune.Skip
}

// typedValue is an Appender value (as appendValues made it) as a
// types.Value; nan says it is a float NaN.
func typedValue(v driver.Value) (tv types.Value, nan, ok bool) {
	switch x := v.(type) {
	case int8:
		return types.IntValue(int64(x)), false, true
	case int16:
		return types.IntValue(int64(x)), false, true
	case int32:
		return types.IntValue(int64(x)), false, true
	case int64:
		return types.IntValue(x), false, true
	case uint8:
		return types.UintValue(uint64(x)), false, true
	case uint16:
		return types.UintValue(uint64(x)), false, true
	case uint32:
		return types.UintValue(uint64(x)), false, true
	case uint64:
		return types.UintValue(x), false, true
	case float32:
		return types.FloatValue(float64(x)), math.IsNaN(float64(x)), true
	case float64:
		return types.FloatValue(x), math.IsNaN(x), true
	case bool:
		return types.BoolValue(x), false, true
	case string:
		return types.StringValue(x), false, true
	}
	return types.Value{}, false, false
}
