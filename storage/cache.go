package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Cache keeps fetched objects as local files that DuckDB reads, and parts
// of objects (see PartReader), in one directory shared by every process
// that uses it:
//
//	DIR/
//	  <sha256(location)[:16]>-<sha256(etag)[:8]>-<offset>-<length>.parquet   a whole object
//	  parts/<sha256(location)[:16]>-<sha256(etag)[:8]>-<size>/<offset>-<length>.part   a part
//	  .fetch-*                                                               a fetch in progress
//
// An entry is keyed by the object's location and ETag (a part's directory
// by its size too), so a changed object is a different entry and is never
// served for the old one; the offset and length name the bytes it holds
// (for a whole object 0 and its size). An entry or part is written to a
// temporary name and renamed into place, so a reader (in this process or
// another) sees a whole entry or none. Each use sets the entry's
// modification time: eviction removes the least recently used entries
// until the directory is within Budget, never an entry a process has
// pinned (a shared flock, held from Get until the query is done), nor
// those the caller keeps or any used in the last EvictGrace.
type Cache struct {
	Dir    string
	Budget int64 // bytes; 0 means DefaultCacheBudget
}

// DefaultCacheBudget is the cache's size when none is given: 4 GiB.
const DefaultCacheBudget = 4 << 30

// EvictGrace is how recently used an entry may be and still be evicted:
// entries used within it are kept, over the budget if need be (where
// there is no flock, the only protection of another process's entries).
const EvictGrace = time.Minute

// staleFetch is how old a temporary file must be to be taken for the
// leftover of a fetch that died (its process killed).
const staleFetch = time.Hour

// CacheFromEnv is the cache ROCKLAKE_CACHE_DIR and ROCKLAKE_CACHE_BYTES
// describe: by default rocklake/objects under the user's cache directory
// (~/.cache), 4 GiB.
func CacheFromEnv() (*Cache, error) {
	dir := os.Getenv("ROCKLAKE_CACHE_DIR")
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("object cache: %w (set ROCKLAKE_CACHE_DIR)", err)
		}
		dir = filepath.Join(base, "rocklake", "objects")
	}
	c := &Cache{Dir: dir}
	if b := os.Getenv("ROCKLAKE_CACHE_BYTES"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("ROCKLAKE_CACHE_BYTES=%q: a positive number of bytes was expected", b)
		}
		c.Budget = n
	}
	return c, nil
}

func (c *Cache) budget() int64 {
	if c.Budget > 0 {
		return c.Budget
	}
	return DefaultCacheBudget
}

// Entry is the path at which obj's bytes are (or would be) cached.
func (c *Cache) Entry(obj Object) string {
	loc := sha256.Sum256([]byte(obj.Location))
	tag := sha256.Sum256([]byte(obj.ETag))
	return filepath.Join(c.Dir, fmt.Sprintf("%s-%s-0-%d.parquet", hex.EncodeToString(loc[:16]), hex.EncodeToString(tag[:8]), obj.Size))
}

// Get returns a local file holding obj's bytes, fetching it from st when
// the cache has no entry for it. A hit is checked against the store first
// (one HEAD: the object must still have obj's ETag and size), so a query
// never reads an object that changed since registration; a miss is one
// GET carrying the ETag (If-Match), which proves the same.
//
// The entry stays pinned until release is called: a shared lock on it
// that eviction (in any process) respects, so the file is there when
// DuckDB opens it, however long the query runs.
func (c *Cache) Get(ctx context.Context, st Store, obj Object) (path string, fetched bool, release func(), err error) {
	path = c.Entry(obj)
	if pin, ok := pinEntry(path, obj.Size); ok {
		now, err := st.Stat(ctx, obj.Location)
		if err == nil && (now.Size != obj.Size || (obj.ETag != "" && now.ETag != obj.ETag)) {
			err = fmt.Errorf("%s: %w (now ETag %s, %d bytes; registered %s, %d bytes)", obj.Location, ErrChanged, now.ETag, now.Size, obj.ETag, obj.Size)
		}
		if err != nil {
			pin.Close()
			return "", false, nil, err
		}
		t := time.Now()
		_ = os.Chtimes(path, t, t)
		return path, false, func() { pin.Close() }, nil
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return "", false, nil, fmt.Errorf("object cache: %w", err)
	}
	// An entry another process evicts between its rename and the pin is
	// fetched again; twice in a row means a cache far too small.
	for range 3 {
		if err := c.fetch(ctx, st, obj, path); err != nil {
			return "", false, nil, err
		}
		if pin, ok := pinEntry(path, obj.Size); ok {
			return path, true, func() { pin.Close() }, nil
		}
	}
	return "", false, nil, fmt.Errorf("%s: object cache %s: the entry was evicted as soon as it was fetched; raise ROCKLAKE_CACHE_BYTES", obj.Location, c.Dir)
}

