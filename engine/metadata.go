package engine

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine/duckast"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// metadataAnswer answers `SELECT count(*), min(c), max(c) FROM t [WHERE …]`
// from the catalog without opening a file, when it can prove the answer:
// every WHERE conjunct was understood, every kept file matches in full, and
// every min/max comes from exact bounds. Otherwise it reports false and the
// query runs on DuckDB. Cases DuckDB answers differently from bounds are
// left to DuckDB: a float column that may hold NaN (max is NaN there), a
// float bound of zero (DuckDB may answer -0.0), FLOAT text (DuckDB prints
// more digits than the shortest form).
func metadataAnswer(tree duckast.Tree, refs []*tableRef, res *Result, r *catalog.Reader) (bool, error) {
	ref, node, ok := statsQuery(tree, refs, res)
	if !ok {
		return false, nil
	}
	fs, err := r.FileSet(ref.table.ID)
	if err != nil {
		return false, err
	}
	// A file with deleted rows counts its own rows less those; its
	// bounds are no longer exact (see catalog.DeleteFile).
	dels, err := r.DeleteFiles(ref.table.ID)
	if err != nil {
		return false, err
	}
	var count int64
	deleted := false
	// Files the plan kept whole without listing them match in every row.
	kept := slices.Clone(ref.plan.Deferred()) // positions in fs
	for _, i := range kept {
		count += fs.RecordCounts[i]
		if d, ok := dels[fs.IDs[i]]; ok {
			count, deleted = count-d.DeleteCount, true
		}
	}
	for _, kf := range ref.plan.KeptFiles {
		i, found := slices.BinarySearch(fs.IDs, kf.FileID)
		if !found || !kf.AllMatch || int32(len(kf.RowGroups)) != fs.RowGroupCount[i] {
			return false, nil
		}
		count += kf.Rows
		if d, ok := dels[kf.FileID]; ok {
			count, deleted = count-d.DeleteCount, true
		}
		kept = append(kept, i)
	}
	var cols []string
	var row []*string
	for _, m := range node.SelectList {
		if m == nil || m.Class != "FUNCTION" || m.Function == nil || m.Function.Aggregate {
			return false, nil
		}
		name, alias, args := m.Function.Name, m.Alias, m.Children
		switch {
		case name == "count_star" && len(args) == 0:
			v := fmt.Sprint(count)
			row = append(row, &v)
			cols = append(cols, orDefault(alias, "count_star()"))
		case name == "min" || name == "max":
			colName, text, ok := aggColumn(m, ref)
			if !ok || deleted {
				return false, nil
			}
			v, ok, err := boundAnswer(r, ref, colName, kept, name == "min")
			if err != nil || !ok {
				return false, err
			}
			row = append(row, v)
			cols = append(cols, orDefault(alias, text))
		default:
			return false, nil
		}
	}
	if len(row) == 0 {
		return false, nil
	}
	res.Columns = cols
	res.Rows = [][]*string{row}
	return true, nil
}

// statsQuery is the one table reference and the SELECT of a query that
// statistics may answer: a plain SELECT (no GROUP BY, ORDER BY, LIMIT, …)
// from one catalog table at the query's snapshot (no AT clause), unsampled,
// whose every WHERE conjunct the plan used.
func statsQuery(tree duckast.Tree, refs []*tableRef, res *Result) (*tableRef, *duckast.Select, bool) {
	if len(refs) != 1 || len(res.Tables) != 1 {
		return nil, nil, false
	}
	node, ok := duckast.SelectOf(tree.Root())
	if !ok || !node.Plain || node.Sampled {
		return nil, nil, false
	}
	if ft, ok := duckast.TableRefOf(node.FromTable); !ok || ft.Type != "BASE_TABLE" || ft.Sampled {
		return nil, nil, false
	}
	ref := refs[0]
	if !ref.allConjunctsUsed || ref.foreignConjuncts > 0 || ref.renamed || ref.whole != "" || ref.plan == nil || ref.traveled {
		return nil, nil, false
	}
	return ref, node, true
}

