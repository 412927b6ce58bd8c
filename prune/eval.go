// Package prune decides, from statistics alone, which units of a table
// (files, row groups) cannot hold a row matching a predicate.
//
// An evaluator is built once per bound predicate (package expr) and is one
// closure per predicate node; evaluating a unit asks it for the unit's
// column stats and answers:
//
//	Skip      no row of the unit can make the predicate TRUE: do not read it
//	Maybe     some row may: read it and filter
//	AllMatch  every row makes it TRUE (exact bounds, no NULL, no NaN)
//
// Semantics are DuckDB's: NULL compares to nothing (only IS NULL matches
// it); NaN is greater than +inf and equal to itself, so x > c, x >= c,
// x <> c and x = NaN keep any unit that may hold a NaN, while x < c never
// matches one; -0.0 = +0.0 (the encodings are equal). A missing, partial or
// undecodable statistic means Maybe, never an error and never a skip.
//
// PlanTable works from the top down:
//
//	files       the catalog's cached column-major stats (catalog.ColumnBounds);
//	            a prefilter skips runs of files for AND/OR trees of
//	            comparisons, then the evaluator decides the rest, in parallel
//	            chunks; = and IN also ask the membership filters
//	row groups  stored per-row-group stats of the files kept
//	bloom/pages the file's own bloom filters and page index, for row groups
//	            still undecided and large enough (Options.IndexMinRows)
package prune

import (
	"bytes"

	"rocklake/expr"
	"rocklake/kv"
	"rocklake/stats"
	"rocklake/types"
)

// Result is what a unit's stats say about a predicate.
type Result uint8

const (
	Maybe Result = iota
	Skip
	AllMatch
)

func (r Result) String() string { return [...]string{"maybe", "skip", "all-match"}[r] }

// Stats returns a unit's statistics for a column id, or nil when the unit
// has none for it.
type Stats func(colID int64) *stats.Column

// Unit is what an evaluator may ask of a unit: its stats, and optionally
// whether a bloom filter proves a value (encoded in the column's type)
// absent from it.
type Unit struct {
	Stats  Stats
	Absent func(colID int64, value []byte) bool
}

// Evaluator answers for one unit.
type Evaluator func(u *Unit) Result

// StatsOnly wraps a stats function as a Unit.
func StatsOnly(st Stats) *Unit { return &Unit{Stats: st} }

// Compile builds the evaluator of a bound predicate.
func Compile(p expr.Pred) Evaluator {
	switch p := p.(type) {
	case *expr.Const:
		if p.Value {
			return func(*Unit) Result { return AllMatch }
		}
		return func(*Unit) Result { return Skip }
	case *expr.And:
		subs := compileAll(p.Args)
		return func(u *Unit) Result {
			all := true
			for _, e := range subs {
				switch e(u) {
				case Skip:
					return Skip
				case Maybe:
					all = false
				}
			}
			if all {
				return AllMatch
			}
			return Maybe
		}
	case *expr.Or:
		subs := compileAll(p.Args)
		return func(u *Unit) Result {
			skip := true
			for _, e := range subs {
				switch e(u) {
				case AllMatch:
					return AllMatch
				case Maybe:
					skip = false
				}
			}
			if skip {
				return Skip
			}
			return Maybe
		}
	case *expr.NullTest:
		id := p.Col.ID
		return func(u *Unit) Result { return nullTest(u.Stats(id), p.Not) }
	case *expr.Cmp:
		return compileCmp(p)
	case *expr.Prefix:
		return compilePrefix(p)
	case *expr.IsNaN:
		id := p.Col.ID
		return func(u *Unit) Result {
			st := u.Stats(id)
			switch {
			case st == nil:
				return Maybe
			case stats.HoldsNoValue(st):
				return Skip
			case !p.Not && st.ContainsNaN.Known && !st.ContainsNaN.V:
				return Skip
			case p.Not && st.ContainsNaN.Known && !st.ContainsNaN.V && noNulls(st):
				return AllMatch
			}
			return Maybe
		}
	}
	return func(*Unit) Result { return Maybe }
}

func compileAll(ps []expr.Pred) []Evaluator {
	out := make([]Evaluator, len(ps))
	for i, p := range ps {
		out[i] = Compile(p)
	}
	return out
}

func noNulls(st *stats.Column) bool {
	return (st.NullCount.Known && st.NullCount.V == 0) || (st.ContainsNull.Known && !st.ContainsNull.V)
}

func nullTest(st *stats.Column, not bool) Result {
	if st == nil {
		return Maybe
	}
	empty := stats.HoldsNoValue(st)
	if not { // IS NOT NULL
		switch {
		case empty:
			return Skip
		case noNulls(st):
			return AllMatch
		}
		return Maybe
	}
	switch {
	case noNulls(st) && st.RowCount > 0:
		return Skip
	case empty && st.ValueCount.Known && st.ValueCount.V == 0:
		return AllMatch
	}
	return Maybe
}

