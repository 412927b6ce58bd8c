package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"
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
			rows := make([]fileRow, 0, len(files))
			for _, f := range files {
				rows = append(rows, fileRow{Path: f.Location(t), FileID: f.ID, Records: f.RecordCount, FileSizeBytes: f.FileSizeBytes,
					RowGroups: f.RowGroupCount, AddedAt: f.Begin, Owner: f.Owner.String()})
			}
			slices.SortFunc(rows, func(a, b fileRow) int { return int(a.FileID - b.FileID) })
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"table": t.Name, "snapshot_id": r.Snapshot().ID, "files": rows})
			}
			w := newTable(cmd.OutOrStdout())
			fmt.Fprintln(w, "FILE_ID\tPATH\tROWS\tBYTES\tROW_GROUPS\tADDED_AT\tOWNER")
			for _, f := range rows {
				fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%d\t%d\t%s\n", f.FileID, f.Path, f.Records, f.FileSizeBytes, f.RowGroups, f.AddedAt, f.Owner)
			}
			return w.Flush()
		},
	}
	addSnapshotFlag(cmd, &snapshot)
	return cmd
}
