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
	if len(refs) != 1 || len(res.Tables) != 1 {
		return false, nil
	}
	node, ok := duckast.SelectOf(tree.Root())
	if !ok || !node.Plain || node.Sampled {
		return false, nil
	}
	if ft, ok := duckast.TableRefOf(node.FromTable); !ok || ft.Type != "BASE_TABLE" || ft.Sampled {
		return false, nil
	}
	ref := refs[0]
	if !ref.allConjunctsUsed || ref.foreignConjuncts > 0 || ref.renamed || ref.whole != "" || ref.plan == nil {
		return false, nil
	}
	fs, err := r.FileSet(ref.table.ID)
	if err != nil {
		return false, err
	}
	var count int64
	// Files the plan kept whole without listing them match in every row.
	kept := slices.Clone(ref.plan.Deferred()) // positions in fs
	for _, i := range kept {
		count += fs.RecordCounts[i]
	}
	for _, kf := range ref.plan.KeptFiles {
		i, found := slices.BinarySearch(fs.IDs, kf.FileID)
		if !found || !kf.AllMatch || int32(len(kf.RowGroups)) != fs.RowGroupCount[i] {
			return false, nil
		}
		count += kf.Rows
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
		case (name == "min" || name == "max") && len(args) == 1:
			arg := args[0]
			if arg == nil || arg.Class != "COLUMN_REF" || len(arg.ColumnNames) == 0 {
				return false, nil
			}
			names := arg.ColumnNames
			colName := names[len(names)-1]
			if len(names) > 2 || (len(names) == 2 && !strings.EqualFold(names[0], orDefault(ref.alias, ref.table.Name))) {
				return false, nil
			}
			v, ok, err := boundAnswer(r, ref, colName, kept, name == "min")
			if err != nil || !ok {
				return false, err
			}
			row = append(row, v)
			cols = append(cols, orDefault(alias, fmt.Sprintf("%s(%s)", name, strings.Join(names, "."))))
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

// boundAnswer is min or max of a column over the kept files (positions in
// the table's FileSet), from exact file bounds; nil (SQL NULL) when no kept
// file holds a value.
func boundAnswer(r *catalog.Reader, ref *tableRef, name string, kept []int, wantMin bool) (*string, bool, error) {
	var col *catalog.Column
	for i := range ref.cols {
		if !ref.cols[i].Parent.Known && strings.EqualFold(ref.cols[i].Name, name) {
			col = &ref.cols[i]
		}
	}
	if col == nil {
		return nil, false, nil
	}
	codec, ok := types.CodecFor(col.Type)
	if !ok || !codec.Ordered() || col.Type.Kind == types.KindFloat {
		return nil, false, nil
	}
	isFloat := col.Type.Kind == types.KindDouble
	cb, err := r.ColumnBounds(ref.table.ID, col.ID)
	if err != nil {
		return nil, false, err
	}
	var best []byte
	have := false
	var st stats.Column
	for _, i := range kept {
		if !cb.Fill(i, &st) {
			return nil, false, nil // no stats row: unknown
		}
		if stats.HoldsNoValue(&st) {
			continue
		}
		b, exact := st.Max, st.MaxIsExact
		if wantMin {
			b, exact = st.Min, st.MinIsExact
		}
		if !b.Known || !exact || (isFloat && !(st.ContainsNaN.Known && !st.ContainsNaN.V)) {
			return nil, false, nil
		}
		if !have || (wantMin && bytes.Compare(b.V, best) < 0) || (!wantMin && bytes.Compare(b.V, best) > 0) {
			best, have = b.V, true
		}
	}
	if !have {
		return nil, true, nil
	}
	v, err := codec.Decode(best)
	if err != nil {
		return nil, false, nil
	}
	if isFloat && (v.F == 0 || math.IsInf(v.F, 0)) {
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
