package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/storage"
)

func TestCache(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	st := newStore(t, srv, srv.Endpoint, storage.S3Options{})
	ctx := context.Background()
	var objs []storage.Object
	for i, name := range []string{"a", "b", "c", "d"} {
		put(t, st, "s3://lake/"+name+".parquet", payload(1000, byte(i)))
		o, err := st.Stat(ctx, "s3://lake/"+name+".parquet")
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	cache := &storage.Cache{Dir: t.TempDir(), Budget: 2500}

	// A miss is one GET; a hit one HEAD, and the same bytes.
	before := st.Counts()
	p, fetched, release, err := cache.Get(ctx, st, objs[0])
	if err != nil || !fetched {
		t.Fatalf("first get: fetched %v, %v", fetched, err)
	}
	if d := st.Counts().Sub(before); d.Requests != 1 || d.Bytes != 1000 {
		t.Errorf("a miss counted %+v, want 1 request of 1000 bytes", d)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, payload(1000, 0)) {
		t.Fatal("the entry holds other bytes")
	}
	release()
	before = st.Counts()
	p2, fetched, release, err := cache.Get(ctx, st, objs[0])
	if err != nil || fetched || p2 != p {
		t.Fatalf("second get: %s fetched %v, %v", p2, fetched, err)
	}
	release()
	if d := st.Counts().Sub(before); d.Requests != 1 || d.Bytes != 0 {
		t.Errorf("a hit counted %+v, want one HEAD", d)
	}

	// The object changes: neither the old entry nor a fetch serves it.
	put(t, st, objs[0].Location, payload(1000, 42))
	if _, _, _, err := cache.Get(ctx, st, objs[0]); !errors.Is(err, storage.ErrChanged) || !strings.Contains(err.Error(), objs[0].Location) {
		t.Errorf("hit on a changed object: %v, want ErrChanged naming it", err)
	}
	os.Remove(p)
	if _, _, _, err := cache.Get(ctx, st, objs[0]); !errors.Is(err, storage.ErrChanged) {
		t.Errorf("miss on a changed object: %v, want ErrChanged", err)
	}
	// A changed object's new version is another entry.
	now, _ := st.Stat(ctx, objs[0].Location)
	if cache.Entry(now) == cache.Entry(objs[0]) {
		t.Error("a new ETag maps to the old entry")
	}

	// Eviction: oldest first, never what the caller keeps, never what was
	// used within the grace period.
	var paths []string
	var releases []func()
	for i, o := range objs[1:] {
		p, _, release, err := cache.Get(ctx, st, o)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
		old := time.Now().Add(-time.Duration(10-i) * time.Minute)
		os.Chtimes(p, old, old)
		paths = append(paths, p)
	}
	// All three pinned: nothing goes, over the budget or not.
	cache.Trim(nil)
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("a pinned entry was evicted: %v", err)
		}
	}
	for _, r := range releases {
		r()
	}
	// b (oldest) is kept by the caller, so c goes; d is within budget then.
	if err := cache.Trim(map[string]bool{paths[0]: true}); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if !exists(paths[0]) || exists(paths[1]) || !exists(paths[2]) {
		t.Errorf("after trim: b %v c %v d %v, want b and d kept, c evicted", exists(paths[0]), exists(paths[1]), exists(paths[2]))
	}
	// Recently used entries stay even over the budget.
	small := &storage.Cache{Dir: cache.Dir, Budget: 1}
	now2 := time.Now()
	os.Chtimes(paths[2], now2, now2)
	small.Trim(nil)
	if !exists(paths[2]) || exists(paths[0]) {
		t.Errorf("over budget: the entry used just now was evicted (%v) or the old one kept (%v)", !exists(paths[2]), exists(paths[0]))
	}
}

// Processes (here goroutines with caches of their own on one directory)
// fetching the same object at once all get a whole entry.
func TestCacheConcurrent(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	st := newStore(t, srv, srv.Endpoint, storage.S3Options{})
	ctx := context.Background()
	data := payload(3<<20, 5)
	put(t, st, "s3://lake/big.parquet", data)
	obj, err := st.Stat(ctx, "s3://lake/big.parquet")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &storage.Cache{Dir: dir}
			p, _, release, err := c.Get(ctx, st, obj)
			if err == nil {
				defer release()
				if got, rerr := os.ReadFile(p); rerr != nil || !bytes.Equal(got, data) {
					err = errors.New("a reader saw a partial or other entry")
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".fetch-*"))
	all, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if len(left) != 0 || len(all) != 1 {
		t.Errorf("left behind: %v (all: %v)", left, all)
	}
}

