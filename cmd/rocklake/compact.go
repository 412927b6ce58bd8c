package main

import (
	"fmt"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/maintain"
)

func newCompactCmd(g *globals) *cobra.Command {
	var rowsPerFile int64
	var dir, target string
	cmd := &cobra.Command{
		Use:   "compact TABLE",
		Short: "Merge a table's small files into larger ones",
		Long: `compact merges every live file of the table with fewer than --rows-per-file rows
into new files of --rows-per-file rows, keeping the rows in their present order
(so whatever clustering the files had survives), and swaps them in for the
small files in one snapshot. The old files are left on disk: earlier snapshots
still read them. With fewer than two small files there is nothing to do and no
snapshot is made. With --target-file-size (e.g. 128MB) files smaller than it
are merged into files of about that size.

The merged files go to --dir, else to <catalog>.files/table-<id>/compact-<snapshot>/
beside the catalog, or elsewhere as optimize says. An interrupt (Ctrl-C, SIGTERM) before the
commit commits nothing and deletes the new files.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			targetBytes, err := fileSizing(cmd, target)
			if err != nil {
				return err
			}
			e, done, err := openEngine(g, writing)
			if err != nil {
				return err
			}
			defer done()
			res, err := maintain.MergeSmallFiles(cmd.Context(), e, args[0], maintain.MergeOptions{RowsPerFile: rowsPerFile, TargetFileSize: targetBytes, Dir: dir})
			if err != nil {
				return err
			}
			if res == nil {
				if g.format == formatJSON {
					return writeJSON(cmd.OutOrStdout(), optimizeOutput{Table: args[0]})
				}
				limit := fmt.Sprintf("%d rows", rowsPerFile)
				if targetBytes > 0 {
					limit = humanize.IBytes(uint64(targetBytes))
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: fewer than two files under %s, nothing to compact\n", args[0], limit)
				return err
			}
			return printRewrite(cmd, g, "compacted", "small ", optimizeOutputOf(args[0], res))
		},
	}
	cmd.Flags().Int64Var(&rowsPerFile, "rows-per-file", 1_000_000, "rows per merged file; files with fewer rows are merged")
	cmd.Flags().StringVar(&target, "target-file-size", "", "merge files under this size into files of about it, e.g. 128MB (instead of --rows-per-file)")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the merged files (must not exist; default: <catalog>.files/table-<id>/compact-<snapshot>, or as said above)")
	return markInterruptible(cmd)
}
