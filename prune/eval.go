// Package prune decides, from statistics alone, which units of a table
// (files, row groups, pieces of row groups) cannot hold a row matching a
// predicate.
//
// Every level is read through one interface, column-major (one column's
// statistics over all the level's units side by side), and decided by one
// evaluator:
//
//	Statistics    Units() n; Column(id) ColumnStats
//	ColumnStats   Fill(i, *stats.Column): unit i's min, max, null, value and
//	              row counts, exactness, NaN; and, found by type assertion:
//	  BoundArrays the bounds as arrays over the units (compared as
//	              machine words where 1 to 8 bytes wide)
//	  Membership  Absent(i, v): a filter proves v absent from unit i
//
//	level         units                       Statistics
//	files         a table's files             catalog.ColumnBounds (arrays),
//	                                          + FilterSet for = columns
//	row groups    a kept file's row groups    catalog.RowGroupStats,
//	                                          + the file's bloom filters
//	pages         a row group cut at every    the file's page index, else the
//	              page boundary of every      row group's stats, + its bloom
//	              predicate column            filters
//
// The evaluator is built once per bound predicate (package expr), one
// closure per predicate node, and decides a batch of units at a time under
// a selection: an AND stops evaluating a unit at its first Skip, an OR at
// its first AllMatch. A comparison states its conditions once (cmpResult);
// on a column offering BoundArrays it tests them in a tight loop through a
// table derived from that statement. For each unit the answer is
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
// Two kinds of column are not the table's own: a VARIANT sub-field cast to
// a type (expr.VariantRef), whose statistics are the catalog's per-file and
// per-row-group sub-field rows mapped through the cast (variant.go), and a
// GEOMETRY column under && or st_intersects_extent, decided from the
// extents in its stats rows' extra_stats. Neither has a page index, a bloom
// filter or a membership filter.
//
// PlanTable (PlanBound for a bound predicate) works from the top down:
//
//	files       the catalog's cached column-major stats, in parallel chunks;
//	            = (and IN) also ask the catalog's membership filters
//	row groups  stored per-row-group stats of the files kept
//	bloom/pages the file's own bloom filters and page index, for row groups
//	            still undecided and large enough (Options.IndexMinRows)
package prune

