package prune

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
	"github.com/rocklake/rocklake/types/typestest"
)

// memStats is a Statistics held in memory, for the evaluator's own tests:
// words are offered as the catalog offers them, membership only where a
// test gives it.
type memStats struct {
	n    int
	ids  []int64
	cols []ColumnStats
}

func (s *memStats) Units() int { return s.n }
func (s *memStats) Column(id int64) ColumnStats {
	for k, x := range s.ids {
		if x == id {
			return s.cols[k]
		}
	}
	return nil
}

type memColumn struct {
	units    []*stats.Column
	min, max stats.BoundArray
	facts    []stats.Facts
}

// newMemColumn lays units out as the catalog does: each side's bounds in
// one array, fixed-width where every known bound has one width, with
// offsets otherwise, and none for a side no unit has a bound on. Where a
// unit's bound is unknown the array holds garbage, which the evaluator
// must not read as a bound.
func newMemColumn(units []*stats.Column) *memColumn {
	c := &memColumn{units: units, facts: make([]stats.Facts, len(units))}
	for i, st := range units {
		c.facts[i] = stats.FactsOf(st)
	}
	pack := func(side func(*stats.Column) stats.Maybe[[]byte]) stats.BoundArray {
		w := -1
		for _, st := range units {
			if st == nil || !side(st).Known {
				continue
			}
			switch n := len(side(st).V); {
			case w == -1:
				w = n
			case w != n:
				w = -2
			}
		}
		var a stats.BoundArray
		switch {
		case w == -1:
			return a
		case w >= 0:
			a.W = w
		default:
			a.Off = []uint64{0}
		}
		for _, st := range units {
			b := []byte("\xa5stale bound\xff")
			if st != nil && side(st).Known {
				b = side(st).V
			}
			if a.Off == nil {
				b = append(append([]byte(nil), b...), make([]byte, w)...)[:w]
			}
			a.Data = append(a.Data, b...)
			if a.Off != nil {
				a.Off = append(a.Off, uint64(len(a.Data)))
			}
		}
		return a
	}
	c.min = pack(func(st *stats.Column) stats.Maybe[[]byte] { return st.Min })
	c.max = pack(func(st *stats.Column) stats.Maybe[[]byte] { return st.Max })
	return c
}

func (c *memColumn) Fill(i int, st *stats.Column) bool {
	if c.units[i] == nil {
		return false
	}
	*st = *c.units[i]
	return true
}

func (c *memColumn) BoundArrays() (stats.BoundArray, stats.BoundArray, []stats.Facts) {
	return c.min, c.max, c.facts
}

// memMember adds membership: absent(i, v) must be sound.
type memMember struct {
	*memColumn
	absent func(i int, v []byte) bool
}

func (c memMember) Absent(i int, v []byte) bool { return c.absent(i, v) }

// memTypes: the suite's column types; "varchar8" is varchar whose values
// are all 8 bytes, so that string bounds, too, may be read as words.
var memTypes = []string{"int64", "float64", "float32", "timestamp", "int32", "date", "uint64", "decimal(18,3)",
	"decimal(38,10)", "varchar", "varchar8", "uuid", "boolean", "int8"}

// memTable draws a column of data: values from a small pool (so that
// bounds meet and equalities hit), NULLs, NaNs, sorted or not.
func memTable(r *rand.Rand, typ string, name string, rows int) *rcol {
	t := types.MustParseType(typ)
	if typ == "varchar8" {
		t = types.MustParseType("varchar")
	}
	codec, _ := types.CodecFor(t)
	c := &rcol{name: name, typ: t, codec: codec, vals: make([]*types.Value, rows)}
	pool := make([]types.Value, 2+r.IntN(12))
	for i := range pool {
		if typ == "varchar8" {
			b := make([]byte, 8)
			for j := range b {
				b[j] = "ab\x00\xffz"[r.IntN(5)]
			}
			pool[i] = types.StringValue(string(b))
			continue
		}
		pool[i] = typestest.Random(r, t)
	}
	isF := t.Kind == types.KindFloat || t.Kind == types.KindDouble
	if isF {
		pool = append(pool, types.FloatValue(0), types.FloatValue(math.Copysign(0, -1)), types.FloatValue(math.Inf(1)), types.FloatValue(math.Inf(-1)))
	}
	nulls := []float64{0, 0, 0.3, 1, r.Float64()}[r.IntN(5)]
	for i := range c.vals {
		if r.Float64() < nulls {
			continue
		}
		v := pool[r.IntN(len(pool))]
		if isF && r.IntN(10) == 0 {
			v = types.FloatValue(math.NaN())
		}
		c.vals[i] = &v
	}
	if r.IntN(2) == 0 {
		sortVals(c)
	}
	return c
}

