package rocklake

import (
	"context"
	"slices"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// TableStats are a table's totals and per-column statistics at one
// snapshot, what the planner skips files with. It is the one shape of
// statistics rocklake speaks: `rocklake stats --format json` prints it,
// GET /v1/tables/{t}/stats answers it, Lake.Stats returns it.
type TableStats struct {
	Table string `json:"table"`
	// Snapshot is the id of the snapshot read.
	Snapshot  int64 `json:"snapshot_id"`
	Rows      int64 `json:"rows"`
	Files     int64 `json:"file_count"`
	Bytes     int64 `json:"bytes"`
	NextRowID int64 `json:"next_row_id"`
	// Columns hold every column, nested fields by their dotted path (one
	// column when StatsOptions.Column names it).
	Columns []ColumnStats `json:"columns"`
	// FileStats are the named column's statistics in each live file, with
	// StatsOptions.Column only.
	FileStats []FileColumnStats `json:"files,omitempty"`
}

// ColumnStats bound one column over every file of a table. A statistic
// that is not known is nil, never a zero value.
type ColumnStats struct {
	// Column is the column's name, a nested field's as parent.child.
	Column   string `json:"column"`
	ColumnID int64  `json:"column_id"`
	// ID is ColumnID, under the key version 1 of the JSON output first
	// gave it.
	//
	// Deprecated: use ColumnID; the key "id" goes with version 2.
	ID   int64 `json:"id"`
	Type Type  `json:"type"` // in JSON by DuckDB's name (types.DisplayName)
	// Partition is "hive" for a column whose values come from the files'
	// key=value directories.
	Partition string `json:"partition,omitempty"`
	// Min and Max are in DuckLake's text form (DuckDB's CAST(v AS
	// VARCHAR), TIMESTAMPTZ at +00). A bound that is not exact still
	// bounds the values: they lie within it.
	Min          *string `json:"min"`
	Max          *string `json:"max"`
	MinIsExact   bool    `json:"min_is_exact"`
	MaxIsExact   bool    `json:"max_is_exact"`
	ContainsNull *bool   `json:"contains_null"`
	ContainsNaN  *bool   `json:"contains_nan"`
	// Variants are a VARIANT column's sub-fields shredded alike in every
	// file.
	Variants []VariantStats `json:"variants,omitempty"`
	// Extent is a GEOMETRY column's [xmin, ymin, xmax, ymax] ([] when no
	// value is a non-empty geometry); nil when not known.
	Extent []float64 `json:"extent,omitempty"`
}

// VariantStats bound one shredded sub-field of a VARIANT column.
type VariantStats struct {
	Path         string  `json:"path"`
	ShreddedType Type    `json:"shredded_type"`
	ValueCount   int64   `json:"value_count"`
	NullCount    int64   `json:"null_count"`
	Min          *string `json:"min"`
	Max          *string `json:"max"`
}

// FileColumnStats are one column's statistics in one data file.
type FileColumnStats struct {
	FileID          int64     `json:"file_id"`
	Path            string    `json:"path"`
	Min             *string   `json:"min"`
	Max             *string   `json:"max"`
	MinIsExact      bool      `json:"min_is_exact"`
	MaxIsExact      bool      `json:"max_is_exact"`
	NullCount       *int64    `json:"null_count"`
	ValueCount      *int64    `json:"value_count"`
	ContainsNaN     *bool     `json:"contains_nan"`
	DistinctCount   *int64    `json:"distinct_count"`
	Rows            int64     `json:"rows"`
	ColumnSizeBytes int64     `json:"bytes"`
	Extent          []float64 `json:"extent,omitempty"`
	RowGroupCount   int       `json:"row_group_count"`
}

// StatsOptions choose what Stats reads.
type StatsOptions struct {
	ReadOptions
	// Column, when set, limits the answer to that column and adds its
	// statistics in every file (TableStats.FileStats).
	Column string
}

// Stats returns a table's row, file and byte counts and the bounds of
// each column, from the catalog alone.
//
// ctx is checked before the catalog is read and between columns.
func (l *Lake) Stats(ctx context.Context, table string, o ReadOptions) (*TableStats, error) {
	return l.StatsOf(ctx, table, StatsOptions{ReadOptions: o})
}

// StatsOf is Stats with options: one column, and its statistics per file.
func (l *Lake) StatsOf(ctx context.Context, table string, o StatsOptions) (*TableStats, error) {
	r, _, err := l.readTable(ctx, table, o.ReadOptions)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return ReadStats(ctx, r, table, o.Column)
}

// ReadStats reads a table's statistics from a catalog reader: all
// columns, or column alone with its statistics in every file. Code that
// holds a catalog.Reader (the CLI) answers through it, so that every way
// of asking gets one shape.
func ReadStats(ctx context.Context, r *catalog.Reader, table, column string) (*TableStats, error) {
	t, err := r.Table(table)
	if err != nil {
		return nil, err
	}
	ts, err := r.TableStats(t.ID)
	if err != nil {
		return nil, err
	}
	cols, err := r.Columns(t.ID)
	if err != nil {
		return nil, err
	}
	if column != "" {
		col, err := r.Column(t.ID, column)
		if err != nil {
			return nil, err
		}
		cols = []catalog.Column{col}
	}
	out := &TableStats{
		Table: t.Name, Snapshot: r.Snapshot().ID, Rows: ts.RecordCount, Files: ts.FileCount,
		Bytes: ts.FileSizeBytes, NextRowID: ts.NextRowID, Columns: make([]ColumnStats, 0, len(cols)),
	}
	for _, c := range cols {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cs := ts.Columns[c.ID]
		if cs == nil {
			cs = &catalog.TableColumnStats{} // no statistics row: everything unknown
		}
		entry := ColumnStats{
			Column: strings.Join(c.Path, "."), ColumnID: c.ID, ID: c.ID, Type: c.Type, Partition: c.Partition,
			MinIsExact: cs.MinIsExact, MaxIsExact: cs.MaxIsExact,
			ContainsNull: maybePtr(cs.ContainsNull), ContainsNaN: maybePtr(cs.ContainsNaN),
			Extent: extentOf(cs.ExtraStats),
		}
		if entry.Min, entry.Max, err = bounds(c.Path, c.Type, cs.Min, cs.Max); err != nil {
			return nil, err
		}
		for _, v := range cs.Variants {
			vt, err := types.ParseType(v.ShreddedType)
			if err != nil {
				vt = types.Unknown(v.ShreddedType) // no bounds shown
			}
			vs := VariantStats{Path: v.Path, ShreddedType: vt, ValueCount: v.ValueCount, NullCount: v.NullCount}
			if vs.Min, vs.Max, err = bounds(append(slices.Clone(c.Path), v.Path), vt, v.Min, v.Max); err != nil {
				return nil, err
			}
			entry.Variants = append(entry.Variants, vs)
		}
		out.Columns = append(out.Columns, entry)
	}
	if column == "" {
		return out, nil
	}
	col := cols[0]
	files, err := r.Files(t.ID)
	if err != nil {
		return nil, err
	}
	paths := map[int64]string{}
	for _, f := range files {
		paths[f.ID] = f.Path
	}
	err = r.FileColumnStats(t.ID, col.ID, func(fileID int64, st *stats.Column) error {
		rgs, err := r.RowGroupStats(t.ID, col.ID, fileID)
		if err != nil {
			return err
		}
		fs := FileColumnStats{
			FileID: fileID, Path: paths[fileID],
			MinIsExact: st.MinIsExact, MaxIsExact: st.MaxIsExact,
			NullCount: maybePtr(st.NullCount), ValueCount: maybePtr(st.ValueCount),
			ContainsNaN: maybePtr(st.ContainsNaN), DistinctCount: maybePtr(st.DistinctCount),
			Rows: st.RowCount, ColumnSizeBytes: st.ColumnSizeBytes, RowGroupCount: len(rgs),
			Extent: extentOf(st.ExtraStats),
		}
		if fs.Min, fs.Max, err = bounds(col.Path, col.Type, st.Min, st.Max); err != nil {
			return err
		}
		out.FileStats = append(out.FileStats, fs)
		return nil
	})
	return out, err
}

func bounds(path []string, t types.Type, lo, hi stats.Maybe[[]byte]) (*string, *string, error) {
	c := Column{Path: path, Type: t}
	l, err := boundText(c, lo)
	if err != nil {
		return nil, nil, err
	}
	h, err := boundText(c, hi)
	return l, h, err
}

// extentOf reads a GEOMETRY column's extent from its extra statistics.
func extentOf(extra string) []float64 {
	e, ok := types.ParseExtentStats(extra)
	switch {
	case !ok:
		return nil
	case e.Empty:
		return []float64{}
	}
	return []float64{e.Box.XMin, e.Box.YMin, e.Box.XMax, e.Box.YMax}
}
