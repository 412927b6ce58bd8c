// Package stats holds the statistics of one column in one unit of data (a
// file, a row group, a page) and their algebra: how units fold into a
// bigger unit, and what a unit's statistics prove on their own.
//
// Bounds are order-preserving encodings of the column's type (package
// types), so every comparison here is bytes.Compare whatever the type.
// Every statistic may be unknown (Maybe): an unknown statistic is never
// read as zero or false, and a fold with an unknown input is unknown.
//
// Everything that reads or writes statistics (the Parquet metadata reader,
// the catalog, the planner) uses these types; this package imports only the
// standard library.
package stats

import "bytes"

// Maybe is a value that may be unknown.
type Maybe[T any] struct {
	V     T
	Known bool
}

// Known wraps a known value.
func Known[T any](v T) Maybe[T] { return Maybe[T]{V: v, Known: true} }

// Column is the statistics of one column in one unit. Min and Max bound
// every non-NULL, non-NaN value; MinIsExact/MaxIsExact say a value equal
// to the bound is present.
type Column struct {
	Min, Max      Maybe[[]byte]
	NullCount     Maybe[int64]
	ValueCount    Maybe[int64] // non-NULL values
	ContainsNull  Maybe[bool]
	ContainsNaN   Maybe[bool]
	DistinctCount Maybe[int64]
	RowCount      int64
	// ColumnSizeBytes is the column's compressed size in the unit.
	ColumnSizeBytes int64
	MinIsExact      bool
	MaxIsExact      bool
	ExtraStats      string // JSON
}

// HoldsNoValue reports whether a unit is known to hold no value at all, NULL
// aside (no NaN either): its missing bounds then mean nothing, and a fold
// of bounds skips it instead of becoming unknown.
func HoldsNoValue(st *Column) bool {
	if st.ValueCount.Known && st.ValueCount.V == 0 {
		return true
	}
	return st.NullCount.Known && st.RowCount > 0 && st.NullCount.V == st.RowCount
}

// NoNulls reports whether a unit is known to hold no NULL.
func NoNulls(st *Column) bool {
	return (st.NullCount.Known && st.NullCount.V == 0) || (st.ContainsNull.Known && !st.ContainsNull.V)
}

// ContainsNull reads a unit's null flag, from its null count when the flag
// itself is missing.
func ContainsNull(st *Column) Maybe[bool] {
	if st.ContainsNull.Known {
		return st.ContainsNull
	}
	if st.NullCount.Known {
		return Known(st.NullCount.V > 0)
	}
	return Maybe[bool]{}
}

// Or merges two "contains" flags: true if either is true, false only when
// both are known false, else unknown.
func Or(a, b Maybe[bool]) Maybe[bool] {
	switch {
	case (a.Known && a.V) || (b.Known && b.V):
		return Known(true)
	case a.Known && b.Known:
		return Known(false)
	}
	return Maybe[bool]{}
}

// Add sums two counts; unknown if either is.
func Add(a, b Maybe[int64]) Maybe[int64] {
	if !a.Known || !b.Known {
		return Maybe[int64]{}
	}
	return Known(a.V + b.V)
}

// Lower and Higher are the want argument of MergeBound.
const (
	Lower  = -1
	Higher = +1
)

// MergeBound keeps the lower (want Lower) or higher (want Higher) of two
// bounds; an unknown bound makes the result unknown. Equal bounds are exact
// when either is.
func MergeBound(a Maybe[[]byte], aExact bool, b Maybe[[]byte], bExact bool, want int) (Maybe[[]byte], bool) {
	if !a.Known || !b.Known {
		return Maybe[[]byte]{}, false
	}
	switch c := bytes.Compare(b.V, a.V) * want; {
	case c > 0:
		return b, bExact
	case c == 0:
		return a, aExact || bExact
	}
	return a, aExact
}

// Merge folds the statistics of consecutive units (row groups) into those
// of the unit holding them all (the file): bounds need every unit's bound,
// counts need every unit's count. A unit known to hold no value (every row
// NULL, or no rows) has no bounds to contribute and does not make the
// merged bounds unknown; distinct counts do not add up and become unknown.
func Merge(units []Column) Column {
	if len(units) == 0 {
		return Column{}
	}
	out := units[0]
	for _, u := range units[1:] {
		out.RowCount += u.RowCount
		out.ColumnSizeBytes += u.ColumnSizeBytes
		out.NullCount = Add(out.NullCount, u.NullCount)
		out.ValueCount = Add(out.ValueCount, u.ValueCount)
		out.ContainsNull = Or(out.ContainsNull, u.ContainsNull)
		out.ContainsNaN = Or(out.ContainsNaN, u.ContainsNaN)
		out.DistinctCount = Maybe[int64]{}
	}
	first := true
	for i := range units {
		u := &units[i]
		if HoldsNoValue(u) {
			continue
		}
		if first {
			out.Min, out.Max, out.MinIsExact, out.MaxIsExact = u.Min, u.Max, u.MinIsExact, u.MaxIsExact
			first = false
			continue
		}
		out.Min, out.MinIsExact = MergeBound(out.Min, out.MinIsExact, u.Min, u.MinIsExact, Lower)
		out.Max, out.MaxIsExact = MergeBound(out.Max, out.MaxIsExact, u.Max, u.MaxIsExact, Higher)
	}
	return out
}

// Facts is what one unit's statistics prove on their own, one bit each: the
// form in which a check over many units reads them (the catalog keeps them
// per file beside the bounds). The zero value is a unit without statistics.
type Facts uint8

const (
	FactStats    Facts = 1 << iota // the unit has statistics for the column
	FactMin                        // Min is known
	FactMax                        // Max is known
	FactMinExact                   // MinIsExact
	FactMaxExact                   // MaxIsExact
	FactNoNull                     // NoNulls
	FactNoNaN                      // ContainsNaN is known false
	FactNoValue                    // HoldsNoValue
)

// FactsOf reads a unit's facts from its statistics (nil: none).
func FactsOf(st *Column) Facts {
	if st == nil {
		return 0
	}
	f := FactStats
	if st.Min.Known {
		f |= FactMin
	}
	if st.Max.Known {
		f |= FactMax
	}
	if st.MinIsExact {
		f |= FactMinExact
	}
	if st.MaxIsExact {
		f |= FactMaxExact
	}
	if NoNulls(st) {
		f |= FactNoNull
	}
	if st.ContainsNaN.Known && !st.ContainsNaN.V {
		f |= FactNoNaN
	}
	if HoldsNoValue(st) {
		f |= FactNoValue
	}
	return f
}

// BoundArray holds one side (the mins or the maxes) of many units' bounds
// in one array, as a column-major store keeps them: unit i's bound is
// Data[Off[i]:Off[i+1]], or with Off nil Data[i*W:(i+1)*W], every bound
// then W bytes wide. Where a unit's bound is unknown (its Facts say so),
// At returns whatever is stored there.
type BoundArray struct {
	Data []byte
	Off  []uint64
	W    int
}

// At is unit i's bound.
func (a *BoundArray) At(i int) []byte {
	if a.Off == nil {
		return a.Data[i*a.W : (i+1)*a.W : (i+1)*a.W]
	}
	return a.Data[a.Off[i]:a.Off[i+1]:a.Off[i+1]]
}
