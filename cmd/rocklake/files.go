package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/catalog"
)

// fileRow is one data file of a table, as `files` prints it.
type fileRow struct {
	Path          string `json:"path"`
	FileID        int64  `json:"file_id"`
	Records       int64  `json:"rows"`
	FileSizeBytes int64  `json:"bytes"`
	RowGroups     int32  `json:"row_group_count"`
	AddedAt       int64  `json:"added_at_snapshot_id"`
	Owner         string `json:"owner"`
	// PartitionValues are the file's values of the table's partition
	// columns (null: NULL), when it has any.
	PartitionValues map[string]*string `json:"partition_values,omitempty"`
	// IgnoredColumns are file columns the table lacks, left out by add
	// --ignore-extra-columns.
	IgnoredColumns []string `json:"ignored_columns,omitempty"`
	// LayoutValues are the file's values of the declared layout's fields
	// (by field text, "month(ts)"), when a rewrite wrote it under one.
	LayoutValues map[string]*string `json:"layout_values,omitempty"`
	layoutOrder  []string
	// DeletedRows and DeleteFile are the file's rows its delete file takes
	// out (merge-on-read) and where that file is, when it has one.
	DeletedRows int64  `json:"deleted_rows,omitempty"`
	DeleteFile  string `json:"delete_file,omitempty"`
}

func newFilesCmd(g *globals) *cobra.Command {
	var snapshot int64
	cmd := &cobra.Command{
		Use:   "files TABLE",
		Short: "List a table's data files: path, rows, bytes, row groups, snapshot added",
		Example: `  rocklake files events
  rocklake files events --snapshot 3 --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, done, err := openReader(g, snapshot)
			if err != nil {
				return err
			}
			defer done()
			t, err := r.Table(args[0])
			if err != nil {
				return err
			}
			files, err := r.Files(t.ID)
			if err != nil {
				return err
			}
			cols, err := r.Columns(t.ID)
			if err != nil {
				return err
			}
			var partCols []catalog.Column
			for _, c := range catalog.TopLevel(cols) {
				if c.Partition != "" {
					partCols = append(partCols, c)
				}
			}
			m, err := r.ColumnMapping(t.ID)
			if err != nil {
				return err
			}
			dels, err := r.DeleteFiles(t.ID)
			if err != nil {
				return err
			}
			rows := make([]fileRow, 0, len(files))
			ignored, layout := false, false
			for _, f := range files {
				row := fileRow{Path: f.Location(t), FileID: f.ID, Records: f.RecordCount, FileSizeBytes: f.FileSizeBytes,
					RowGroups: f.RowGroupCount, AddedAt: f.Begin, Owner: f.Owner.String(), IgnoredColumns: f.IgnoredColumns}
				for _, c := range partCols {
					if row.PartitionValues == nil {
						row.PartitionValues = map[string]*string{}
					}
					v, _ := f.PartitionValue(c.ID)
					row.PartitionValues[c.Name] = maybePtr(v)
				}
				for j, text := range m.LayoutFieldTexts(f.LayoutValues, cols) {
					if row.LayoutValues == nil {
						row.LayoutValues = map[string]*string{}
					}
					row.LayoutValues[text] = maybePtr(f.LayoutValues[j].Value)
					row.layoutOrder = append(row.layoutOrder, text)
				}
				if d, ok := dels[f.ID]; ok {
					row.DeletedRows, row.DeleteFile = d.DeleteCount, d.Location(t)
				}
				ignored = ignored || len(f.IgnoredColumns) > 0
				layout = layout || len(f.LayoutValues) > 0
				rows = append(rows, row)
			}
			slices.SortFunc(rows, func(a, b fileRow) int { return int(a.FileID - b.FileID) })
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"table": t.Name, "snapshot_id": r.Snapshot().ID, "files": rows})
			}
			w := newTable(cmd.OutOrStdout())
			// Partition values and ignored columns only where a table has
			// them, so that other tables' listings stay as they were.
			head := "FILE_ID\tPATH\tROWS\tBYTES\tROW_GROUPS\tADDED_AT\tOWNER"
			if len(partCols) > 0 {
				head += "\tPARTITION"
			}
			if ignored {
				head += "\tIGNORED_COLUMNS"
			}
			if layout {
				head += "\tLAYOUT"
			}
			if len(dels) > 0 {
				head += "\tDELETED_ROWS"
			}
			fmt.Fprintln(w, head)
			partNames := make([]string, len(partCols))
			for i, c := range partCols {
				partNames[i] = c.Name
			}
			for _, f := range rows {
				fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%d\t%d\t%s", f.FileID, f.Path, f.Records, f.FileSizeBytes, f.RowGroups, f.AddedAt, f.Owner)
				if len(partCols) > 0 {
					fmt.Fprintf(w, "\t%s", partitionText(f.PartitionValues, partNames))
				}
				if ignored {
					fmt.Fprintf(w, "\t%s", strings.Join(f.IgnoredColumns, ", "))
				}
				if layout {
					fmt.Fprintf(w, "\t%s", partitionText(f.LayoutValues, f.layoutOrder))
				}
				if len(dels) > 0 {
					fmt.Fprintf(w, "\t%d", f.DeletedRows)
				}
				fmt.Fprintln(w)
			}
			return w.Flush()
		},
	}
	addSnapshotFlag(cmd, &snapshot)
	return cmd
}
