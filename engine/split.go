package engine

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine/duckast"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/types"
)

// Aggregates split between statistics and DuckDB.
//
// `SELECT count(*), min(c), max(c) FROM t WHERE …` over a plan that proves
// some of its kept rows match (files kept whole by their statistics, row
// groups and pages whose statistics match in full: prune.RowRange.AllMatch)
// but not all of them, so that metadataAnswer cannot answer, takes the
// proven rows' part from statistics and has DuckDB aggregate only the
// others: the view is made over a plan holding, per file, only the ranges
// not proven, and the parts are combined (counts added, the least min and
// the greatest max taken). DuckDB still reads every row whose part does
// not come from statistics, with the query's WHERE.
//
// For min and max a range is proven only when it is a whole row group
// whose statistics give the exact bound of every such column (or hold no
// value); other ranges that match in full are read. Whole files must give
// exact file bounds, or nothing is split. Columns are of the types whose
// DuckDB text reads back exactly (splitKinds).
//
// A file's proven ranges count only when the file is read in part, by
// exactly its remaining ranges (the page path, or the row-range SQL with
// no more ranges than it keeps apart: maxRanges): a file the cost rule
// reads whole has DuckDB aggregate all its matching rows, and then none of
// them comes from statistics. That rule, not the plan, decides, so no row
// is counted twice or left out whatever the reading path.

// errSplit says a split's DuckDB part could not be combined with its
// statistics (an answer whose text does not read back): the query runs
// again unsplit.
var errSplit = errors.New("split aggregate: DuckDB's answer does not combine with statistics")

// splitKinds are the types min and max may be split over: their DuckDB
// text reads back to exactly the value, and their order is the codec's.
var splitKinds = map[types.Kind]bool{
	types.KindTinyInt: true, types.KindSmallInt: true, types.KindInteger: true, types.KindBigInt: true, types.KindHugeInt: true,
	types.KindUTinyInt: true, types.KindUSmallInt: true, types.KindUInteger: true, types.KindUBigInt: true, types.KindUHugeInt: true,
	types.KindDecimal: true, types.KindDate: true, types.KindTimestamp: true, types.KindTimestampS: true,
	types.KindTimestampMS: true, types.KindTimestampNS: true, types.KindTimestampTZ: true, types.KindVarchar: true,
}

// splitAgg is one item of the SELECT: count(*) (col nil), or min or max
// of a column.
type splitAgg struct {
	col     *catalog.Column
	codec   *types.Codec
	wantMin bool
}

// bound is an exact min or max from statistics; have is false while no
// unit held a value.
type bound struct {
	b    []byte
	have bool
}

func (x *bound) add(b []byte, wantMin bool) {
	if !x.have || better(b, x.b, wantMin) {
		x.b, x.have = b, true
	}
}

// splitAnswer is the statistics side of a split.
type splitAnswer struct {
	orig   *prune.Plan
	rest   *prune.Plan
	aggs   []splitAgg
	whole  int64   // rows of files kept whole, none of them in rest
	wholeB []bound // per agg: the bound of those files
	// per rest.KeptFiles: the proven rows taken out of its ranges, and
	// per agg their bound
	inPart  []int64
	inPartB [][]bound
}

