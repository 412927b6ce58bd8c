package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/storage"
)

// LocalDeleteFiles is dels (a table's delete files, by data file id) with
// those of the data files ids names (every one when ids is nil) that are
// objects replaced by local copies in the object cache: DuckDB here reads
// no s3:// location, and the page path reads positions from disk. Each
// object is fetched only as recorded (its size and ETag): one changed or
// gone fails, naming it, since reading the rows without it would bring
// deleted rows back. The copies stay pinned until release is called, once
// DuckDB is done with them. dels itself is not changed.
func (e *Engine) LocalDeleteFiles(ctx context.Context, t catalog.Table, dels map[int64]catalog.DeleteFile, ids []int64) (_ map[int64]catalog.DeleteFile, release func(), err error) {
	var objs []catalog.DeleteFile
	want := func(id int64) {
		if d, ok := dels[id]; ok && catalog.IsObject(d.Location(t)) {
			objs = append(objs, d)
		}
	}
	if ids == nil {
		for id := range dels {
			want(id)
		}
	} else {
		seen := make(map[int64]bool, len(ids))
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				want(id)
			}
		}
	}
	if len(objs) == 0 {
		return dels, func() {}, nil
	}
	st, cache, err := e.objectStore()
	if err != nil {
		return nil, nil, err
	}
	local := make([]string, len(objs))
	releases := make([]func(), len(objs))
	release = func() {
		for _, r := range releases {
			if r != nil {
				r()
			}
		}
	}
	err = storage.ForEach(len(objs), objectWorkers, func(i int) error {
		d := objs[i]
		var err error
		local[i], _, releases[i], err = cache.Get(ctx, st, storage.Object{Location: d.Location(t), Size: d.FileSizeBytes, ETag: d.ETag})
		return err
	})
	if err != nil {
		release()
		if errors.Is(err, storage.ErrChanged) || errors.Is(err, storage.ErrNotFound) {
			return nil, nil, fmt.Errorf("%w: a delete file of table %q: %w", ErrDataFileChanged, t.Name, err)
		}
		return nil, nil, fmt.Errorf("table %q: fetching delete files: %w", t.Name, err)
	}
	out := maps.Clone(dels)
	for i, d := range objs {
		// The copy is checked against the object's size and ETag: its own
		// modification time says nothing of it.
		d.Path, d.PathIsRelative, d.ModifiedUnixNanos = local[i], false, 0
		out[d.DataFileID] = d
	}
	return out, release, nil
}
