package rocklake

import (
	"context"
	"fmt"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/maintain"
	"github.com/rocklake/rocklake/storage"
)

// OptimizeOptions say how Optimize sorts and sizes the files it writes. An
// alias of maintain.OptimizeOptions.
type OptimizeOptions = maintain.OptimizeOptions

// RewriteResult is what Optimize or MergeSmallFiles did. An alias of
// maintain.RewriteResult.
type RewriteResult = maintain.RewriteResult

// Optimize rewrites a table's files sorted by columns (or along a Z-order
// or Hilbert curve through them) and swaps them in for the old files in one
// snapshot; the old files stay on disk for time travel until Expire and
// Cleanup. The new files go to o.Dir, else under the catalog's rewrite
// root (catalog.Catalog.RewriteRoot). A cancelled ctx before the commit
// commits nothing and removes them. See maintain.Optimize.
func (l *Lake) Optimize(ctx context.Context, table string, o OptimizeOptions) (*RewriteResult, error) {
	if err := l.writable("optimize " + table); err != nil {
		return nil, err
	}
	return maintain.Optimize(ctx, l.eng, table, o)
}

// FoldDeletes rewrites each file of a table with deleted rows (a delete
// file, written by a change under merge-on-read) into one without them,
// in one snapshot; FilesBefore 0 means there was nothing to fold. Older
// snapshots still read the old files until Expire and Cleanup. See
// maintain.FoldDeletes.
func (l *Lake) FoldDeletes(ctx context.Context, table string) (*RewriteResult, error) {
	if err := l.writable("fold " + table); err != nil {
		return nil, err
	}
	return maintain.FoldDeletes(ctx, l.eng, table)
}

// Compact is MergeSmallFiles, its name before it was renamed.
//
// Deprecated: use MergeSmallFiles; Compact goes in a later release.
func (l *Lake) Compact(ctx context.Context, table string, rowsPerFile int64) (*RewriteResult, error) {
	return l.MergeSmallFiles(ctx, table, rowsPerFile)
}

// MergeSmallFiles merges a table's files of fewer than rowsPerFile rows
// (0: 1,000,000) into files of rowsPerFile rows, in one snapshot; a nil
// result means there was nothing to merge. ctx is honoured as by
// Optimize. See maintain.MergeSmallFiles.
func (l *Lake) MergeSmallFiles(ctx context.Context, table string, rowsPerFile int64) (*RewriteResult, error) {
	if err := l.writable("compact " + table); err != nil {
		return nil, err
	}
	return maintain.MergeSmallFiles(ctx, l.eng, table, maintain.MergeOptions{RowsPerFile: rowsPerFile})
}

// ExpireOptions tune Expire (dry run, retention floor). An alias of
// catalog.ExpireOptions.
type ExpireOptions = catalog.ExpireOptions

// ExpireResult lists the snapshots Expire forgot and the files it
// scheduled for Cleanup. An alias of catalog.ExpireResult.
type ExpireResult = catalog.ExpireResult

// CleanupOptions tune Cleanup (dry run, grace period). An alias of
// catalog.CleanupOptions.
type CleanupOptions = catalog.CleanupOptions

// CleanupResult lists the files Cleanup deleted and forgot. An alias of
// catalog.CleanupResult.
type CleanupResult = catalog.CleanupResult

// OrphanOptions tune DeleteOrphans. An alias of catalog.OrphanOptions.
type OrphanOptions = catalog.OrphanOptions

// OrphanResult lists the orphaned files DeleteOrphans found. An alias of
// catalog.OrphanResult.
type OrphanResult = catalog.OrphanResult

