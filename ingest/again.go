package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pathgate"
)

// AgainOptions tune PrepareAgain. The zero value is the default.
type AgainOptions struct {
	// Workers read footers in parallel; 0 means 2 × GOMAXPROCS.
	Workers int
	// ReadDirs, when set, are the only directories files may be read
	// from (as Options.ReadDirs).
	ReadDirs []string
}

// PrepareAgain builds new registrations for live local files of table t
// (at r's snapshot) whose content changed in place: their footers are
// read as they are on disk now and checked against the table's columns,
// and their statistics and membership filters (for the table's filter
// columns) are built, exactly as Add builds them. What is the file's
// rather than its content's is kept: its ownership, and leaving out the
// extra columns it was registered without. What a rewrite vouched for
// (layout values) is not: the content it vouched for is gone.
//
// It commits nothing: the caller retires the files and registers these,
// in their order, in one transaction (catalog.Txn.RegisterAgain and
// AddFiles). A file that no longer fits the table, is no longer Parquet,
// or whose location now resolves to another path, is an error naming it.
func PrepareAgain(ctx context.Context, r *catalog.Reader, t catalog.Table, files []catalog.DataFile, opts AgainOptions) ([]catalog.NewFile, error) {
	cols, err := r.Columns(t.ID)
	if err != nil {
		return nil, err
	}
	gate := pathgate.New(opts.ReadDirs)
	targets := make([]target, len(files))
	for i, f := range files {
		loc := f.Location(t)
		if catalog.IsObject(loc) {
			return nil, fmt.Errorf("%s: an object is registered again by its ETag, not here", loc)
		}
		ts, _, err := expand([]string{loc}, nil, true, gate)
		if err != nil {
			return nil, err
		}
		if len(ts) != 1 || ts[0].path != loc {
			return nil, &FileError{Path: loc, Err: fmt.Errorf("now resolves to %s (links followed): not the file registered at its location", ts[0].path)}
		}
		targets[i] = ts[0]
	}
	infos, err := inspectAll(ctx, targets, Options{Workers: opts.Workers})
	if err != nil {
		return nil, err
	}
	chosen, explicit, err := filterColumns(r, t, cols, infos[0], false, Options{})
	if err != nil {
		return nil, err
	}
	filters, err := buildFilters(infos, cols, chosen, explicit, opts.Workers, nil)
	if err != nil {
		return nil, err
	}
	out := make([]catalog.NewFile, len(infos))
	var errs []error
	for i, fi := range infos {
		nf, err := fi.newFile(t.Name, cols, len(files[i].IgnoredColumns) > 0)
		if err != nil {
			errs = append(errs, &FileError{Path: fi.path, Err: err})
			continue
		}
		nf.Owner = files[i].Owner
		attachFilters(&nf, cols, filters[i])
		out[i] = nf
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
