package ingest

import (
	"context"
	"fmt"
	"maps"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pathgate"
	"github.com/rocklake/rocklake/storage"
)

// PrepareOptions tune PrepareFiles. The zero value builds no membership
// filters.
type PrepareOptions struct {
	// FilterColumns are the column ids to build membership filters for.
	FilterColumns map[int64]bool
	// AutoFilters adds the columns `add --create` would choose from the
	// first file (random ids: many distinct values).
	AutoFilters bool
	Workers     int
	// Objects reads s3:// locations; nil makes an S3 store from the
	// environment when a path needs one.
	Objects storage.Store
}

// PrepareFiles reads the footers of files (local, or objects named by
// their s3:// location) and builds their
// registrations in a table with columns cols, exactly as Add would, but
// commits nothing: for a caller that registers them in a transaction of
// its own, beside other changes (an import replaying another catalog's
// snapshots). paths are files, each named once; the result is in their
// order, with the filter columns used (those given and those chosen), to
// pass to the table's later registrations.
func PrepareFiles(ctx context.Context, table string, cols []catalog.Column, paths []string, opts PrepareOptions) ([]catalog.NewFile, map[int64]bool, error) {
	if len(paths) == 0 {
		return nil, maps.Clone(opts.FilterColumns), nil
	}
	objects := func() (storage.Store, error) {
		if opts.Objects == nil {
			st, err := storage.NewS3(ctx, storage.S3OptionsFromEnv())
			if err != nil {
				return nil, err
			}
			opts.Objects = st
		}
		return opts.Objects, nil
	}
	targets, _, err := expand(paths, objects, true, pathgate.Gate{})
	if err != nil {
		return nil, nil, err
	}
	if len(targets) != len(paths) {
		// An object key is listed as a prefix: another object whose key
		// starts with it came along.
		return nil, nil, fmt.Errorf("%d paths named %d files", len(paths), len(targets))
	}
	infos, err := inspectAll(ctx, targets, Options{Workers: opts.Workers, Objects: opts.Objects})
	if err != nil {
		return nil, nil, err
	}
	chosen := maps.Clone(opts.FilterColumns)
	if chosen == nil {
		chosen = map[int64]bool{}
	}
	if opts.AutoFilters {
		maps.Copy(chosen, autoFilterColumns(infos[0], cols))
	}
	filters, err := buildFilters(infos, cols, chosen, nil, opts.Workers, opts.Objects)
	if err != nil {
		return nil, nil, err
	}
	out := make([]catalog.NewFile, len(infos))
	var errs []error
	for i, fi := range infos {
		// A catalog being imported may hold files with columns its table
		// has since dropped: DuckLake reads them by column id, as here.
		nf, err := fi.newFile(table, cols, true)
		if err != nil {
			errs = append(errs, &FileError{Path: fi.path, Err: err})
			continue
		}
		// Not recorded as columns to map in: DuckLake reads a file by
		// column id, so a column its table lacks is none of the table's,
		// and one added later under its name is another column (its
		// default in this file), never these values (catalog.ColumnMapping.HoldersOf).
		nf.IgnoredColumns = nil
		attachFilters(&nf, cols, filters[i])
		out[i] = nf
	}
	if len(errs) > 0 {
		return nil, nil, joinErrors(errs, len(infos))
	}
	return out, chosen, nil
}