import (
	"bytes"
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// Result is what a unit's stats say about a predicate.
type Result uint8

const (
	Maybe Result = iota
	Skip
	AllMatch
)

func (r Result) String() string { return [...]string{"maybe", "skip", "all-match"}[r] }

// Statistics is what the evaluator reads: a set of units and, column by
// column, their statistics side by side.
type Statistics interface {
	// Units is the number of units; they are numbered from 0.
	Units() int
	// Column is a column's statistics over the units, nil when no unit has
	// any (every node reading the column is then Maybe).
	Column(id int64) ColumnStats
}

// ColumnStats is one column's statistics over a Statistics' units. It may
// also offer BoundArrays and Membership, found by type assertion.
type ColumnStats interface {
	// Fill writes unit i's statistics into st; false when the unit has
	// none. The bounds written may alias the implementation's memory.
	Fill(i int, st *stats.Column) bool
}

// BoundArrays is a ColumnStats whose bounds may be read as arrays over the
// units (stats.BoundArray), for comparisons that test many units in a
// tight loop without Fill: unit i's bounds are min.At(i) and max.At(i)
// where facts[i], stats.FactsOf(unit i's Fill), says they are known. Where
// both sides are fixed-width arrays of 1, 2, 4 or 8 bytes, the bounds are
// compared as machine words.
type BoundArrays interface {
	BoundArrays() (min, max stats.BoundArray, facts []stats.Facts)
}

// Membership is a ColumnStats that can prove a value absent from a unit
// (a bloom filter, the catalog's membership filter): Absent reports that
// unit i holds no value encoded as value (in the column's type).
type Membership interface {
	Absent(i int, value []byte) bool
}

// batchUnits is the number of units a node decides per call: large enough
// to amortise the call, small enough that selections and results stay in
// the first-level cache.
const batchUnits = 1024

// A node decides the units sel of a batch (offsets from run.base, in
// increasing order), writing out[k] for each k in sel; out has one entry
// per unit of the batch. It must not modify sel.
type node func(r *run, sel []int32, out []Result)

// program is a compiled predicate: a node tree and the columns its leaves
// read, by slot. It is immutable: runs evaluate it concurrently.
type program struct {
	root  node
	slots []int64 // column id of each slot
	uses  []int   // leaves reading each slot
	temps int     // And/Or nodes, each with its own scratch in a run
}

// run is one goroutine's evaluation of a program over a Statistics.
type run struct {
	p      *program
	fast   paths // the fast paths used where offered (tests turn them off)
	cols   []ColumnStats
	arr    []arrays
	member []Membership
	base   int
	st     stats.Column // Fill's scratch for a column one leaf reads
	filled []filled     // per slot, for a column several leaves read
	batch  uint32       // numbers the batches, for filled
	res    [][]Result   // per temp
	sels   [][]int32    // per temp
	sel    []int32      // the units of a batch to decide
	all    []int32      // 0, 1, 2, ...: every unit of a batch
	// wordUnits and byteUnits count the units comparisons decided on the
	// fast paths (tests read them to know the paths ran).
	wordUnits, byteUnits int
}

// filled holds a slot's Fill results for the units of the current batch,
// so that a unit's stats are filled once however many leaves read the
// column (BETWEEN, IN, a range and an IS NOT NULL): at[k] == run.batch
// when unit k's are here.
type filled struct {
	at    []uint32
	ok    []bool
	st    []stats.Column
	facts []stats.Facts
}

// paths are a comparison's fast paths over BoundArrays.
type paths uint8

const (
	wordPath  paths = 1 << iota // fixed-width bounds as machine words
	bytesPath                   // any bounds, as bytes
)

// arrays are a slot's BoundArrays for the run's Statistics.
type arrays struct {
	min, max stats.BoundArray
	facts    []stats.Facts
	ok       bool // offered, covering every unit
	w        int  // the word width (1, 2, 4, 8), or 0: no word path
}

func compile(p expr.Pred) *program {
	pr := &program{}
	pr.root = pr.node(p)
	return pr
}

func (pr *program) newRun() *run {
	n := len(pr.slots)
	r := &run{p: pr, fast: wordPath | bytesPath, cols: make([]ColumnStats, n), arr: make([]arrays, n), member: make([]Membership, n),
		filled: make([]filled, n), res: make([][]Result, pr.temps), sels: make([][]int32, pr.temps)}
	return r
}

// slot numbers a column for the leaves that read it.
func (pr *program) slot(id int64) int {
	for k, s := range pr.slots {
		if s == id {
			pr.uses[k]++
			return k
		}
	}
	pr.slots, pr.uses = append(pr.slots, id), append(pr.uses, 1)
	return len(pr.slots) - 1
}

// bind points the run at s: each column resolved once, not per unit.
func (r *run) bind(s Statistics) {
	for k, id := range r.p.slots {
		c := s.Column(id)
		r.cols[k], r.arr[k], r.member[k] = c, arrays{}, nil
		if c == nil {
			continue
		}
		if b, ok := c.(BoundArrays); ok && r.fast&bytesPath != 0 {
			a, n := &r.arr[k], s.Units()
			a.min, a.max, a.facts = b.BoundArrays()
			a.ok = len(a.facts) >= n
			// The word path reads every unit's words, known or not, so
			// both sides must be whole arrays of one width (a side without
			// any bound may come as none).
			w := a.min.W
			if a.ok && r.fast&wordPath != 0 && a.min.Off == nil && a.max.Off == nil && a.max.W == w &&
				(w == 1 || w == 2 || w == 4 || w == 8) && len(a.min.Data) >= w*n && len(a.max.Data) >= w*n {
				a.w = w
			}
		}
		r.member[k], _ = c.(Membership)
	}
}

// eval decides units [lo, hi) of s into out[lo:hi]. A unit with
// rows[i] == 0 (rows may be nil) holds nothing to read: Skip, unevaluated.
func (r *run) eval(s Statistics, lo, hi int, rows []int64, out []Result) {
	r.bind(s)
	r.evalBound(lo, hi, rows, out)
}

// evalBound is eval on the Statistics bound last.
func (r *run) evalBound(lo, hi int, rows []int64, out []Result) {
	if n := min(hi-lo, batchUnits); len(r.all) < n {
		r.sel, r.all = make([]int32, 0, n), make([]int32, n)
		for i := range r.all {
			r.all[i] = int32(i)
		}
	}
	for b := lo; b < hi; b += batchUnits {
		e := min(b+batchUnits, hi)
		sel := r.all[:e-b]
		if rows != nil {
			sel = r.sel[:0]
			for i, n := range rows[b:e] {
				if n == 0 {
					out[b+i] = Skip
					continue
				}
				sel = append(sel, int32(i))
			}
		}
		r.base = b
		if r.batch++; r.batch == 0 { // wrapped: forget every stamp
			for k := range r.filled {
				clear(r.filled[k].at)
			}
			r.batch = 1
		}
		if len(sel) > 0 {
			r.p.root(r, sel, out[b:e])
		}
	}
}

// unit is unit k of the batch's stats for a slot's column (nil: none),
// and their facts.
func (r *run) unit(slot int, k int32) (*stats.Column, stats.Facts) {
	if r.p.uses[slot] < 2 {
		if col := r.cols[slot]; col != nil && col.Fill(r.base+int(k), &r.st) {
			return &r.st, stats.FactsOf(&r.st)
		}
		return nil, 0
	}
	c := &r.filled[slot]
	if int(k) >= len(c.at) {
		n := len(r.all)
		c.at, c.ok, c.st, c.facts = make([]uint32, n), make([]bool, n), make([]stats.Column, n), make([]stats.Facts, n)
	}
	if c.at[k] != r.batch {
		c.at[k] = r.batch
		col := r.cols[slot]
		c.ok[k] = col != nil && col.Fill(r.base+int(k), &c.st[k])
		c.facts[k] = 0
		if c.ok[k] {
			c.facts[k] = stats.FactsOf(&c.st[k])
		}
	}
	if !c.ok[k] {
		return nil, 0
	}
	return &c.st[k], c.facts[k]
}

// scratch is temp t's result and selection buffers for n units.
func (r *run) scratch(t, n int) ([]Result, []int32) {
	if len(r.res[t]) < n {
		r.res[t] = make([]Result, n)
		r.sels[t] = make([]int32, n)
	}
	return r.res[t][:n], r.sels[t][:n]
}

func (pr *program) node(p expr.Pred) node {
	switch p := p.(type) {
	case *expr.Const:
		res := Skip
		if p.Value {
			res = AllMatch
		}
		return constant(res)
	case *expr.And:
		return pr.combine(p.Args, Skip)
	case *expr.Or:
		return pr.combine(p.Args, AllMatch)
	case *expr.NullTest:
		not := p.Not
		return pr.leaf(p.Col.ID, func(st *stats.Column) Result { return nullTest(st, not) })
	case *expr.Cmp:
		if p.NaN {
			op, float := p.Op, isFloat(p.Col)
			return pr.leaf(p.Col.ID, func(st *stats.Column) Result { return cmpNaN(op, float, stats.FactsOf(st)) })
		}
		return pr.cmp(p)
	case *expr.Prefix:
		return pr.leaf(p.Col.ID, prefix(p))
	case *expr.IsNaN:
		not := p.Not
		return pr.leaf(p.Col.ID, func(st *stats.Column) Result { return isNaN(st, not) })
	case *expr.Extent:
		box := p.Box
		return pr.leaf(p.Col.ID, func(st *stats.Column) Result {
			if e, ok := types.ParseExtentStats(st.ExtraStats); ok && e.Disjoint(box) {
				return Skip
			}
			return Maybe
		})
	}
	// Opaque, and InSet (the binder writes IN as an OR of =): may match.
	return constant(Maybe)
}

func constant(res Result) node {
	return func(_ *run, sel []int32, out []Result) {
		for _, k := range sel {
			out[k] = res
		}
	}
}

// combine is AND (stop Skip) or OR (stop AllMatch): a unit takes the
// first stop any argument answers, and arguments after it are not
// evaluated for it; otherwise Maybe if any argument said Maybe, else the
// arguments' common answer (AllMatch for AND, Skip for OR).
func (pr *program) combine(args []expr.Pred, stop Result) node {
	subs := make([]node, len(args))
	for i, a := range args {
		subs[i] = pr.node(a)
	}
	var merge [3][3]Result // merge[so far][next argument]
	for a := range merge {
		for b := range merge[a] {
			switch x, y := Result(a), Result(b); {
			case x == stop || y == stop:
				merge[a][b] = stop
			case x == Maybe || y == Maybe:
				merge[a][b] = Maybe
			default:
				merge[a][b] = x
			}
		}
	}
	if len(subs) == 0 { // the empty AND is TRUE, the empty OR FALSE
		if stop == Skip {
			return constant(AllMatch)
		}
		return constant(Skip)
	}
	t := pr.temps
	pr.temps++
	return func(r *run, sel []int32, out []Result) {
		subs[0](r, sel, out)
		if len(subs) == 1 {
			return
		}
		tmp, live := r.scratch(t, len(out))
		// The units still undecided, compacted without branches into live
		// (written no faster than cur, which may be live, is read).
		n := 0
		for _, k := range sel {
			live[n] = k
			n += b2i(out[k] != stop)
		}
		for _, sub := range subs[1:] {
			if n == 0 {
				return
			}
			cur := live[:n]
			sub(r, cur, tmp)
			n = 0
			for _, k := range cur {
				res := merge[out[k]][tmp[k]]
				out[k] = res
				live[n] = k
				n += b2i(res != stop)
			}
		}
	}
}

// leaf is a node deciding one unit at a time from its stats.
func (pr *program) leaf(id int64, decide func(*stats.Column) Result) node {
	slot := pr.slot(id)
	return func(r *run, sel []int32, out []Result) {
		if r.cols[slot] == nil {
			for _, k := range sel {
				out[k] = Maybe
			}
			return
		}
		for _, k := range sel {
			if st, _ := r.unit(slot, k); st != nil {
				out[k] = decide(st)
			} else {
				out[k] = Maybe
			}
		}
	}
}

func isFloat(c *expr.Column) bool {
	return c.Type.Kind == types.KindFloat || c.Type.Kind == types.KindDouble
}

func nullTest(st *stats.Column, not bool) Result {
	empty := stats.HoldsNoValue(st)
	if not { // IS NOT NULL
		switch {
		case empty:
			return Skip
		case stats.NoNulls(st):
			return AllMatch
		}
		return Maybe
	}
	switch {
	case stats.NoNulls(st) && st.RowCount > 0:
		return Skip
	case empty && st.ValueCount.Known && st.ValueCount.V == 0:
		return AllMatch
	}
	return Maybe
}

func isNaN(st *stats.Column, not bool) Result {
	switch {
	case stats.HoldsNoValue(st):
		return Skip
	case !not && st.ContainsNaN.Known && !st.ContainsNaN.V:
		return Skip
	case not && st.ContainsNaN.Known && !st.ContainsNaN.V && stats.NoNulls(st):
		return AllMatch
	}
	return Maybe
}

// order is how a unit's bound compares with a comparison's literal.
type order uint8

const (
	unknown order = iota // the bound is missing
	below
	equal
	above
)

func orderOf(b stats.Maybe[[]byte], v []byte) order { return bytesOrder(b.V, b.Known, v) }

// wordOrder is written without branches: bounds vary unpredictably.
func wordOrder(b, v uint64) order { return order(int(equal) + b2i(b > v) - b2i(b < v)) }

// cmpResult decides "column op literal" for a unit from its facts and how
// its bounds compare with the literal: the one statement of a comparison's
// skip and all-match conditions, which the scalar and the word paths both
// read (the word path through cmpTable). exact is expr.Cmp.Exact; float
// says the column can hold NaN, which sorts above every number.
func cmpResult(op expr.Op, exact, float bool, f stats.Facts, lo, hi order) Result {
	if f&stats.FactStats == 0 {
		return Maybe
	}
	if f&stats.FactNoValue != 0 {
		return Skip // only NULLs: no comparison is TRUE
	}
	nan := float && f&stats.FactNoNaN == 0
	minExact, maxExact := f&stats.FactMinExact != 0, f&stats.FactMaxExact != 0
	// allOK says every row satisfies the comparison, given the check on
	// exact bounds that follows.
	allOK := exact && f&stats.FactNoNull != 0 && !nan
	switch op {
	case expr.OpEq:
		if lo == above || hi == below {
			return Skip
		}
		if allOK && minExact && maxExact && lo == equal && hi == equal {
			return AllMatch
		}
	case expr.OpNe:
		if !nan && lo == equal && hi == equal {
			return Skip // every value equals v
		}
		if allOK && (minExact && lo == above || maxExact && hi == below) {
			return AllMatch
		}
	case expr.OpLt:
		if lo == equal || lo == above {
			return Skip // NaN is never below v
		}
		if allOK && maxExact && hi == below {
			return AllMatch
		}
	case expr.OpLe:
		if lo == above {
			return Skip
		}
		if allOK && maxExact && (hi == below || hi == equal) {
			return AllMatch
		}
	case expr.OpGt:
		if !nan && (hi == below || hi == equal) {
			return Skip // a NaN would be above v
		}
		if allOK && minExact && lo == above {
			return AllMatch
		}
	case expr.OpGe:
		if !nan && hi == below {
			return Skip
		}
		if allOK && minExact && (lo == above || lo == equal) {
			return AllMatch
		}
	}
	return Maybe
}

// cmpNaN decides "column op NaN".
func cmpNaN(op expr.Op, float bool, f stats.Facts) Result {
	switch {
	case f&stats.FactStats == 0:
		return Maybe
	case f&stats.FactNoValue != 0:
		return Skip
	}
	nan := float && f&stats.FactNoNaN == 0
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

// A cmpTable is cmpResult for one (op, exact, float), for the word path.
// Its bounds are read in an order: first the one that proves Skip on its
// own wherever the two do (the max for > and >=, the min for < and <=;
// more knowledge never undoes a Skip), then the other only for the units
// the first did not skip, so that a selective range reads about one word
// per unit. A bound the facts say is unknown reads as unknown whatever the
// order of its word, so that every unit's words may be compared.
type cmpTable struct {
	first stats.Facts // stats.FactMin or FactMax
	// alone[facts<<2 | first] is Skip where the first bound proves it.
	alone [1 << 10]Result
	// r[facts<<4 | first<<2 | second] is the unit's Result.
	r [1 << 12]Result
}

var cmpTables [6][2][2]struct {
	once sync.Once
	t    cmpTable
}

func tableFor(op expr.Op, exact, float bool) *cmpTable {
	e := &cmpTables[op][b2i(exact)][b2i(float)]
	e.once.Do(func() {
		t := &e.t
		// res decides from the facts and the orders of the first and
		// second bound (as facts and orders come from a unit's words).
		res := func(first stats.Facts, f stats.Facts, a, b order) Result {
			lo, hi := a, b
			if first == stats.FactMax {
				lo, hi = b, a
			}
			if f&stats.FactMin == 0 {
				lo = unknown
			}
			if f&stats.FactMax == 0 {
				hi = unknown
			}
			return cmpResult(op, exact, float, f, lo, hi)
		}
		t.first = stats.FactMin
		found := false
		for _, side := range []stats.Facts{stats.FactMin, stats.FactMax} {
			other := (stats.FactMin | stats.FactMax) ^ side
			useful, sound := false, true
			for i := range t.r {
				f, a, b := stats.Facts(i>>4), order(i>>2&3), order(i&3)
				if res(side, f&^other, a, b) != Skip {
					continue
				}
				useful = useful || f&(stats.FactStats|stats.FactNoValue) == stats.FactStats
				sound = sound && res(side, f, a, b) == Skip
			}
			if useful && sound {
				t.first, found = side, true
				break
			}
		}
		other := (stats.FactMin | stats.FactMax) ^ t.first
		for i := range t.alone {
			if f, a := stats.Facts(i>>2), order(i&3); found && res(t.first, f&^other, a, unknown) == Skip {
				t.alone[i] = Skip
			}
		}
		for i := range t.r {
			t.r[i] = res(t.first, stats.Facts(i>>4), order(i>>2&3), order(i&3))
		}
	})
	return &e.t
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cmpLeaf is a comparison with a value literal.
type cmpLeaf struct {
	slot         int
	op           expr.Op
	v            []byte
	exact, float bool
	w            uint64 // v as a word, when at most 8 bytes
	table        *cmpTable
}

func (pr *program) cmp(p *expr.Cmp) node {
	c := &cmpLeaf{slot: pr.slot(p.Col.ID), op: p.Op, v: p.Value, exact: p.Exact, float: isFloat(p.Col)}
	c.table = tableFor(c.op, c.exact, c.float)
	if n := len(c.v); n <= 8 {
		for _, x := range c.v {
			c.w = c.w<<8 | uint64(x)
		}
	}
	return func(r *run, sel []int32, out []Result) {
		col := r.cols[c.slot]
		switch {
		case col == nil:
			for _, k := range sel {
				out[k] = Maybe
			}
		case r.arr[c.slot].w != 0 && r.arr[c.slot].w == len(c.v):
			c.words(r, sel, out)
		case r.arr[c.slot].ok:
			c.bytes(r, sel, out)
		default:
			c.scalar(r, sel, out)
		}
	}
}

func (c *cmpLeaf) scalar(r *run, sel []int32, out []Result) {
	m := r.member[c.slot]
	for _, k := range sel {
		st, f := r.unit(c.slot, k)
		if st == nil {
			out[k] = Maybe
			continue
		}
		res := cmpResult(c.op, c.exact, c.float, f, orderOf(st.Min, c.v), orderOf(st.Max, c.v))
		if m != nil {
			res = c.membership(m, r.base+int(k), f, res)
		}
		out[k] = res
	}
}

func (c *cmpLeaf) words(r *run, sel []int32, out []Result) {
	a, b, n := &r.arr[c.slot], r.base, len(out)
	w, facts := a.w, a.facts[b:b+n]
	first, second := a.min.Data[w*b:w*(b+n)], a.max.Data[w*b:w*(b+n)]
	if c.table.first == stats.FactMax {
		first, second = second, first
	}
	switch {
	case w < 8:
		narrowCmp(sel, out, facts, first, second, w, c.w, c.table)
	case len(sel) == n: // every unit (a selection is increasing)
		wordCmpAll(out, facts, first, second, c.w, c.table)
	default:
		wordCmp(sel, out, facts, first, second, c.w, c.table)
	}
	if m := r.member[c.slot]; m != nil {
		for _, k := range sel {
			out[k] = c.membership(m, b+int(k), facts[k], out[k])
		}
	}
	r.wordUnits += len(sel)
}

// wordCmp and wordCmpAll are the word path's loops (over a selection, and
// over every unit without indirection), apart and with few variables so
// that these stay in registers.
func wordCmp(sel []int32, out []Result, facts []stats.Facts, first, second []byte, v uint64, t *cmpTable) {
	for _, k := range sel {
		f := int(facts[k])
		a := int(wordOrder(binary.BigEndian.Uint64(first[8*k:8*k+8]), v))
		res := t.alone[f<<2|a]
		if res != Skip {
			res = t.r[f<<4|a<<2|int(wordOrder(binary.BigEndian.Uint64(second[8*k:8*k+8]), v))]
		}
		out[k] = res
	}
}

func wordCmpAll(out []Result, facts []stats.Facts, first, second []byte, v uint64, t *cmpTable) {
	facts = facts[:len(out)]
	for k := range out {
		f := int(facts[k])
		a := int(wordOrder(binary.BigEndian.Uint64(first[8*k:8*k+8]), v))
		res := t.alone[f<<2|a]
		if res != Skip {
			res = t.r[f<<4|a<<2|int(wordOrder(binary.BigEndian.Uint64(second[8*k:8*k+8]), v))]
		}
		out[k] = res
	}
}

// bytes is the fast path for bounds of any width: each unit's bounds read
// alone (not the whole Fill), compared as bytes, decided by the table.
func (c *cmpLeaf) bytes(r *run, sel []int32, out []Result) {
	arr, b, t := &r.arr[c.slot], r.base, c.table
	facts := arr.facts[b : b+len(out)]
	first, second := &arr.min, &arr.max
	if t.first == stats.FactMax {
		first, second = second, first
	}
	for _, k := range sel {
		// Unknown bounds compare as whatever is stored: the table reads
		// them as unknown by the facts.
		i, f := b+int(k), int(facts[k])
		a := int(equal) + bytes.Compare(first.At(i), c.v)
		res := t.alone[f<<2|a]
		if res != Skip {
			res = t.r[f<<4|a<<2|int(equal)+bytes.Compare(second.At(i), c.v)]
		}
		out[k] = res
	}
	if m := r.member[c.slot]; m != nil {
		for _, k := range sel {
			out[k] = c.membership(m, b+int(k), facts[k], out[k])
		}
	}
	r.byteUnits += len(sel)
}

func bytesOrder(b []byte, known bool, v []byte) order {
	if !known {
		return unknown
	}
	return order(int(equal) + bytes.Compare(b, v))
}

// narrowCmp is wordCmp for bounds of 1, 2 or 4 bytes: a switch on the
// width in each unit, which the branch predictor learns at once.
func narrowCmp(sel []int32, out []Result, facts []stats.Facts, first, second []byte, w int, v uint64, t *cmpTable) {
	for _, k := range sel {
		f := int(facts[k])
		a := int(wordOrder(narrowWord(first, int(k), w), v))
		res := t.alone[f<<2|a]
		if res != Skip {
			res = t.r[f<<4|a<<2|int(wordOrder(narrowWord(second, int(k), w), v))]
		}
		out[k] = res
	}
}

func narrowWord(b []byte, i, w int) uint64 {
	switch w {
	case 4:
		return uint64(binary.BigEndian.Uint32(b[4*i : 4*i+4]))
	case 2:
		return uint64(binary.BigEndian.Uint16(b[2*i : 2*i+2]))
	}
	return uint64(b[i])
}

// membership asks a unit's membership filter about an = its bounds did not
// rule out (a unit without stats is not asked).
func (c *cmpLeaf) membership(m Membership, i int, f stats.Facts, res Result) Result {
	if m != nil && c.op == expr.OpEq && res != Skip && f&stats.FactStats != 0 && m.Absent(i, c.v) {
		return Skip
	}
	return res
}

// prefix: the strings starting with P are exactly [P, PrefixEnd(P)).
func prefix(p *expr.Prefix) func(*stats.Column) Result {
	pre := p.Prefix
	end := kv.PrefixEnd(pre) // nil: no upper end (P is all 0xff, or empty)
	return func(st *stats.Column) Result {
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
			case p.Exact && inside && stats.NoNulls(st):
				return AllMatch
			}
			return Maybe
		}
		switch {
		case inside:
			return Skip // every value has the prefix
		case p.Exact && (below || above) && stats.NoNulls(st):
			return AllMatch
		}
		return Maybe
	}
}

// Stats returns one unit's statistics for a column id, or nil when the
// unit has none for it.
type Stats func(colID int64) *stats.Column

// Unit is one unit as tools and tests hold it: its stats, and optionally
// whether a filter proves a value (encoded in the column's type) absent.
type Unit struct {
	Stats  Stats
	Absent func(colID int64, value []byte) bool
}

// Evaluator answers for one unit.
type Evaluator func(u *Unit) Result

// StatsOnly wraps a stats function as a Unit.
func StatsOnly(st Stats) *Unit { return &Unit{Stats: st} }

// Compile builds the evaluator of a bound predicate for one unit at a
// time: the planner's evaluator over a Statistics of one unit. It is safe
// for concurrent use.
func Compile(p expr.Pred) Evaluator {
	pr := compile(p)
	var idle atomic.Pointer[oneUnit]
	return func(u *Unit) Result {
		o := idle.Swap(nil)
		if o == nil {
			o = newOneUnit(pr)
		}
		o.u = u
		o.run.evalBound(0, 1, nil, o.out[:])
		res := o.out[0]
		o.u = nil
		idle.Store(o)
		return res
	}
}

// oneUnit is a Unit as a Statistics, with its run bound to it: kept between
// calls so that an evaluation allocates nothing.
type oneUnit struct {
	u    *Unit
	run  *run
	cols []oneColumn
	out  [1]Result
}

type oneColumn struct {
	o  *oneUnit
	id int64
}

func newOneUnit(pr *program) *oneUnit {
	o := &oneUnit{run: pr.newRun(), cols: make([]oneColumn, len(pr.slots))}
	for k, id := range pr.slots {
		o.cols[k] = oneColumn{o: o, id: id}
	}
	o.run.bind(o) // the columns read o.u at each call
	return o
}

func (o *oneUnit) Units() int { return 1 }

func (o *oneUnit) Column(id int64) ColumnStats {
	for k := range o.cols {
		if o.cols[k].id == id {
			return &o.cols[k]
		}
	}
	return nil
}

func (c *oneColumn) Fill(_ int, st *stats.Column) bool {
	p := c.o.u.Stats(c.id)
	if p == nil {
		return false
	}
	*st = *p
	return true
}

func (c *oneColumn) Absent(_ int, value []byte) bool {
	return c.o.u.Absent != nil && c.o.u.Absent(c.id, value)
}