// fetch writes obj to a temporary file and renames it into place: readers
// see a whole entry or none. Another process may have put the same entry
// meanwhile; the rename replaces it with the same bytes.
func (c *Cache) fetch(ctx context.Context, st Store, obj Object, path string) error {
	tmp, err := os.CreateTemp(c.Dir, ".fetch-*")
	if err != nil {
		return fmt.Errorf("object cache: %w", err)
	}
	n, err := st.Fetch(ctx, obj, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != obj.Size {
		err = fmt.Errorf("%s: %w (fetched %d bytes, registered %d)", obj.Location, ErrChanged, n, obj.Size)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// pinEntry opens an entry of the expected size and holds a shared lock on
// it. The entry may be evicted between the open and the lock: then the
// file held is no longer the one at path, and it is not a pin.
func pinEntry(path string, size int64) (*os.File, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	if lockShared(f) == nil {
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) && held.Mode().IsRegular() && held.Size() == size {
			return f, true
		}
	}
	f.Close()
	return nil, false
}

// Trim evicts least recently used entries until the cache is within its
// budget, keeping the entries in keep (the files a query is about to
// read) and those used within EvictGrace. It also removes fetches left
// behind by processes that died. Errors removing single files are
// ignored: another process may have removed them first.
func (c *Cache) Trim(keep map[string]bool) error {
	ents, err := os.ReadDir(c.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("object cache: %w", err)
	}
	type entry struct {
		path string
		size int64
		used time.Time
	}
	var all []entry
	var total int64
	now := time.Now()
	var files []string
	for _, d := range ents {
		files = append(files, d.Name())
	}
	// Parts of objects count against the same budget and are evicted by
	// the same rule as whole objects; a directory left empty is removed
	// once old (a fetch renaming a part into it makes it again).
	if dirs, err := os.ReadDir(filepath.Join(c.Dir, partsDir)); err == nil {
		for _, d := range dirs {
			if !d.IsDir() {
				continue
			}
			sub := filepath.Join(partsDir, d.Name())
			parts, err := os.ReadDir(filepath.Join(c.Dir, sub))
			if err != nil {
				continue
			}
			if len(parts) == 0 {
				if info, err := d.Info(); err == nil && now.Sub(info.ModTime()) > staleFetch {
					os.Remove(filepath.Join(c.Dir, sub))
				}
				continue
			}
			for _, p := range parts {
				files = append(files, filepath.Join(sub, p.Name()))
			}
		}
	}
	for _, name := range files {
		p := filepath.Join(c.Dir, name)
		info, err := os.Lstat(p)
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		d := info
		if strings.HasPrefix(d.Name(), ".fetch-") {
			if now.Sub(info.ModTime()) > staleFetch {
				os.Remove(p)
			}
			continue
		}
		all = append(all, entry{p, info.Size(), info.ModTime()})
		total += info.Size()
	}
	sort.Slice(all, func(i, j int) bool { return all[i].used.Before(all[j].used) })
	for _, e := range all {
		if total <= c.budget() {
			break
		}
		if keep[e.path] || now.Sub(e.used) < EvictGrace {
			continue
		}
		if evict(e.path) {
			total -= e.size
		}
	}
	return nil
}

// evict removes an entry no process has pinned, holding the exclusive
// lock across the removal so that no reader pins it halfway.
func evict(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close()
	if !tryLockExclusive(f) {
		return false // pinned: a query is about to read it
	}
	err = os.Remove(path)
	return err == nil || errors.Is(err, fs.ErrNotExist)
}