// planSplit builds the split of an aggregate, or nil when the query is not
// a plain count(*), min, max of one table whose plan proves some of its
// rows match, or when statistics cannot give a part of it.
func planSplit(tree duckast.Tree, refs []*tableRef, res *Result, r *catalog.Reader) (*splitAnswer, error) {
	ref, node, ok := statsQuery(tree, refs, res)
	if !ok || len(node.SelectList) == 0 {
		return nil, nil
	}
	var aggs []splitAgg
	bounds := false
	for _, m := range node.SelectList {
		if m == nil || m.Class != "FUNCTION" || m.Function == nil || m.Function.Aggregate {
			return nil, nil
		}
		switch name := m.Function.Name; {
		case name == "count_star" && len(m.Children) == 0:
			aggs = append(aggs, splitAgg{})
		case name == "min" || name == "max":
			colName, _, ok := aggColumn(m, ref)
			if !ok {
				return nil, nil
			}
			col, codec := boundColumn(ref, colName)
			if col == nil || !splitKinds[col.Type.Kind] {
				return nil, nil
			}
			aggs = append(aggs, splitAgg{col: col, codec: codec, wantMin: name == "min"})
			bounds = true
		default:
			return nil, nil
		}
	}
	p := ref.plan
	fs, err := r.FileSet(ref.table.ID)
	if err != nil {
		return nil, err
	}
	// A file with deleted rows (catalog.DeleteFile) still matches in
	// every row left when its statistics say so, and the exact count of
	// those is its own less the deleted; its bounds are no longer exact,
	// and its row groups' counts say nothing of which rows are gone.
	dels, err := r.DeleteFiles(ref.table.ID)
	if err != nil {
		return nil, err
	}
	sa := &splitAnswer{orig: p, aggs: aggs, wholeB: make([]bound, len(aggs))}
	wholeFiles := slices.Clone(p.Deferred())
	for _, i := range wholeFiles {
		sa.whole += fs.RecordCounts[i]
		if d, ok := dels[fs.IDs[i]]; ok {
			if bounds {
				return nil, nil
			}
			sa.whole -= d.DeleteCount
		}
	}
	var kept []prune.KeptFile
	for _, kf := range p.KeptFiles {
		i, found := slices.BinarySearch(fs.IDs, kf.FileID)
		d, deleted := dels[kf.FileID]
		if found && kf.AllMatch && int32(len(kf.RowGroups)) == fs.RowGroupCount[i] && kf.Rows == fs.RecordCounts[i] && !(deleted && bounds) {
			sa.whole += kf.Rows - d.DeleteCount
			if !deleted {
				wholeFiles = append(wholeFiles, i)
			}
			continue
		}
		if deleted {
			// Read as planned: DuckDB's part, deletes applied.
			kept = append(kept, kf)
			sa.inPart = append(sa.inPart, 0)
			sa.inPartB = append(sa.inPartB, nil)
			continue
		}
		var rgs [][]catalog.RowGroupStats // per agg, for min and max
		if bounds && len(kf.Columns) == 0 && slices.ContainsFunc(kf.Ranges, func(rr prune.RowRange) bool { return rr.AllMatch }) {
			if rgs, err = rowGroupStats(r, ref.table.ID, kf.FileID, aggs); err != nil {
				return nil, err
			}
		}
		var all int64
		allB := make([]bound, len(aggs))
		var rest []prune.RowRange
		for _, rr := range kf.Ranges {
			if rr.AllMatch && (!bounds || rgs != nil && provenBounds(rr, aggs, rgs, allB)) {
				all += rr.Count
			} else {
				rest = append(rest, rr)
			}
		}
		switch {
		case all == 0 || len(restSpans(rest)) > maxRanges:
			// Nothing proven, or more ranges left than the row-range SQL
			// keeps apart: the file is read as planned, its part DuckDB's.
			all, allB = 0, nil
		case len(rest) == 0:
			// Every kept row proven: nothing to read.
			sa.whole += all
			for k := range aggs {
				if allB[k].have {
					sa.wholeB[k].add(allB[k].b, aggs[k].wantMin)
				}
			}
			continue
		default:
			kf.Ranges = rest
			kf.RowGroups = rangeGroups(rest)
			kf.AllMatch = false
		}
		kept = append(kept, kf)
		sa.inPart = append(sa.inPart, all)
		sa.inPartB = append(sa.inPartB, allB)
	}
	if len(wholeFiles) == 0 && !slices.ContainsFunc(sa.inPart, func(n int64) bool { return n > 0 }) && sa.whole == 0 {
		return nil, nil // nothing proven
	}
	for k, a := range aggs {
		if a.col == nil || len(wholeFiles) == 0 {
			continue
		}
		b, have, ok, err := filesBound(r, ref, a.col, wholeFiles, a.wantMin)
		if err != nil || !ok {
			return nil, err
		}
		if have {
			sa.wholeB[k].add(b, a.wantMin)
		}
	}
	sa.rest = &prune.Plan{Table: p.Table, Snapshot: p.Snapshot, Predicate: p.Predicate, Bound: p.Bound,
		KeptFiles: kept, SubFields: p.SubFields, Objects: p.Objects}
	return sa, nil
}

