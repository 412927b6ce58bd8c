package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/kv"
)

func newCatalogCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Work on whole catalogs: copy one between a directory and PostgreSQL, compact one's store",
	}
	cmd.AddCommand(newCatalogCopyCmd(g), newCatalogCompactCmd(g))
	return cmd
}

func newCatalogCopyCmd(g *globals) *cobra.Command {
	var progress bool
	cmd := &cobra.Command{
		Use:   "copy SRC DST",
		Short: "Copy a whole catalog into a new directory or PostgreSQL database",
		Long: `copy copies the catalog at SRC, with every snapshot, table, file and
statistic, into a new catalog at DST. Each of SRC and DST is a directory or a
PostgreSQL location (postgres://… URL or libpq's keyword=value form, as for
--catalog), so a catalog moves from a directory into a database, back, or to
another directory. --catalog is not used.

The copy reads SRC as of one moment: writers may go on committing to a
catalog in a database meanwhile, and the copy holds what was committed when
it started. DST must not hold a catalog: copy never overwrites one. A
directory must be new or empty; in a database, the schema is made as by
init and must hold nothing else.

The catalog's metadata is written last, so a copy cut off part-way (an
interrupt, a lost connection) is not a catalog: nothing opens it, and
another copy onto it says so; remove the directory, or drop the table
rocklake_kv, and copy again. Once written, the copy is opened and compared
with SRC key by key.

Data files are not copied: the new catalog names the same files, and keeps
SRC's data root. Write to one of the two afterwards, and run cleanup there
only: cleanup (or cleanup --orphans) of the other would delete files the
first still reads. Progress goes to stderr when it is a terminal, or always
with --progress.`,
		Example: `  rocklake catalog copy ./lake 'postgres://rocklake@db.internal/lakes'      # password from PGPASSWORD or ~/.pgpass
  rocklake catalog copy 'postgres://rocklake@db.internal/lakes?search_path=sales' ./sales-backup
  rocklake catalog copy ./lake ./lake-copy`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := catalog.Open(args[0], catalog.Options{Pebble: kv.PebbleOptions{FS: storeFS, ReadOnly: true}})
			if err != nil {
				return fmt.Errorf("copy source: %w", err)
			}
			defer src.Close()
			start := time.Now()
			opts := catalog.CopyOptions{Options: catalog.Options{Pebble: kv.PebbleOptions{FS: storeFS}}}
			done := func() {}
			if w := progressOut(cmd, progress); w != nil {
				opts.Progress, done = copyProgress(w, isTerminal(w))
			}
			res, err := catalog.Copy(src, args[1], opts)
			done()
			if err != nil {
				return err
			}
			elapsed := time.Since(start)
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{
					"source": src.Location(), "destination": res.Destination, "keys": res.Keys, "bytes": res.Bytes,
					"batches": res.Batches, "snapshot_id": res.Snapshot, "seconds": elapsed.Seconds(),
				})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "copied catalog %s to %s: %d keys, %s, snapshots up to %d, in %.2fs; the copy reads back equal\n",
				src.Location(), res.Destination, res.Keys, humanize.IBytes(uint64(res.Bytes)), res.Snapshot, elapsed.Seconds())
			return err
		},
	}
	cmd.Flags().BoolVar(&progress, "progress", false, "show progress on stderr even when it is not a terminal")
	return cmd
}

// progressOut is where progress goes: stderr when it is a terminal or
// when asked for, else nowhere.
func progressOut(cmd *cobra.Command, always bool) io.Writer {
	w := cmd.ErrOrStderr()
	if always || isTerminal(w) {
		return w
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// copyProgress prints a copy's progress: on a terminal one line redrawn
// in place and cleared at the end, elsewhere (a log) a line per report.
func copyProgress(w io.Writer, tty bool) (func(catalog.CopyProgress), func()) {
	drawn := false
	report := func(p catalog.CopyProgress) {
		what := map[string]string{"copy": "copied", "check": "checked"}[p.Phase]
		line := fmt.Sprintf("%s %d keys, %s", what, p.Keys, humanize.IBytes(uint64(p.Bytes)))
		if tty {
			fmt.Fprintf(w, "\r\033[K%s", line)
			drawn = true
			return
		}
		fmt.Fprintln(w, line)
	}
	return report, func() {
		if drawn {
			fmt.Fprint(w, "\r\033[K")
		}
	}
}
