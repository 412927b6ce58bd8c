package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"rocklake/engine"
)

func newCompactCmd(g *globals) *cobra.Command {
	var rowsPerFile int64
	var dir string
	cmd := &cobra.Command{
		Use:   "compact TABLE",
		Short: "Merge a table's small files into larger ones",
		Long: `compact merges every live file of the table with fewer than --rows-per-file rows
into new files of --rows-per-file rows, keeping the rows in their present order
(so whatever clustering the files had survives), and swaps them in for the
small files in one snapshot. The old files are left on disk: earlier snapshots
still read them. With fewer than two small files there is nothing to do and no
snapshot is made.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := openCatalog(g)
			if err != nil {
				return err
			}
			defer c.Close()
			e, err := engine.New(c)
			if err != nil {
				return err
			}
			defer e.Close()
			res, err := e.Compact(cmd.Context(), args[0], engine.CompactOptions{RowsPerFile: rowsPerFile, Dir: dir})
			if err != nil {
				return err
			}
			if res == nil {
				if g.format == formatJSON {
					return writeJSON(cmd.OutOrStdout(), optimizeOutput{Table: args[0]})
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: fewer than two files under %d rows, nothing to compact\n", args[0], rowsPerFile)
				return err
			}
			out := optimizeOutput{Table: args[0], Snapshot: res.Snapshot.ID, FilesBefore: res.FilesBefore,
				FilesAfter: res.FilesAfter, Rows: res.Rows, Dir: res.Dir}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "compacted %s: %d small files -> %d files (%d rows) in %s, snapshot %d\n",
				out.Table, out.FilesBefore, out.FilesAfter, out.Rows, out.Dir, out.Snapshot)
			return err
		},
	}
	cmd.Flags().Int64Var(&rowsPerFile, "rows-per-file", 1_000_000, "rows per merged file; files with fewer rows are merged")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the merged files (must not exist)")
	return cmd
}