// mayHoldNaN is true unless the stats say the unit holds no NaN.
func mayHoldNaN(c *expr.Column, st *stats.Column) bool {
	k := c.Type.Kind
	if k != types.KindFloat && k != types.KindDouble {
		return false
	}
	return !(st.ContainsNaN.Known && !st.ContainsNaN.V)
}

func compileCmp(p *expr.Cmp) Evaluator {
	id, v, op := p.Col.ID, p.Value, p.Op
	if p.NaN {
		return func(u *Unit) Result {
			st := u.Stats(id)
			if st == nil {
				return Maybe
			}
			if stats.HoldsNoValue(st) {
				return Skip
			}
			nan := mayHoldNaN(p.Col, st)
			switch op {
			case expr.OpEq, expr.OpGe: // only NaN is = or >= NaN
				if !nan {
					return Skip
				}
			case expr.OpGt: // nothing is above NaN
				return Skip
			}
			return Maybe
		}
	}
	return func(u *Unit) Result {
		st := u.Stats(id)
		if st == nil {
			return Maybe
		}
		if stats.HoldsNoValue(st) {
			return Skip // only NULLs: no comparison is TRUE
		}
		nan := mayHoldNaN(p.Col, st)
		min, max := st.Min, st.Max
		cmpMin := func() int { return bytes.Compare(min.V, v) } // min vs v
		cmpMax := func() int { return bytes.Compare(max.V, v) }
		// allOK says every row satisfies the comparison, given the check
		// on exact bounds that follows.
		allOK := p.Exact && noNulls(st) && !nan
		switch op {
		case expr.OpEq:
			if (min.Known && cmpMin() > 0) || (max.Known && cmpMax() < 0) {
				return Skip
			}
			if u.Absent != nil && u.Absent(id, v) {
				return Skip // a bloom filter says v is not there
			}
			if allOK && min.Known && max.Known && st.MinIsExact && st.MaxIsExact && cmpMin() == 0 && cmpMax() == 0 {
				return AllMatch
			}
		case expr.OpNe:
			if !nan && min.Known && max.Known && cmpMin() == 0 && cmpMax() == 0 {
				return Skip // every value equals v
			}
			if allOK && ((min.Known && st.MinIsExact && cmpMin() > 0) || (max.Known && st.MaxIsExact && cmpMax() < 0)) {
				return AllMatch
			}
		case expr.OpLt:
			if min.Known && cmpMin() >= 0 {
				return Skip // NaN is never below v
			}
			if allOK && max.Known && st.MaxIsExact && cmpMax() < 0 {
				return AllMatch
			}
		case expr.OpLe:
			if min.Known && cmpMin() > 0 {
				return Skip
			}
			if allOK && max.Known && st.MaxIsExact && cmpMax() <= 0 {
				return AllMatch
			}
		case expr.OpGt:
			if !nan && max.Known && cmpMax() <= 0 {
				return Skip // a NaN would be above v
			}
			if allOK && min.Known && st.MinIsExact && cmpMin() > 0 {
				return AllMatch
			}
		case expr.OpGe:
			if !nan && max.Known && cmpMax() < 0 {
				return Skip
			}
			if allOK && min.Known && st.MinIsExact && cmpMin() >= 0 {
				return AllMatch
			}
		}
		return Maybe
	}
}

// compilePrefix: the strings starting with P are exactly [P, PrefixEnd(P)).
func compilePrefix(p *expr.Prefix) Evaluator {
	id, pre := p.Col.ID, p.Prefix
	end := kv.PrefixEnd(pre) // nil: no upper end (P is all 0xff, or empty)
	return func(u *Unit) Result {
		st := u.Stats(id)
		if st == nil {
			return Maybe
		}
		if stats.HoldsNoValue(st) {
			return Skip
		}
		min, max := st.Min, st.Max
		below := max.Known && bytes.Compare(max.V, pre) < 0                // every value < P
		above := min.Known && end != nil && bytes.Compare(min.V, end) >= 0 // every value ≥ end
		inside := min.Known && max.Known && bytes.Compare(min.V, pre) >= 0 && (end == nil || bytes.Compare(max.V, end) < 0)
		if !p.Not {
			switch {
			case below || above:
				return Skip
			case p.Exact && inside && noNulls(st):
				return AllMatch
			}
			return Maybe
		}
		switch {
		case inside:
			return Skip // every value has the prefix
		case p.Exact && (below || above) && noNulls(st):
			return AllMatch
		}
		return Maybe
	}
}
