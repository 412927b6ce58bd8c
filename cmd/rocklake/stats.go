package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// statsOutput is the JSON shape of `rocklake stats` (documented in
// docs/json.md). Unknown statistics are null.
type statsOutput struct {
	Table         string        `json:"table"`
	Snapshot      int64         `json:"snapshot_id"`
	RecordCount   int64         `json:"rows"`
	FileCount     int64         `json:"file_count"`
	FileSizeBytes int64         `json:"bytes"`
	NextRowID     int64         `json:"next_row_id"`
	Columns       []columnStats `json:"columns"`
	Files         []fileStats   `json:"files,omitempty"`
}

type columnStats struct {
	Column       string         `json:"column"`
	ID           int64          `json:"id"`
	Type         string         `json:"type"`
	Partition    string         `json:"partition,omitempty"`
	Min          *string        `json:"min"`
	Max          *string        `json:"max"`
	MinIsExact   bool           `json:"min_is_exact"`
	MaxIsExact   bool           `json:"max_is_exact"`
	ContainsNull *bool          `json:"contains_null"`
	ContainsNaN  *bool          `json:"contains_nan"`
	Variants     []variantStats `json:"variants,omitempty"`
	// Extent is a GEOMETRY column's [xmin, ymin, xmax, ymax] ([] when no
	// value is a non-empty geometry); absent when not known.
	Extent []float64 `json:"extent,omitempty"`
}

type variantStats struct {
	Path         string  `json:"path"`
	ShreddedType string  `json:"shredded_type"`
	ValueCount   int64   `json:"value_count"`
	NullCount    int64   `json:"null_count"`
	Min          *string `json:"min"`
	Max          *string `json:"max"`
}

type fileStats struct {
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
	RowCount        int64     `json:"rows"`
	ColumnSizeBytes int64     `json:"bytes"`
	Extent          []float64 `json:"extent,omitempty"`
	RowGroups       int       `json:"row_group_count"`
}

func newStatsCmd(g *globals) *cobra.Command {
	var snapshot int64
	var column string
	cmd := &cobra.Command{
		Use:   "stats TABLE",
		Short: "Show a table's statistics (with --column, that column in every file)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, done, err := openReader(g, snapshot)
			if err != nil {
				return err
			}
			defer done()
			out, err := collectStats(r, args[0], column)
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			return printStats(cmd, out)
		},
	}
	addSnapshotFlag(cmd, &snapshot)
	cmd.Flags().StringVar(&column, "column", "", "show only this column, and its stats in every file")
	return cmd
}

func collectStats(r *catalog.Reader, table, column string) (*statsOutput, error) {
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
	out := &statsOutput{
		Table: t.Name, Snapshot: r.Snapshot().ID, RecordCount: ts.RecordCount, FileCount: ts.FileCount,
		FileSizeBytes: ts.FileSizeBytes, NextRowID: ts.NextRowID, Columns: []columnStats{},
	}
	for _, col := range cols {
		cs := ts.Columns[col.ID]
		if cs == nil {
			cs = &catalog.TableColumnStats{}
		}
		entry := columnStats{
			Column: strings.Join(col.Path, "."), ID: col.ID, Type: types.DisplayName(col.Type), Partition: col.Partition,
			Min: boundText(col.Type, cs.Min), Max: boundText(col.Type, cs.Max),
			MinIsExact: cs.MinIsExact, MaxIsExact: cs.MaxIsExact,
			ContainsNull: maybePtr(cs.ContainsNull), ContainsNaN: maybePtr(cs.ContainsNaN),
		}
		entry.Extent = extentOf(cs.ExtraStats)
		for _, v := range cs.Variants {
			vt := parseTypeOrUnknown(v.ShreddedType)
			entry.Variants = append(entry.Variants, variantStats{Path: v.Path, ShreddedType: types.DisplayName(vt),
				ValueCount: v.ValueCount, NullCount: v.NullCount, Min: boundText(vt, v.Min), Max: boundText(vt, v.Max)})
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
		out.Files = append(out.Files, fileStats{
			FileID: fileID, Path: paths[fileID],
			Min: boundText(col.Type, st.Min), Max: boundText(col.Type, st.Max),
			MinIsExact: st.MinIsExact, MaxIsExact: st.MaxIsExact,
			NullCount: maybePtr(st.NullCount), ValueCount: maybePtr(st.ValueCount),
			ContainsNaN: maybePtr(st.ContainsNaN), DistinctCount: maybePtr(st.DistinctCount),
			RowCount: st.RowCount, ColumnSizeBytes: st.ColumnSizeBytes, RowGroups: len(rgs),
			Extent: extentOf(st.ExtraStats),
		})
		return nil
	})
	return out, err
}

func printStats(cmd *cobra.Command, out *statsOutput) error {
	w := newTable(cmd.OutOrStdout())
	fmt.Fprintf(w, "table %s at snapshot %d: %d files, %d rows, %d bytes\n",
		out.Table, out.Snapshot, out.FileCount, out.RecordCount, out.FileSizeBytes)
	fmt.Fprintln(w, "COLUMN\tTYPE\tMIN\tMAX\tEXACT\tNULLS\tNAN")
	for _, c := range out.Columns {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Column, typeText(c.Type, c.Partition), show(c.Min), show(c.Max),
			exactness(c.MinIsExact, c.MaxIsExact), show(c.ContainsNull), show(c.ContainsNaN))
		for _, v := range c.Variants {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t\t%d\t\n", v.Path, v.ShreddedType, show(v.Min), show(v.Max), v.NullCount)
		}
		if c.Extent != nil {
			fmt.Fprintf(w, "  extent\t%s\t\t\t\t\t\n", extentText(c.Extent))
		}
	}
	if len(out.Files) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "FILE\tPATH\tMIN\tMAX\tEXACT\tNULLS\tVALUES\tNAN\tROW GROUPS")
		for _, f := range out.Files {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", f.FileID, f.Path, show(f.Min), show(f.Max),
				exactness(f.MinIsExact, f.MaxIsExact), show(f.NullCount), show(f.ValueCount), show(f.ContainsNaN), f.RowGroups)
		}
	}
	return w.Flush()
}

func exactness(minExact, maxExact bool) string {
	s := func(b bool) string {
		if b {
			return "y"
		}
		return "n"
	}
	return s(minExact) + "/" + s(maxExact)
}

// extentOf reads a GEOMETRY extent from extra_stats: [xmin, ymin, xmax,
// ymax], [] when no value is a non-empty geometry, nil when unknown.
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

func extentText(b []float64) string {
	if len(b) != 4 {
		return "none (NULL or empty only)"
	}
	return fmt.Sprintf("x %g..%g, y %g..%g", b[0], b[2], b[1], b[3])
}
