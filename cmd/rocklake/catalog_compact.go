package main

import (
	"fmt"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/kv"
)

func newCatalogCompactCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "compact",
		Short: "Give back the space of the catalog's dead rows (Pebble compaction; VACUUM on PostgreSQL)",
		Long: `compact compacts the key-value store that holds the catalog, so that the
space of rows the catalog no longer holds (snapshots expire forgot, files
cleanup dropped, keys every commit replaces) is given back and reads skip
less of it. Tables' data files are not touched: merging those is
"rocklake compact TABLE".

A directory catalog is compacted by Pebble, all levels at once; it needs the
catalog to itself, as every writing command does. A catalog in PostgreSQL
runs VACUUM (ANALYZE) on its table: readers and writers go on meanwhile
(it takes no lock they wait for; the space becomes reusable rather than
returned to the file system), and it needs the role that owns the table.
When the table's indexes are more than twice what its live keys need (after
a large table was dropped and expired), it also rebuilds them with REINDEX
TABLE CONCURRENTLY, which gives their space back and which readers and
writers do not wait for either; a transaction left open for over a minute
puts the rebuild off to a later compact.

It prints the store's size before and after.`,
		Example: `  rocklake catalog compact
  rocklake --catalog 'postgres://rocklake@db.internal/lakes' catalog compact --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, closeCatalog, err := openCatalog(g, writing)
			if err != nil {
				return err
			}
			defer closeCatalog()
			size := func() int64 {
				if s, ok := c.Store().(kv.Sizer); ok {
					if n, err := s.DiskSize(); err == nil {
						return n
					}
				}
				return -1
			}
			before := size()
			start := time.Now()
			if err := c.CompactStore(); err != nil {
				return fmt.Errorf("compact catalog %s: %w", c.Location(), err)
			}
			elapsed := time.Since(start)
			after := size()
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{
					"catalog": c.Location(), "bytes_before": nullableSize(before), "bytes_after": nullableSize(after), "seconds": elapsed.Seconds(),
				})
			}
			sizes := ""
			if before >= 0 && after >= 0 {
				sizes = fmt.Sprintf(": %s before, %s after", humanize.IBytes(uint64(before)), humanize.IBytes(uint64(after)))
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "compacted catalog %s%s, in %.2fs\n", c.Location(), sizes, elapsed.Seconds())
			return err
		},
	}
}

// nullableSize is a size for JSON: null where the store cannot measure
// itself.
func nullableSize(n int64) any {
	if n < 0 {
		return nil
	}
	return n
}