func sortVals(c *rcol) {
	vals := c.vals
	for i := 1; i < len(vals); i++ {
		for j := i; j > 0 && less(c, vals[j], vals[j-1]); j-- {
			vals[j], vals[j-1] = vals[j-1], vals[j]
		}
	}
}

func less(c *rcol, a, b *types.Value) bool {
	if a == nil || b == nil {
		return a != nil && b == nil
	}
	return compare(c, a, b) < 0
}

// memUnitStats derives a unit's statistics from its rows, then weakens
// them as writers and readers do: bounds widened or dropped, exactness
// lost, counts and flags unknown, or no statistics at all.
func memUnitStats(r *rand.Rand, c *rcol, first, end int) *stats.Column {
	if r.IntN(15) == 0 {
		return nil
	}
	st := &stats.Column{RowCount: int64(end - first)}
	var nulls, values int64
	nan := false
	var mn, mx []byte
	some := false
	for _, v := range c.vals[first:end] {
		if v == nil {
			nulls++
			continue
		}
		values++
		if isNaNValue(c, v) {
			nan = true
			continue
		}
		e, _ := c.codec.Encode(*v)
		if !some || bytes.Compare(e, mn) < 0 {
			mn = e
		}
		if !some || bytes.Compare(e, mx) > 0 {
			mx = e
		}
		some = true
	}
	if some {
		st.Min, st.Max, st.MinIsExact, st.MaxIsExact = stats.Known(mn), stats.Known(mx), true, true
	}
	st.NullCount, st.ValueCount, st.ContainsNull = stats.Known(nulls), stats.Known(values), stats.Known(nulls > 0)
	if c.typ.Kind == types.KindFloat || c.typ.Kind == types.KindDouble {
		st.ContainsNaN = stats.Known(nan)
	} else if r.IntN(2) == 0 {
		st.ContainsNaN = stats.Known(false)
	}
	widen := func(b []byte, lower bool) []byte {
		// Another value of the column, on the right side of b.
		for range 4 {
			v := c.vals[r.IntN(len(c.vals))]
			if v == nil || isNaNValue(c, v) {
				continue
			}
			e, _ := c.codec.Encode(*v)
			if d := bytes.Compare(e, b); lower && d <= 0 || !lower && d >= 0 {
				return e
			}
		}
		if lower && len(b) > 1 && c.typ.Kind == types.KindVarchar {
			return b[:r.IntN(len(b))] // a truncated lower bound
		}
		return b
	}
	if st.Min.Known {
		switch r.IntN(8) {
		case 0:
			st.Min, st.MinIsExact = stats.Maybe[[]byte]{}, false
		case 1:
			st.Min.V, st.MinIsExact = widen(st.Min.V, true), false
		case 2:
			st.MinIsExact = false
		}
		switch r.IntN(8) {
		case 0:
			st.Max, st.MaxIsExact = stats.Maybe[[]byte]{}, false
		case 1:
			st.Max.V, st.MaxIsExact = widen(st.Max.V, false), false
		case 2:
			st.MaxIsExact = false
		}
	}
	if r.IntN(5) == 0 {
		st.NullCount = stats.Maybe[int64]{}
	}
	if r.IntN(5) == 0 {
		st.ValueCount = stats.Maybe[int64]{}
	}
	if r.IntN(4) == 0 {
		st.ContainsNull = stats.Maybe[bool]{}
	}
	if r.IntN(5) == 0 {
		st.ContainsNaN = stats.Maybe[bool]{}
	}
	return st
}

