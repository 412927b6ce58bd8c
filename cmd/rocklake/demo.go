package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/cmd/rocklake/internal/demo"
)

func newDemoCmd(g *globals) *cobra.Command {
	var dir string
	var files, rows int
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Build an events table, register it, and run queries with rocklake and with DuckDB side by side",
		Long: `demo writes an events table (one Parquet file per hour, arrow-go, page
indexes and bloom filters), registers it in a new catalog with a progress bar,
then runs a handful of queries and prints, for each, the answer, the files and
row groups read of the total, and its time next to DuckDB's time over all files.
Without --dir it works in a temporary directory it removes afterwards.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keep := dir != ""
			if !keep {
				tmp, err := os.MkdirTemp("", "rocklake-demo-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				dir = tmp
			} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
				return fmt.Errorf("%s is not empty: choose a new directory for the demo", dir)
			}
			progress, finish := progressBar(cmd, "registering files")
			defer finish()
			err := demo.Run(cmd.Context(), demo.Options{
				Dir: dir, Files: files, RowsPerFile: rows, Out: cmd.OutOrStdout(),
				Progress: func(done, total int) {
					if progress != nil {
						progress(done, total)
					}
				},
			})
			if err != nil {
				return err
			}
			if keep {
				fmt.Fprintf(cmd.OutOrStdout(), "the catalog is in %s; try:\n  rocklake --catalog %s plan events \"user_id = 42\" --pages\n",
					filepath.Join(dir, "lake"), filepath.Join(dir, "lake"))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the catalog and data (must be new or empty; default: a temporary directory)")
	cmd.Flags().IntVar(&files, "files", 48, "hours of events, one file each")
	cmd.Flags().IntVar(&rows, "rows", 20000, "rows per file")
	return cmd
}