// aggColumn is the column a min(c) or max(c) of the table reference
// reads, and the item's text as DuckDB names it; false for any other
// argument.
func aggColumn(m *duckast.Expr, ref *tableRef) (name, text string, ok bool) {
	if len(m.Children) != 1 {
		return "", "", false
	}
	arg := m.Children[0]
	if arg == nil || arg.Class != "COLUMN_REF" || len(arg.ColumnNames) == 0 {
		return "", "", false
	}
	names := arg.ColumnNames
	if len(names) > 2 || (len(names) == 2 && !strings.EqualFold(names[0], orDefault(ref.alias, ref.table.Name))) {
		return "", "", false
	}
	return names[len(names)-1], fmt.Sprintf("%s(%s)", m.Function.Name, strings.Join(names, ".")), true
}

// boundColumn is the table's top-level column of that name and its codec,
// when the codec orders values; nil otherwise.
func boundColumn(ref *tableRef, name string) (*catalog.Column, *types.Codec) {
	var col *catalog.Column
	for i := range ref.cols {
		if !ref.cols[i].Parent.Known && strings.EqualFold(ref.cols[i].Name, name) {
			col = &ref.cols[i]
		}
	}
	if col == nil {
		return nil, nil
	}
	codec, ok := types.CodecFor(col.Type)
	if !ok || !codec.Ordered() {
		return nil, nil
	}
	return col, codec
}

// exactBound is a unit's exact min (or max) when its statistics give one:
// have is false for a unit holding no value; ok is false when the bound is
// unknown or inexact, or, for a float, when the unit may hold NaN.
func exactBound(st *stats.Column, wantMin, isFloat bool) (b []byte, have, ok bool) {
	if stats.HoldsNoValue(st) {
		return nil, false, true
	}
	v, exact := st.Max, st.MaxIsExact
	if wantMin {
		v, exact = st.Min, st.MinIsExact
	}
	if !v.Known || !exact || (isFloat && !(st.ContainsNaN.Known && !st.ContainsNaN.V)) {
		return nil, false, false
	}
	return v.V, true, true
}

// better says whether bound b beats best (min: lower; max: higher).
func better(b, best []byte, wantMin bool) bool {
	c := bytes.Compare(b, best)
	return (wantMin && c < 0) || (!wantMin && c > 0)
}

// filesBound is the best exact bound of a column over files (positions in
// the table's FileSet); have is false when none of them holds a value, ok
// false when a file's statistics do not give its bound.
func filesBound(r *catalog.Reader, ref *tableRef, col *catalog.Column, kept []int, wantMin bool) (best []byte, have, ok bool, err error) {
	cb, err := r.ColumnBounds(ref.table.ID, col.ID)
	if err != nil {
		return nil, false, false, err
	}
	isFloat := col.Type.Kind == types.KindDouble || col.Type.Kind == types.KindFloat
	var st stats.Column
	for _, i := range kept {
		if !cb.Fill(i, &st) {
			return nil, false, false, nil // no stats row: unknown
		}
		b, holds, ok := exactBound(&st, wantMin, isFloat)
		if !ok {
			return nil, false, false, nil
		}
		if holds && (!have || better(b, best, wantMin)) {
			best, have = b, true
		}
	}
	return best, have, true, nil
}

// boundAnswer is min or max of a column over the kept files (positions in
// the table's FileSet), from exact file bounds; nil (SQL NULL) when no kept
// file holds a value.
func boundAnswer(r *catalog.Reader, ref *tableRef, name string, kept []int, wantMin bool) (*string, bool, error) {
	col, codec := boundColumn(ref, name)
	if col == nil || col.Type.Kind == types.KindFloat {
		return nil, false, nil
	}
	best, have, ok, err := filesBound(r, ref, col, kept, wantMin)
	if err != nil || !ok {
		return nil, false, err
	}
	if !have {
		return nil, true, nil
	}
	v, err := codec.Decode(best)
	if err != nil {
		return nil, false, nil
	}
	if col.Type.Kind == types.KindDouble && (v.F == 0 || math.IsInf(v.F, 0)) {
		return nil, false, nil
	}
	text := codec.Format(v)
	return &text, true, nil
}

func orDefault(s, d string) string {
	if s != "" {
		return s
	}
	return d
}
