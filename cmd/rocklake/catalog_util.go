package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/stats"
)

// storeFS, when set, is the file system the catalog's store is opened on;
// tests wrap the real one to inject faults.
var storeFS vfs.FS

// access says whether a command commits to the catalog.
type access bool

const (
	// reading opens a directory catalog's store read-only: a read-write
	// open replays and flushes the log, writes a new log, manifest and
	// OPTIONS file and syncs each (several milliseconds of a reader's
	// start), and loads table statistics in the background. The
	// directory stays locked as before.
	reading access = true
	writing access = false
)

// openCatalog opens the catalog named by --catalog; done closes it. In a
// server running a command for a client (see remote.go), it is the
// server's open catalog, which done leaves open.
func openCatalog(g *globals, a access) (c *catalog.Catalog, done func(), err error) {
	if g.served != nil {
		return g.served.Catalog(), func() {}, nil
	}
	c, err = catalog.Open(g.catalog, catalog.Options{Pebble: kv.PebbleOptions{FS: storeFS, ReadOnly: bool(a)}})
	if errors.Is(err, catalog.ErrLocked) && socketFor(g.catalog) != "" {
		return nil, nil, fmt.Errorf("%w: `rocklake serve` holds it; query, plan, stats, snapshots, add, files and table list / describe run through the server, other commands need the server stopped", err)
	}
	if err != nil {
		return nil, nil, err
	}
	return c, func() { c.Close() }, nil
}

// openEngine opens the catalog and a DuckDB engine over it; done closes
// both (in a server, neither: they are the server's). warm, when given,
// runs on the open catalog before the engine is made: while DuckDB, which
// main may have started already (engine.Prestart), is still starting.
func openEngine(g *globals, a access, warm ...func(*catalog.Catalog)) (*engine.Engine, func(), error) {
	if g.served != nil {
		return g.served.Engine(), func() {}, nil
	}
	c, closeCatalog, err := openCatalog(g, a)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range warm {
		w(c)
	}
	e, err := engine.New(c)
	if err != nil {
		closeCatalog()
		return nil, nil, err
	}
	if exitsAfter {
		return e, func() { e.CloseAtExit(); closeCatalog() }, nil
	}
	return e, func() { e.Close(); closeCatalog() }, nil
}

// openReader opens the catalog and a reader at --snapshot (latest when
// unset); done closes both.
func openReader(g *globals, snapshot int64) (*catalog.Reader, func(), error) {
	c, closeCatalog, err := openCatalog(g, reading)
	if err != nil {
		return nil, nil, err
	}
	r, err := readAt(c, snapshot)
	if err != nil {
		closeCatalog()
		return nil, nil, err
	}
	return r, func() { r.Close(); closeCatalog() }, nil
}

// readAt opens a reader at --snapshot (latest when unset).
func readAt(c *catalog.Catalog, snapshot int64) (*catalog.Reader, error) {
	if snapshot < 0 {
		return c.Read(catalog.Latest)
	}
	return c.Read(snapshot)
}

func addSnapshotFlag(cmd *cobra.Command, dst *int64) {
	cmd.Flags().Int64Var(dst, "snapshot", -1, "read as of this snapshot id")
	// -1 is only the flag's way of saying "latest"; help says the latter.
	cmd.Flags().Lookup("snapshot").DefValue = "latest"
}

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// boundText renders an encoded bound in DuckLake text form; nil when
// unknown.
func maybePtr[T any](m stats.Maybe[T]) *T {
	if !m.Known {
		return nil
	}
	v := m.V
	return &v
}

// show renders an optional value for text output.
func show[T any](p *T) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprint(*p)
}

// commitOne opens the catalog, makes one change in one transaction and
// commits it: the shape of every command that changes a table's
// definition.
func commitOne(g *globals, change func(tx *catalog.Txn)) (catalog.Snapshot, error) {
	c, closeCatalog, err := openCatalog(g, writing)
	if err != nil {
		return catalog.Snapshot{}, err
	}
	defer closeCatalog()
	tx, err := c.Begin()
	if err != nil {
		return catalog.Snapshot{}, err
	}
	change(tx)
	return tx.Commit()
}

// plural is a count and its noun: "1 row", "2 rows", "0 rows".
func plural[N ~int | ~int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
