package main

import (
	"fmt"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
)

// progressThreshold is how many files make a progress bar worth drawing.
const progressThreshold = 20

// progressBar returns a progress callback that draws a bar on an
// interactive stderr once there are enough files, and a function that
// finishes it; elsewhere both do nothing.
func progressBar(cmd *cobra.Command, what string) (func(done, total int), func()) {
	f, ok := cmd.ErrOrStderr().(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, func() {}
	}
	var bar *progressbar.ProgressBar
	return func(done, total int) {
			if total < progressThreshold {
				return
			}
			if bar == nil {
				bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(f),
					progressbar.OptionSetDescription(what), progressbar.OptionShowCount(),
					progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
			}
			_ = bar.Set(done)
		}, func() {
			if bar != nil {
				_ = bar.Finish()
			}
		}
}

func newAddCmd(g *globals) *cobra.Command {
	var create, noAuto, take, skip, ignoreExtra, hive bool
	var workers int
	var filterCols []string
	cmd := &cobra.Command{
		Use:   "add TABLE PATH...",
		Short: "Register Parquet files (files, directories, globs, s3:// objects) in a table, in one snapshot",
		Long: `add reads the footer of every file, checks that its columns fit the table's
(by name; an int32 file column fits a BIGINT table column, a string never fits
an integer), and registers all of them with their statistics in one snapshot.
If any file cannot be read or does not fit, nothing is registered.

Names: columns match as DuckDB binds them, ignoring the case of ASCII
letters only. A file column "ÜNï" is the table's "Ünï", but "ÜNÏ" is not
(DuckDB would read "Ünï" as NULL there): a file without the table's column
is refused, naming it and the near miss. A file column the table lacks is
refused too, naming the file and the columns; --ignore-extra-columns
registers such files without those columns (queries do not see them) and
records their names with each file, so that they can be mapped in later.

Partitions: files laid out in Hive-style key=value directories (what
DuckDB's COPY ... PARTITION_BY, Spark and pyarrow write) get each key as a
table column whose value in a file is its directory's, as DuckDB's
read_parquet(..., hive_partitioning = true) reads it: --create makes them
when every file's path has the same keys (--hive insists), typed BIGINT,
DATE, TIMESTAMP or VARCHAR as DuckDB types them, after the files' own
columns in name order; __HIVE_DEFAULT_PARTITION__ and NULL are NULL, values
are URL-decoded. Each file's value is stored as exact statistics, so a
partition predicate skips other partitions' files and count/min/max come
from the catalog. Later adds to the table read the values from every
file's path, in the table's types, and refuse a file without them.

Paths: each path is resolved by the operating system, symbolic links and
".." as open(2) follows them (never cleaned as text: "lnk/../f" is the f
beside lnk's target). The resolved path is what is registered and what
DuckDB opens; re-pointing a link later does not change the table. The same
file named twice, by any paths, symbolic or hard links alike (same device
and inode), is refused, within one add and against the table's files.
Only regular files are read: a named pipe, socket or device, given, matched
by a glob or found as *.parquet in a directory, is refused without being
opened, as is a directory matched by a glob (a directory given on its own
is searched for *.parquet files).

Objects: s3://bucket/key names one object, s3://bucket/prefix/ every
*.parquet object below the prefix, s3://bucket/prefix/*.parquet the keys a
glob matches (*, ? and [...] within one "/"-separated segment). The store is
configured as for other S3 tools (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_REGION, AWS_ENDPOINT_URL, AWS_S3_FORCE_PATH_STYLE=true). After one
listing, each footer is read with one ranged request for the object's last
64 KiB (a second when the footer is larger), as many at a time as the store
keeps connections (ROCKLAKE_S3_CONNECTIONS, default 64); each object's size
and ETag are registered, and queries refuse an object whose ETag changed.
Objects get membership filters only for the columns --filter-columns names
(each object is then fetched whole once more, to read the column). With
--take-ownership, cleanup deletes them from the bucket once no kept snapshot
reads them.

Membership filters: for the columns --filter-columns names, for columns that
already have them, and, when --create makes the table, for the first file's
mostly-distinct integer, VARCHAR, BLOB and UUID columns (at least 1,000
distinct values, 90% of its non-NULL values), add reads the column once and
stores a compact filter of its distinct values per file (about 2.5 bytes per
value). Plans then skip files whose filter rules out the value of an = or IN,
where min/max bounds cannot (random ids). --no-auto-filters turns the
automatic choice off.

Ownership: files are registered in place and stay the user's. rocklake never
deletes them: when optimize or compact rewrites them and rocklake expire and
rocklake cleanup later retire them, they leave the catalog, not the disk.
With --take-ownership the files are handed to rocklake instead (recorded per
file): once no kept snapshot reads them, cleanup deletes them (never the
directory that holds them). Files optimize and compact write are rocklake's
own. A file whose rows optimize or compact took into the table is refused
while it is unchanged, even after expire forgot it: its rows are there
already (--skip-existing leaves such files out).`,
		Example: `  rocklake add events data/events/*.parquet
  rocklake add events data/events/ --create
  rocklake add sales data/sales/ --create --hive        # data/sales/region=eu/day=2024-01-02/*.parquet
  rocklake add events data/wide/ --ignore-extra-columns
  rocklake add events data/events/ --skip-existing     # only the files that arrived since
  rocklake add events staging/day-42/ --take-ownership
  rocklake add events s3://lake/events/ --create`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, closeCatalog, err := openCatalog(g, writing)
			if err != nil {
				return err
			}
			defer closeCatalog()
			progress, finish := progressBar(cmd, "reading footers")
			opts := ingest.Options{Create: create, Workers: workers, Progress: progress, FilterColumns: filterCols, NoAutoFilters: noAuto, SkipExisting: skip, Owner: owner(take),
				IgnoreExtraColumns: ignoreExtra, Hive: hive}
			if g.served != nil {
				// In a server: only what its engine may read is registered.
				opts.ReadDirs = g.served.ReadDirs()
			}
			res, err := ingest.Add(c, args[0], args[1:], opts)
			finish()
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				out := map[string]any{
					"table": args[0], "file_count": res.Files, "rows": res.Rows, "skipped_count": res.Skipped,
					"bytes": res.Bytes, "seconds": res.Elapsed.Seconds(), "created_table": res.CreatedTable,
					"owner": owner(take).String(), "snapshot_id": nil, "skipped_rewrite_dirs": nonNil(res.SkippedDirs),
					"object_storage": map[string]any{"request_count": res.Fetched.Requests, "bytes": res.Fetched.Bytes},
					"step_seconds": map[string]any{"list": res.Steps.List.Seconds(), "footers": res.Steps.Footers.Seconds(),
						"filters": res.Steps.Filters.Seconds(), "commit": res.Steps.Commit.Seconds()},
				}
				if res.Files > 0 { // no snapshot is made when nothing is new
					out["snapshot_id"] = res.Snapshot.ID
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			for _, d := range res.SkippedDirs {
				fmt.Fprintf(cmd.OutOrStdout(), "left out %s: rocklake's optimize or compact wrote it\n", d)
			}
			if res.Files == 0 {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "nothing new to add to %s: all %s registered already (no snapshot made)\n", args[0],
					plural(res.Skipped, "file is", "files are"))
				return err
			}
			created := ""
			if res.CreatedTable {
				created = " (table created)"
			}
			if res.Skipped > 0 {
				created += fmt.Sprintf("; %s already registered, left out", plural(res.Skipped, "file", "files"))
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "added %s, %s, %s to %s in %.2fs at snapshot %d%s\n",
				plural(res.Files, "file", "files"), plural(res.Rows, "row", "rows"), plural(res.Bytes, "byte", "bytes"), args[0], res.Elapsed.Seconds(), res.Snapshot.ID, created)
			if err == nil && res.Fetched.Requests > 0 {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "object storage: %s, %s fetched\n", plural(res.Fetched.Requests, "request", "requests"), plural(res.Fetched.Bytes, "byte", "bytes"))
			}
			if err == nil && take {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "the files are rocklake's now: cleanup deletes them once no kept snapshot reads them\n")
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&create, "create", false, "create the table from the first file's schema if it does not exist")
	cmd.Flags().IntVar(&workers, "workers", 0, "footers read in parallel (default 2 × CPUs)")
	cmd.Flags().StringSliceVar(&filterCols, "filter-columns", nil, "columns to build membership filters for (comma-separated)")
	cmd.Flags().BoolVar(&noAuto, "no-auto-filters", false, "with --create, do not choose filter columns automatically")
	cmd.Flags().BoolVar(&skip, "skip-existing", false, "leave out files the table has registered, live or retired by optimize/compact/rm (same resolved path or same file), instead of refusing the add: register what is new in a growing directory")
	cmd.Flags().BoolVar(&take, "take-ownership", false, "hand the files to rocklake: cleanup deletes them once no kept snapshot reads them (default: they stay the user's and are never deleted)")
	cmd.Flags().BoolVar(&ignoreExtra, "ignore-extra-columns", false, "register files that hold columns the table lacks, without those columns (their names are recorded with each file); without it such a file is refused")
	cmd.Flags().BoolVar(&hive, "hive", false, "read partition values from key=value directories (with --create: a column per key; --create finds that layout by itself when every file has the same keys)")
	return cmd
}

func owner(take bool) catalog.Ownership {
	if take {
		return catalog.OwnerTaken
	}
	return catalog.OwnerUser
}
