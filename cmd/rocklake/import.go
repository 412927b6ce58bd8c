package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/interop/ducklake"
)

func newImportCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Read a catalog of another lakehouse format (DuckLake 1.0)",
	}
	cmd.AddCommand(newImportDuckLakeCmd(g))
	return cmd
}

func newImportDuckLakeCmd(g *globals) *cobra.Command {
	var opts ducklake.ImportOptions
	cmd := &cobra.Command{
		Use:   "ducklake SRC",
		Short: "Import a DuckLake 1.0 catalog (DuckDB or SQLite file, PostgreSQL) into the catalog",
		Long: `import ducklake reads the DuckLake 1.0 catalog at SRC into the catalog given by
--catalog. SRC is a DuckDB database file (what DuckDB's ducklake extension makes
by default), a SQLite file, or a PostgreSQL location (postgres://… or libpq's
keyword=value form; the catalog's tables are found in its search_path).

It reads the tables of schema "main" with their columns (nested ones
included), the snapshots and the data files. Every DuckLake snapshot that
changed a table becomes one rocklake snapshot (creates, renames, drops, added
and removed files), or with --latest only the newest state becomes one
snapshot. Statistics are read again from every file's footer, which also gives
what DuckLake does not store (row-group statistics, page-index and bloom
locations, membership filters); DuckLake's own fill what a footer lacks. Rows
inlined in the catalog are written as Parquet files (under the catalog's
rewrite directory, or --inlined-dir) and registered as rocklake's own. Rows
deleted by position (Parquet delete files): with --latest, a data file with
deleted rows is imported as a Parquet file of rocklake's own holding its other
rows; without it (and in sync), each delete file is replayed at the snapshot
that made it current, as a delete file of rocklake's own holding its data
file's positions. Both are written into the same directory.

Refused, with nothing changed: versions other than 1.0 (the message names the
version found), inlined deletes, delete files other than Parquet (deletion
vectors) or whose positions disagree with delete_count, a delete file a
history ends with nothing in its place (its rows would come back), column
changes (ALTER TABLE), schemas other than "main", name mappings that read a
column under another name or from a partition path, encrypted files, files
neither local nor s3:// objects (read as add reads them), merged files
(partial_max) in a history import, types
rocklake does not know, and files that are missing or do not match the
catalog. Everything is read and checked before the first commit; a commit that
then fails leaves the snapshots before it imported (sync goes on from there).
Views, macros, tags, partitioning and sort orders are left behind and listed.`,
		Example: `  rocklake export ducklake lake.ducklake && rocklake --catalog copy init && rocklake --catalog copy import ducklake lake.ducklake
  rocklake export ducklake lake.ducklake && rocklake --catalog now init && rocklake --catalog now import ducklake lake.ducklake --latest`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImport(cmd, g, args[0], opts, false)
		},
	}
	cmd.Flags().BoolVar(&opts.Latest, "latest", false, "import the newest state only, as one snapshot")
	cmd.Flags().StringVar(&opts.InlinedDir, "inlined-dir", "", "a new directory for the Parquet files of inlined rows (and of files with deleted rows folded out, or delete files)")
	return cmd
}

func runImport(cmd *cobra.Command, g *globals, src string, opts ducklake.ImportOptions, sync bool) error {
	c, closeCatalog, err := openCatalog(g, writing)
	if err != nil {
		return err
	}
	defer closeCatalog()
	var res ducklake.ImportResult
	if sync {
		res, err = ducklake.Sync(cmd.Context(), c, src, opts)
	} else {
		res, err = ducklake.Import(cmd.Context(), c, src, opts)
	}
	if err != nil {
		return err
	}
	if g.format == formatJSON {
		snaps := res.Snapshots
		if snaps == nil {
			snaps = []ducklake.SnapshotPair{}
		}
		left := res.LeftBehind
		if left == nil {
			left = []string{}
		}
		var last any
		if len(res.Snapshots) > 0 {
			last = res.Snapshots[len(res.Snapshots)-1].Rocklake
		}
		var from any
		if res.From >= 0 {
			from = res.From
		}
		return writeJSON(cmd.OutOrStdout(), map[string]any{
			"source": res.Source, "version": res.Version, "snapshot_id": last, "snapshots": snaps,
			"ducklake_snapshot_id": res.Last, "followed_snapshot_id": from,
			"file_count": res.Files, "inlined_file_count": res.InlinedFiles, "folded_file_count": res.FoldedFiles,
			"delete_file_count": res.DeleteFiles, "left_behind": left,
		})
	}
	w := cmd.OutOrStdout()
	verb := "imported"
	if sync {
		verb = "synced"
	}
	if len(res.Snapshots) == 0 {
		fmt.Fprintf(w, "nothing to import: the catalog follows %s up to its snapshot %d\n", res.Source, res.Last)
	} else {
		first, last := res.Snapshots[0], res.Snapshots[len(res.Snapshots)-1]
		fmt.Fprintf(w, "%s %s of DuckLake %s catalog %s (its snapshots %d to %d) as rocklake snapshots %d to %d: %s registered",
			verb, plural(len(res.Snapshots), "snapshot", "snapshots"), res.Version, res.Source, first.DuckLake, last.DuckLake,
			first.Rocklake, last.Rocklake, plural(res.Files, "file", "files"))
		if res.InlinedFiles > 0 {
			fmt.Fprintf(w, ", %s of inlined rows written to %s", plural(res.InlinedFiles, "file", "files"), res.InlinedDir)
		}
		if res.FoldedFiles > 0 {
			fmt.Fprintf(w, ", %s with deleted rows folded out written to %s", plural(res.FoldedFiles, "file", "files"), res.InlinedDir)
		}
		if res.DeleteFiles > 0 {
			fmt.Fprintf(w, ", %s written to %s", plural(res.DeleteFiles, "delete file", "delete files"), res.InlinedDir)
		}
		fmt.Fprintln(w)
	}
	if len(res.LeftBehind) > 0 {
		fmt.Fprintf(w, "left behind:\n  %s\n", strings.Join(res.LeftBehind, "\n  "))
	}
	return nil
}