// evalChecks counts what the evaluator suites checked.
type evalChecks struct {
	units, wordUnits, byteUnits, agree, oneUnit, reference, skips, allMatch int
}

// TestEvaluatorOnRandomStats: on random units (data drawn, statistics
// derived from it and weakened), for random predicates,
//   - the word path, the bytes path and the scalar path give the same
//     Result for every unit, and so does the one-unit Evaluator (Compile);
//   - every Skip holds no row for which the predicate is TRUE, every
//     AllMatch no row for which it is not (the row-by-row reference);
//
// with and without a membership filter, with 8-byte bounds and others.
func TestEvaluatorOnRandomStats(t *testing.T) {
	seed := *seedArg
	if seed == 0 {
		seed = 20261130
	}
	target := 200000
	if *longRun > 0 {
		target = *longRun
	}
	r := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	var ck evalChecks
	for round := 0; ck.units < target; round++ {
		ncols := 1 + r.IntN(3)
		rows, unitRows, preds := 400, 12, 30
		if round%10 == 9 {
			rows, unitRows, preds = 6000, 4, 3 // more units than a batch holds
		}
		var rcols []*rcol
		var ccols []catalog.Column
		for k := range ncols {
			typ := memTypes[r.IntN(len(memTypes))]
			c := memTable(r, typ, fmt.Sprintf("c%d", k), rows)
			rcols = append(rcols, c)
			ccols = append(ccols, catalog.Column{ID: int64(k + 1), Name: c.name, Type: c.typ, Path: []string{c.name}})
		}
		// Units: consecutive row ranges, some empty.
		var firsts []int
		for at := 0; at < rows; {
			firsts = append(firsts, at)
			at += r.IntN(unitRows)
		}
		firsts = append(firsts, rows)
		n := len(firsts) - 1
		s := &memStats{n: n}
		for k, c := range rcols {
			units := make([]*stats.Column, n)
			for i := range units {
				units[i] = memUnitStats(r, c, firsts[i], firsts[i+1])
			}
			var col ColumnStats = newMemColumn(units)
			if r.IntN(3) == 0 {
				// A sound membership filter on some units.
				has := make([]bool, n)
				for i := range has {
					has[i] = r.IntN(2) == 0
				}
				col = memMember{col.(*memColumn), func(i int, v []byte) bool {
					if !has[i] {
						return false
					}
					for _, x := range c.vals[firsts[i]:firsts[i+1]] {
						if x != nil && !isNaNValue(c, x) {
							if e, _ := c.codec.Encode(*x); bytes.Equal(e, v) {
								return false
							}
						}
					}
					return true
				}}
			}
			s.ids, s.cols = append(s.ids, ccols[k].ID), append(s.cols, col)
		}
		for range preds {
			p := genPred(r, rcols, 2)
			text := p.sql()
			b, err := expr.Compile(text, ccols)
			if err != nil {
				t.Fatalf("seed %d round %d: %s: %v", seed, round, text, err)
			}
			checkUnits(t, &ck, b, s, func(i int) (refPred, int, int) { return p, firsts[i], firsts[i+1] }, text, fmt.Sprintf("seed %d round %d", seed, round))
		}
	}
	t.Logf("%d units x predicates (comparisons decided: %d from words, %d from bytes): %d word/bytes/scalar agreements, %d one-unit agreements, %d reference checks (%d skips, %d all-match)",
		ck.units, ck.wordUnits, ck.byteUnits, ck.agree, ck.oneUnit, ck.reference, ck.skips, ck.allMatch)
	if ck.wordUnits < ck.units/10 || ck.byteUnits < ck.units/10 || ck.skips == 0 || ck.allMatch == 0 {
		t.Errorf("the suite does not exercise the evaluator: %+v", ck)
	}
}

