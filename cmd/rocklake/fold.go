package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/maintain"
)

func newFoldCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fold TABLE",
		Short: "Rewrite the files a table's delete files take rows out of, without those rows",
		Long: `fold rewrites every live file of the table that has a delete file (written by
DELETE, UPDATE or MERGE under delete_mode = merge-on-read, the default) into a file
of the rows left, each into its own successor, and swaps them in for the old
files, their delete files ended, in one snapshot. A file whose every row was
deleted is only retired. Reads then apply no delete file to them.

The old files stay on disk while kept snapshots read them: to erase the deleted
rows for good, fold, then expire the snapshots that still read them and clean
up (rocklake erasure TABLE --where CONDITION says what still stores them). With
no delete file there is nothing to do and no snapshot is made.`,
		Example: `  rocklake fold events
  rocklake fold events --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, done, err := openEngine(g, writing)
			if err != nil {
				return err
			}
			defer done()
			res, err := maintain.FoldDeletes(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			if res.FilesBefore == 0 {
				if g.format == formatJSON {
					return writeJSON(cmd.OutOrStdout(), optimizeOutput{Table: args[0]})
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: no delete file, nothing to fold\n", args[0])
				return err
			}
			return printRewrite(cmd, g, "folded", "", optimizeOutputOf(args[0], res))
		},
	}
	return cmd
}
