package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/interop/ducklake"
)

func newExportCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the catalog in another lakehouse format (DuckLake 1.0)",
	}
	cmd.AddCommand(newExportDuckLakeCmd(g))
	return cmd
}

func newExportDuckLakeCmd(g *globals) *cobra.Command {
	var opts ducklake.ExportOptions
	var from int64
	cmd := &cobra.Command{
		Use:   "ducklake DEST",
		Short: "Write the catalog as a DuckLake 1.0 catalog in a new DuckDB file",
		Long: `export ducklake writes the catalog, every kept snapshot (or those from
--from-snapshot on), as a DuckLake 1.0 catalog in a new DuckDB database file
DEST, which DuckDB's ducklake extension attaches (ATTACH 'ducklake:DEST').
Snapshots, their changes, the schema "main", tables (renames and drops
included), columns (nested ones as child columns), data files, per-file and
per-table statistics in DuckLake's text form, VARIANT sub-field statistics, and
a name mapping per table (rocklake matches file columns by name, so DuckLake
must too) are written.

Data files stay where they are (absolute paths) unless --copy copies them under
the data path (default DEST.files/, DuckLake's own default), relative to their
table's directory. Files left in place are shared: DuckLake treats them as
its own, and its cleanup after expiring snapshots deletes those no snapshot
reads; --copy gives it copies instead. What DuckLake 1.0 cannot hold stays behind and is listed:
row-group statistics, page-index and bloom locations, membership filters,
exactness of bounds, file ownership and identity, min/max of int128, uint128,
timetz and interval, and whole tables with ENUM or fixed-size ARRAY columns.

DEST must not exist; a failed export leaves nothing there. Where DuckDB's
ducklake extension is installed, ATTACH 'ducklake:DEST' AS lake reads it.`,
		Example: `  rocklake export ducklake lake.ducklake
  rocklake export ducklake lake.ducklake --copy --data-path lake-files/   # files copied: the export moves as a whole
  rocklake export ducklake recent.ducklake --from-snapshot 2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("from-snapshot") {
				if from < 0 {
					return usagef("--from-snapshot %d: must be a snapshot id, 0 or more", from)
				}
				opts.FromSnapshot = from
			}
			c, closeCatalog, err := openCatalog(g, reading)
			if err != nil {
				return err
			}
			defer closeCatalog()
			res, err := ducklake.Export(cmd.Context(), c, args[0], opts)
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				left := res.LeftBehind
				if left == nil {
					left = []string{}
				}
				return writeJSON(cmd.OutOrStdout(), map[string]any{
					"destination": res.Destination, "data_path": res.DataPath, "version": ducklake.Version,
					"snapshot_count": res.Snapshots, "table_count": res.Tables, "file_count": res.Files,
					"copied_file_count": res.CopiedFiles, "left_behind": left,
				})
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "exported %s, %s and %s as DuckLake %s to %s (data path %s)\n",
				plural(res.Snapshots, "snapshot", "snapshots"), plural(res.Tables, "table", "tables"), plural(res.Files, "file", "files"),
				ducklake.Version, res.Destination, res.DataPath)
			if res.CopiedFiles > 0 {
				fmt.Fprintf(w, "copied %s under the data path\n", plural(res.CopiedFiles, "file", "files"))
			}
			if len(res.LeftBehind) > 0 {
				fmt.Fprintf(w, "left behind:\n  %s\n", strings.Join(res.LeftBehind, "\n  "))
			}
			return nil
		},
	}
	cmd.Flags().Int64Var(&from, "from-snapshot", 0, "leave out snapshots before this one")
	cmd.Flags().BoolVar(&opts.CopyFiles, "copy", false, "copy the data files under the data path instead of referencing them")
	cmd.Flags().StringVar(&opts.DataPath, "data-path", "", "the DuckLake data_path (default DEST.files/)")
	return cmd
}
