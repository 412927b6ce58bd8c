package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/storage"
)

// objectWorkers bounds the objects fetched at once: the store's
// connections (storage.S3Options.Connections) are the real bound.
const objectWorkers = 16

// fetchObjects puts every object among files (the kept files of a
// query's views) into the object cache and returns the local copy of each,
// by location, for the views to read instead: DuckDB here cannot read
// s3:// itself (no httpfs), and only kept objects are ever fetched. Each
// object is read only as registered (its size and ETag): one that changed
// or vanished fails the query, naming it. The local copies are kept from
// eviction until the query has them; the cache is trimmed to its budget
// after. stamps gets each local copy's size. The copies stay pinned (no
// process evicts them) until release is called, once DuckDB is done.
func (e *Engine) fetchObjects(ctx context.Context, files []string, stamps map[string]fileStamp, res *Result) (_ map[string]string, release func(), err error) {
	var objs []string
	seen := map[string]bool{}
	for _, f := range files {
		if catalog.IsObject(f) && !seen[f] {
			seen[f] = true
			objs = append(objs, f)
		}
	}
	if len(objs) == 0 {
		return nil, func() {}, nil
	}
	st, cache, err := e.objectStore()
	if err != nil {
		return nil, nil, err
	}
	type counter interface{ Counts() storage.Counts }
	var before storage.Counts
	if c, ok := st.(counter); ok {
		before = c.Counts()
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
	fetched := make([]bool, len(objs))
	// ForEach stops at a store that cannot be reached and reports it once.
	ferr := storage.ForEach(len(objs), objectWorkers, func(i int) error {
		s := stamps[objs[i]]
		var err error
		local[i], fetched[i], releases[i], err = cache.Get(ctx, st, storage.Object{Location: objs[i], Size: s.size, ETag: s.etag})
		return err
	})
	if c, ok := st.(counter); ok {
		d := c.Counts().Sub(before)
		res.Objects.Requests += d.Requests // objectPages counted its own
		res.Objects.Bytes += d.Bytes
	}
	if err := ferr; err != nil {
		release()
		if errors.Is(err, storage.ErrChanged) || errors.Is(err, storage.ErrNotFound) {
			return nil, nil, fmt.Errorf("%w: %w; `rocklake verify TABLE` lists every file that changed", ErrDataFileChanged, err)
		}
		return nil, nil, err
	}
	keep := make(map[string]bool, len(objs))
	byObject := make(map[string]string, len(objs))
	for i, o := range objs {
		keep[local[i]] = true
		byObject[o] = local[i]
		res.Objects.Objects++
		if fetched[i] {
			res.Objects.Fetched++
		} else {
			res.Objects.Hits++
		}
		stamps[local[i]] = fileStamp{size: stamps[o].size}
	}
	if res.Objects.Fetched > 0 {
		// Only a fetch grows the cache; a trim lists the whole directory.
		// Eviction failing costs space, not answers.
		_ = cache.Trim(keep)
	}
	return byObject, release, nil
}

// Objects is the object store and cache the engine reads objects through
// (see UseObjects), for table maintenance that checks or reads objects.
func (e *Engine) Objects() (storage.Store, *storage.Cache, error) { return e.objectStore() }

// ObjectCopy is a local file holding the object at loc as registered (size
// and ETag), from the cache or fetched into it, pinned until release is
// called: for callers that hand one object to DuckDB themselves (verify
// --deep).
func (e *Engine) ObjectCopy(ctx context.Context, loc string, size int64, etag string) (path string, release func(), err error) {
	st, cache, err := e.objectStore()
	if err != nil {
		return "", nil, err
	}
	p, _, release, err := cache.Get(ctx, st, storage.Object{Location: loc, Size: size, ETag: etag})
	return p, release, err
}
