// Package rocklake embeds a rocklake catalog in a Go program: open or
// create a catalog, create tables, register Parquet files, plan which files
// a predicate needs, and run DuckDB queries over only those files.
//
// The pieces it joins live in their own packages, usable alone: catalog
// (the DuckLake model on Pebble or PostgreSQL), ingest (footer statistics), expr and
// prune (predicates and skipping), engine (queries on DuckDB), maintain
// (rewrites and checks of a table's files). This package, engine and
// maintain link DuckDB through cgo; the others are pure Go.
package rocklake

import (
	"context"
	"time"

	"rocklake/catalog"
	"rocklake/engine"
	"rocklake/ingest"
	"rocklake/maintain"
	"rocklake/prune"
	"rocklake/storage"
)

// Lake is an open catalog with a query engine.
type Lake struct {
	cat *catalog.Catalog
	eng *engine.Engine
}

// Option configures Create.
type Option func(*catalog.Options)

// WithDataRoot confines the catalog's data files to one directory tree:
// Add refuses a path outside it (after resolving symbolic links and "..").
// The root is stored in the catalog; Open reads it back.
func WithDataRoot(dir string) Option { return func(o *catalog.Options) { o.DataRoot = dir } }

// Create makes a new catalog at loc: a directory (created if missing,
// otherwise empty), or a PostgreSQL database named by a postgres:// URL or
// libpq's keyword=value form, where the catalog lives in the schema the
// URL's search_path names first (public by default), which must hold
// nothing else. PostgreSQL's PG* environment variables and ~/.pgpass fill
// in what the location leaves out. Errors never show the password.
func Create(loc string, opts ...Option) (*Lake, error) {
	var o catalog.Options
	for _, opt := range opts {
		opt(&o)
	}
	c, err := catalog.Create(loc, o)
	if err != nil {
		return nil, err
	}
	return wrap(c)
}

// Open opens the catalog at loc, a directory or a PostgreSQL location as
// for Create.
func Open(loc string) (*Lake, error) {
	c, err := catalog.Open(loc, catalog.Options{})
	if err != nil {
		return nil, err
	}
	return wrap(c)
}

func wrap(c *catalog.Catalog) (*Lake, error) {
	e, err := engine.New(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &Lake{cat: c, eng: e}, nil
}

// Close closes the engine and the catalog.
func (l *Lake) Close() error {
	err := l.eng.Close()
	if cerr := l.cat.Close(); err == nil {
		err = cerr
	}
	return err
}

// Catalog is the underlying catalog, for reading snapshots and statistics.
func (l *Lake) Catalog() *catalog.Catalog { return l.cat }

// CreateTable creates a table from a column list such as
// "id BIGINT, name VARCHAR".
func (l *Lake) CreateTable(name, columns string) error {
	defs, err := catalog.ParseColumnDefs(columns)
	if err != nil {
		return err
	}
	tx, err := l.cat.Begin()
	if err != nil {
		return err
	}
	tx.CreateTable(name, defs)
	_, err = tx.Commit()
	return err
}

// Add registers Parquet files (files, directories, globs) in one snapshot;
// with create, a missing table is made from the first file's schema. The
// files stay the caller's: Cleanup never deletes them (see
// catalog.Ownership).
func (l *Lake) Add(table string, create bool, paths ...string) (ingest.Result, error) {
	return ingest.Add(l.cat, table, paths, ingest.Options{Create: create})
}

// Plan reports which files and row groups of a table a predicate needs, at
// the latest snapshot.
func (l *Lake) Plan(table, predicate string) (*prune.Plan, error) {
	r, err := l.cat.Read(catalog.Latest)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return prune.PlanTable(r, table, predicate, prune.Options{})
}

// Query runs a DuckDB SELECT over catalog tables at the latest snapshot.
func (l *Lake) Query(ctx context.Context, sql string) (*engine.Result, error) {
	return l.eng.Query(ctx, sql, engine.QueryOptions{Snapshot: catalog.Latest})
}

// QueryRows runs a query as Query does and hands its rows over as DuckDB
// produces them, typed (nil for NULL; see engine.Rows), instead of
// building every value as text first. Close the rows when done: they hold
// a DuckDB connection.
func (l *Lake) QueryRows(ctx context.Context, sql string) (*engine.Rows, error) {
	return l.eng.QueryRows(ctx, sql, engine.QueryOptions{Snapshot: catalog.Latest}, engine.RowsOptions{})
}

// Optimize rewrites a table's files sorted by columns (or along a Z-order
// or Hilbert curve through them) and swaps them in for the old files in one
// snapshot; the old files stay on disk for time travel until Expire and
// Cleanup. The new files go to o.Dir, else under the catalog's rewrite
// root (catalog.Catalog.RewriteRoot). A cancelled ctx before the commit
// commits nothing and removes them. See maintain.Optimize.
func (l *Lake) Optimize(ctx context.Context, table string, o maintain.OptimizeOptions) (*maintain.RewriteResult, error) {
	return maintain.Optimize(ctx, l.eng, table, o)
}

// MergeSmallFiles merges a table's files of fewer than rowsPerFile rows
// (0: 1,000,000) into files of rowsPerFile rows, in one snapshot; a nil
// result means there was nothing to merge. See maintain.MergeSmallFiles.
func (l *Lake) MergeSmallFiles(ctx context.Context, table string, rowsPerFile int64) (*maintain.RewriteResult, error) {
	return maintain.MergeSmallFiles(ctx, l.eng, table, maintain.MergeOptions{RowsPerFile: rowsPerFile})
}

// Expire forgets the snapshots committed before olderThan (never the
// newest) and schedules for Cleanup the files no kept snapshot reads. A
// cutoff under the retention floor (catalog.DefaultRetention, 7 days) fails
// with catalog.ErrRetentionTooShort unless o.MinRetention lowers it (a
// negative value lifts it). See catalog.Expire.
func (l *Lake) Expire(olderThan time.Time, o catalog.ExpireOptions) (*catalog.ExpireResult, error) {
	return l.cat.Expire(olderThan, o)
}

// Cleanup deletes the files Expire scheduled that rocklake owns (written by
// Optimize or MergeSmallFiles) once they have waited o.Grace (default
// catalog.DefaultGrace, an hour), and forgets the caller's own files,
// leaving them on disk. See catalog.Cleanup.
func (l *Lake) Cleanup(o catalog.CleanupOptions) (*catalog.CleanupResult, error) {
	if o.DeleteObject == nil {
		// Objects a rewrite wrote are deleted through the store the
		// environment describes, as the CLI does.
		o.DeleteObject = storage.EnvDeleter(context.Background())
	}
	return l.cat.Cleanup(o)
}

// DeleteOrphans deletes the files Optimize or MergeSmallFiles wrote that no
// snapshot registered (a rewrite killed before its commit; a cancelled one
// removes its own), once older than o.Grace, and nothing else. See
// catalog.DeleteOrphans.
func (l *Lake) DeleteOrphans(o catalog.OrphanOptions) (*catalog.OrphanResult, error) {
	return l.cat.DeleteOrphans(o)
}
