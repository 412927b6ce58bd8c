package engine

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"rocklake/catalog"
	"rocklake/types"
)

// metadataAnswer answers `SELECT count(*), min(c), max(c) FROM t [WHERE …]`
// from the catalog without opening a file, when it can prove the answer:
// every WHERE conjunct was understood, every kept file matches in full, and
// every min/max comes from exact bounds. Otherwise it reports false and the
// query runs on DuckDB. Cases DuckDB answers differently from bounds are
// left to DuckDB: a float column that may hold NaN (max is NaN there), a
// float bound of zero (DuckDB may answer -0.0), FLOAT text (DuckDB prints
// more digits than the shortest form).
func metadataAnswer(tree map[string]any, refs []*tableRef, res *Result, r *catalog.Reader) (bool, error) {
	if len(refs) != 1 || len(res.Tables) != 1 {
		return false, nil
	}
	node, _ := tree["statements"].([]any)[0].(map[string]any)["node"].(map[string]any)
	if node["type"] != "SELECT_NODE" || !emptyList(node["group_expressions"]) || node["having"] != nil ||
		node["qualify"] != nil || node["sample"] != nil || !emptyList(node["modifiers"]) {
		return false, nil
	}
	if cm, ok := node["cte_map"].(map[string]any); ok && !emptyList(cm["map"]) {
		return false, nil
	}
	if ft, ok := node["from_table"].(map[string]any); !ok || ft["type"] != "BASE_TABLE" || ft["sample"] != nil {
		return false, nil
	}
	ref := refs[0]
	if !ref.allConjunctsUsed || ref.foreignConjuncts > 0 || ref.renamed || ref.plan == nil {
		return false, nil
	}
	files, err := r.Files(ref.table.ID)
	if err != nil {
		return false, err
	}
	byID := map[int64]catalog.DataFile{}
	for _, f := range files {
		byID[f.ID] = f
	}
	var count int64
	kept := map[int64]bool{}
	for _, kf := range ref.plan.KeptFiles {
		f := byID[kf.FileID]
		if !kf.AllMatch || int32(len(kf.RowGroups)) != f.RowGroupCount {
			return false, nil
		}
		count += kf.Rows
		kept[kf.FileID] = true
	}
	items, _ := node["select_list"].([]any)
	var cols []string
	var row []*string
	for _, it := range items {
		m, _ := it.(map[string]any)
		if m == nil || m["class"] != "FUNCTION" || m["distinct"] == true || m["filter"] != nil {
			return false, nil
		}
		if ob, ok := m["order_bys"].(map[string]any); ok && !emptyList(ob["orders"]) {
			return false, nil
		}
		name, _ := m["function_name"].(string)
		alias, _ := m["alias"].(string)
		args, _ := m["children"].([]any)
		switch {
		case name == "count_star" && len(args) == 0:
			v := fmt.Sprint(count)
			row = append(row, &v)
			cols = append(cols, orDefault(alias, "count_star()"))
		case (name == "min" || name == "max") && len(args) == 1:
			arg, _ := args[0].(map[string]any)
			if arg == nil || arg["class"] != "COLUMN_REF" {
				return false, nil
			}
			names := columnNames(arg)
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

// boundAnswer is min or max of a column over the kept files, from exact
// file bounds; nil (SQL NULL) when no kept file holds a value.
func boundAnswer(r *catalog.Reader, ref *tableRef, name string, kept map[int64]bool, wantMin bool) (*string, bool, error) {
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
	var best []byte
	have := false
	seen := map[int64]bool{}
	okAll := true
	err := r.FileColumnStats(ref.table.ID, col.ID, func(fileID int64, st *catalog.ColumnStats) error {
		if !kept[fileID] {
			return nil
		}
		seen[fileID] = true
		if catalog.HoldsNoValue(st) {
			return nil
		}
		b, exact := st.Max, st.MaxIsExact
		if wantMin {
			b, exact = st.Min, st.MinIsExact
		}
		if !b.Known || !exact || (isFloat && !(st.ContainsNaN.Known && !st.ContainsNaN.V)) {
			okAll = false
			return nil
		}
		if !have || (wantMin && bytes.Compare(b.V, best) < 0) || (!wantMin && bytes.Compare(b.V, best) > 0) {
			best, have = b.V, true
		}
		return nil
	})
	if err != nil || !okAll || len(seen) != len(kept) {
		return nil, false, err
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

func emptyList(x any) bool {
	if x == nil {
		return true
	}
	l, ok := x.([]any)
	return ok && len(l) == 0
}

func orDefault(s, d string) string {
	if s != "" {
		return s
	}
	return d
}
