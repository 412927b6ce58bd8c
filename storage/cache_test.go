package storage_test

import (
	"bytes"
	"context"
	"errors"
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
	all, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 0 || len(all) != 1 {
		t.Errorf("left behind: %v (all: %v)", left, all)
	}
}
