package prune

import (
	"bytes"
	"encoding/binary"

	"rocklake/catalog"
	"rocklake/expr"
	"rocklake/types"
)

// A prefilter skips files in bulk before the per-file evaluator runs: for
// AND/OR trees of comparisons it tests the cached bounds of a whole chunk
// of files in tight loops (8-byte bounds as words), and only the files it
// cannot skip go to the evaluator. It is a subset of the evaluator: every
// file it skips, the evaluator skips too from the same stats (the
// soundness suite checks each such skip through prefilterCheck), so plans
// are unchanged, only faster. Anything else (IN, LIKE, NULL tests, NOT)
// never skips here. Bounds compare as big-endian words only when they and
// the literal are all 8 bytes, where word order is byte order.
//
// skip[j] is file lo+j; a prefilter only ever sets entries to true.
type prefilter func(lo int, skip []bool)

// compilePrefilter returns nil when the predicate has no part it handles.
func compilePrefilter(p expr.Pred, colIDs []int64, bounds []*catalog.ColumnBounds) prefilter {
	switch p := p.(type) {
	case *expr.Cmp:
		return cmpPrefilter(p, colIDs, bounds)
	case *expr.And:
		var subs []prefilter
		for _, a := range p.Args {
			if f := compilePrefilter(a, colIDs, bounds); f != nil {
				subs = append(subs, f)
			}
		}
		if len(subs) == 0 {
			return nil
		}
		// A file is skipped when any conjunct skips it.
		return func(lo int, skip []bool) {
			for _, f := range subs {
				f(lo, skip)
			}
		}
	case *expr.Or:
		subs := make([]prefilter, len(p.Args))
		for i, a := range p.Args {
			if subs[i] = compilePrefilter(a, colIDs, bounds); subs[i] == nil {
				return nil // a branch that never skips keeps every file
			}
		}
		// A file is skipped when every branch skips it.
		return func(lo int, skip []bool) {
			all := make([]bool, len(skip))
			subs[0](lo, all)
			tmp := make([]bool, len(skip))
			for _, f := range subs[1:] {
				clear(tmp)
				f(lo, tmp)
				for j := range all {
					all[j] = all[j] && tmp[j]
				}
			}
			for j, s := range all {
				if s {
					skip[j] = true
				}
			}
		}
	}
	return nil
}

func cmpPrefilter(p *expr.Cmp, colIDs []int64, bounds []*catalog.ColumnBounds) prefilter {
	if p.NaN || p.Op == expr.OpNe {
		return nil
	}
	var cb *catalog.ColumnBounds
	for k, id := range colIDs {
		if id == p.Col.ID {
			cb = bounds[k]
		}
	}
	if cb == nil {
		return nil
	}
	float := p.Col.Type.Kind == types.KindFloat || p.Col.Type.Kind == types.KindDouble
	op, v := p.Op, p.Value
	// The evaluator's Skip conditions for a comparison (compileCmp): a
	// NaN is above every number, so > and >= need the file proved NaN-free.
	switch op {
	case expr.OpGt, expr.OpGe:
		if float {
			base := cmpSkip(cb, op, v)
			return func(lo int, skip []bool) {
				for j := range skip {
					if !skip[j] && cb.NoNaN(lo+j) && base(lo+j) {
						skip[j] = true
					}
				}
			}
		}
	}
	base := cmpSkip(cb, op, v)
	if cb.Width8() && len(v) == 8 {
		return wordPrefilter(cb, op, binary.BigEndian.Uint64(v))
	}
	return func(lo int, skip []bool) {
		for j := range skip {
			if !skip[j] && base(lo+j) {
				skip[j] = true
			}
		}
	}
}

// cmpSkip says whether file i's bounds exclude every value satisfying
// "column op v" (NaN aside).
func cmpSkip(cb *catalog.ColumnBounds, op expr.Op, v []byte) func(i int) bool {
	switch op {
	case expr.OpEq:
		return func(i int) bool {
			if mn, ok := cb.MinBound(i); ok && bytes.Compare(mn, v) > 0 {
				return true
			}
			mx, ok := cb.MaxBound(i)
			return ok && bytes.Compare(mx, v) < 0
		}
	case expr.OpLt:
		return func(i int) bool { mn, ok := cb.MinBound(i); return ok && bytes.Compare(mn, v) >= 0 }
	case expr.OpLe:
		return func(i int) bool { mn, ok := cb.MinBound(i); return ok && bytes.Compare(mn, v) > 0 }
	case expr.OpGt:
		return func(i int) bool { mx, ok := cb.MaxBound(i); return ok && bytes.Compare(mx, v) <= 0 }
	case expr.OpGe:
		return func(i int) bool { mx, ok := cb.MaxBound(i); return ok && bytes.Compare(mx, v) < 0 }
	}
	return func(int) bool { return false }
}

// wordPrefilter is cmpSkip for 8-byte bounds (not floats), one loop per
// operator.
func wordPrefilter(cb *catalog.ColumnBounds, op expr.Op, v uint64) prefilter {
	return func(lo int, skip []bool) {
		hi := lo + len(skip)
		switch op {
		case expr.OpEq:
			for i := lo; i < hi; i++ {
				if skip[i-lo] {
					continue
				}
				if mn, ok := cb.MinWord(i); ok && mn > v {
					skip[i-lo] = true
				} else if mx, ok := cb.MaxWord(i); ok && mx < v {
					skip[i-lo] = true
				}
			}
		case expr.OpLt:
			for i := lo; i < hi; i++ {
				if !skip[i-lo] {
					if mn, ok := cb.MinWord(i); ok && mn >= v {
						skip[i-lo] = true
					}
				}
			}
		case expr.OpLe:
			for i := lo; i < hi; i++ {
				if !skip[i-lo] {
					if mn, ok := cb.MinWord(i); ok && mn > v {
						skip[i-lo] = true
					}
				}
			}
		case expr.OpGt:
			for i := lo; i < hi; i++ {
				if !skip[i-lo] {
					if mx, ok := cb.MaxWord(i); ok && mx <= v {
						skip[i-lo] = true
					}
				}
			}
		case expr.OpGe:
			for i := lo; i < hi; i++ {
				if !skip[i-lo] {
					if mx, ok := cb.MaxWord(i); ok && mx < v {
						skip[i-lo] = true
					}
				}
			}
		}
	}
}