// checkUnits evaluates a bound predicate (text) over every unit of s with
// the fast paths (words, bytes) and without, and one unit at a time through
// Compile; they must agree, and each decided unit is checked against the
// reference over its rows [lo, hi) (unit).
func checkUnits(t *testing.T, ck *evalChecks, b *expr.Bound, s Statistics, unit func(i int) (p refPred, lo, hi int), text, where string) []Result {
	t.Helper()
	prog := compile(b.Pred)
	n := s.Units()
	// The planner's run (every fast path its columns offer), one with the
	// bytes path only, and one with the scalar path only.
	words, bytes, scalar := make([]Result, n), make([]Result, n), make([]Result, n)
	rw, rb, rs := prog.newRun(), prog.newRun(), prog.newRun()
	rb.fast, rs.fast = bytesPath, 0
	rw.eval(s, 0, n, nil, words)
	rb.eval(s, 0, n, nil, bytes)
	rs.eval(s, 0, n, nil, scalar)
	ck.wordUnits += rw.wordUnits
	ck.byteUnits += rb.byteUnits
	if rb.wordUnits+rs.wordUnits+rs.byteUnits != 0 {
		t.Fatalf("%s: a run took a path it was denied", where)
	}
	one := Compile(b.Pred)
	var st stats.Column
	for i := range n {
		ck.units++
		if words[i] != scalar[i] || bytes[i] != scalar[i] {
			t.Fatalf("%s: unit %d: word path %s, bytes path %s, scalar path %s\n  predicate: %s\n  bound: %s\n  stats: %s",
				where, i, words[i], bytes[i], scalar[i], text, b.Pred, unitText(s, b, i, &st))
		}
		ck.agree++
		u := &Unit{Stats: func(id int64) *stats.Column {
			c := s.Column(id)
			if c == nil {
				return nil
			}
			var x stats.Column
			if !c.Fill(i, &x) {
				return nil
			}
			return &x
		}, Absent: func(id int64, v []byte) bool {
			m, ok := s.Column(id).(Membership)
			return ok && m.Absent(i, v)
		}}
		if got := one(u); got != scalar[i] {
			t.Fatalf("%s: unit %d: one-unit evaluator %s, batch %s\n  predicate: %s\n  bound: %s", where, i, got, scalar[i], text, b.Pred)
		}
		ck.oneUnit++
		p, lo, hi := unit(i)
		checkReference(t, ck, words[i], p, lo, hi, func() string {
			return fmt.Sprintf("%s: unit %d rows [%d,%d)\n  predicate: %s\n  bound: %s\n  stats: %s", where, i, lo, hi, text, b.Pred, unitText(s, b, i, &st))
		})
	}
	return words
}

// checkReference checks one unit's Result against the reference over its
// rows [lo, hi).
func checkReference(t *testing.T, ck *evalChecks, res Result, p refPred, lo, hi int, what func() string) {
	t.Helper()
	switch res {
	case Skip:
		ck.skips++
		for row := lo; row < hi; row++ {
			if p.eval(row) == tTrue {
				t.Fatalf("UNSOUND SKIP: row %d matches\n%s", row, what())
			}
		}
	case AllMatch:
		ck.allMatch++
		for row := lo; row < hi; row++ {
			if p.eval(row) != tTrue {
				t.Fatalf("WRONG ALL-MATCH: row %d does not match (%v)\n%s", row, p.eval(row), what())
			}
		}
	}
	ck.reference++
}

func unitText(s Statistics, b *expr.Bound, i int, st *stats.Column) string {
	var out string
	for _, c := range b.Columns {
		col := s.Column(c.ID)
		if col == nil || !col.Fill(i, st) {
			out += fmt.Sprintf("\n    %s: none", c.Name)
			continue
		}
		out += fmt.Sprintf("\n    %s: min=%v/%x max=%v/%x exact=%v/%v nulls=%v values=%v cnull=%v cnan=%v rows=%d",
			c.Name, st.Min.Known, st.Min.V, st.Max.Known, st.Max.V, st.MinIsExact, st.MaxIsExact,
			st.NullCount, st.ValueCount, st.ContainsNull, st.ContainsNaN, st.RowCount)
	}
	return out
}
