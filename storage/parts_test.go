package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/storage"
)

func TestCoalesce(t *testing.T) {
	got := storage.Coalesce([]storage.Range{{900, 100}, {0, 10}, {20, 10}, {5, 10}, {1000 + 40, 10}, {5000, 0}, {3000, 2500}}, 40, 1000)
	want := []storage.Range{
		{0, 30},                                 // 0..10 and 5..15 overlap, 20..30 is 5 bytes on
		{900, 100},                              // 40 bytes from 1000..: not joined (the gap must be smaller)
		{1040, 10},                              //
		{3000, 1000}, {4000, 1000}, {5000, 500}, // split at maxLen
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// TestPartReader reads parts of an object from a real S3-compatible
// server: the tail in one request, announced ranges coalesced by the gap
// rule, unannounced bytes on demand; the parts cached, served again after
// one HEAD; a changed object refused, with or without its old parts
// cached, and its new version never served the old parts.
func TestPartReader(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	st := newStore(t, srv, srv.Endpoint, storage.S3Options{})
	ctx := context.Background()
	const size = 1 << 20
	data := payload(size, 3)
	loc := "s3://lake/big.parquet"
	put(t, st, loc, data)
	obj, err := st.Stat(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	cache := &storage.Cache{Dir: t.TempDir()}

	before := st.Counts()
	r, err := storage.OpenParts(ctx, st, cache, obj, storage.FooterPrefetch)
	if err != nil {
		t.Fatal(err)
	}
	if d := st.Counts().Sub(before); d.Requests != 1 || d.Bytes != storage.FooterPrefetch {
		t.Errorf("open: %+v, want one request of the tail", d)
	}
	// Two ranges less than PartGap apart are one request; one far away
	// another; a range inside the tail none.
	before = st.Counts()
	if err := r.Prefetch([]storage.Range{{1000, 100}, {1000 + 100 + storage.PartGap - 1, 50}, {500_000, 4000}, {size - 100, 50}}); err != nil {
		t.Fatal(err)
	}
	if d := st.Counts().Sub(before); d.Requests != 2 || d.Bytes != 100+storage.PartGap-1+50+4000 {
		t.Errorf("prefetch: %+v, want 2 requests of %d bytes", d, 100+storage.PartGap-1+50+4000)
	}
	before = st.Counts()
	for _, rg := range []storage.Range{{1000, 100}, {1050, 30000}, {500_100, 3000}, {size - 10, 10}} {
		buf := make([]byte, rg.Len)
		if _, err := r.ReadAt(buf, rg.Off); err != nil || !bytes.Equal(buf, data[rg.Off:rg.Off+rg.Len]) {
			t.Fatalf("read %v: %v, or other bytes", rg, err)
		}
	}
	if d := st.Counts().Sub(before); d.Requests != 0 {
		t.Errorf("reads of held bytes made %d requests", d.Requests)
	}
	// Bytes nobody announced: fetched on demand, counted as unplanned.
	buf := make([]byte, 10)
	if _, err := r.ReadAt(buf, 700_000); err != nil || !bytes.Equal(buf, data[700_000:700_010]) {
		t.Fatalf("unplanned read: %v", err)
	}
	if s := r.Stats(); s.Unplanned != 1 || s.Requests != 4 {
		t.Errorf("stats %+v, want 4 requests, 1 unplanned", s)
	}

	// Another reader: the tail from the cache after one HEAD, the ranges
	// read before from the cache too.
	before = st.Counts()
	r2, err := storage.OpenParts(ctx, st, cache, obj, storage.FooterPrefetch)
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.Prefetch([]storage.Range{{1000, 100}, {500_000, 4000}, {700_000, 10}}); err != nil {
		t.Fatal(err)
	}
	buf = make([]byte, 4000)
	if _, err := r2.ReadAt(buf, 500_000); err != nil || !bytes.Equal(buf, data[500_000:504_000]) {
		t.Fatalf("cached read: %v, or other bytes", err)
	}
	if d := st.Counts().Sub(before); d.Requests != 1 || d.Bytes != 0 {
		t.Errorf("from the cache: %+v, want one HEAD", d)
	}
	if s := r2.Stats(); s.CachedBytes == 0 {
		t.Errorf("stats %+v: nothing from the cache", s)
	}

	// The object changes (same size): refused with its old parts cached
	// and without; a reader of its new version fetches, never the old
	// parts.
	other := payload(size, 9)
	put(t, st, loc, other)
	if _, err := storage.OpenParts(ctx, st, cache, obj, storage.FooterPrefetch); !errors.Is(err, storage.ErrChanged) || !strings.Contains(err.Error(), loc) {
		t.Errorf("open of a changed object, parts cached: %v, want ErrChanged naming it", err)
	}
	if _, err := storage.OpenParts(ctx, st, &storage.Cache{Dir: t.TempDir()}, obj, storage.FooterPrefetch); !errors.Is(err, storage.ErrChanged) {
		t.Errorf("open of a changed object, nothing cached: %v, want ErrChanged", err)
	}
	if err := r2.Prefetch([]storage.Range{{200_000, 10}}); !errors.Is(err, storage.ErrChanged) || r2.Err() == nil {
		t.Errorf("a read of a changed object by an open reader: %v (Err %v), want ErrChanged", err, r2.Err())
	}
	now, err := st.Stat(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	r3, err := storage.OpenParts(ctx, st, cache, now, storage.FooterPrefetch)
	if err != nil {
		t.Fatal(err)
	}
	buf = make([]byte, 4000)
	if _, err := r3.ReadAt(buf, 500_000); err != nil || !bytes.Equal(buf, other[500_000:504_000]) {
		t.Fatalf("the new version read %v, or the old bytes", err)
	}
	if s := r3.Stats(); s.CachedBytes != 0 {
		t.Errorf("the new version was served %d bytes of cached parts", s.CachedBytes)
	}

	// Parts count against the budget and are evicted as entries are:
	// least recently used first, none used within the grace period.
	var parts []string
	filepath.WalkDir(cache.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".part") {
			parts = append(parts, p)
		}
		return nil
	})
	if len(parts) < 4 {
		t.Fatalf("%d parts cached: %v", len(parts), parts)
	}
	(&storage.Cache{Dir: cache.Dir, Budget: 1}).Trim(nil)
	for _, p := range parts {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("a part used just now was evicted: %v", err)
		}
	}
	old := time.Now().Add(-time.Hour)
	for _, p := range parts {
		os.Chtimes(p, old, old)
	}
	(&storage.Cache{Dir: cache.Dir, Budget: 1}).Trim(nil)
	for _, p := range parts {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("part %s kept over the budget", p)
		}
	}
}

