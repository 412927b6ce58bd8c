package prune

import (
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/stats"
)

// subFieldUnits is a VARIANT sub-field's statistics over some units, in
// the type the predicate compares it in (expr.Column.SubFieldStats); nil
// where a unit has none that can be used.
type subFieldUnits []*stats.Column

func (u subFieldUnits) Fill(i int, st *stats.Column) bool {
	if u[i] == nil {
		return false
	}
	*st = *u[i]
	return true
}

// subFieldFiles reads a sub-field's statistics in every file of fs. A file
// without a row for the path (the field absent from its shredding, or
// partly untyped) has none, and every predicate on the sub-field may match
// there.
func subFieldFiles(r *catalog.Reader, fs *catalog.FileSet, c *expr.Column) (subFieldUnits, error) {
	vss, err := r.VariantPathStats(fs, c.Variant.ColumnID, c.Variant.Path)
	if err != nil {
		return nil, err
	}
	out := make(subFieldUnits, len(vss))
	for i, vs := range vss {
		if vs == nil {
			continue
		}
		if st, ok := c.SubFieldStats(vs.ShreddedType, vs.ValueCount, vs.NullCount, fs.RecordCounts[i], vs.Min, vs.Max, vs.ContainsNaN); ok {
			out[i] = &st
		}
	}
	return out, nil
}

// subFieldRowGroups fills a sub-field's statistics per row group of a
// file, and the row groups' rows when every one is there (a sub-field's
// typed leaf has one value or NULL per row).
func subFieldRowGroups(r *catalog.Reader, tableID int64, f catalog.DataFile, c *expr.Column, units []*stats.Column, rows, firsts []int64) (haveRows bool, err error) {
	vss, err := r.FileVariantStats(tableID, c.Variant.ColumnID, f.ID)
	if err != nil {
		return false, err
	}
	var vs *catalog.VariantStats
	for i := range vss {
		if vss[i].Path == c.Variant.Path {
			vs = &vss[i]
		}
	}
	if vs == nil || len(vs.RowGroups) != len(units) {
		return false, nil
	}
	var first, total int64
	for i, g := range vs.RowGroups {
		if int(g.Index) != i {
			return false, nil
		}
		total += g.ValueCount + g.NullCount
	}
	if total != f.RecordCount {
		return false, nil
	}
	for i, g := range vs.RowGroups {
		n := g.ValueCount + g.NullCount
		if st, ok := c.SubFieldStats(vs.ShreddedType, g.ValueCount, g.NullCount, n, g.Min, g.Max, g.ContainsNaN); ok {
			units[i] = &st
		}
		rows[i], firsts[i] = n, first
		first += n
	}
	return true, nil
}

// extentFiles reads a GEOMETRY column's file stats rows (their extra_stats
// hold the extents) for every file of fs, in one range scan.
func extentFiles(r *catalog.Reader, tableID int64, fs *catalog.FileSet, c *expr.Column) (subFieldUnits, error) {
	at := make(map[int64]int, len(fs.IDs))
	for i, id := range fs.IDs {
		at[id] = i
	}
	out := make(subFieldUnits, len(fs.IDs))
	err := r.FileColumnStats(tableID, c.ID, func(fileID int64, st *stats.Column) error {
		if i, ok := at[fileID]; ok {
			out[i] = st
		}
		return nil
	})
	return out, err
}
