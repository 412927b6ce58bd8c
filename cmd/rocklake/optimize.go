package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"rocklake/engine"
)

type optimizeOutput struct {
	Table       string `json:"table"`
	Snapshot    int64  `json:"snapshot"`
	FilesBefore int    `json:"files_before"`
	FilesAfter  int    `json:"files_after"`
	Rows        int64  `json:"rows"`
	Dir         string `json:"dir"`
}

func newOptimizeCmd(g *globals) *cobra.Command {
	var sortBy string
	var rowsPerFile int64
	var dir string
	cmd := &cobra.Command{
		Use:   "optimize TABLE --sort-by COL[,COL...]",
		Short: "Rewrite a table's files sorted by columns, so their bounds prune",
		Long: `optimize reads every live file of the table through DuckDB, sorts the rows by
the --sort-by columns, writes them to new Parquet files of --rows-per-file rows
in --dir (default: a new directory beside the table's first file), and swaps the
new files in for the old ones in one snapshot. Each new file then covers a
narrow range of the first sort column, so range and equality filters on it
read few files (see rocklake analyze). The old files are left on disk: earlier
snapshots still read them. If another writer retires one of the files before
the commit, nothing is committed and the new files are deleted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(sortBy) == "" {
				return fmt.Errorf("--sort-by is required")
			}
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
			res, err := e.Optimize(cmd.Context(), args[0], engine.OptimizeOptions{
				SortBy: strings.Split(sortBy, ","), RowsPerFile: rowsPerFile, Dir: dir,
			})
			if err != nil {
				return err
			}
			out := optimizeOutput{Table: args[0], Snapshot: res.Snapshot.ID, FilesBefore: res.FilesBefore,
				FilesAfter: res.FilesAfter, Rows: res.Rows, Dir: res.Dir}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "rewrote %s: %d files -> %d files (%d rows) in %s, snapshot %d\n",
				out.Table, out.FilesBefore, out.FilesAfter, out.Rows, out.Dir, out.Snapshot)
			return err
		},
	}
	cmd.Flags().StringVar(&sortBy, "sort-by", "", "columns to sort by, comma-separated (required)")
	cmd.Flags().Int64Var(&rowsPerFile, "rows-per-file", 1_000_000, "rows per new file")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the new files (must not exist)")
	return cmd
}