// TestCachedRanges: ranged reads through CachedRanges are kept as parts
// and served again without a request, for the version read only.
func TestCachedRanges(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	st := newStore(t, srv, srv.Endpoint, storage.S3Options{})
	ctx := context.Background()
	data := payload(200_000, 1)
	loc := "s3://lake/x.parquet"
	put(t, st, loc, data)
	obj, err := st.Stat(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	cr := storage.CachedRanges(st, &storage.Cache{Dir: t.TempDir()})
	for i := range 2 {
		before := st.Counts()
		b, err := cr.ReadRange(ctx, obj, 100_000, 50_000)
		if err != nil || !bytes.Equal(b, data[100_000:150_000]) {
			t.Fatalf("read %d: %v, or other bytes", i, err)
		}
		sub, err := cr.ReadRange(ctx, obj, 120_000, 10)
		if err != nil || !bytes.Equal(sub, data[120_000:120_010]) {
			t.Fatalf("read %d inside: %v, or other bytes", i, err)
		}
		if d := st.Counts().Sub(before); d.Requests != int64(1-i) {
			t.Errorf("read %d: %d requests, want %d", i, d.Requests, 1-i)
		}
	}
	put(t, st, loc, payload(200_000, 2))
	now, _ := st.Stat(ctx, loc)
	b, err := cr.ReadRange(ctx, now, 100_000, 50_000)
	if err != nil || !bytes.Equal(b, payload(200_000, 2)[100_000:150_000]) {
		t.Errorf("the new version: %v, or the old bytes", err)
	}
}