// flip changes one byte of a file in place: the length stays.
func flip(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// damagingStore is a store whose fetched copies are damaged on the
// cache's disk as they are written, as by a failing disk: it flips a byte
// of every fetch in progress in dir once the bytes are in.
type damagingStore struct {
	storage.Store
	t   *testing.T
	dir string
}

func (d damagingStore) Fetch(ctx context.Context, obj storage.Object, w io.Writer) (int64, error) {
	n, err := d.Store.Fetch(ctx, obj, w)
	tmps, _ := filepath.Glob(filepath.Join(d.dir, ".fetch-*"))
	for _, p := range tmps {
		flip(d.t, p, 17)
	}
	return n, err
}

// A cached copy damaged in place, its length unchanged, is not handed
// out: it is fetched again. A copy damaged again as it is written fails
// naming the object. Without the check (NoChecksum) the damaged copy is
// what a reader gets.
func TestCacheDamaged(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	st := newStore(t, srv, srv.Endpoint, storage.S3Options{})
	ctx := context.Background()
	data := payload(300_000, 7)
	put(t, st, "s3://lake/a.parquet", data)
	obj, err := st.Stat(ctx, "s3://lake/a.parquet")
	if err != nil {
		t.Fatal(err)
	}
	cache := &storage.Cache{Dir: t.TempDir()}
	get := func(c *storage.Cache, st storage.Store) (bool, []byte, error) {
		t.Helper()
		p, fetched, release, err := c.Get(ctx, st, obj)
		if err != nil {
			return fetched, nil, err
		}
		defer release()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return fetched, b, nil
	}
	if _, b, err := get(cache, st); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("first get: %v", err)
	}
	entry := cache.Entry(obj)
	flip(t, entry, 150_000)
	before := st.Counts()
	fetched, b, err := get(cache, st)
	if err != nil || !fetched || !bytes.Equal(b, data) {
		t.Fatalf("get of a damaged copy: fetched %v, same bytes %v, %v; want it fetched again", fetched, bytes.Equal(b, data), err)
	}
	if d := st.Counts().Sub(before); d.Requests != 2 || d.Bytes != int64(len(data)) {
		t.Errorf("a damaged hit counted %+v, want the HEAD and one GET", d)
	}
	if fetched, _, err := get(cache, st); err != nil || fetched {
		t.Errorf("get after the repair: fetched %v, %v; want a hit", fetched, err)
	}

	// A copy kept without a checksum (before checksums were kept) is
	// fetched again, once.
	os.Remove(entry)
	os.Remove(entry + ".crc32c") // where the checksum is not an attribute
	if err := os.WriteFile(entry, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if fetched, b, err := get(cache, st); err != nil || !fetched || !bytes.Equal(b, data) {
		t.Errorf("get of a copy without a checksum: fetched %v, %v", fetched, err)
	}

	// Damaged on the way to the disk, twice: the object is named.
	flip(t, entry, 9)
	bad := damagingStore{Store: st, t: t, dir: cache.Dir}
	_, _, err = get(cache, bad)
	if !errors.Is(err, storage.ErrDamaged) || !strings.Contains(err.Error(), obj.Location) {
		t.Fatalf("copies damaged as written: %v, want ErrDamaged naming the object", err)
	}

	// Without the check, the damaged copy is served: what the check is for.
	flip(t, entry, 9)
	unchecked := &storage.Cache{Dir: cache.Dir, NoChecksum: true}
	if _, b, err := get(unchecked, st); err != nil || bytes.Equal(b, data) {
		t.Fatalf("NoChecksum: %v; the damaged copy should have been served", err)
	}
}

// A cached part damaged in place is dropped and its bytes read from the
// store again.
func TestCachedPartDamaged(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	st := newStore(t, srv, srv.Endpoint, storage.S3Options{})
	ctx := context.Background()
	data := payload(200_000, 3)
	put(t, st, "s3://lake/p.parquet", data)
	obj, err := st.Stat(ctx, "s3://lake/p.parquet")
	if err != nil {
		t.Fatal(err)
	}
	cache := &storage.Cache{Dir: t.TempDir()}
	cr := storage.CachedRanges(st, cache)
	read := func() ([]byte, int64) {
		t.Helper()
		before := st.Counts()
		b, err := cr.ReadRange(ctx, obj, 1000, 50_000)
		if err != nil {
			t.Fatal(err)
		}
		return b, st.Counts().Sub(before).Requests
	}
	if b, n := read(); n != 1 || !bytes.Equal(b, data[1000:51_000]) {
		t.Fatalf("first read: %d requests", n)
	}
	if _, n := read(); n != 0 {
		t.Fatalf("second read: %d requests, want the part", n)
	}
	parts, _ := filepath.Glob(filepath.Join(cache.Dir, "parts", "*", "*.part"))
	if len(parts) != 1 {
		t.Fatalf("parts %v", parts)
	}
	flip(t, parts[0], 20_000)
	if b, n := read(); n != 1 || !bytes.Equal(b, data[1000:51_000]) {
		t.Fatalf("read of a damaged part: %d requests, same bytes %v; want it read from the store", n, bytes.Equal(b, data[1000:51_000]))
	}
	if b, n := read(); n != 0 || !bytes.Equal(b, data[1000:51_000]) {
		t.Fatalf("read after: %d requests, want the part kept again", n)
	}
}