// Expire forgets the snapshots committed before olderThan (never the
// newest) and schedules for Cleanup the files no kept snapshot reads. A
// cutoff under the retention floor (catalog.DefaultRetention, 7 days) fails
// with ErrRetentionTooShort unless o.MinRetention lowers it (a negative
// value lifts it). See catalog.Catalog.Expire.
//
// ctx is checked before expiry starts; expiry, one commit, is not
// interrupted.
func (l *Lake) Expire(ctx context.Context, olderThan time.Time, o ExpireOptions) (*ExpireResult, error) {
	if !o.DryRun {
		if err := l.writable("expire"); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.cat.Expire(olderThan, o)
}

// Cleanup deletes the files Expire scheduled that rocklake owns (written by
// Optimize or MergeSmallFiles, or added with AddOptions.TakeOwnership)
// once they have waited o.Grace (default catalog.DefaultGrace, an hour),
// and forgets the caller's own files, leaving them on disk. See
// catalog.Catalog.Cleanup. Objects rocklake owns are deleted through the
// object store the environment describes, as the CLI does.
//
// ctx is checked before cleanup starts; once deleting, it runs to its end.
func (l *Lake) Cleanup(ctx context.Context, o CleanupOptions) (*CleanupResult, error) {
	if !o.DryRun {
		if err := l.writable("cleanup"); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if o.DeleteObject == nil {
		o.DeleteObject = storage.EnvDeleter(ctx)
	}
	return l.cat.Cleanup(o)
}

// DeleteOrphans deletes the files Optimize or MergeSmallFiles wrote that no
// snapshot registered (a rewrite killed before its commit; a cancelled one
// removes its own), once older than o.Grace, and nothing else. See
// catalog.Catalog.DeleteOrphans.
//
// ctx is checked before it starts; once deleting, it runs to its end.
func (l *Lake) DeleteOrphans(ctx context.Context, o OrphanOptions) (*OrphanResult, error) {
	if !o.DryRun {
		if err := l.writable("delete orphans"); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if o.Objects == nil {
		o.Objects = lakeObjects(l.eng)
	}
	return l.cat.DeleteOrphans(o)
}

// VerifyOptions tune Verify. The zero value checks the files of the latest
// snapshot against their registered sizes.
type VerifyOptions struct {
	// Snapshot is the snapshot whose files are checked; the zero value is
	// the latest.
	Snapshot SnapshotRef
	// Deep also reads every column of every row group through DuckDB and
	// checks each stored bound, NULL count, NaN flag and membership filter
	// against the data.
	Deep bool
}

// VerifyReport lists what Verify checked and the problems it found. An
// alias of maintain.VerifyReport.
type VerifyReport = maintain.VerifyReport

// Problem is one thing Verify found wrong with one file. An alias of
// maintain.Problem.
type Problem = maintain.Problem

// Verify checks a table's files against the catalog. Problems found are
// in the report, not the error: a nil error with problems means the check
// ran and found them. ctx cancels a deep check between DuckDB queries.
func (l *Lake) Verify(ctx context.Context, table string, o VerifyOptions) (*VerifyReport, error) {
	id, err := o.Snapshot.catalogID()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return maintain.Verify(ctx, l.eng, table, id, o.Deep)
}

// RefreshOptions say what Refresh may do with a named file that changed.
// The zero value takes back only files whose footer is the one
// registered.
type RefreshOptions struct {
	// Deep also checks a file's statistics and membership filters against
	// its rows before taking it back (as VerifyOptions.Deep).
	Deep bool
	// Stats registers a file whose content changed again, with the
	// statistics it holds now; without it such a file is refused.
	Stats bool
	// Remove removes each named file that changed, or is missing, from
	// the table instead.
	Remove bool
	// All names every local file of the table (paths may then be empty).
	All bool
}

// RefreshReport lists what Refresh did with each file. An alias of
// maintain.RefreshReport.
type RefreshReport = maintain.RefreshReport

// RefreshedFile is what Refresh found of one file and did with it. An
// alias of maintain.RefreshedFile.
type RefreshedFile = maintain.RefreshedFile

// Refresh re-checks files of a table that queries refuse as changed (a
// chmod, a hard link, a restore from a backup, or a rewrite in place):
// one whose footer is the one registered is taken back as it is now; one
// whose content changed is refused unless o.Stats registers it again, or
// o.Remove removes it; all in one snapshot, or, when any file is
// refused, nothing (an error matching ErrDataFileChanged naming each).
// See maintain.Refresh.
//
// ctx is checked between files and before the commit; the commit is not
// interrupted.
func (l *Lake) Refresh(ctx context.Context, table string, paths []string, o RefreshOptions) (*RefreshReport, error) {
	if err := l.writable("refresh " + table); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return maintain.Refresh(ctx, l.eng, table, paths, maintain.RefreshOptions{Deep: o.Deep, Stats: o.Stats, Remove: o.Remove, All: o.All, ReadDirs: l.ReadDirs()})
}

// lakeObjects is the engine's object store (engine.UseObjects', or the one
// the environment describes), taken when orphan cleanup first meets an
// object: a lake of local files needs no S3 settings.
func lakeObjects(e *engine.Engine) *storage.LazyStore {
	return storage.NewLazyStore(func() (storage.ObjectStore, error) {
		st, _, err := e.Objects()
		if err != nil {
			return nil, err
		}
		objs, ok := st.(storage.ObjectStore)
		if !ok {
			return nil, fmt.Errorf("the lake's object store (%T) cannot list, write and delete objects", st)
		}
		return objs, nil
	})
}
