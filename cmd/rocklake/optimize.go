package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/internal/curve"
	"github.com/rocklake/rocklake/maintain"
)

type optimizeOutput struct {
	Table       string `json:"table"`
	Snapshot    *int64 `json:"snapshot_id"` // nil: nothing to do, no snapshot made
	FilesBefore int    `json:"file_count_before"`
	FilesAfter  int    `json:"file_count_after"`
	Rows        int64  `json:"rows"`
	BytesBefore int64  `json:"bytes_before"`
	BytesAfter  int64  `json:"bytes_after"`
	Dir         string `json:"dir"`
}

func optimizeOutputOf(table string, res *maintain.RewriteResult) optimizeOutput {
	id := res.Snapshot.ID
	return optimizeOutput{Table: table, Snapshot: &id, FilesBefore: res.FilesBefore,
		FilesAfter: res.FilesAfter, Rows: res.Rows, BytesBefore: res.BytesBefore, BytesAfter: res.BytesAfter, Dir: res.Dir}
}

// fileSizing reads --rows-per-file and --target-file-size; they exclude
// each other.
func fileSizing(cmd *cobra.Command, target string) (int64, error) {
	if f := cmd.Flags().Lookup("rows-per-file"); f != nil && f.Changed {
		if n, err := strconv.ParseInt(f.Value.String(), 10, 64); err != nil || n < 1 {
			return 0, usagef("--rows-per-file %s: want 1 or more", f.Value.String())
		}
	}
	if target == "" {
		return 0, nil
	}
	if cmd.Flags().Changed("rows-per-file") {
		return 0, usagef("give --rows-per-file or --target-file-size, not both")
	}
	n, err := humanize.ParseBytes(target)
	if err != nil || n == 0 || n > 1<<50 {
		return 0, usagef("--target-file-size %q: want a size such as 128MB or 64MiB", target)
	}
	return int64(n), nil
}

func newOptimizeCmd(g *globals) *cobra.Command {
	var sortBy, curveName, target string
	var rowsPerFile int64
	var dir string
	cmd := &cobra.Command{
		Use:   "optimize TABLE [--sort-by COL[,COL...]] [--curve zorder|hilbert]",
		Short: "Rewrite a table's files sorted by columns, so their bounds prune",
		Long: `optimize reads every live file of the table through DuckDB, sorts the rows by
the --sort-by columns, writes them to new Parquet files of --rows-per-file rows
in a new directory, and swaps the new files in for the old ones in one
snapshot. Each new file then covers a
narrow range of the first sort column, so range and equality filters on it
read few files (see rocklake analyze). The files are written with a page index
(64 KiB pages, so the sort column also prunes within a row group: plan --pages)
and bloom filters for the columns that have membership filters.

A sort helps the first column only. With --curve zorder or --curve hilbert
(two or more --sort-by columns), rows are ordered along a space-filling curve
through the columns' ranks instead: each new file covers a compact box of
every column, so filters on any of them skip files. Hilbert's boxes are
tighter; Z-order is cheaper to compute.

Without --sort-by, optimize sorts by the table's declared sort key and its
curve (rocklake table alter TABLE set sorted by ...; --curve replaces the
curve), and refuses a table that declares none.

--target-file-size sizes the new files in bytes (e.g. 128MB) instead of rows.
Given neither it nor --rows-per-file, optimize sizes them by the table's
options target_file_size, else target_file_rows, else 1000000 rows.

Where the new files go: --dir (which must not exist), else
<catalog>.files/table-<id>/optimize-<snapshot>/ beside the catalog (under
<data root>/_rocklake/ when the catalog has a data root; for a catalog in a
database without one, under _rocklake/ beside the table's files), named by the
table's id, never its name. That directory is rocklake's: cleanup deletes its files
once no kept snapshot reads them, and add does not register them as yours.

The old files are left on disk: earlier snapshots still read them until
rocklake expire and rocklake cleanup remove them. If another writer retires
one of the files before the commit, or the rows written differ in any bit from
the rows read, or the command is interrupted (Ctrl-C, SIGTERM) before its
commit, nothing is committed and the new files are deleted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			targetBytes, err := fileSizing(cmd, target)
			if err != nil {
				return err
			}
			var cols []string
			if cmd.Flags().Changed("sort-by") {
				if strings.TrimSpace(sortBy) == "" {
					return usagef("--sort-by: no columns given")
				}
				cols = strings.Split(sortBy, ",")
			}
			var kind curve.Kind
			if curveName != "" {
				if kind, err = curve.Parse(curveName); err != nil {
					return usageError{err}
				}
			}
			e, done, err := openEngine(g, writing)
			if err != nil {
				return err
			}
			defer done()
			res, err := maintain.Optimize(cmd.Context(), e, args[0], maintain.OptimizeOptions{
				SortBy: cols, Curve: kind, RowsPerFile: rowsPerFile, TargetFileSize: targetBytes, Dir: dir,
			})
			if errors.Is(err, maintain.ErrNoSortKey) {
				return usagef("--sort-by is required: table %s declares no sort key (rocklake table alter %s set sorted by COL, ...)", args[0], args[0])
			}
			if err != nil {
				return err
			}
			return printRewrite(cmd, g, "rewrote", "", optimizeOutputOf(args[0], res))
		},
	}
	cmd.Flags().StringVar(&sortBy, "sort-by", "", "columns to sort by, comma-separated (default: the table's declared sort key)")
	cmd.Flags().StringVar(&curveName, "curve", "", "order along a space-filling curve through the sort columns: zorder or hilbert")
	cmd.Flags().Int64Var(&rowsPerFile, "rows-per-file", 0, "rows per new file (default: the table's options, else 1000000)")
	cmd.Flags().StringVar(&target, "target-file-size", "", "bytes per new file, e.g. 128MB (instead of --rows-per-file; default: the table's options)")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the new files (must not exist; default: <catalog>.files/table-<id>/optimize-<snapshot>, or as said above)")
	return markInterruptible(cmd)
}

// printRewrite reports an optimize or compact.
func printRewrite(cmd *cobra.Command, g *globals, verb, what string, out optimizeOutput) error {
	if g.format == formatJSON {
		return writeJSON(cmd.OutOrStdout(), out)
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s: %s -> %s (%s, %s -> %s) in %s, snapshot %d\n",
		verb, out.Table, plural(out.FilesBefore, what+"file", what+"files"), plural(out.FilesAfter, "file", "files"), plural(out.Rows, "row", "rows"),
		humanize.IBytes(uint64(out.BytesBefore)), humanize.IBytes(uint64(out.BytesAfter)), out.Dir, *out.Snapshot)
	return err
}