// rowGroupStats reads, for each min or max of aggs, its column's row-group
// statistics in a file; nil where the catalog holds none.
func rowGroupStats(r *catalog.Reader, tableID, fileID int64, aggs []splitAgg) ([][]catalog.RowGroupStats, error) {
	out := make([][]catalog.RowGroupStats, len(aggs))
	for k, a := range aggs {
		if a.col == nil {
			continue
		}
		rgs, err := r.RowGroupStats(tableID, a.col.ID, fileID)
		if err != nil {
			return nil, err
		}
		if len(rgs) == 0 {
			return nil, nil
		}
		out[k] = rgs
	}
	return out, nil
}

// provenBounds says whether a range that matches in full is a whole row
// group whose statistics give every min and max of aggs exactly, and adds
// those bounds to bs.
func provenBounds(rr prune.RowRange, aggs []splitAgg, rgs [][]catalog.RowGroupStats, bs []bound) bool {
	var found []bound
	for k, a := range aggs {
		if a.col == nil {
			continue
		}
		j := slices.IndexFunc(rgs[k], func(g catalog.RowGroupStats) bool { return g.Index == rr.RowGroup })
		if j < 0 {
			return false
		}
		g := &rgs[k][j]
		if g.FirstRow != rr.First || g.Stats.RowCount != rr.Count || rr.Count <= 0 {
			return false // a part of the row group: its bounds may lie outside
		}
		b, holds, ok := exactBound(&g.Stats, a.wantMin, false)
		if !ok {
			return false
		}
		if holds {
			found = append(found, bound{b, true})
		} else {
			found = append(found, bound{})
		}
	}
	i := 0
	for k, a := range aggs {
		if a.col == nil {
			continue
		}
		if found[i].have {
			bs[k].add(found[i].b, a.wantMin)
		}
		i++
	}
	return true
}

// restSpans are the rows of ranges, touching ones joined, as the partial
// scan reads them (partialReadWith).
func restSpans(rs []prune.RowRange) []rowSpan {
	spans := make([]rowSpan, len(rs))
	for i, r := range rs {
		spans[i] = rowSpan{r.First, r.First + r.Count}
	}
	return mergeSpans(spans, len(spans))
}

// rangeGroups are the row groups ranges lie in, ascending.
func rangeGroups(rs []prune.RowRange) []int32 {
	var out []int32
	for _, r := range rs {
		out = append(out, r.RowGroup)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// combine adds the statistics' part to DuckDB's one-row answer over the
// rest, given how DuckDB read each file of the rest plan (reads, in its
// KeptFiles' order). It returns errSplit when a DuckDB value does not read
// back exactly.
func (sa *splitAnswer) combine(res *Result, reads []FileRead) error {
	if len(reads) != len(sa.inPart) {
		return fmt.Errorf("split aggregate: %d files read for %d planned", len(reads), len(sa.inPart))
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != len(sa.aggs) {
		return fmt.Errorf("split aggregate: DuckDB answered %d rows", len(res.Rows))
	}
	n := sa.whole
	bs := slices.Clone(sa.wholeB)
	for i, rd := range reads {
		if rd.How == ReadWhole {
			continue // DuckDB read its proven rows too
		}
		n += sa.inPart[i]
		for k, b := range sa.inPartB[i] {
			if b.have {
				bs[k].add(b.b, sa.aggs[k].wantMin)
			}
		}
	}
	row := res.Rows[0]
	for k, a := range sa.aggs {
		v := row[k]
		if a.col == nil {
			if v == nil {
				return errSplit
			}
			c, err := strconv.ParseInt(*v, 10, 64)
			if err != nil {
				return errSplit
			}
			s := strconv.FormatInt(c+n, 10)
			row[k] = &s
			continue
		}
		if !bs[k].have {
			continue // DuckDB's answer, NULL included
		}
		if v != nil {
			dv, exact, err := a.codec.ParseRounded(*v, types.Floor)
			if err != nil || !exact {
				return errSplit
			}
			db, err := a.codec.Encode(dv)
			if err != nil {
				return errSplit
			}
			if !better(bs[k].b, db, a.wantMin) {
				continue // DuckDB's value is as good: its own text
			}
		}
		sv, err := a.codec.Decode(bs[k].b)
		if err != nil {
			return errSplit
		}
		s := a.codec.Format(sv)
		row[k] = &s
	}
	res.StatsRows = n
	return nil
}
