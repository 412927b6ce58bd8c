package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Cache keeps fetched objects as local files that DuckDB reads, and parts
// of objects (see PartReader), in one directory shared by every process
// that uses it:
//
//	DIR/
//	  <sha256(location)[:16]>-<sha256(etag)[:8]>-<offset>-<length>.parquet          a whole object
//	  <sha256(location)[:16]>-<sha256(etag)[:8]>-<offset>-<length>.parquet.crc32c   its checksum, without xattrs
//	  parts/<sha256(location)[:16]>-<sha256(etag)[:8]>-<size>/<offset>-<length>-<crc32c>.part   a part
//	  .fetch-*                                                                      a fetch in progress
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
//
// A kept copy is checked before it is handed out again: the CRC-32C of
// its bytes, taken from the fetch as they arrived and kept with the entry
// (an extended attribute, else a file beside it; in a part's name), must
// be that of the file now. The length
// alone, which was all that was checked before, does not catch a copy
// damaged in place; DuckDB would read it as the object. A whole copy that
// fails is fetched again, and one that fails again is an error naming
// the object (the cache's disk is then suspect); a part that fails is
// dropped and its bytes fetched. (A copy just fetched is not read back:
// that would read the page cache, which holds the bytes the checksum was
// taken of.)
type Cache struct {
	Dir    string
	Budget int64 // bytes; 0 means DefaultCacheBudget
	// NoChecksum hands out whole copies without reading them through
	// first to check them (nor records checksums for them): for a cache
	// on a file system that checks its blocks itself (ZFS, btrfs), and to
	// measure what the check costs. Parts, read whole anyway, are always
	// checked.
	NoChecksum bool

	noAttrs bool // checksums in files even where extended attributes work (tests)
}

// sumSuffix names the file beside an entry that holds its checksum where
// the file system keeps no extended attributes (see setSumAttr).
const sumSuffix = ".crc32c"

// castagnoli is CRC-32C, which amd64 and arm64 compute in hardware: the
// check costs about the time to read the file from the page cache.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// ErrDamaged reports a cached copy that does not match the checksum taken
// when it was written.
var ErrDamaged = errors.New("its copy in the object cache does not match the checksum taken when it was written")

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
// GET carrying the ETag (If-Match), which proves the same. A hit is
// checked against its checksum before it is returned; one that fails is
// fetched again (fetched is then true), and if that copy fails too the
// error names the object (ErrDamaged).
//
// The entry stays pinned until release is called: a shared lock on it
// that eviction (in any process) respects, so the file is there when
// DuckDB opens it, however long the query runs.
func (c *Cache) Get(ctx context.Context, st Store, obj Object) (path string, fetched bool, release func(), err error) {
	path = c.Entry(obj)
	var damaged error
	if pin, ok := pinEntry(path, obj.Size); ok {
		now, err := st.Stat(ctx, obj.Location)
		if err == nil && (now.Size != obj.Size || (obj.ETag != "" && now.ETag != obj.ETag)) {
			err = fmt.Errorf("%s: %w (now ETag %s, %d bytes; registered %s, %d bytes)", obj.Location, ErrChanged, now.ETag, now.Size, obj.ETag, obj.Size)
		}
		if err != nil {
			pin.Close()
			return "", false, nil, err
		}
		err = c.check(pin, path, obj.Size)
		if err == nil {
			t := time.Now()
			_ = os.Chtimes(path, t, t)
			return path, false, func() { pin.Close() }, nil
		}
		// Damaged, or kept before checksums were: fetched again, and the
		// rename replaces it (a reader holding it keeps its own).
		pin.Close()
		if !errors.Is(err, errNoSum) {
			damaged = err
		}
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
		pin, ok := pinEntry(path, obj.Size)
		if !ok {
			continue
		}
		// A copy just written is read back from the page cache, which
		// holds the bytes its checksum was taken of: reading it through
		// would prove nothing of the disk. A copy fetched because the last
		// one failed is, to tell a file damaged as it is written from a
		// one-off.
		if damaged != nil {
			if err := c.check(pin, path, obj.Size); err != nil {
				pin.Close()
				return "", false, nil, fmt.Errorf("%s: %w, and so is the copy fetched again (%v; then %v): the disk of %s may be failing", obj.Location, ErrDamaged, damaged, err, c.Dir)
			}
		}
		return path, true, func() { pin.Close() }, nil
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
	h := crc32.New(castagnoli)
	var w io.Writer = tmp
	if !c.NoChecksum {
		w = io.MultiWriter(tmp, h)
	}
	n, err := st.Fetch(ctx, obj, w)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != obj.Size {
		err = fmt.Errorf("%s: %w (fetched %d bytes, registered %d)", obj.Location, ErrChanged, n, obj.Size)
	}
	if err == nil && !c.NoChecksum && (c.noAttrs || setSumAttr(tmp.Name(), h.Sum32()) != nil) {
		// No extended attributes here: a file beside the entry, written
		// before it, so that an entry is never seen without its checksum
		// but in the moment another process removes an orphan one.
		err = c.writeSum(path, h.Sum32())
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// writeSum keeps an entry's checksum beside it, written to a temporary
// name and renamed into place.
func (c *Cache) writeSum(entry string, sum uint32) error {
	tmp, err := os.CreateTemp(c.Dir, ".fetch-*")
	if err != nil {
		return fmt.Errorf("object cache: %w", err)
	}
	_, err = fmt.Fprintf(tmp, "%08x\n", sum)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), entry+sumSuffix)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("object cache: %w", err)
	}
	return nil
}

// check reads the pinned entry f (at path) through and compares its
// checksum with the one recorded when it was written.
func (c *Cache) check(f *os.File, path string, size int64) error {
	if c.NoChecksum {
		return nil
	}
	want, ok := sumAttrOf(path)
	if !ok {
		b, err := os.ReadFile(path + sumSuffix)
		if err != nil {
			return fmt.Errorf("%w: %w", errNoSum, err)
		}
		w, err := strconv.ParseUint(strings.TrimSpace(string(b)), 16, 32)
		if err != nil {
			return fmt.Errorf("checksum file %s%s: %w", path, sumSuffix, err)
		}
		want = uint32(w)
	}
	h := crc32.New(castagnoli)
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, size), *buf); err != nil {
		return err
	}
	if got := h.Sum32(); got != want {
		return fmt.Errorf("CRC-32C %08x, %08x when written", got, want)
	}
	return nil
}

var errNoSum = errors.New("no checksum kept")

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

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
	var all, sums []entry
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
		if strings.HasSuffix(d.Name(), sumSuffix) {
			sums = append(sums, entry{p, info.Size(), info.ModTime()})
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
	// A checksum outlives its entry until it is old: one removed with the
	// entry could be another process's, written for the same entry just
	// fetched again.
	for _, s := range sums {
		if now.Sub(s.used) > EvictGrace {
			if _, err := os.Lstat(strings.TrimSuffix(s.path, sumSuffix)); errors.Is(err, fs.ErrNotExist) {
				os.Remove(s.path)
			}
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
